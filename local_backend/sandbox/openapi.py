"""The OpenAPI 3.1 document of the interface as `convrisk serve` serves it (`GET /openapi.json`).

Built from the description of each resource (`api_client.resources`: paths, fields, filters,
body rules), the constants of the input rules (`api_client.params`) and the error table
(`api_client.errors`). Each field's JSON Schema follows the rule `api_client.params` applies to
its type, so the document and the checks say the same thing (tests/wire/test_openapi.py).
"""

from __future__ import annotations

import copy
import types
import typing
from functools import cache
from typing import Any

from convrisk.api_client import __version__
from convrisk.api_client.errors import STATUS_TABLE
from convrisk.api_client.params import (
    BLANK,
    DEFAULT_LIMIT,
    MAX_BODY_BYTES,
    MAX_DETAILS_DEPTH,
    MAX_HEAD_BYTES,
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_LIMIT,
    MAX_NUMBER,
    MAX_TIMESTAMP,
    MIN_NUMBER,
    QUERY_BOOLEANS,
)
from convrisk.api_client.records import REPLAYED_HEADER, Deleted
from convrisk.api_client.resources import ID_BODY_LENGTH, RESOURCES, Field, Resource
from convrisk.api_client.sandbox import FAULT_GLOB, MAX_SNAPSHOT_BYTES
from convrisk.local_backend.sandbox import openapi_faults, snapshot_schema
from convrisk.local_backend.sandbox.request_journal import (
    BODY_CUT,
    JOURNAL_SIZE,
    REQUESTS_PATH,
    RESET_PATH,
    RESTORE_PATH,
    SNAPSHOT_PATH,
    VIOLATION_RULES,
)
from convrisk.local_backend.sandbox.snapshot import ORDER as SNAPSHOT_ORDER

SANDBOX_TAG = "sandbox"

_REF = "#/components/schemas/{model}"
# A number in a body (a score): the rule's range, for integers and floats alike.
_NUMBER = {"type": "number", "minimum": MIN_NUMBER, "maximum": MAX_NUMBER}
_TIMESTAMP = {
    "minimum": 0,
    "maximum": MAX_TIMESTAMP,
    "description": f"Unix seconds, 0 to {MAX_TIMESTAMP} (the end of 9999).",
}
# Not blank: a character outside BLANK, the very list the rule strips (spelled out, as \s means
# one thing to the ECMAScript regular expressions of JSON Schema and another to str.strip()).
_TEXT = {
    "type": "string",
    "pattern": "[^" + "".join(f"\\u{ord(c):04x}" for c in BLANK) + "]",
    "description": "At least one character that is not whitespace.",
}
_NON_EMPTY = {"type": "string", "minLength": 1}


def _any_case(word: str) -> str:
    """A regex matching `word` in any letter case (JSON Schema patterns have no flags)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)


def _boolean_query() -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": "^(" + "|".join(_any_case(word) for word in QUERY_BOOLEANS) + ")$",
        "description": "true or false (also 1 or 0), in any letter case.",
    }


def _error_schema() -> dict[str, Any]:
    types = sorted({cls.type for cls, _ in STATUS_TABLE.values()})
    return {
        "type": "object",
        "required": ["error"],
        "additionalProperties": False,
        "properties": {
            "error": {
                "type": "object",
                "required": ["type", "code", "message", "param"],
                "additionalProperties": False,
                "properties": {
                    "type": {"type": "string", "enum": types},
                    "code": {"type": "string", "minLength": 1},
                    "message": {"type": "string", "minLength": 1},
                    "param": {"type": ["string", "null"]},
                },
            }
        },
    }


_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    type(None): {"type": "null"},
}


def _type_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema of one TypedDict field's type (the few types records use)."""
    if hint is Any:
        return {}
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type_schema(arg) for arg in args]}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(args[1])}
    raise TypeError(f"no JSON Schema for {hint!r}")


