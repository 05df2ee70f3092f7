"""The proxy the environment sets for the service (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY).

httpx reads these itself only for its own transport; the deadline transport gets them here, read
the way urllib reads them.
"""

from __future__ import annotations

import urllib.request

import httpcore
import httpx

from convrisk.api_client.endpoint import shown_url
from convrisk.api_client.errors import InvalidRequestError


def environment_proxy(url: httpx.URL) -> httpcore.Proxy | None:
    """The proxy the environment sets for `url`, or None (none set, or NO_PROXY names the host).

    A proxy convrisk cannot use (socks5://...) is an InvalidRequestError before any request.
    """
    proxies = urllib.request.getproxies()
    target = proxies.get(url.scheme) or proxies.get("all")
    if not target:
        return None
    port = f":{url.port}" if url.port is not None else ""
    if urllib.request.proxy_bypass(f"{url.host}{port}"):
        return None
    if "://" not in target:
        target = f"http://{target}"
    try:
        proxy_url = httpx.URL(target)
    except (httpx.InvalidURL, TypeError, ValueError):
        proxy_url = None
    if proxy_url is None or proxy_url.scheme not in ("http", "https") or not proxy_url.host:
        raise InvalidRequestError(
            f"The proxy set in the environment for {url.scheme}:// ({shown_url(target)}) is not "
            "an http:// or https:// proxy, the only kinds convrisk can use.",
            param="proxy",
        )
    auth = None
    if proxy_url.username or proxy_url.password:
        auth = (proxy_url.username, proxy_url.password)
    return httpcore.Proxy(
        url=str(proxy_url.copy_with(username=None, password=None)),
        auth=auth,
        ssl_context=httpx.create_ssl_context() if proxy_url.scheme == "https" else None,
    )
