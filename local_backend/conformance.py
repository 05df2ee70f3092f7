"""`convrisk check`'s scenario: the same requests to a service and to an in-process sandbox, each
answer of the service held to the OpenAPI document and compared with the sandbox's (ids and
service-set times masked). Prints nothing: the command line reports what it returns.
"""

from __future__ import annotations

import json
import math
import secrets
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from convrisk.api_client.errors import ConvriskError
from convrisk.api_client.params import MAX_DETAILS_DEPTH, MAX_TIMESTAMP, exceeds_depth
from convrisk.api_client.raw import RawAnswer
from convrisk.api_client.resources import CONVERSATIONS, RISK_PROFILES, Field
from convrisk.api_client.text import safe_line

Send = Callable[[str, str, bytes | None], RawAnswer]

# What every record the check creates carries, so that an operator can find it:
# conversations have this group_id (one has it as contact_id), risk profiles this customer_id,
# and their details {"convrisk_check": <run id>}.
MARKER_PREFIX = "convrisk-check-"
DETAILS_KEY = "convrisk_check"
# Fields the service sets to the time: checked to be Unix seconds near now, then masked.
SERVICE_TIMES = frozenset({"created_at", "updated_at", "last_active_at", "last_opened_at"})
TIME_MASK = "<time>"
# How far a service's clock may be from this machine's before its times count as wrong.
# Error fields DESIGN 1 leaves to the service's wording: masked before comparing.
ERROR_FREE_TEXT = ("message", "code")
NOT_COMPARED = "<not compared: the service's page holds records of others>"
# Levels of objects and arrays an answer is compared to: past any answer the document describes
# (details nest up to MAX_DETAILS_DEPTH, inside a record inside a page), short of the recursion
# limit.
MAX_COMPARED_DEPTH = 2 * MAX_DETAILS_DEPTH
# A value in a difference line is cut to this many characters.
SHOWN_CHARS = 60
# A time a client sets: any fixed past time, the same on both sides.
SET_TIME = 1_700_000_000
GROUP_CONVERSATIONS = 5
RISK_PROFILE_TYPES = ("moderate", "aggressive", "conservative")
PAGE = 2
# The records a sweep for the run's marker reads, per resource (a run creates fewer).
SWEEP_LIMIT = 100


class Finding(Protocol):
    """A contract violation as local_backend.sandbox.contract reports it."""

    def line(self) -> str:
        """The violation in one line."""
        ...


class AnswerRules(Protocol):
    """What holds an answer to the OpenAPI document (local_backend.sandbox.contract.Contract)."""

    def check_answer(
        self, method: str, path: str, status: int, headers: Mapping[str, str], body: bytes
    ) -> Sequence[Finding]:
        """The violations of one answer; empty when it holds."""
        ...


@dataclass(frozen=True)
class Step:
    """One request of the scenario; `{symbol}` in `target` stands for a record's id."""

    name: str
    method: str
    target: str
    body: Any = None
    # The symbol the record this create makes is known by ("c1": conversation #1).
    creates: str | None = None
    # The symbol of the record this delete removes.
    deletes: str | None = None
    # A list on a possibly shared service: only the scenario's records are compared.
    shared_list: bool = False
    # Sent with a wrong token.
    bad_token: bool = False


@dataclass
class StepResult:
    """What one step found: the request as sent to the service, its status and each
    difference, a line each."""

    name: str
    method: str
    target: str
    status: int | None
    differences: list[str] = field(default_factory=list)
    seconds: float = 0.0  # how long the service took to answer


@dataclass
class Side:
    """One end of the comparison: how to send, with the right and a wrong token, and the ids
    of the records the scenario created there, by symbol."""

    send: Send
    send_bad_token: Send
    ids: dict[str, str] = field(default_factory=dict)
    live: dict[str, str] = field(default_factory=dict)  # created and not deleted yet
    collections: dict[str, str] = field(default_factory=dict)  # where each was created

    def symbol_of(self, value: str) -> str | None:
        """The symbol of an id this side created, else None."""
        for symbol, known in self.ids.items():
            if known == value:
                return symbol
        return None