def _model_schema(model: Any) -> dict[str, Any]:
    """The record's JSON Schema as served: every field is always sent, extra fields allowed."""
    hints = typing.get_type_hints(model)
    return {
        "title": model.__name__,
        "description": (model.__doc__ or "").strip(),
        "type": "object",
        "properties": {name: _type_schema(hint) for name, hint in hints.items()},
        "required": list(hints),
        "additionalProperties": True,
    }


# A field's type as records carry it (see the TypedDicts of api_client.resources).
_RECORD_TYPES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "boolean": {"type": "boolean"},
    "number": {"anyOf": [{"type": "integer"}, {"type": "number"}]},
    "timestamp": {"anyOf": [{"type": "integer"}, {"type": "number"}]},
    "object": {"type": "object", "additionalProperties": {}},
}


def _record_field(field: Field) -> dict[str, Any]:
    schema = copy.deepcopy(_RECORD_TYPES[field.type])
    if field.nullable:
        schema = {"anyOf": [*schema.get("anyOf", [schema]), {"type": "null"}]}
    return schema


def _record_schema(resource: Resource) -> dict[str, Any]:
    """A record's JSON Schema as served: every field is always sent, extra fields allowed."""
    return {
        "title": resource.model,
        "description": resource.doc,
        "type": "object",
        "properties": {field.name: _record_field(field) for field in resource.fields},
        "required": list(resource.names()),
        "additionalProperties": True,
    }


def _page_schema(model: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["has_more", "data"],
        "properties": {
            "has_more": {"type": "boolean"},
            "data": {"type": "array", "items": {"$ref": _REF.format(model=model)}},
        },
    }


def _input_field(field: Field, resource: Resource) -> dict[str, Any]:
    """The JSON Schema of a field in a body: what api_client.params accepts for its type."""
    schema: dict[str, Any]
    if field.name in resource.one_of:
        return {"type": ["string", "null"]}  # the one-of rule itself is the body's oneOf
    if field.type == "string":
        schema = {"anyOf": [_NON_EMPTY, {"type": "null"}]} if field.nullable else dict(_TEXT)
    elif field.type == "boolean":
        schema = {"type": "boolean"}
    elif field.type == "number":
        schema = copy.deepcopy(_NUMBER)
    elif field.type == "timestamp":
        schema = {"type": ["number", "null"] if field.nullable else "number", **_TIMESTAMP}
    else:
        schema = {
            "type": "object",
            "description": f"At most {MAX_DETAILS_DEPTH} levels of objects and arrays.",
        }
    if field.doc:
        schema["description"] = " ".join(filter(None, (schema.get("description"), field.doc)))
    return schema


def _create_body(resource: Resource) -> dict[str, Any]:
    fields = resource.creatable()
    schema: dict[str, Any] = {}
    if resource.one_of:
        schema["description"] = (
            f"Exactly one of {' or '.join(resource.one_of)}, not empty (an empty string counts "
            "as absent)."
        )
    schema |= {"type": "object", "additionalProperties": False}
    required = [field.name for field in fields if field.required]
    if required:
        schema["required"] = required
    schema["properties"] = {field.name: _input_field(field, resource) for field in fields}
    if resource.one_of:
        schema["oneOf"] = [
            {"required": [name], "properties": {name: _NON_EMPTY}} for name in resource.one_of
        ]
    return schema


def _update_body(resource: Resource) -> dict[str, Any]:
    schema: dict[str, Any] = {"description": resource.update_doc} if resource.update_doc else {}
    return schema | {
        "type": "object",
        "additionalProperties": False,
        "properties": {f.name: _input_field(f, resource) for f in resource.updatable()},
    }


