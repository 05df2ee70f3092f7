"""Column kinds: what each command prints, its noun for messages, its columns in every format,
the columns of a terminal table and what gives way first when the screen is narrow."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from convrisk.cli.output.cells import CellKind, format_cell

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Column:
    """One column: the field, its title and how to show it (or a function of the whole row)."""

    key: str
    title: str
    kind: CellKind = "text"
    value: Callable[[Row], object] | None = None

    def cell(self, row: Row) -> str:
        """This column's text for a row."""
        value = self.value(row) if self.value is not None else row.get(self.key)
        return format_cell(value, self.kind)


# One step that narrows a terminal table: show a time column as its date only, or drop a column.
Narrowing = tuple[Literal["date", "drop"], str]


@dataclass(frozen=True)
class Kind:
    """What is being printed: its noun for messages, its columns, and the terminal's columns."""

    noun: str
    plural: str
    columns: tuple[Column, ...]
    # A table on a terminal shows fewer, friendlier columns; TSV and CSV keep every field under
    # its own name. On a narrow screen `narrowing` is applied in order, as far as needed.
    terminal_columns: tuple[Column, ...]
    narrowing: tuple[Narrowing, ...] = ()
    # The field printed by `-o id` (a row without it is left out).
    id_key: str = "id"
    # Terminal columns never cut (ids: a cut id cannot be pasted back).
    never_cut: tuple[str, ...] = ("id",)
    # When set, the table format (on a terminal and piped alike) is readable lines made by this
    # function, instead of columns: each item is one screen line (data in it is escaped whole).
    line: Callable[[Row], Sequence[str]] | None = None

    # The output formats these rows can be printed in (None: every one), in the order named.
    formats: tuple[str, ...] | None = None

    # --fields: only these fields of each record, in this order (None: all of them).
    fields: tuple[str, ...] | None = None

    def only(self, fields: Sequence[str]) -> Kind:
        """This kind with only these fields, in this order: the columns of every format.

        A field the kind has no column for (a result that is not one of its records, such as
        another command's summary) gets a plain text column under its name.
        """
        by_key = {column.key: column for column in self.columns}
        columns = tuple(by_key.get(key) or Column(key, key.upper()) for key in fields)
        narrowing = tuple(step for step in self.narrowing if step[1] in fields)
        return dataclasses.replace(
            self,
            columns=columns,
            terminal_columns=columns,
            narrowing=narrowing,
            fields=tuple(fields),
        )


# The kinds of the resources' records are derived from their descriptions:
# cli/output/resource_kinds.py.
_DELETION_COLUMNS = (Column("id", "ID"), Column("deleted", "DELETED", "bool"))
DELETIONS = Kind("deletion", "deletions", _DELETION_COLUMNS, _DELETION_COLUMNS)


_PLAN_COLUMNS = (
    Column("dry_run", "DRY RUN", "bool"),
    Column("operation", "OPERATION"),
    Column("id", "ID"),
    Column("body", "BODY", "json"),
)


