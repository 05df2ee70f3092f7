"""The one rule for a token, the one check of a base_url and the one way a URL is shown: what
the settings, `convrisk serve` and the remote backend all apply."""

from __future__ import annotations

import httpx
import pytest

from convrisk.api_client.endpoint import (
    Scrubber,
    base_url_problem,
    insecure_token_problem,
    shown_url,
    token_problem,
)
from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.remote.http import HTTPBackend
from tests.through_httpx import ThroughHttpx


@pytest.mark.parametrize("token", ["abc", "s3cr3t-Token_~+/=", "x" * 200, "!#$%&'*"])
def test_visible_ascii_tokens_are_accepted(token: str) -> None:
    assert token_problem(token) is None


@pytest.mark.parametrize("token", ["has space", "tab\there", "new\nline", "caf\u00e9", "\x7f"])
def test_tokens_that_cannot_travel_in_a_header_are_refused_without_echo(token: str) -> None:
    problem = token_problem(token)
    assert problem is not None and "spaces or characters" in problem
    assert token not in problem


def test_an_empty_token_is_refused() -> None:
    assert token_problem("") == "The token is empty."


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000", "https://api.example.com/prefix/", "http://[::1]:9/v1"]
)
def test_http_and_https_urls_with_a_host_are_base_urls(url: str) -> None:
    assert base_url_problem(url) is None


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("ftp://svc.test", "http:// or https://"),
        ("not a url", "http:// or https://"),
        ("http://svc.test:port", "http:// or https://"),
        ("https://svc.test/?page=2", "query or a fragment"),
        ("https://svc.test/#top", "query or a fragment"),
        ("https://user:pw-SECRET@svc.test", "user name or password"),
    ],
)
def test_other_base_urls_are_refused_naming_why(url: str, named: str) -> None:
    problem = base_url_problem(url)
    assert problem is not None and named in problem
    assert "SECRET" not in problem


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pw-SECRET@svc.test:8443/api?key=SECRET#x", "https://svc.test:8443/api"),
        ("ftp://u:pw-SECRET@x@svc.test", "ftp://svc.test"),
        ("user:pw-SECRET@svc.test", "***@svc.test"),
        ("http://[::1]:9/v1", "http://[::1]:9/v1"),
        ("not a url", "not a url"),
    ],
)
def test_a_shown_url_never_carries_credentials_or_a_query(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_the_scrubber_hides_a_long_token_anywhere_and_a_short_one_where_it_stands_whole() -> None:
    long = Scrubber("tok-12345678")
    assert long.text("Bearer tok-12345678!") == "Bearer ***!"
    assert long.bytes(b"\xff tok-12345678") == b"\xff ***"
    short = Scrubber("T")
    assert short.text("HTTP T (T), T.") == "HTTP *** (***), T."
    assert Scrubber(None).text("anything") == "anything"


@pytest.mark.parametrize(
    "echo",
    [
        r"\u0074\u006f\u006b\u002d\u0031\u0032\u0033\u0034\u0035\u0036\u0037\u0038",
        r"\u0074\u006F\u006B\u002D\u0031\u0032\u0033\u0034\u0035\u0036\u0037\u0038",
        r"t\u006fk-1234\u00356\u00378",
        "%74%6F%6b%2D12345678",
        r"\\u0074ok-12345678",
    ],
    ids=["json-lower", "json-upper", "json-partly", "percent-mixed-case", "json-twice"],
)
def test_the_scrubber_hides_a_token_echoed_json_escaped_or_percent_encoded(echo: str) -> None:
    scrubber = Scrubber("tok-12345678")
    assert scrubber.text(f"echo: {echo}.") in ("echo: ***.", "echo: \\***.")
    assert scrubber.bytes(f"echo: {echo}.".encode()) == scrubber.text(f"echo: {echo}.").encode()


def test_the_scrubber_hides_a_json_escaped_slash_and_a_short_token_only_whole() -> None:
    assert Scrubber("ab/cdefgh").text(r'"ab\/cdefgh"') == '"***"'
    assert Scrubber("T").text(r"HTTP \u0054 x\u0054") == r"HTTP *** x\u0054"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000",
        "http://127.5.6.7",
        "http://[::1]:9/v1",
        "http://localhost:8000",
        "http://LOCALHOST.",
        "http://[::ffff:127.0.0.1]:80",
        "https://api.example.invalid",
        "https://10.0.0.1",
    ],
)
def test_a_token_may_go_over_https_anywhere_and_over_http_to_loopback(url: str) -> None:
    assert insecure_token_problem(url, "tok", allowed=False) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://api.example.invalid",
        "http://10.0.0.1:8000",
        "http://[fe80::1]",
        "http://127.0.0.1.example.invalid",
        "http://localhost.example.invalid",
        "http://[::ffff:10.0.0.1]",
    ],
)
def test_a_token_over_plain_http_to_another_host_is_refused_unless_allowed(url: str) -> None:
    problem = insecure_token_problem(url, "s3cret-token", allowed=False)
    assert problem is not None and "plain http://" in problem
    assert "allow_insecure_http" in problem and "s3cret-token" not in problem
    assert insecure_token_problem(url, "s3cret-token", allowed=True) is None
    assert insecure_token_problem(url, None, allowed=False) is None


def test_the_backend_is_refused_before_any_connection() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"data": [], "has_more": False})

    with pytest.raises(InvalidRequestError, match="plain http://") as info:
        HTTPBackend(
            "http://svc.invalid", "tok-1234", transport=ThroughHttpx(httpx.MockTransport(answer))
        )
    assert info.value.param == "base_url" and not info.value.answered
    assert sent == []


def test_a_token_to_a_loopback_service_through_a_plain_http_proxy_elsewhere_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The proxy is never contacted: the backend is refused when it is made.
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    with pytest.raises(InvalidRequestError) as refused:
        HTTPBackend("http://127.0.0.1:9", "s3cret-token-value")
    assert "proxy.invalid" in str(refused.value) and "proxy" in str(refused.value)
    assert "s3cret-token-value" not in str(refused.value)
    HTTPBackend("http://127.0.0.1:9", "s3cret-token-value", allow_insecure_http=True).close()
    HTTPBackend("http://127.0.0.1:9", None).close()  # no token: nothing to leak
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:3128")
    HTTPBackend("http://127.0.0.1:9", "s3cret-token-value").close()  # a proxy on this machine
