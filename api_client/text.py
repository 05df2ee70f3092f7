"""Text from data made safe for a line a person reads (table cell, TSV field, error, log line).

DESIGN 4.2: no control character that came from data reaches a terminal raw. ESC, BEL, CR, the
C1 range, line and paragraph separators, bidirectional overrides and lone surrogates (which
cannot even be encoded to UTF-8) are shown as backslash escapes instead. JSON output does not go
through here: `json.dumps` escapes what it must.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls, U+2028/U+2029, bidi embeddings/overrides/isolates, surrogates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_OR_BACKSLASH = re.compile(_UNSAFE.pattern[:-1] + "\\\\]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, escape_backslash: bool = False) -> str:
    """`text` with every control character shown as an escape (`\\x1b`, `\\n`, `\\u202e`).

    With `escape_backslash` a backslash is doubled too, so the result can be read back
    unambiguously (TSV: a literal backslash-n and a newline no longer print alike).
    """
    pattern = _UNSAFE_OR_BACKSLASH if escape_backslash else _UNSAFE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape, text)


def unprintable(text: str) -> str:
    """The inverse of `printable(..., escape_backslash=True)`: the original text back."""
    if "\\" not in text:
        return text
    return re.sub(
        r"\\(?:x([0-9a-f]{2})|u([0-9a-f]{4})|(.))",
        lambda m: (
            chr(int(m.group(1) or m.group(2), 16))
            if m.group(3) is None
            else {"t": "\t", "n": "\n", "r": "\r"}.get(m.group(3), m.group(3))
        ),
        text,
        flags=re.DOTALL,
    )