def new_run_id() -> str:
    """An id for one run of the check: its records carry it."""
    return secrets.token_hex(6)


def marker(run_id: str) -> str:
    """The group_id / customer_id / contact_id the run's records carry."""
    return f"{MARKER_PREFIX}{run_id}"


def shown_symbol(symbol: str) -> str:
    """`c1` as `conversation #1`, `r2` as `risk profile #2` (for differences and messages)."""
    if symbol.startswith("x"):
        return f"unexpected record #{symbol[1:]}"
    noun = CONVERSATIONS.noun if symbol.startswith("c") else RISK_PROFILES.noun
    return f"{noun} #{symbol[1:]}"


def records_created() -> int:
    """How many records a run creates (the protected profile's question)."""
    return GROUP_CONVERSATIONS + 1 + len(RISK_PROFILE_TYPES)


def scenario(run_id: str) -> list[Step]:
    """The steps of one run, in order: create both kinds, get each, update every settable
    field, list with each filter, page forwards and back, the error answers of DESIGN 1
    (bad id, bad body, bad token), delete. Records not deleted here are removed by `clean_up`."""
    mark = marker(run_id)
    q = quote(mark, safe="")
    conv, rp = CONVERSATIONS.path, RISK_PROFILES.path
    steps: list[Step] = []
    groups = [f"c{n}" for n in range(1, GROUP_CONVERSATIONS + 1)]
    contact = f"c{GROUP_CONVERSATIONS + 1}"
    profiles = [f"r{n}" for n in range(1, len(RISK_PROFILE_TYPES) + 1)]
    for symbol in groups:
        steps.append(
            Step(f"create {shown_symbol(symbol)}", "POST", conv, {"group_id": mark}, symbol)
        )
    steps.append(
        Step(f"create {shown_symbol(contact)}", "POST", conv, {"contact_id": mark}, contact)
    )
    for n, (symbol, kind) in enumerate(zip(profiles, RISK_PROFILE_TYPES, strict=True)):
        body = {
            "customer_id": mark,
            "profile_type": kind,
            "score": [42, 7.5, 90][n % 3],
            "details": {DETAILS_KEY: run_id, "n": n + 1},
        }
        steps.append(Step(f"create {shown_symbol(symbol)}", "POST", rp, body, symbol))
    for symbol in [*groups, contact]:
        steps.append(Step(f"get {shown_symbol(symbol)}", "GET", f"{conv}/{{{symbol}}}"))
    for symbol in profiles:
        steps.append(Step(f"get {shown_symbol(symbol)}", "GET", f"{rp}/{{{symbol}}}"))
    for symbol, what, body in _conversation_updates(mark):
        name = f"update {shown_symbol(symbol)} {what}"
        steps.append(Step(name, "PUT", f"{conv}/{{{symbol}}}", body))
    rp_updates: list[tuple[str, dict[str, Any]]] = [
        ("profile_type", {"profile_type": "aggressive"}),
        ("score", {"score": 55.5}),
        ("details", {"details": {DETAILS_KEY: run_id, "updated": True}}),
    ]
    for what, body in rp_updates:
        steps.append(Step(f"update {shown_symbol('r1')} {what}", "PUT", f"{rp}/{{r1}}", body))
    steps += _lists(conv, rp, q)
    steps += _errors(conv, rp, mark)
    steps.append(
        Step(f"delete {shown_symbol(contact)}", "DELETE", f"{conv}/{{{contact}}}", deletes=contact)
    )
    steps.append(Step(f"get deleted {shown_symbol(contact)}", "GET", f"{conv}/{{{contact}}}"))
    last = profiles[-1]
    steps.append(Step(f"delete {shown_symbol(last)}", "DELETE", f"{rp}/{{{last}}}", deletes=last))
    steps.append(Step(f"get deleted {shown_symbol(last)}", "GET", f"{rp}/{{{last}}}"))
    steps.append(Step(f"delete deleted {shown_symbol(last)}", "DELETE", f"{rp}/{{{last}}}"))
    return steps


