"""A base_url with user info or a query is a usage error that never shows it; a setting made
irrelevant by a flag (-o, --db, --base-url) is not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import Invoke


@pytest.mark.parametrize(
    "url", ["http://u:pw@127.0.0.1:1", "http://u@127.0.0.1:1/x", "http://127.0.0.1:1/?q=pw"]
)
def test_a_base_url_with_user_info_or_query_is_a_usage_error_never_shown(
    invoke: Invoke, url: str
) -> None:
    result = invoke("--base-url", url, "conv", "list")
    assert result.code == 2, result.stderr
    assert "pw" not in result.stderr and "HTTP" not in result.stderr
    assert result.stdout == ""


def test_a_bad_base_url_in_the_environment_is_a_usage_error(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVRISK_BASE_URL", "https://u:s3cr3t@api.example.com/v1")
    result = invoke("conv", "list", "-o", "json")
    assert result.code == 2 and "s3cr3t" not in result.stderr
    assert '"status"' not in result.stderr and "https://api.example.com/v1" in result.stderr


def test_an_error_building_the_backend_is_a_settings_problem(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convrisk.api_client.errors import InvalidRequestError
    from convrisk.api_client.remote import http

    def refuse(*args: object, **kwargs: object) -> None:
        raise InvalidRequestError("base_url is not usable.", param="base_url")

    monkeypatch.setattr(http, "HTTPBackend", refuse)
    result = invoke("--base-url", "http://127.0.0.1:1", "conv", "list", "-o", "json")
    assert result.code == 2
    assert '"status"' not in result.stderr and "base_url is not usable." in result.stderr


def test_a_client_side_refusal_in_remote_mode_names_no_http_status() -> None:
    from convrisk.api_client.errors import InvalidRequestError
    from convrisk.cli.errors import describe

    before = describe(InvalidRequestError("limit must be 1 to 100."), remote=True)
    assert before.status is None and "HTTP" not in str(before)
    answered = InvalidRequestError("Bad limit (HTTP 400)", status=400)
    assert describe(answered, remote=True).status == 400


def test_a_bad_output_in_the_environment_is_irrelevant_with_o(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVRISK_OUTPUT", "yaml")
    assert invoke("conv", "list", "-o", "id").ok().stdout == ""
    assert invoke("conv", "list").code == 2  # in effect without -o


def test_a_bad_base_url_in_the_environment_is_irrelevant_with_db(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CONVRISK_BASE_URL", "not a url")
    assert invoke("--db", str(tmp_path / "x.db"), "conv", "list", "-o", "id").ok()


def test_a_bad_base_url_in_the_profile_is_irrelevant_with_base_url_flag(
    invoke: Invoke, config_file: Path
) -> None:
    config_file.parent.mkdir(parents=True)
    config_file.write_text('[default]\nbase_url = "ftp://x"\noutput = "yaml"\n')
    result = invoke("--base-url", "http://127.0.0.1:1", "config", "show")
    assert result.code == 2 and "output" in result.stderr  # output is still in effect
    config_file.write_text('[default]\nbase_url = "ftp://x"\n')
    assert (
        "remote http://127.0.0.1:1"
        in invoke("--base-url", "http://127.0.0.1:1", "config", "show").ok().stdout
    )
