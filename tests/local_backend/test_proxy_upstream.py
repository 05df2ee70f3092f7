"""local_backend.serve.proxy: an upstream URL every request would fail to reach is refused when the
proxy is made (serve turns it into exit 2), never a 500 on each request."""

from __future__ import annotations

import pytest

from convrisk.local_backend.serve.proxy import Proxy


@pytest.mark.parametrize("url", ["http://bücher..de", "http://xn--", "http://127.0.0.1:1/a\x7fb"])
def test_an_upstream_httpx_cannot_send_to_is_refused_at_start(url: str) -> None:
    with pytest.raises(ValueError, match="not a URL a request can go to"):
        Proxy(url, "report", 1.0, 1024)


def test_an_ordinary_upstream_is_taken() -> None:
    assert Proxy("http://127.0.0.1:1/base/", "report", 1.0, 1024).upstream == (
        "http://127.0.0.1:1/base"
    )