def _conversation_updates(mark: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every settable field of a conversation, from the description, as (symbol, what, body):
    c1 has each field that is no time set (a boolean true, a string the run's marker), c2 each
    time; c3 each nullable field set then set to null; c4 an update that changes nothing."""
    settable = CONVERSATIONS.updatable()
    values = {f.name: _set_value(f, mark) for f in settable}
    updates = [("c1", f.name, {f.name: values[f.name]}) for f in settable if f.type != "timestamp"]
    updates += [("c2", f.name, {f.name: values[f.name]}) for f in settable if f.type == "timestamp"]
    for f in settable:
        if f.nullable:
            updates.append(("c3", f.name, {f.name: values[f.name]}))
            updates.append(("c3", f"{f.name} to null", {f.name: None}))
    updates.append(("c4", "nothing", {}))
    return updates


def _set_value(field: Field, mark: str) -> Any:
    """The value the scenario sets a settable field to: true, a fixed past time, the marker."""
    if field.type == "boolean":
        return True
    if field.type == "timestamp":
        return SET_TIME
    return mark


def _lists(conv: str, rp: str, q: str) -> list[Step]:
    """Lists with each filter of the interface (on the run's group or customer, and alone),
    and paging both ways with a small limit."""
    group, customer = f"group_id={q}", f"customer_id={q}"
    steps = [Step("list conversations by group_id", "GET", f"{conv}?{group}&limit=100")]
    flags = [f.name for f in CONVERSATIONS.interface_filters() if f.type == "boolean"]
    for flag in flags:
        for value in ("true", "false"):
            steps.append(
                Step(
                    f"list conversations {flag}={value} of the group",
                    "GET",
                    f"{conv}?{flag}={value}&{group}&limit=100",
                )
            )
        steps.append(
            Step(
                f"list conversations {flag}=true",
                "GET",
                f"{conv}?{flag}=true&limit=100",
                shared_list=True,
            )
        )
    steps.append(Step("list conversations", "GET", f"{conv}?limit=100", shared_list=True))
    # Forwards from the newest: c5 c4 | c3 c2 | c1; back from c1: c3 c2 | c5 c4.
    page = f"{conv}?{group}&limit={PAGE}"
    steps += [
        Step("page conversations: first page", "GET", page),
        Step("page conversations: starting_after", "GET", f"{page}&starting_after={{c4}}"),
        Step("page conversations: last page", "GET", f"{page}&starting_after={{c2}}"),
        Step("page conversations: ending_before", "GET", f"{page}&ending_before={{c1}}"),
        Step("page conversations: back to the first", "GET", f"{page}&ending_before={{c3}}"),
    ]
    steps.append(Step("list risk profiles by customer_id", "GET", f"{rp}?{customer}&limit=100"))
    steps.append(
        Step(
            "list risk profiles by customer_id and profile_type",
            "GET",
            f"{rp}?{customer}&profile_type=aggressive&limit=100",
        )
    )
    steps.append(
        Step(
            "list risk profiles by profile_type",
            "GET",
            f"{rp}?profile_type=aggressive&limit=100",
            shared_list=True,
        )
    )
    steps.append(Step("list risk profiles", "GET", f"{rp}?limit=100", shared_list=True))
    rp_page = f"{rp}?{customer}&limit={PAGE}"
    steps += [
        Step("page risk profiles: first page", "GET", rp_page),
        Step("page risk profiles: starting_after", "GET", f"{rp_page}&starting_after={{r2}}"),
        Step("page risk profiles: ending_before", "GET", f"{rp_page}&ending_before={{r1}}"),
    ]
    return steps


def _errors(conv: str, rp: str, mark: str) -> list[Step]:
    """The error answers of DESIGN 1: a bad id, a bad body, a bad token, a bad query."""
    absent = "0" * 26
    return [
        Step(
            "get a conversation that does not exist",
            "GET",
            f"{conv}/{CONVERSATIONS.prefix}{absent}",
        ),
        Step(
            "get a risk profile that does not exist", "GET", f"{rp}/{RISK_PROFILES.prefix}{absent}"
        ),
        Step(
            "create a conversation with contact_id and group_id",
            "POST",
            conv,
            {"contact_id": mark, "group_id": mark},
        ),
        Step("create a conversation with neither", "POST", conv, {}),
        Step(
            "create a risk profile with a text score",
            "POST",
            rp,
            {"customer_id": mark, "profile_type": "moderate", "score": "high", "details": {}},
        ),
        Step(
            "create a risk profile without details",
            "POST",
            rp,
            {"customer_id": mark, "profile_type": "moderate", "score": 1},
        ),
        Step(
            "update a conversation with an unknown field",
            "PUT",
            f"{conv}/{{c4}}",
            {"colour": "red"},
        ),
        Step(
            "update a risk profile's customer_id", "PUT", f"{rp}/{{r1}}", {"customer_id": "other"}
        ),
        Step("list conversations with limit=0", "GET", f"{conv}?limit=0"),
        Step("list conversations with muted=maybe", "GET", f"{conv}?muted=maybe"),
        Step("list conversations with a wrong token", "GET", f"{conv}?limit=1", bad_token=True),
        Step(
            "create a conversation with a wrong token",
            "POST",
            conv,
            {"group_id": mark},
            bad_token=True,
        ),
    ]


class Check:
    """One run of the scenario on a service and on the sandbox, step by step."""

    def __init__(
        self,
        service: Side,
        sandbox: Side,
        rules: AnswerRules,
        run_id: str,
    ) -> None:
        self.service = service
        self.sandbox = sandbox
        self.rules = rules
        self.run_id = run_id
        self.steps = scenario(run_id)
        self._unexpected = 0

    def run(self) -> Iterator[StepResult]:
        """Each step's result as it is done. A failure to get an answer from the service
        (connection, timeout), or a 401 to its token, is raised: what was created so far stays
        in `service.live`."""
        for step in self.steps:
            yield self._run(step)

    def _run(self, step: Step) -> StepResult:
        started = time.monotonic()
        ours = self._answer(self.service, step)
        seconds = time.monotonic() - started
        if ours.status == 401 and not step.bad_token:
            # The profile's token is refused: every step would fail alike; say that once.
            raise ours.error()
        theirs = self._answer(self.sandbox, step)
        target = _resolve(step.target, self.service.ids)
        result = StepResult(step.name, step.method, target, ours.status, seconds=seconds)
        path = target.partition("?")[0]
        headers = {"content-type": ours.content_type} if ours.content_type else {}
        for finding in self.rules.check_answer(step.method, path, ours.status, headers, ours.body):
            result.differences.append(f"contract: {safe_line(finding.line())}")
        self._note_records(self.service, step, ours)
        self._note_records(self.sandbox, step, theirs)
        if ours.status != theirs.status:
            result.differences.append(
                f"status: service sent {ours.status}, the sandbox {theirs.status}"
            )
            return result
        mine, foreign = self._masked(self.service, step, ours, result.differences)
        reference, _ = self._masked(self.sandbox, step, theirs, [])
        if foreign and isinstance(mine, dict) and isinstance(reference, dict):
            # Whether more pages exist depends on the others' records too.
            mine["has_more"] = reference["has_more"] = NOT_COMPARED
        result.differences += list(differences(mine, reference))
        return result

    def _answer(self, side: Side, step: Step) -> RawAnswer:
        target = _resolve(step.target, side.ids)
        body = None if step.body is None else json.dumps(step.body).encode()
        send = side.send_bad_token if step.bad_token else side.send
        return send(step.method, target, body)

    def _note_records(self, side: Side, step: Step, answer: RawAnswer) -> None:
        """Keep the ids of what a create made (also a create that should have been refused:
        it is cleaned up too), and forget what a delete removed."""
        if step.method == "POST" and answer.ok:
            made = _json(answer.body)
            made_id = made.get("id") if isinstance(made, dict) else None
            if isinstance(made_id, str) and made_id:
                symbol = step.creates
                if symbol is None:
                    self._unexpected += 1
                    symbol = f"x{self._unexpected}"
                side.ids.setdefault(symbol, made_id)
                side.live[symbol] = made_id
                side.collections[symbol] = step.target.partition("?")[0]
        if step.deletes is not None and (answer.ok or answer.status == 404):
            side.live.pop(step.deletes, None)

    def _masked(
        self, side: Side, step: Step, answer: RawAnswer, problems: list[str]
    ) -> tuple[Any, bool]:
        """The body with this side's ids as symbols, its times checked (each problem added to
        `problems`) and masked, and of a shared list only the scenario's records; and whether
        that list held records of others."""
        body = _json(answer.body)
        if isinstance(body, _Unread):
            return body, False
        foreign = False
        if answer.status >= 400 and isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = dict(body["error"])
            for name in ERROR_FREE_TEXT:
                if isinstance(error.get(name), str):
                    error[name] = f"<{name}>"
            body = {**body, "error": error}
        if step.shared_list and isinstance(body, dict) and isinstance(body.get("data"), list):
            kept = [
                item
                for item in body["data"]
                if isinstance(item, dict)
                and isinstance(item.get("id"), str)
                and side.symbol_of(item["id"]) is not None
            ]
            foreign = len(kept) != len(body["data"])
            body = {**body, "data": kept}
        return self._mask(side, body, "", problems), foreign

    def _mask(self, side: Side, value: Any, where: str, problems: list[str]) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                here = f"{where}/{_pointer(key)}"
                if key in SERVICE_TIMES and item is not None:
                    problem = self._time_problem(item)
                    if problem is not None:
                        problems.append(f"body {here}: service sent {_shown(item)}, {problem}")
                    out[key] = TIME_MASK
                else:
                    out[key] = self._mask(side, item, here, problems)
            return out
        if isinstance(value, list):
            return [
                self._mask(side, item, f"{where}/{n}", problems) for n, item in enumerate(value)
            ]
        if isinstance(value, str):
            symbol = side.symbol_of(value)
            return f"<{shown_symbol(symbol)}>" if symbol is not None else value
        return value

    def _time_problem(self, value: Any) -> str | None:
        """Why a time the service set is not one: Unix seconds within the document's range.

        A sandbox's --clock may be anywhere in it; milliseconds of any date since 1978 are past it.
        """
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "not a number of Unix seconds"
        if not math.isfinite(value) or not 0 <= value <= MAX_TIMESTAMP:
            return "not a time in Unix seconds (0 to the end of year 9999)"
        return None

    def clean_up(self) -> tuple[list[str], list[tuple[str, str]]]:
        """Delete every record the scenario left on the service, and any other carrying the
        run's marker: the ids deleted, and those left with why. Best effort: one DELETE each
        (with the client's retries)."""
        self._sweep()
        deleted: list[str] = []
        left: list[tuple[str, str]] = []
        for symbol, record_id in list(self.service.live.items()):
            path = self.service.collections[symbol]
            why = ""
            try:
                answer = self.service.send("DELETE", f"{path}/{quote(record_id, safe='')}", None)
            except ConvriskError as exc:
                why = safe_line(str(exc))
            else:
                if answer.ok or answer.status == 404:
                    deleted.append(record_id)
                    self.service.live.pop(symbol, None)
                    continue
                why = f"HTTP {answer.status}"
            left.append((record_id, why))
        return deleted, left

    def _sweep(self) -> None:
        """Count among the records to delete those that carry the run's marker and that the
        check does not know of (a create whose answer was lost to Ctrl-C or a dropped
        connection): one page of each resource, filtered by the marker. A record is taken only
        when its own field holds the marker, whatever the service made of the filter."""
        mark = marker(self.run_id)
        known = set(self.service.live.values())
        for path, name in ((CONVERSATIONS.path, "group_id"), (RISK_PROFILES.path, "customer_id")):
            target = f"{path}?{name}={quote(mark, safe='')}&limit={SWEEP_LIMIT}"
            try:
                answer = self.service.send("GET", target, None)
            except ConvriskError:
                continue
            page = _json(answer.body) if answer.ok else None
            data = page.get("data") if isinstance(page, dict) else None
            for item in data if isinstance(data, list) else []:
                if not isinstance(item, dict) or item.get(name) != mark:
                    continue
                item_id = item.get("id")
                if isinstance(item_id, str) and item_id and item_id not in known:
                    known.add(item_id)
                    self._unexpected += 1
                    symbol = f"x{self._unexpected}"
                    self.service.live[symbol] = item_id
                    self.service.collections[symbol] = path


class _Unread:
    """A body that is not compared: what it is, as a difference line shows it."""

    def __init__(self, shown: str) -> None:
        self.shown = shown

    def __repr__(self) -> str:
        return f"<{self.shown}>"


_NOT_JSON: Any = _Unread("no JSON")
_TOO_DEEP: Any = _Unread(f"JSON nested more than {MAX_COMPARED_DEPTH} levels deep")


def _json(body: bytes) -> Any:
    """The body as JSON; _NOT_JSON, or _TOO_DEEP for JSON nested too deep to walk (the
    comparison recurses)."""
    try:
        value = json.loads(body) if body else _NOT_JSON
    except (ValueError, RecursionError):
        return _NOT_JSON
    return _TOO_DEEP if exceeds_depth(value, MAX_COMPARED_DEPTH) else value


def _resolve(target: str, ids: Mapping[str, str]) -> str:
    """`target` with each `{symbol}` replaced by this side's id (percent-encoded); a symbol
    this side has no record for stays a name that cannot be an id."""
    return target.format_map(_Ids(ids))


class _Ids(dict[str, str]):
    def __init__(self, ids: Mapping[str, str]) -> None:
        super().__init__({k: quote(v, safe="") for k, v in ids.items()})

    def __missing__(self, key: str) -> str:
        return f"missing-{key}"


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _shown(value: Any) -> str:
    """A value in a difference line: JSON, cut short, safe for a terminal."""
    if isinstance(value, _Unread):
        return value.shown
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if len(text) > SHOWN_CHARS:
        text = text[: SHOWN_CHARS - 3] + "..."
    return safe_line(text)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: 42 and 42.0 are the same number, true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def differences(service: Any, sandbox: Any, where: str = "") -> Iterator[str]:
    """Each way `service` differs from `sandbox`, a line each, named by JSON pointer. A field
    the sandbox lacks is no difference (the document allows extra fields)."""
    label = f"body {where}" if where else "body"
    if isinstance(service, dict) and isinstance(sandbox, dict):
        for key, expected in sandbox.items():
            here = f"{where}/{_pointer(key)}"
            if key not in service:
                yield f"body {here}: service sent nothing, the sandbox {_shown(expected)}"
            else:
                yield from differences(service[key], expected, here)
        return
    if isinstance(service, list) and isinstance(sandbox, list):
        if len(service) != len(sandbox):
            yield f"{label}: service sent {len(service)} items, the sandbox {len(sandbox)}"
        for n, (mine, reference) in enumerate(zip(service, sandbox, strict=False)):
            yield from differences(mine, reference, f"{where}/{n}")
        return
    if not _same(service, sandbox):
        yield f"{label}: service sent {_shown(service)}, the sandbox {_shown(sandbox)}"


class Sandbox:
    """The reference: a LocalBackend over a SQLite file of its own, behind the wire rules of
    `convrisk serve` (no socket), with a token and a wrong one."""

    def __init__(self, path: Path) -> None:
        from convrisk.local_backend.backend import LocalBackend
        from convrisk.local_backend.sandbox.wire import Wire

        self._backend = LocalBackend(path)
        token = secrets.token_urlsafe(16)
        self._wire = Wire(self._backend, token)
        self._token = token
        self._wrong = secrets.token_urlsafe(16)

    def side(self) -> Side:
        """This sandbox as one end of the comparison."""
        return Side(self._sender(self._token), self._sender(self._wrong))

    def _sender(self, token: str) -> Send:
        def send(method: str, target: str, body: bytes | None) -> RawAnswer:
            path, _, query = target.partition("?")
            headers = [("authorization", f"Bearer {token}")]
            if body is not None:
                headers.append(("content-type", "application/json"))
            if method == "POST":
                headers.append(("idempotency-key", str(uuid.uuid4())))
            answer = self._wire.handle(method, path, query, headers, body or b"")
            return RawAnswer(answer.status, answer.body, content_type="application/json")

        return send

    def close(self) -> None:
        """Close its database."""
        self._backend.close()