def _error_responses(*statuses: int) -> dict[str, Any]:
    described = {
        400: "The request broke a rule; `param` names the field.",
        401: "Missing or wrong bearer token.",
        403: "`serve --read-only`: every write (any method but GET, HEAD and OPTIONS) is "
        "refused, a permission_error; nothing is written.",
        404: "No such object.",
        408: "The body did not arrive in time.",
        409: "In proxy mode (`serve --proxy-to`): the records are the upstream's; only the "
        "request journal is the sandbox's.",
        411: "A body sent without Content-Length (chunked).",
        431: f"The request head (request line and headers) is over {MAX_HEAD_BYTES} bytes.",
        413: f"The body is over {MAX_BODY_BYTES} bytes.",
        415: "The body is not sent as application/json.",
        429: "Injected by `serve --faults`; retry after Retry-After seconds.",
        500: "The server failed (or `serve --faults` injected it); the reason is in its log.",
        503: "Injected by `serve --faults`, or too many connections; retry later.",
    }
    out: dict[str, Any] = {}
    for status in statuses:
        response: dict[str, Any] = {
            "description": described[status],
            "content": {"application/json": {"schema": {"$ref": _REF.format(model="Error")}}},
        }
        if status == 401:
            response["headers"] = {
                "WWW-Authenticate": {"required": True, "schema": {"type": "string"}}
            }
        if status in (429, 503):
            response["headers"] = {"Retry-After": {"schema": {"type": "string"}}}
        out[str(status)] = response
    return out


def _ok(model: str, description: str) -> dict[str, Any]:
    return {
        "200": {
            "description": description,
            "content": {"application/json": {"schema": {"$ref": _REF.format(model=model)}}},
        }
    }


def _replayable(ok: dict[str, Any]) -> dict[str, Any]:
    """A create's 200, with the header that marks an answer replayed for a repeated key."""
    ok["200"]["headers"] = {
        REPLAYED_HEADER: {
            "description": "`true` when this is the stored answer to an earlier request with "
            "the same Idempotency-Key: nothing new was created. Absent otherwise.",
            "schema": {"type": "string", "enum": ["true"]},
        }
    }
    return ok


def _body(model: str, *, required: bool) -> dict[str, Any]:
    return {
        "required": required,
        "content": {"application/json": {"schema": {"$ref": _REF.format(model=model)}}},
    }


_COMMON = (401, 429, 431, 500, 503)
_WITH_BODY = (408, 411, 413, 415)
# What a write may also answer: `serve --read-only` refuses it.
_WRITE = (403,)


# Parameters that serve takes but the document describes in text rather than lists (see
# docs/design/serve.md, "The OpenAPI document"): under this extension, for serve's own checker
# (local_backend.sandbox.contract), which holds requests to them as to listed ones.
DESCRIBED_PARAMETERS = "x-convrisk-described-parameters"


def _list_parameters(resource: Resource) -> list[dict[str, Any]]:
    """A list's query parameters as the document lists them: limit, starting_after, filters."""
    params: list[dict[str, Any]] = [
        {
            "name": "limit",
            "in": "query",
            "description": f"Items per page, 1 to {MAX_LIMIT}.",
            "schema": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
            },
        },
        {
            "name": "starting_after",
            "in": "query",
            "description": f"The items after this id in list order (an id of this resource: "
            f"{resource.prefix} and {ID_BODY_LENGTH} characters; it need not still exist).",
            "schema": _cursor(resource),
        },
    ]
    for filter in resource.interface_filters():
        schema = _boolean_query() if filter.type == "boolean" else _NON_EMPTY
        params.append({"name": filter.name, "in": "query", "schema": schema})
    return params


def _cursor(resource: Resource) -> dict[str, Any]:
    return {"type": "string", "pattern": resource.id_pattern}


def _ending_before(resource: Resource) -> dict[str, Any]:
    return {
        "name": "ending_before",
        "in": "query",
        "description": "The items just before this id in list order (pages backwards).",
        "schema": _cursor(resource),
    }


