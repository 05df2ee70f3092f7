"""The export path's SQL: each row's JSON text built by SQLite (`json_object`), byte for byte
what `records.json_text` gives for the record `list` returns. A row SQLite cannot render exactly
so is left to Python; a SQLite that escapes differently is not used at all (`json_agrees`). The
pages made with it are store.pages'."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable

from convrisk.api_client.params import MAX_DETAILS_DEPTH
from convrisk.api_client.records import json_text as record_json

# The SQL function writing a REAL as Python's json.dumps does (float.__repr__). SQLite's own
# json_object writes 15 significant digits and `1.0e+300`: not the same text.
FLOAT_FUNCTION = "convrisk_json_float"


def _json_float(value: object) -> str:
    if not isinstance(value, float) or not math.isfinite(value):
        # The row has no JSON: the page goes through the general path, which says why.
        raise ValueError("not a finite float")
    return float.__repr__(value)


def register_sql_functions(conn: sqlite3.Connection) -> None:
    """Add the SQL functions `json_object_sql` uses to a connection."""
    conn.create_function(FLOAT_FUNCTION, 1, _json_float, deterministic=True)


# A JSON object column is copied into the row's JSON as SQLite re-renders it (`json(c)`) only when
# that is exactly Python's `json.dumps(json.loads(c), ensure_ascii=False, separators=(",", ":"))`,
# as it is for what convrisk writes. json() only drops whitespace: it keeps escapes, the text of
# numbers and duplicate keys as they are. So the text is copied only when it is an object, with
# every condition below (a row that fails one goes through Python, which writes or refuses it):
_CANONICAL_JSON_OBJECT = r"""(CASE WHEN typeof({c}) = 'text' AND substr({c}, 1, 1) = '{{'
    -- at most MAX levels of nesting: too short to hold more, or no more brackets than that
    AND (length({c}) <= {short} OR length({c}) - length(replace(replace({c}, '[', ''), '{{', ''))
         <= {depth})
    -- no escape Python would write otherwise (\u is left to Python, \" \\ \n \t... are the same)
    AND (instr({c}, '\') = 0 OR (instr({c}, '\u') = 0 AND instr({c}, '\/') = 0))
    -- no integer -0 (Python writes 0); a date in a string may look like one: Python decides
    AND (instr({c}, '-0') = 0 OR {c} NOT GLOB '*[:,[]-0[],}}]*')
    -- no whitespace, nor anything else json() changes (invalid JSON raises: the page goes slowly)
    AND json({c}) = {c}
  THEN (SELECT count(*) = count(DISTINCT fullkey) AND max(type = 'real') = 0
        FROM json_tree({c}))
  -- no duplicate key (Python keeps the last), no real number (`1E5` is Python's 100000.0)
END)"""


def _number_sql(column: str) -> str:
    return (
        f"CASE typeof({column}) WHEN 'real' THEN json({FLOAT_FUNCTION}({column})) ELSE {column} END"
    )


def json_object_sql(fields: Iterable[tuple[str, str]]) -> str:
    """SQL for one row's compact JSON text, or NULL where Python must write it.

    `fields` are (column, kind) in the record's key order; kind is `text` (the value as SQLite
    holds it), `number` (likewise, but a REAL written by Python's repr), `flag` (0 and 1 as
    false and true; another value leaves the row to Python, which writes `bool(value)`) or
    `object` (JSON object text, copied when canonical: `_CANONICAL_JSON_OBJECT`). SQLite escapes
    strings as `json.dumps(..., ensure_ascii=False)` does; `json_agrees` checks it on first use.
    """
    parts: list[str] = []
    conditions: list[str] = []
    for column, kind in fields:
        if kind == "text":
            value = column
        elif kind == "number":
            value = _number_sql(column)
        elif kind == "flag":
            conditions.append(f"{column} IN (0, 1)")
            value = f"CASE WHEN {column} THEN json('true') ELSE json('false') END"
        elif kind == "object":
            conditions.append(
                _CANONICAL_JSON_OBJECT.format(
                    c=column, depth=MAX_DETAILS_DEPTH, short=2 * (MAX_DETAILS_DEPTH + 1) - 1
                )
            )
            value = f"json({column})"
        else:
            raise ValueError(f"unknown kind of field: {kind}")
        parts.append(f"'{column}', {value}")
    sql = f"json_object({', '.join(parts)})"
    if conditions:
        sql = f"CASE WHEN {' AND '.join(conditions)} THEN {sql} END"
    return sql


# Values whose JSON text SQLite and Python must agree on for the export path to be used.
_PROBE_TEXT = "".join(chr(code) for code in range(0x20)) + '"\\/\x7f\x85\u2028 é 😀 𝄞'
_PROBE_JSON = '{"a":[1,-2,{"b":null,"c":true}],"d":"x\\"y\\n","e":12345678901234567890123}'


def json_agrees(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite writes JSON as `records.json_text` does (escapes, numbers, copies).

    Checked once per resource: a build of SQLite that escaped differently would otherwise make
    the export path print other bytes than the general one.
    """
    sql = json_object_sql(
        [
            ("s", "text"),
            ("i", "number"),
            ("f", "number"),
            ("z", "number"),
            ("t", "flag"),
            ("j", "object"),
        ]
    )
    values = (_PROBE_TEXT, 2**63 - 1, 0.1, -0.0, 1, _PROBE_JSON)
    names = ("s", "i", "f", "z", "t", "j")
    select = ", ".join(f"? AS {name}" for name in names)
    try:
        (text,) = conn.execute(f"SELECT {sql} FROM (SELECT {select})", values).fetchone()
    except sqlite3.Error:
        return False
    expected = dict(zip(names, values, strict=True))
    expected["t"] = True
    expected["j"] = json.loads(_PROBE_JSON)
    return bool(text == record_json(expected))
