"""A bearer token never goes over plain http:// to a host that is not loopback unless the profile
allows it (`allow_insecure_http`): refused before any connection. Nothing here leaves loopback:
the allowed request goes to a proxy on 127.0.0.1, never to the `.invalid` host it names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from tests.loopback import JSONService, on_loopback, running, url_of

from .both_backends import isolated_env
from .console import run

FAR = "http://convrisk-test.invalid:8080"
TOKEN = "far-away-token-1234"


class Proxy(JSONService):
    """A proxy on loopback that answers every GET itself with an empty page."""

    seen: ClassVar[list[tuple[str, str]]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization", "")))
        self.send_json(200, {"data": [], "has_more": False})


def test_a_token_over_plain_http_to_another_host_is_refused_before_any_request(
    tmp_path: Path,
) -> None:
    Proxy.seen = []
    with running(on_loopback(Proxy)) as proxy:
        env = isolated_env(
            tmp_path,
            CONVRISK_BASE_URL=FAR,
            CONVRISK_TOKEN=TOKEN,
            HTTP_PROXY=url_of(proxy),
            NO_PROXY="",
        )
        result = run(env, "conv", "list")
    assert result.returncode == 2, result.stderr
    assert "Refusing to send the token over plain http://" in result.stderr
    assert "allow_insecure_http" in result.stderr and TOKEN not in result.stderr
    assert Proxy.seen == []


def test_allow_insecure_http_lets_the_token_go_and_loopback_needs_nothing(
    tmp_path: Path,
) -> None:
    Proxy.seen = []
    with running(on_loopback(Proxy)) as proxy:
        env = isolated_env(tmp_path, CONVRISK_BASE_URL=FAR, HTTP_PROXY=url_of(proxy), NO_PROXY="")
        assert run(env, "config", "set", "token", TOKEN).returncode == 0
        set_it = run(env, "config", "set", "allow_insecure_http", "true")
        assert set_it.returncode == 0, set_it.stderr
        assert run(env, "config", "get", "allow_insecure_http").stdout == "true\n"
        allowed = run(env, "conv", "list", "-o", "json")
        from_env = run(
            {**env, "CONVRISK_ALLOW_INSECURE_HTTP": "false"}, "conv", "list", "-o", "json"
        )
        near = url_of(proxy)
        direct = run({**env, "CONVRISK_BASE_URL": near}, "conv", "list", "-o", "json")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout) == []
    assert from_env.returncode == 2 and "plain http://" in from_env.stderr
    assert direct.returncode == 0, direct.stderr
    assert [path.split("?")[0] for path, _ in Proxy.seen] == [
        f"{FAR}/v1/conversations",
        f"{near}/v1/conversations",  # through the proxy too (NO_PROXY is empty)
    ]
    assert all(auth == f"Bearer {TOKEN}" for _, auth in Proxy.seen)
