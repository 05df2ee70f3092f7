"""The OpenAPI path and schemas of the aimed fault rules (`/__sandbox/faults`), from the checks of
local_backend.sandbox.fault_rules: what the document lets through is what the route takes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from convrisk.api_client.sandbox import FAULT_FIELDS, FAULT_GLOB
from convrisk.local_backend.sandbox import fault_rules as rules
from convrisk.local_backend.sandbox.request_journal import FAULTS_PATH

_REF = "#/components/schemas/{model}"
_STATUS = {"type": "integer", "minimum": rules.LOWEST_STATUS, "maximum": rules.HIGHEST_STATUS}
_COUNT = {"type": "integer", "maximum": rules.MAX_COUNT}


def _rule_fields() -> dict[str, Any]:
    """The fields of a rule as a client sends them."""
    return {
        "method": {
            "type": "string",
            "pattern": f"^({rules.METHOD})$",
            "description": "The HTTP method it aims at, in any case, or * for any.",
        },
        "path": {
            "type": "string",
            "maxLength": rules.MAX_GLOB_LENGTH,
            "pattern": f"^{FAULT_GLOB}$",
            "description": "A glob (fnmatch: *, ?, [...]) on the path as sent, without the "
            "query; printable ASCII, each [ closed by ], a set not begun with ] or !].",
        },
        "status": {
            "type": ["integer", "null"],
            "minimum": rules.LOWEST_STATUS,
            "maximum": rules.HIGHEST_STATUS,
            "default": None,
            "description": "400 and over: this answer, in the error shape, instead of the "
            "operation (which is not done). Under 400: the operation is done and its answer "
            "sent with this status.",
        },
        "drop": {
            "type": "boolean",
            "default": False,
            "description": "Close the connection before doing the operation.",
        },
        "drop_after": {
            "type": "boolean",
            "default": False,
            "description": "Do the operation, then close the connection without its answer.",
        },
        "times": {
            **_COUNT,
            "minimum": 1,
            "default": 1,
            "description": "How many matching requests it fires on; then it is spent.",
        },
        "after": {
            **_COUNT,
            "minimum": 0,
            "default": 0,
            "description": "How many matching requests it lets through first.",
        },
        "delay_ms": {
            "type": "integer",
            "minimum": 0,
            "maximum": rules.MAX_DELAY_MS,
            "default": 0,
            "description": "Wait this long first (a rule may be only a delay).",
        },
        "retry_after": {
            "type": ["integer", "null"],
            "minimum": 0,
            "maximum": rules.MAX_RETRY_AFTER,
            "default": None,
            "description": "Seconds, sent as Retry-After with the status (which it needs).",
        },
        "body_jq": {
            "type": ["string", "null"],
            "maxLength": rules.MAX_JQ_LENGTH,
            "default": None,
            "description": "A jq program: the answer's body (the error shape, or the "
            "operation's answer) becomes its first output. It must compile (else 409); one that "
            "fails as it runs makes a 500 naming the rule.",
        },
    }


def _given(name: str) -> dict[str, Any]:
    """A field given with a value that asks for something (a number, true, a program)."""
    values: dict[str, dict[str, Any]] = {
        "status": {"type": "integer"},
        "drop": {"const": True},
        "drop_after": {"const": True},
        "delay_ms": {"type": "integer", "minimum": 1},
        "retry_after": {"type": "integer"},
        "body_jq": {"type": "string"},
    }
    return {"required": [name], "properties": {name: values[name]}}


def _both(first: str, second: str) -> dict[str, Any]:
    return {"not": {"allOf": [_given(first), _given(second)]}}


def schemas() -> dict[str, Any]:
    """The schemas of a new rule, a rule as kept, and the list of them."""
    fields = _rule_fields()
    new = {
        "type": "object",
        "additionalProperties": False,
        "required": list(rules.REQUIRED),
        "properties": fields,
        "description": "One of status, drop and drop_after at most, and something to do; "
        "retry_after only with a status; body_jq not with a drop.",
        "allOf": [
            _both("status", "drop"),
            _both("status", "drop_after"),
            _both("drop", "drop_after"),
            {
                "anyOf": [
                    _given(name) for name in ("status", "drop", "drop_after", "delay_ms", "body_jq")
                ]
            },
            {"anyOf": [{"not": _given("retry_after")}, _given("status")]},
            _both("body_jq", "drop"),
            _both("body_jq", "drop_after"),
        ],
    }
    counted = {
        "id": {"type": "integer", "minimum": 1, "description": "1, 2, ... in the order added."},
        "seen": {
            "type": "integer",
            "minimum": 0,
            "description": "Matching requests it was offered (while not spent).",
        },
        "fired": {"type": "integer", "minimum": 0, "description": "Requests it fired on."},
    }
    kept = {
        name: {key: value for key, value in schema.items() if key != "default"}
        for name, schema in {**fields, **counted}.items()
    }
    kept["method"] = {**kept["method"], "pattern": "^(\\*|[A-Z]{1,20})$"}
    rule = {
        "type": "object",
        "additionalProperties": False,
        "required": list(FAULT_FIELDS),
        "properties": {name: kept[name] for name in FAULT_FIELDS},
    }
    listed = {
        "type": "object",
        "additionalProperties": False,
        "required": ["data"],
        "properties": {
            "data": {
                "type": "array",
                "maxItems": rules.MAX_RULES,
                "items": {"$ref": _REF.format(model="SandboxFaultRule")},
            }
        },
    }
    return {"SandboxFaultRuleNew": new, "SandboxFaultRule": rule, "SandboxFaultRules": listed}


def paths(errors: Callable[..., dict[str, Any]], tag: str) -> dict[str, Any]:
    """The path item of /__sandbox/faults; `errors(*statuses)` gives the error answers."""
    common = errors(400, 401, 500, 503)

    def ok(status: int, model: str, description: str) -> dict[str, Any]:
        schema = {"$ref": _REF.format(model=model)}
        return {
            str(status): {
                "description": description,
                "content": {"application/json": {"schema": schema}},
            }
        }

    return {
        FAULTS_PATH: {
            "get": {
                "operationId": "sandbox_faults",
                "summary": "The aimed fault rules, in the order added, with their counts",
                "tags": [tag],
                "responses": {**ok(200, "SandboxFaultRules", "The rules."), **common},
            },
            "post": {
                "operationId": "sandbox_add_fault",
                "summary": "Add an aimed fault rule, after those already there",
                "description": "A request to the API (not /__sandbox/, not /openapi.json) is "
                "offered to the rules in order: each rule it matches that is not spent counts "
                "it (seen); while seen <= after the rule lets it through to the next; otherwise "
                "it fires (fired += 1; spent once fired == times) and the offer stops. A rule "
                "that fires stands in for a random fault of `serve --faults`. An Idempotency-Key "
                "sent again answers 200 with the rule it added, adding nothing; sent again "
                "with another body, a 400 naming idempotency_key.",
                "tags": [tag],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": _REF.format(model="SandboxFaultRuleNew")}
                        }
                    },
                },
                "responses": {
                    **ok(201, "SandboxFaultRule", "The rule added."),
                    **ok(
                        200,
                        "SandboxFaultRule",
                        "The rule an earlier request with this "
                        "Idempotency-Key added (nothing new).",
                    ),
                    **errors(403, 408),
                    "409": {
                        "description": "Refused on grounds the schema cannot state: body_jq "
                        f"does not compile, or the sandbox holds {rules.MAX_RULES} rules "
                        "already; `param` names the field.",
                        "content": {
                            "application/json": {"schema": {"$ref": _REF.format(model="Error")}}
                        },
                    },
                    "413": {
                        "description": f"The body is over {rules.MAX_RULE_BYTES} bytes.",
                        "content": {
                            "application/json": {"schema": {"$ref": _REF.format(model="Error")}}
                        },
                    },
                    **common,
                },
            },
            "delete": {
                "operationId": "sandbox_clear_faults",
                "summary": "Remove every aimed fault rule (the ids go on counting)",
                "tags": [tag],
                "responses": {
                    **ok(200, "SandboxCleared", "How many were removed."),
                    **errors(403),
                    **common,
                },
            },
        }
    }
