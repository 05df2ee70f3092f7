"""Text from data made safe for a line a person reads (table cell, TSV field, error, log line).

DESIGN 4.2: no control character that came from data reaches a terminal raw. ESC, BEL, CR, the
C1 range, line and paragraph separators, bidirectional overrides and marks, and lone surrogates
(which cannot even be encoded to UTF-8) are shown as backslash escapes instead. JSON output does
not go through printable(): `json.dumps` escapes the C0 controls, and printable_json() the rest.
"""

from __future__ import annotations

import re

# DEL, C1 controls, U+2028/U+2029, bidi marks (ALM, LRM, RLM), embeddings, overrides and isolates,
# surrogates; the C0 controls come before these in each pattern.
_BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
# (escape_backslash, keep_newlines) -> the characters to escape.
_PATTERNS = {
    (False, False): re.compile(f"[\x00-\x1f{_BEYOND_C0}]"),
    (True, False): re.compile(f"[\x00-\x1f{_BEYOND_C0}\\\\]"),
    (False, True): re.compile(f"[\x00-\x09\x0b-\x1f{_BEYOND_C0}]"),
    (True, True): re.compile(f"[\x00-\x09\x0b-\x1f{_BEYOND_C0}\\\\]"),
}
# json.dumps escapes C0 controls inside strings; a raw one is structure (an indent's newline).
_JSON_UNSAFE = re.compile(f"[{_BEYOND_C0}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, escape_backslash: bool = False, keep_newlines: bool = False) -> str:
    """`text` with every control character shown as an escape (`\\x1b`, `\\n`, `\\u202e`).

    With `escape_backslash` a backslash is doubled too, so the result can be read back
    unambiguously (TSV: a literal backslash-n and a newline no longer print alike).
    With `keep_newlines` line breaks stay (a traceback, a help text): every line is safe.
    """
    pattern = _PATTERNS[escape_backslash, keep_newlines]
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape, text)


def safe_line(text: str) -> str:
    """`text` as ONE terminal line: every control character escaped, line breaks included
    (`\\n`, `\\r`, `\\x85`, `\\u2028`), so data cannot start a line of its own."""
    return printable(text)


def safe_lines(text: str) -> str:
    """`text` as several terminal lines (a help text, a traceback's frames): only `\\n` stays
    a line break; everything else, CR and U+2028/U+2029/U+0085 included, is escaped."""
    return printable(text, keep_newlines=True)


def printable_json(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with what printable() escapes and
    JSON may carry raw (DEL, C1, U+2028/9, bidi controls, lone surrogates) as `\\uXXXX` escapes.

    Those characters occur only inside JSON strings, so the document and its values stay the
    same; it becomes safe on a terminal and encodable as UTF-8.
    """
    # ASCII without DEL has none of them; both tests run at memory speed, the pattern does not.
    if (text.isascii() and "\x7f" not in text) or _JSON_UNSAFE.search(text) is None:
        return text
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


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
