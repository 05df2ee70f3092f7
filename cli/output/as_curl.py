"""A captured request as one curl command line (`--as-curl`): runnable in a POSIX shell, the token
as `$CONVRISK_TOKEN`, the body byte for byte.

Each word is single-quoted (shlex.quote); a word with a character that must not reach a terminal
raw (a control character, a line break, a bidi control) is written as a bash/zsh `$'...'` word
with `\\xHH` escapes instead, so the line stays one line and the bytes stay exact.
"""

from __future__ import annotations

import shlex

from convrisk.api_client.remote.capture import PLACEHOLDER_BASE_URL, CapturedRequest
from convrisk.api_client.text import safe_line

# The token is never printed: the shell puts it in (double quotes, so that it is expanded).
TOKEN_HEADER = '"Authorization: Bearer $CONVRISK_TOKEN"'
# The service's URL when none is chosen (the local backend): `export CONVRISK_BASE_URL=...`.
BASE_URL_VARIABLE = '"$CONVRISK_BASE_URL"'
# Headers curl writes itself from its arguments (Host, Content-Length), and those that would
# change what curl does with the answer: curl does not decode gzip without --compressed.
_LEFT_TO_CURL = frozenset({"host", "content-length", "accept-encoding", "connection"})
# Characters that make curl expand a URL as a glob ({a,b}, [1-9]).
_GLOB = frozenset("[]{}")


def command_line(request: CapturedRequest) -> str:
    """The curl command line that sends `request`, as one line of text."""
    words = ["curl"]
    words += ["--head"] if request.method == "HEAD" else ["-X", quoted(request.method)]
    if _GLOB & set(request.url):
        words.append("--globoff")
    words.append(_url(request.url))
    names = {name.lower() for name, _ in request.headers}
    for name, value in request.headers:
        lowered = name.lower()
        if lowered in _LEFT_TO_CURL:
            continue
        header = TOKEN_HEADER if lowered == "authorization" else quoted(f"{name}: {value}")
        words += ["-H", header]
    if request.body or ("content-length" in names and request.method != "HEAD"):
        if "content-type" not in names:
            # curl would add `Content-Type: application/x-www-form-urlencoded` to a body.
            words += ["-H", quoted("Content-Type:")]
        # --data-binary sends the bytes as they are, but reads a file for a leading @.
        option = "--data-raw" if request.body.startswith(b"@") else "--data-binary"
        words += [option, quoted_bytes(request.body)]
    return " ".join(words)


def _url(url: str) -> str:
    """The URL as a word; the placeholder base URL as the variable that names the service."""
    if url.startswith(PLACEHOLDER_BASE_URL + "/"):
        return BASE_URL_VARIABLE + quoted(url[len(PLACEHOLDER_BASE_URL) :])
    return quoted(url)


def quoted(text: str) -> str:
    """`text` as one shell word that prints as one safe line and reads back as `text`."""
    if safe_line(text) == text:
        return shlex.quote(text)
    return _ansi_c(text.encode("utf-8", "surrogateescape"))


def quoted_bytes(data: bytes) -> str:
    """`data` (a body) as one shell word whose value is exactly these bytes."""
    text = data.decode("utf-8", "surrogateescape")
    if safe_line(text) == text:
        return shlex.quote(text)
    return _ansi_c(data)


def _ansi_c(data: bytes) -> str:
    """`data` as a `$'...'` word: printable ASCII as it is, every other byte as `\\xHH`
    (printable non-ASCII text too: the escapes are what keeps the line safe whatever it holds)."""
    parts = ["$'"]
    for byte in data:
        char = chr(byte)
        if char in "\\'":
            parts.append("\\" + char)
        elif 0x20 <= byte < 0x7F and char != "!":
            parts.append(char)
        else:
            parts.append(f"\\x{byte:02x}")
    parts.append("'")
    return "".join(parts)
