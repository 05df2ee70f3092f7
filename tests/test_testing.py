"""convrisk.testing's Sandbox refusing what it is given wrong, before any serve starts (the
Sandbox on a real serve: tests/e2e/test_testing_sandbox.py)."""

from __future__ import annotations

import pytest

from convrisk.testing import Sandbox, SandboxError


def test_verify_with_count_and_at_least_together_is_a_type_error_naming_both() -> None:
    with pytest.raises(TypeError, match="count or at_least, not both"):
        Sandbox().verify("POST", "/v1/conversations", count=1, at_least=1)


@pytest.mark.parametrize(
    ("count", "at_least", "name"),
    [(-1, None, "count"), (True, None, "count"), (None, 1.5, "at_least"), (None, "2", "at_least")],
)
def test_verify_takes_whole_numbers_only(count: object, at_least: object, name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be a whole number"):
        Sandbox().verify("POST", "/v1/*", count=count, at_least=at_least)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["", "PO ST", "GET\n", "ÖPEN"])
def test_a_method_that_is_no_http_method_is_a_value_error(method: str) -> None:
    with pytest.raises(ValueError, match="must be an HTTP method"):
        Sandbox().verify(method, "/v1/*")


@pytest.mark.parametrize("seed", ["7", 1.0, False])
def test_a_seed_that_is_no_whole_number_is_a_type_error(seed: object) -> None:
    with pytest.raises(TypeError, match="seed must be a whole number"):
        Sandbox(seed=seed)  # type: ignore[arg-type]


def test_a_sandbox_not_started_says_so_and_shows_no_token() -> None:
    sandbox = Sandbox()
    with pytest.raises(SandboxError, match="not running"):
        sandbox.base_url  # noqa: B018
    with pytest.raises(SandboxError, match="not running"):
        sandbox.requests()
    assert sandbox.token not in repr(sandbox) and "not started" in repr(sandbox)
    assert len(sandbox.token) >= 32 and Sandbox().token != sandbox.token
    sandbox.stop()  # stopping what never started does nothing
