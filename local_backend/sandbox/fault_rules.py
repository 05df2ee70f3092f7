"""The aimed fault rules of a sandbox (`/__sandbox/faults`, DESIGN 6.4): each rule read from its
JSON body and checked, kept in the order added, and offered every API request.

A request is offered to the rules in order. Each rule it matches (method and path glob) that is
not spent counts it (`seen`); while `seen <= after` the rule lets it through and the offer goes
on to the next rule; otherwise the rule fires (`fired` += 1; spent once `fired == times`) and
the offer stops. What a firing does to the request is local_backend.serve.faults's.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from convrisk.api_client import sandbox as sandbox_api
from convrisk.api_client.errors import InvalidRequestError
from convrisk.api_client.text import printable
from convrisk.local_backend.store.idempotency import key_reused

# Rules kept at once: one more is refused (400), so a runaway test cannot grow the server.
MAX_RULES = 1000
# The largest body of `POST /__sandbox/faults`: room for the longest rule with every character
# escaped as a surrogate pair (12 bytes), so that a body is refused for what it says (400, naming
# the field), not for its size (413).
MAX_RULE_BYTES = 128 * 1024
# The longest path glob and jq program a rule takes.
MAX_GLOB_LENGTH = sandbox_api.MAX_FAULT_GLOB_LENGTH
MAX_JQ_LENGTH = sandbox_api.MAX_FAULT_JQ_LENGTH
# The largest `times` and `after`, and the longest wait and Retry-After.
MAX_COUNT = sandbox_api.MAX_FAULT_COUNT
MAX_DELAY_MS = sandbox_api.MAX_FAULT_DELAY_MS
MAX_RETRY_AFTER = sandbox_api.MAX_FAULT_RETRY_AFTER
# Idempotency keys remembered, so that a retried add (its answer lost) adds nothing twice.
MAX_KEYS = 1000
# The fields of a new rule and their defaults; `method` and `path` have none (required).
DEFAULTS: dict[str, Any] = {
    "status": None,
    "drop": False,
    "drop_after": False,
    "times": 1,
    "after": 0,
    "delay_ms": 0,
    "retry_after": None,
    "body_jq": None,
}
REQUIRED = ("method", "path")
# A rule's method: `*` (any) or letters, in any case.
METHOD = r"\*|[A-Za-z]{1,20}"
# The HTTP statuses a rule may answer with.
LOWEST_STATUS, HIGHEST_STATUS = sandbox_api.FAULT_STATUSES


@dataclass
class Rule:
    """One aimed fault rule, its counts, and its compiled path glob and jq program."""

    id: int
    method: str
    path: str
    status: int | None
    drop: bool
    drop_after: bool
    times: int
    after: int
    delay_ms: int
    retry_after: int | None
    body_jq: str | None
    seen: int = 0
    fired: int = 0
    match: Callable[[str], object] = field(repr=False, default=lambda path: None)
    # The compiled jq program (jq's Program), loaded only for a rule that has one.
    program: Any = field(repr=False, default=None)

    @property
    def spent(self) -> bool:
        """Whether it has fired `times` times: it matches nothing more."""
        return self.fired >= self.times

    @property
    def kind(self) -> str:
        """The fault the request journal names: the status, drop, drop-after, body-jq or delay."""
        if self.status is not None:
            return str(self.status)
        if self.drop:
            return "drop"
        if self.drop_after:
            return "drop-after"
        return "body-jq" if self.body_jq is not None else "delay"

    def matches(self, method: str, path: str) -> bool:
        """Whether this request is one the rule aims at (method in any case, or `*`; the glob
        on the path as sent, without the query)."""
        return (self.method == "*" or self.method == method.upper()) and bool(self.match(path))

    def as_json(self) -> dict[str, Any]:
        """The rule as the admin routes show it, its fields in FAULT_FIELDS order."""
        return {name: getattr(self, name) for name in sandbox_api.FAULT_FIELDS}


class FaultRules:
    """The rules of one server, in the order added; ids count up from 1 until a reset."""

    def __init__(self) -> None:
        self._rules: list[Rule] = []
        self._next_id = 1
        self._keys: dict[str, tuple[bytes, Rule]] = {}  # the body each key came with

    def add(self, body: bytes, idempotency_key: str | None = None) -> tuple[dict[str, Any], bool]:
        """Add the rule this body describes: the rule as JSON, and whether it is new (False:
        the answer to an earlier add with the same Idempotency-Key, nothing added)."""
        if idempotency_key is not None and idempotency_key in self._keys:
            sent, kept = self._keys[idempotency_key]
            if sent != body:
                raise key_reused(idempotency_key)
            return kept.as_json(), False
        if len(self._rules) >= MAX_RULES:
            # A conflict with what the sandbox holds, not a fault of the body: 409.
            raise InvalidRequestError(
                f"The sandbox holds {MAX_RULES} fault rules, the most it keeps; clear them "
                "(DELETE /__sandbox/faults) first.",
                status=409,
            )
        fields = parse(body)
        rule = Rule(self._next_id, **fields)
        rule.match = re.compile(fnmatch.translate(rule.path)).match
        if rule.body_jq is not None:
            rule.program = compile_jq(rule.body_jq)
        self._next_id += 1
        self._rules.append(rule)
        if idempotency_key is not None:
            if len(self._keys) >= MAX_KEYS:
                self._keys.pop(next(iter(self._keys)))
            self._keys[idempotency_key] = (body, rule)
        return rule.as_json(), True

    def listed(self) -> list[dict[str, Any]]:
        """Every rule as JSON, in the order added."""
        return [rule.as_json() for rule in self._rules]

    def clear(self) -> int:
        """Remove every rule (ids go on counting, so the journal's rule ids stay unambiguous):
        how many there were."""
        count = len(self._rules)
        self._rules.clear()
        self._keys.clear()
        return count

    def reset(self) -> None:
        """Remove every rule, and count ids from 1 again (a reset clears the journal too)."""
        self.clear()
        self._next_id = 1

    def offer(self, method: str, path: str) -> Rule | None:
        """Offer one API request to the rules in order: the rule that fires on it, or None."""
        for rule in self._rules:
            if rule.spent or not rule.matches(method, path):
                continue
            rule.seen += 1
            if rule.seen <= rule.after:
                continue
            rule.fired += 1
            return rule
        return None


def parse(body: bytes) -> dict[str, Any]:
    """The fields of a new rule from its JSON body, defaults filled in; InvalidRequestError
    (400, naming the field) for anything else."""
    try:
        value = json.loads(body.decode("utf-8")) if body.strip() else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidRequestError("The body is not JSON: send a fault rule object.") from None
    if not isinstance(value, dict):
        raise InvalidRequestError(
            'The body must be a JSON object: a fault rule, e.g. {"method": "POST", "path": '
            '"/v1/conversations", "status": 503}.'
        )
    allowed = (*REQUIRED, *DEFAULTS)
    for name in value:
        if name not in allowed:
            raise InvalidRequestError(
                f"Unknown field {printable(name)!r}; a fault rule has {', '.join(allowed)}.",
                param=name,
            )
    for name in REQUIRED:
        if name not in value:
            raise InvalidRequestError(f"{name} is required.", param=name)
    fields = {**DEFAULTS, **value}
    fields["method"] = _method(fields["method"])
    fields["path"] = _glob(fields["path"])
    fields["status"] = _number(fields, "status", LOWEST_STATUS, HIGHEST_STATUS, null=True)
    fields["times"] = _number(fields, "times", 1, MAX_COUNT)
    fields["after"] = _number(fields, "after", 0, MAX_COUNT)
    fields["delay_ms"] = _number(fields, "delay_ms", 0, MAX_DELAY_MS)
    fields["retry_after"] = _number(fields, "retry_after", 0, MAX_RETRY_AFTER, null=True)
    for name in ("drop", "drop_after"):
        if not isinstance(fields[name], bool):
            raise InvalidRequestError(f"{name} must be true or false.", param=name)
    program = fields["body_jq"]
    if program is not None and not isinstance(program, str):
        raise InvalidRequestError("body_jq must be a jq program (text) or null.", param="body_jq")
    if program is not None and len(program) > MAX_JQ_LENGTH:
        raise InvalidRequestError(f"body_jq is over {MAX_JQ_LENGTH} characters.", param="body_jq")
    _check_together(fields)
    return fields


def _check_together(fields: dict[str, Any]) -> None:
    """The rules between fields: one fault at most, something to do, what each one needs."""
    given = [
        name
        for name in ("status", "drop", "drop_after")
        if fields[name] is not None and fields[name] is not False
    ]
    if len(given) > 1:
        raise InvalidRequestError(
            f"Give one of status, drop and drop_after, not {' and '.join(given)}.",
            param=given[1],
        )
    if not given and not fields["delay_ms"] and fields["body_jq"] is None:
        raise InvalidRequestError(
            "The rule does nothing: give status, drop, drop_after, a delay_ms over 0, or body_jq.",
            param="status",
        )
    if fields["retry_after"] is not None and fields["status"] is None:
        raise InvalidRequestError(
            "retry_after needs a status (e.g. 503 or 429) to go with.", param="retry_after"
        )
    if fields["body_jq"] is not None and (fields["drop"] or fields["drop_after"]):
        raise InvalidRequestError(
            "body_jq changes the answer's body; a dropped connection sends none.",
            param="body_jq",
        )


def _method(value: object) -> str:
    if not isinstance(value, str) or re.fullmatch(METHOD, value) is None:
        raise InvalidRequestError(
            "method must be an HTTP method such as GET or POST (letters, at most 20), or * for "
            "any.",
            param="method",
        )
    return value.upper()


def _glob(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidRequestError(
            "path must be a glob on the path (text), e.g. /v1/conversations*.", param="path"
        )
    if len(value) > MAX_GLOB_LENGTH:
        raise InvalidRequestError(f"path is over {MAX_GLOB_LENGTH} characters.", param="path")
    problem = sandbox_api.fault_glob_problem(value)
    if problem is not None:
        raise InvalidRequestError(
            f"path {printable(value)!r} is not a valid glob: {problem}.", param="path"
        )
    return value


def _number(fields: dict[str, Any], name: str, low: int, high: int, *, null: bool = False) -> Any:
    value = fields[name]
    if value is None and null:
        return None
    what = f"a whole number from {low} to {high}" + (", or null" if null else "")
    # 254.0 is a whole number to JSON Schema ("integer"), as to JSON; true is not.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidRequestError(f"{name} must be {what}.", param=name)
    return value


def compile_jq(program: str) -> Any:
    """The jq program compiled (jq is loaded only here), or a 409 naming body_jq.

    409, not 400: whether text compiles is the one rule of the body that JSON Schema cannot
    state, and a client held to the OpenAPI document (schemathesis: every schema-valid body
    accepted, with no configuration) takes 409 as a refusal on grounds beyond the schema.
    """
    import jq

    try:
        return jq.compile(program)
    except ValueError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        message = first.removeprefix("jq: error: ").rstrip(":")
        raise InvalidRequestError(
            f"body_jq does not compile: {printable(message)}", param="body_jq", status=409
        ) from None