_LIST = (
    "Query parameters not listed are a 400, and so is one given twice. Query `ending_before=<id>` "
    "(an id as for `starting_after`) pages backwards: the items just before that id, in list "
    "order. It is described here rather than listed because it may not come with "
    "`starting_after` (a 400 naming `ending_before`), and a rule across two parameters is "
    "nothing OpenAPI can say."
)


def _idempotency_key() -> dict[str, Any]:
    return {
        "name": "Idempotency-Key",
        "in": "header",
        "description": "Names one logical create: a repeat replays the first answer.",
        "schema": {
            "type": "string",
            "pattern": f"^([!-~]([ -~]{{0,{MAX_IDEMPOTENCY_KEY_LENGTH - 2}}}[!-~])?)? *$",
        },
    }


_IDEMPOTENCY_KEY = (
    "Header `Idempotency-Key` (optional; convrisk's own client sends a uuid4 on every create): "
    f"up to {MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters or inner spaces, an empty one "
    f"being none. A repeat within 24 hours replays the first answer (`{REPLAYED_HEADER}: "
    "true`); the same key with another body is a 400 naming `idempotency_key`; a key of another "
    "form is a 400 too. A key whose record was deleted since is forgotten: its repeat creates the "
    "record anew. Spaces around the value are not part of it (HTTP strips them). It is described "
    "here rather than listed because its value must be new for each request, which no schema can "
    "say."
)


def _paths() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for resource in RESOURCES.values():
        model, noun, name, tag = resource.model, resource.noun, resource.name, resource.segment
        id_param = {
            "name": "id",
            "in": "path",
            "required": True,
            "schema": {"type": "string", "pattern": resource.id_pattern},
        }
        paths[resource.path] = {
            "get": {
                "operationId": f"list_{name}",
                "summary": f"List {noun}s, newest first",
                "tags": [tag],
                "description": _LIST,
                "parameters": _list_parameters(resource),
                DESCRIBED_PARAMETERS: [_ending_before(resource)],
                "responses": {
                    **_ok(f"{model}Page", "One page."),
                    **_error_responses(400, *_COMMON),
                },
            },
            "post": {
                "operationId": f"create_{name}",
                "summary": f"Create a {noun}",
                "tags": [tag],
                "description": _IDEMPOTENCY_KEY,
                DESCRIBED_PARAMETERS: [_idempotency_key()],
                "requestBody": _body(f"{model}Create", required=True),
                "responses": {
                    **_replayable(_ok(model, f"The new {noun} (or the replayed answer).")),
                    **_error_responses(400, *_WRITE, *_WITH_BODY, *_COMMON),
                },
            },
        }
        paths[f"{resource.path}/{{id}}"] = {
            "parameters": [id_param],
            "get": {
                "operationId": f"retrieve_{name}",
                "summary": f"Retrieve a {noun}",
                "tags": [tag],
                "responses": {**_ok(model, f"The {noun}."), **_error_responses(400, 404, *_COMMON)},
            },
            "put": {
                "operationId": f"update_{name}",
                "summary": f"Update a {noun}",
                "tags": [tag],
                "requestBody": _body(f"{model}Update", required=False),
                "responses": {
                    **_ok(model, f"The {noun}, updated."),
                    **_error_responses(400, *_WRITE, 404, *_WITH_BODY, *_COMMON),
                },
            },
            "delete": {
                "operationId": f"delete_{name}",
                "summary": f"Delete a {noun}",
                "tags": [tag],
                "responses": {
                    **_ok("Deleted", "The object is gone."),
                    **_error_responses(400, *_WRITE, 404, *_COMMON),
                },
            },
        }
    paths["/openapi.json"] = {
        "get": {
            "operationId": "openapi",
            "summary": "This document",
            "security": [],
            "responses": {
                "200": {
                    "description": "The OpenAPI document.",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                }
            },
        }
    }
    paths |= _sandbox_paths()
    paths |= openapi_faults.paths(_error_responses, SANDBOX_TAG)
    return paths


