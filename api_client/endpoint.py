"""What a base URL and a token may be, and how each is hidden in what is shown (one rule each).

The command line's settings, `convrisk serve` and the remote backend all call these, so a value
that one accepts the others accept too. Imports nothing heavy: the settings of every command use it.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# Characters a bearer token is made of (RFC 6750 b64token); the token ends where they do.
_TOKEN_CHARS = r"A-Za-z0-9\-._~+/="
# A token shorter than this is hidden only where it stands whole (see Scrubber).
_WHOLE_ONLY_BELOW = 8


def token_problem(token: str) -> str | None:
    """Why `token` cannot be a bearer token, or None when it can.

    A token travels in an HTTP header: one or more visible ASCII characters, no space (README,
    `serve`). The message never repeats the token.
    """
    if not token:
        return "The token is empty."
    if not all(33 <= ord(ch) <= 126 for ch in token):
        return "The token contains spaces or characters that cannot be sent in an HTTP header."
    return None


def base_url_problem(url: str, setting: str = "base_url") -> str | None:
    """Why `url` cannot be a base_url, or None when it can; the message never shows credentials.

    An http:// or https:// URL with a host, and no user name, password, query or fragment.
    `setting` names the value in the message (`serve --proxy-to` checks its upstream alike).
    """
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return (
            f"{setting} must be an http:// or https:// URL with a host, such as "
            f"https://api.example.com, not {shown_url(url)!r}."
        )
    if parts.username is not None or parts.password is not None:
        # The client would send them as Basic auth in place of the bearer token.
        return (
            f"{setting} must not carry a user name or password ({shown_url(url)}); "
            "set the token instead."
        )
    if parts.query or parts.fragment:
        return f"{setting} must not carry a query or a fragment ({shown_url(url)})."
    return None


# Where a profile allows a token over plain http (cli/settings.py), named in the refusal.
INSECURE_HTTP_SETTING = "allow_insecure_http = true (or CONVRISK_ALLOW_INSECURE_HTTP=true)"


def is_loopback_host(host: str) -> bool:
    """Whether `host` (a URL's host, brackets removed) names this machine: localhost, an
    address in 127.0.0.0/8, or ::1 (also as an IPv4-mapped address)."""
    import ipaddress  # only a remote backend asks; the settings of every command import this

    name = host.strip().rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def insecure_token_problem(url: str, token: str | None, *, allowed: bool) -> str | None:
    """Why a bearer token may not go to `url`, or None: over plain http:// the token is readable
    by anyone on the network, so it goes only to a loopback host, unless `allowed`."""
    if token is None or allowed:
        return None
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
    except ValueError:
        return None  # base_url_problem names what is wrong with it
    if parts.scheme != "http" or is_loopback_host(host):
        return None
    return (
        f"Refusing to send the token over plain http:// to {shown_url(url)}: anyone on the "
        f"network between could read it. Use https://, or set {INSECURE_HTTP_SETTING} if "
        "that network is trusted."
    )


def shown_url(url: str) -> str:
    """A URL as shown in messages: scheme://host:port/path, never its user info or query."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        parts = None
    if parts is not None and parts.netloc:
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        return f"{parts.scheme}://{host}{port}{parts.path}"
    # Not readable as scheme://host: whatever comes before the last '@' may be a password.
    head, at, tail = url.partition("?")[0].rpartition("@")
    return f"***@{tail}" if at else head + tail


def _hex_pattern(value: int, digits: int) -> str:
    """`value` in hex of `digits` digits, either case of each letter (`6[fF]`)."""
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in f"{value:0{digits}x}")


def _token_pattern(token: str) -> str:
    """A pattern of `token` in every form a service may echo it in: each character as it is,
    JSON-escaped (`\\u0053`, any case of the hex, `\\/` for a slash) or percent-encoded (`%53`),
    every character on its own (a partly escaped echo is found too)."""
    parts = []
    for char in token:
        code = ord(char)
        forms = [re.escape(char), r"\\u" + _hex_pattern(code, 4), "%" + _hex_pattern(code, 2)]
        if char == "/":
            forms.append(r"\\/")
        parts.append("(?:" + "|".join(forms) + ")")
    return "".join(parts)


class Scrubber:
    """Replaces a token by `***` in text and bytes that are about to be shown, in each form it
    can come back in: as it is, JSON-escaped (`\\u0053...`, either case, even partly) and
    percent-encoded. A token encoded whole otherwise (base64, ...) is not looked for: such an
    echo no longer holds the token's text."""

    def __init__(self, token: str | None) -> None:
        self._token = token or None
        self._pattern: re.Pattern[str] | None = None
        if self._token is not None:
            pattern = _token_pattern(self._token)
            if len(self._token) < _WHOLE_ONLY_BELOW:
                # A short token ("T") is hidden only where it stands whole, so "HTTP" stays
                # readable.
                pattern = rf"(?<![{_TOKEN_CHARS}]){pattern}(?![{_TOKEN_CHARS}])"
            self._pattern = re.compile(pattern)

    def text(self, text: str) -> str:
        """`text` with the token replaced by `***`."""
        if self._pattern is None or self._token is None:
            return text
        if self._token not in text and "\\" not in text and "%" not in text:
            return text  # no form of the token can be in it
        return self._pattern.sub("***", text)

    def bytes(self, data: bytes) -> bytes:
        """`data` (a body, in any encoding) with the token's ASCII bytes replaced by `***`."""
        if self._token is None:
            return data
        if self._token.encode() not in data and b"\\" not in data and b"%" not in data:
            return data
        # latin-1 maps every byte to one character and back, so the rest stays byte for byte.
        return self.text(data.decode("latin-1")).encode("latin-1")