def planned(operation: str, id: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
    """One operation a dry run would perform, in the shape of every format (DESIGN 4.4)."""
    return {"dry_run": True, "operation": operation, "id": id, "body": dict(body)}


def plan_kind(target: Kind, *, ids: bool = True, statuses: bool = False) -> Kind:
    """The kind of the planned operations on `target`: readable lines in the table format.

    `ids` False: planned creates, which have no id yet, so `-o id` cannot print them.
    `statuses` (an import's): a STATUS column too, planned or would_replay."""

    def line(row: Row) -> list[str]:
        body = format_cell(row.get("body") or {}, "json")
        if row.get("status") == "would_replay":
            return [f"would replay {row.get('id')} (created by an earlier run): {body}"]
        if row.get("operation") == "create":
            return [f"would create a {target.noun}: {body}"]
        if row.get("operation") == "update":
            return [f"would update {row.get('id')}: {body}"]
        return [f"would {row.get('operation')} {row.get('id')}"]

    columns = (*_PLAN_COLUMNS, Column("status", "STATUS")) if statuses else _PLAN_COLUMNS
    return Kind(
        f"planned {target.noun} operation",
        f"planned {target.noun} operations",
        columns,
        columns,
        line=line,
        formats=None if ids else ("table", "json", "jsonl", "csv"),
    )


_PROFILE_COLUMNS = (
    Column("name", "NAME"),
    Column("active", "ACTIVE", "bool"),
    Column("base_url", "BASE URL"),
    Column("db", "DB"),
    Column("token", "TOKEN", "bool"),
    Column("protected", "PROTECTED", "bool"),
    Column("read_only", "READ ONLY", "bool"),
)


def marks(row: Row) -> str:
    """A profile's guard marks in words: read-only, protected, both, or nothing."""
    shown = [name for key, name in _MARKS if row.get(key)]
    return ", ".join(shown)


_MARKS = (("read_only", "read-only"), ("protected", "protected"))
PROFILES = Kind(
    "profile",
    "profiles",
    _PROFILE_COLUMNS,
    (
        Column("active", "", value=lambda row: "*" if row.get("active") else ""),
        Column("name", "PROFILE"),
        Column(
            "backend",
            "BACKEND",
            value=lambda row: row.get("base_url") or row.get("db") or "local (default database)",
        ),
        Column("token", "TOKEN", value=lambda row: "set" if row.get("token") else ""),
        Column("marks", "MARKS", value=marks),
    ),
    id_key="name",
)


# Whatever `convrisk api` prints: an answer's body, or the items of its pages.
ANSWER = Kind("item", "items", (), ())


def _status_lines(row: Row) -> list[str]:
    """The status of `convrisk status` as aligned lines, one per fact (a line break in a value,
    such as a service's error message, is escaped by the sink: it cannot forge a line)."""
    if row.get("backend") == "remote":
        backend = f"remote {row.get('base_url')}"
        token = f"from {row['token_source']}" if row.get("token_source") else "not set"
    else:
        backend = f"local {row.get('db')}"
        token = "not needed (local database)"
    if row.get("ok"):
        service = f"ok ({row.get('ms')} ms for a list of one conversation)"
    else:
        error = row.get("error") or {}
        service = f"failed, exit code {row.get('exit_code')}: {error.get('message', '')}"
        if error.get("status") is not None and f"HTTP {error['status']}" not in service:
            service += f" (HTTP {error['status']})"
    lines = [
        ("profile", f"{row.get('profile')} (from {row.get('profile_source')})"),
        ("backend", backend),
        ("token", token),
        ("writes", _writes(row)),
        ("service", service),
    ]
    return [f"{key:<8} {value}" for key, value in lines]


def _writes(row: Row) -> str:
    """What becomes of a write under this profile (its guard marks)."""
    if row.get("read_only"):
        also = " (and protected)" if row.get("protected") else ""
        return f"refused: the profile is read-only{also}"
    if row.get("protected"):
        return "protected: each asks for the number of records typed back (or --yes)"
    return "allowed"


_STATUS_COLUMNS = tuple(
    Column(key, key.upper(), "json" if key == "error" else "text")
    for key in (
        "profile",
        "profile_source",
        "backend",
        "base_url",
        "db",
        "token_source",
        "protected",
        "read_only",
        "ok",
        "ms",
        "exit_code",
        "error",
    )
)
# A status has no id: `-o id` would print nothing.
STATUS = Kind(
    "status",
    "statuses",
    _STATUS_COLUMNS,
    _STATUS_COLUMNS,
    line=_status_lines,
    formats=("table", "json", "jsonl", "csv"),
)


def _history_time(row: Row) -> str:
    """An entry's time as tables show times (`2026-11-25 06:15:00Z`), milliseconds left out."""
    time = row.get("time")
    if isinstance(time, str) and len(time) >= 19 and time[10:11] == "T":
        return f"{time[:10]} {time[11:19]}Z"
    return format_cell(time, "text")


def _history_operation(row: Row) -> str:
    """The operation, with its method for an `api` request; `undo` when it put a record back."""
    operation = format_cell(row.get("operation"), "text")
    if operation == "api":
        operation = f"api {format_cell(row.get('method'), 'text')}"
    return f"{operation} (undo)" if row.get("undoes") else operation


def _outcome(key: str) -> Callable[[Row], object]:
    def value(row: Row) -> object:
        outcome = row.get("outcome")
        return outcome.get(key) if isinstance(outcome, dict) else None

    return value


def _history_outcome(row: Row) -> str:
    """ok, replayed, or failed with the error."""
    status = format_cell(_outcome("status")(row), "text")
    error = _outcome("error")(row)
    return f"{status}: {error}" if error else status


_HISTORY_COLUMNS = (
    Column("time", "TIME"),
    Column("entry", "ENTRY"),
    Column("run", "RUN"),
    Column("profile", "PROFILE"),
    Column("backend", "BACKEND"),
    Column("target", "TARGET"),
    Column("operation", "OPERATION"),
    Column("method", "METHOD"),
    Column("path", "PATH"),
    Column("resource", "RESOURCE"),
    Column("id", "ID"),
    Column("status", "STATUS", value=_outcome("status")),
    Column("http_status", "HTTP_STATUS", value=_outcome("http_status")),
    Column("error", "ERROR", value=_outcome("error")),
    Column("idempotency_key", "IDEMPOTENCY_KEY"),
    Column("undoes", "UNDOES"),
    Column("stands_for", "STANDS_FOR"),
    Column("argv", "ARGV", "json"),
    Column("before", "BEFORE", "json"),
    Column("after", "AFTER", "json"),
)
# `convrisk history`: journal entries; `-o id` prints entry ids (what `undo` takes).
HISTORY = Kind(
    "journal entry",
    "journal entries",
    _HISTORY_COLUMNS,
    (
        Column("time", "TIME", "time", value=_history_time),
        Column("entry", "ENTRY"),
        Column("operation", "OPERATION", value=_history_operation),
        Column("resource", "RESOURCE"),
        Column("id", "ID"),
        Column("outcome", "OUTCOME", value=_history_outcome),
        Column("profile", "PROFILE"),
    ),
    narrowing=(("date", "time"), ("drop", "profile"), ("drop", "resource"), ("drop", "time")),
    id_key="entry",
    never_cut=("id", "entry"),
)


def _undone_line(row: Row) -> list[str]:
    """One result of `undo` as a readable line: the write, the record, the entry it undoes."""
    planned = row.get("status") == "planned"
    operation = row.get("operation")
    id = row.get("id")
    body = format_cell(row.get("body") or {}, "json")
    if operation == "create":
        made = "a new record" if planned else id
        text = f"create {made} in place of {row.get('stands_for')}: {body}"
    elif operation == "update":
        text = f"update {id}: {body}"
    else:
        text = f"delete {id}"
    if row.get("stands_for") and operation != "create":
        text += f" (in place of {row['stands_for']})"
    return [f"{'would ' if planned else ''}{text} (undoes {row.get('entry')})"]


_UNDONE_COLUMNS = (
    Column("entry", "ENTRY"),
    Column("status", "STATUS"),
    Column("operation", "OPERATION"),
    Column("id", "ID"),
    Column("stands_for", "STANDS FOR"),
    Column("body", "BODY", "json"),
)
# What `undo` did (or would do): one row per write, naming the entry it undoes.
UNDONE = Kind("undone entry", "undone entries", _UNDONE_COLUMNS, _UNDONE_COLUMNS, line=_undone_line)


def _target(row: Row) -> str:
    """A recorded request's path with its query string, as it was asked for."""
    query = row.get("query")
    return f"{row.get('path')}?{query}" if query else str(row.get("path"))


def _answered(row: Row) -> str:
    """A recorded request's status, or what stood in for an answer (an injected fault), and
    how many contract violations a proxying serve found in it."""
    status = row.get("status")
    shown = "-" if status is None else str(status)
    fault, rule = row.get("fault"), row.get("fault_rule")
    if fault and rule is not None:
        shown = f"{shown} ({fault}, rule {rule})"
    elif fault:
        shown = f"{shown} ({fault})"
    found = row.get("violations")
    if isinstance(found, list) and found:
        shown += f" ({len(found)} violation{'s' if len(found) > 1 else ''})"
    return shown


# `convrisk sandbox requests`: the request journal of a `convrisk serve`, oldest first.
_REQUEST_COLUMNS = (
    Column("seq", "SEQ", "number"),
    Column("time", "TIME", "time"),
    Column("method", "METHOD"),
    Column("path", "PATH"),
    Column("query", "QUERY"),
    Column("status", "STATUS", "number"),
    Column("idempotency_key", "IDEMPOTENCY_KEY"),
    Column("body", "BODY"),
    Column("body_truncated", "BODY_TRUNCATED", "bool"),
    Column("fault", "FAULT"),
    Column("fault_rule", "FAULT_RULE", "number"),
    Column("duration_ms", "DURATION_MS", "number"),
    Column("violations", "VIOLATIONS", "json"),
)
REQUESTS = Kind(
    "request",
    "requests",
    _REQUEST_COLUMNS,
    (
        Column("seq", "SEQ", "number"),
        Column("time", "TIME", "time"),
        Column("method", "METHOD"),
        Column("path", "PATH", value=_target),
        Column("status", "STATUS", value=_answered),
        Column("duration_ms", "MS", "number"),
        Column("body", "BODY"),
    ),
    narrowing=(("drop", "body"), ("date", "time"), ("drop", "duration_ms")),
    id_key="seq",
    never_cut=("seq",),
)


def _fault_done(row: Row) -> str:
    """What an aimed fault rule does when it fires, in a few words: `503 retry-after 2`,
    `drop`, `drop-after`, with its delay and jq program."""
    parts = []
    if row.get("delay_ms"):
        parts.append(f"delay {row.get('delay_ms')}ms")
    if row.get("status") is not None:
        parts.append(str(row.get("status")))
        if row.get("retry_after") is not None:
            parts.append(f"retry-after {row.get('retry_after')}")
    if row.get("drop"):
        parts.append("drop")
    if row.get("drop_after"):
        parts.append("drop-after")
    if row.get("body_jq") is not None:
        parts.append(f"body-jq {row.get('body_jq')}")
    return " ".join(parts)


_FAULT_RULE_COLUMNS = (
    Column("id", "ID", "number"),
    Column("method", "METHOD"),
    Column("path", "PATH"),
    Column("status", "STATUS", "number"),
    Column("drop", "DROP", "bool"),
    Column("drop_after", "DROP_AFTER", "bool"),
    Column("times", "TIMES", "number"),
    Column("after", "AFTER", "number"),
    Column("delay_ms", "DELAY_MS", "number"),
    Column("retry_after", "RETRY_AFTER", "number"),
    Column("body_jq", "BODY_JQ"),
    Column("seen", "SEEN", "number"),
    Column("fired", "FIRED", "number"),
)
# `convrisk sandbox fault list` and `fault add`: the aimed fault rules of a `convrisk serve`.
FAULT_RULES = Kind(
    "fault rule",
    "fault rules",
    _FAULT_RULE_COLUMNS,
    (
        Column("id", "ID", "number"),
        Column("method", "METHOD"),
        Column("path", "PATH"),
        Column("fault", "FAULT", value=_fault_done),
        Column("after", "AFTER", "number"),
        Column("times", "TIMES", "number"),
        Column("seen", "SEEN", "number"),
        Column("fired", "FIRED", "number"),
    ),
    never_cut=("id",),
)


def _difference_line(row: Row) -> list[str]:
    """One difference `convrisk check` found: `step name: what differs`."""
    return [f"{row.get('step')}: {row.get('difference')}"]


_DIFFERENCE_COLUMNS = (
    Column("step", "STEP"),
    Column("method", "METHOD"),
    Column("target", "TARGET"),
    Column("difference", "DIFFERENCE"),
)
# What `convrisk check` found: one row per difference, as a line in the table format.
DIFFERENCES = Kind(
    "difference",
    "differences",
    _DIFFERENCE_COLUMNS,
    _DIFFERENCE_COLUMNS,
    line=_difference_line,
    formats=("table", "json", "jsonl", "csv"),
)