def _sandbox_paths() -> dict[str, Any]:
    """The admin routes of the sandbox (local_backend.sandbox.routes), under their own tag."""
    errors = _error_responses(401, 500, 503)
    # The routes of the store, which proxy mode does not have.
    store_errors = {**_error_responses(409), **errors}
    # The routes that change something: `serve --read-only` refuses them.
    write_errors = _error_responses(*_WRITE)
    return {
        REQUESTS_PATH: {
            "get": {
                "operationId": "sandbox_requests",
                "summary": "The requests this server received, oldest first (admin ones not)",
                "tags": [SANDBOX_TAG],
                "parameters": [
                    {"name": "method", "in": "query", "schema": _NON_EMPTY},
                    {
                        "name": "path",
                        "in": "query",
                        "description": "A glob (fnmatch: *, ?, [...]) on the path, without "
                        "the query, as a fault rule's: printable ASCII, no space (the path as "
                        "sent, percent-encoded), each [ closed, no set begun with ] or !].",
                        "schema": {"type": "string", "pattern": f"^{FAULT_GLOB}$"},
                    },
                    {
                        "name": "status",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 100, "maximum": 599},
                    },
                ],
                "responses": {
                    **_ok("SandboxRequests", "The requests kept, and how many were dropped."),
                    **_error_responses(400),
                    **errors,
                },
            },
            "delete": {
                "operationId": "sandbox_clear_requests",
                "summary": "Forget the requests received so far",
                "tags": [SANDBOX_TAG],
                "responses": {
                    **_ok("SandboxCleared", "How many were forgotten."),
                    **write_errors,
                    **errors,
                },
            },
        },
        RESET_PATH: {
            "post": {
                "operationId": "sandbox_reset",
                "summary": "Empty the store (both resources, idempotency keys) and the requests",
                "description": "Also removes the aimed fault rules and rewinds `serve --clock`, "
                "the ids of `serve --seed` and its random faults and latency to where they "
                "started, so each test after a reset gets the same ids, times and faults.",
                "tags": [SANDBOX_TAG],
                "responses": {
                    **_ok("SandboxReset", "The store is empty."),
                    **write_errors,
                    **store_errors,
                },
            },
        },
        SNAPSHOT_PATH: {
            "get": {
                "operationId": "sandbox_snapshot",
                "summary": "The whole store as JSON lines, one record a line",
                "description": "Each line is a record as `convrisk conv list -o jsonl` prints "
                'it, with a "resource" key first (conversations or risk_profiles): '
                "conversations first, then risk profiles, each oldest first.",
                "tags": [SANDBOX_TAG],
                "responses": {
                    "200": {
                        "description": "The snapshot (empty when the store is).",
                        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                    },
                    **store_errors,
                },
            },
        },
        RESTORE_PATH: {
            "post": {
                "operationId": "sandbox_restore",
                "summary": "Replace the whole store by a snapshot, ids and times included",
                "description": "The snapshot as one JSON object of each resource's records "
                "by id (the schema here), or as the JSON lines `GET /__sandbox/snapshot` "
                "answers (what `convrisk sandbox restore FILE` sends), whatever the "
                'Content-Type: an object whose keys are only "conversations" and '
                '"risk_profiles" is the object form. JSON lines are not listed as a content '
                "type: JSON Schema cannot say which text is lines of records, so a tool would "
                "send any text as valid. All or nothing: a record or line that is not a record "
                "of its resource, an id given twice or text that is not UTF-8 is a 400 naming "
                "the record (by its id) or the line, and the store is left as it was. An empty "
                "body restores an empty store. Idempotency keys are forgotten; the request "
                "journal is kept.",
                "tags": [SANDBOX_TAG],
                "requestBody": {
                    "required": False,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": _REF.format(model=snapshot_schema.SNAPSHOT)}
                        }
                    },
                },
                "responses": {
                    **_ok("SandboxRestored", "How many records of each resource."),
                    **_error_responses(400, *_WRITE, 408),
                    "413": {
                        "description": f"The snapshot is over {MAX_SNAPSHOT_BYTES} bytes.",
                        "content": {
                            "application/json": {"schema": {"$ref": _REF.format(model="Error")}}
                        },
                    },
                    **store_errors,
                },
            },
        },
    }


def _sandbox_schemas() -> dict[str, Any]:
    def strict(properties: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "additionalProperties": False,
            "required": list(properties),
            "properties": properties,
        }

    text_or_null = {"type": ["string", "null"]}
    request = strict(
        {
            "seq": {"type": "integer", "minimum": 1},
            "time": {"type": "string", "description": "ISO 8601, UTC, in milliseconds."},
            "method": {"type": "string"},
            "path": {"type": "string"},
            "query": {"type": "string"},
            "status": {
                "type": ["integer", "null"],
                "description": "null: no answer was sent (an injected drop, a client gone).",
            },
            "idempotency_key": text_or_null,
            "body": {
                **text_or_null,
                "description": f"UTF-8 (bad bytes replaced), the first {BODY_CUT} bytes.",
            },
            "body_truncated": {"type": "boolean"},
            "fault": {
                "type": ["string", "null"],
                "description": "The fault injected: by `serve --faults`, 500, 503, 429, drop or "
                "drop-after; by an aimed rule, its status, drop, drop-after, body-jq or delay.",
            },
            "fault_rule": {
                "type": ["integer", "null"],
                "minimum": 1,
                "description": "The id of the aimed fault rule that fired on it, or null.",
            },
            "duration_ms": {"type": "number", "minimum": 0},
            "violations": {
                "type": "array",
                "description": "How the request or its answer broke this document "
                "(`serve --proxy-to` only; empty otherwise).",
                "items": strict(
                    {
                        "rule": {
                            "type": "string",
                            "enum": list(VIOLATION_RULES),
                        },
                        "where": {
                            "type": "string",
                            "description": "A JSON pointer into the body (/data/0/score), or "
                            "empty for the whole answer.",
                        },
                        "message": {"type": "string"},
                    }
                ),
            },
        }
    )
    return {
        "SandboxRequest": request,
        "SandboxRequests": strict(
            {
                "data": {"type": "array", "items": {"$ref": _REF.format(model="SandboxRequest")}},
                "dropped": {
                    "type": "integer",
                    "minimum": 0,
                    "description": f"Older requests dropped: {JOURNAL_SIZE} are kept.",
                },
                "total": {"type": "integer", "minimum": 0},
            }
        ),
        "SandboxCleared": strict({"cleared": {"type": "integer", "minimum": 0}}),
        "SandboxReset": strict({"reset": {"const": True}}),
        "SandboxRestored": strict(
            {
                "restored": strict(
                    {name: {"type": "integer", "minimum": 0} for name in SNAPSHOT_ORDER}
                )
            }
        ),
    }


@cache
def _document() -> dict[str, Any]:
    resources = RESOURCES.values()
    schemas: dict[str, Any] = {r.model: _record_schema(r) for r in resources}
    schemas["Deleted"] = _model_schema(Deleted)
    schemas |= {f"{r.model}Page": _page_schema(r.model) for r in resources}
    schemas["Error"] = _error_schema()
    schemas |= _sandbox_schemas()
    schemas |= openapi_faults.schemas()
    schemas |= snapshot_schema.schemas(_input_field)
    for r in resources:
        schemas[f"{r.model}Create"] = _create_body(r)
        schemas[f"{r.model}Update"] = _update_body(r)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "convrisk: conversations and risk profiles",
            "version": __version__,
            "description": "The service as `convrisk serve` implements it. "
            "Every answer is JSON; every error has the shape of the Error schema. Methods a "
            "path lacks answer 405 with Allow.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": _paths(),
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (a fresh copy: callers may change it)."""
    return copy.deepcopy(_document())
