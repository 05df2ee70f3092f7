"""The OpenAPI checker: a request and its answer held to the document `convrisk serve` serves.

Shared by `serve --proxy-to` (local_backend.serve.proxy) and `convrisk check`. The document
(local_backend.sandbox.openapi) is OpenAPI 3.1: each schema is JSON Schema 2020-12, compiled once
with
jsonschema_rs (the validator schemathesis judges with, ECMAScript regular expressions). This
module alone imports jsonschema_rs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import parse_qsl, unquote

import jsonschema_rs

from convrisk.api_client.text import safe_line
from convrisk.local_backend.sandbox.openapi import DESCRIBED_PARAMETERS, document
from convrisk.local_backend.sandbox.request_journal import VIOLATION_RULES as RULES

# Violations named per schema check; beyond, one line says how many more.
MAX_SCHEMA_VIOLATIONS = 10
# Further violations counted, no more (a large body could break a rule in every record).
MAX_COUNTED = 1000
# Characters of a message kept (a schema error quotes the value, which may be large).
MAX_MESSAGE = 300
_JSON = "application/json"
# What a value nested deeper than the validator can walk is told.
TOO_DEEP = "objects and arrays nest too deep to check"
# What any error answer must be: JSON in the error shape.
_ERROR_RESPONSE: dict[str, Any] = {
    "content": {_JSON: {"schema": {"$ref": "#/components/schemas/Error"}}}
}
_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


@dataclass(frozen=True)
class Violation:
    """One way a request or an answer breaks the contract."""

    rule: str
    where: str  # a JSON pointer into the body ("/data/0/score"), or "" for the whole answer
    message: str  # one line, printable

    def line(self) -> str:
        """The violation as one line: `body /data/0/score: 1.5 is not of type "integer"`."""
        return (
            f"{self.rule} {self.where}: {self.message}"
            if self.where
            else (f"{self.rule}: {self.message}")
        )

    def as_json(self) -> dict[str, str]:
        """The violation as a JSON object (the log's lines, the request journal)."""
        return {"rule": self.rule, "where": self.where, "message": self.message}


def violation(rule: str, where: str, message: str) -> Violation:
    """A Violation whose message is made one printable line, cut at MAX_MESSAGE characters."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}")
    text = safe_line(message)
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 1] + "…"
    return Violation(rule, safe_line(where), text)


@dataclass(frozen=True)
class _Operation:
    """One operation of the document: its id, parameters, body and answers."""

    operation_id: str
    parameters: tuple[dict[str, Any], ...]
    request_body: dict[str, Any] | None
    responses: dict[str, Any]


class Contract:
    """The OpenAPI document, compiled: operations by path template and method, schemas once."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self._components = doc.get("components", {})
        self._validators: dict[int, tuple[dict[str, Any], jsonschema_rs.Validator]] = {}
        self._paths: list[tuple[re.Pattern[str], list[str], dict[str, _Operation]]] = []
        for template, item in doc["paths"].items():
            names = re.findall(r"{([^{}/]+)}", template)
            pieces = re.split(r"{[^{}/]+}", template)
            pattern = "^" + "([^/]+)".join(re.escape(piece) for piece in pieces) + "$"
            shared = item.get("parameters", [])
            operations = {
                method.upper(): _Operation(
                    op["operationId"],
                    (*shared, *op.get("parameters", []), *op.get(DESCRIBED_PARAMETERS, [])),
                    op.get("requestBody"),
                    op["responses"],
                )
                for method, op in item.items()
                if method in _METHODS
            }
            self._paths.append((re.compile(pattern), names, operations))
        # Compiled now, once: a check never compiles.
        for operation in self._operations():
            for schema in self._schemas_of(operation):
                self._validator(schema)
        self._validator(_ERROR_RESPONSE["content"][_JSON]["schema"])

    @classmethod
    def load(cls) -> Contract:
        """The contract of the document `convrisk serve` serves, compiled once per process."""
        return _loaded()

    # -- lookup ---------------------------------------------------------------------------------

    def operation(self, method: str, path: str) -> str | None:
        """The operationId of `method path` (path as sent, without the query); None when the
        document has no such operation."""
        found = self._find(method, path)
        return None if found is None else found[0].operation_id

    def _find(self, method: str, path: str) -> tuple[_Operation, dict[str, str]] | None:
        for pattern, names, operations in self._paths:
            match = pattern.match(path)
            if match is None:
                continue
            operation = operations.get(method.upper())
            if operation is None:
                return None
            return operation, {n: unquote(v) for n, v in zip(names, match.groups(), strict=True)}
        return None

    def _path_known(self, path: str) -> bool:
        return any(pattern.match(path) for pattern, _, _ in self._paths)

    # -- requests -------------------------------------------------------------------------------

    def check_request(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> list[Violation]:
        """How a request breaks the document: an operation it lacks, a parameter (path, query,
        header) or a body that its schema refuses. [] when the request conforms."""
        found = self._find(method, path)
        if found is None:
            what = "method" if self._path_known(path) else "path"
            return [violation("request", "", f"{method} {path}: the document has no such {what}")]
        operation, path_values = found
        out: list[Violation] = []
        out += self._check_parameters(operation, path_values, query, headers)
        out += self._check_request_body(operation, headers, body)
        return out

    def _check_parameters(
        self,
        operation: _Operation,
        path_values: dict[str, str],
        query: str,
        headers: Mapping[str, str],
    ) -> list[Violation]:
        out: list[Violation] = []
        try:
            pairs = parse_qsl(query, keep_blank_values=True, max_num_fields=100)
        except ValueError:
            return [violation("request", "/query", "too many query parameters")]
        sent: dict[str, list[str]] = {}
        for name, value in pairs:
            sent.setdefault(name, []).append(value)
        known: set[str] = set()
        for param in operation.parameters:
            name, where, schema = param["name"], param["in"], param.get("schema", {})
            if where == "path":
                out += self._check_value(schema, path_values.get(name, ""), f"/path/{name}")
            elif where == "header":
                header = headers.get(name.lower())
                if header is None:
                    if param.get("required"):
                        out.append(violation("request", f"/header/{name}", "missing"))
                    continue
                out += self._check_value(schema, header, f"/header/{name}")
            elif where == "query" and schema.get("type") == "object" and param.get("explode"):
                # A form-exploded object: its properties are query parameters of their own.
                fields = schema.get("properties", {})
                known |= set(fields)
                given = {key: _coerce(fields[key], sent[key][-1]) for key in fields if key in sent}
                out += self._check_value(schema, given, "/query", already_typed=True)
            elif where == "query":
                known.add(name)
                if name in sent:
                    out += self._check_value(schema, sent[name][-1], f"/query/{name}")
                elif param.get("required"):
                    out.append(violation("request", f"/query/{name}", "missing"))
        for name, values in sent.items():
            if name not in known:
                out.append(
                    violation(
                        "request",
                        f"/query/{_pointer_part(name)}",
                        "not a parameter in the document",
                    )
                )
            elif len(values) > 1:
                out.append(
                    violation("request", f"/query/{_pointer_part(name)}", "given more than once")
                )
        return out

    def _check_value(
        self, schema: dict[str, Any], value: Any, where: str, *, already_typed: bool = False
    ) -> list[Violation]:
        instance = value if already_typed else _coerce(schema, value)
        errors, _ = self._errors(schema, instance)
        return [violation("request", where + pointer, message) for pointer, message in errors]

    def _check_request_body(
        self, operation: _Operation, headers: Mapping[str, str], body: bytes
    ) -> list[Violation]:
        spec = operation.request_body
        if spec is None:
            return []
        if not body:
            if spec.get("required"):
                return [violation("request", "/body", "the operation needs a body; none was sent")]
            return []
        content = spec.get("content", {})
        media = _media_type(headers.get("content-type"))
        if media not in content:
            expected = ", ".join(content)
            return [
                violation(
                    "request",
                    "/body",
                    f"sent as {media or 'no content type'}, the document takes {expected}",
                )
            ]
        schema = content[media].get("schema")
        if media != _JSON or schema is None:
            return []
        parsed = _parse_json(body)
        if isinstance(parsed, _NotJson):
            return [violation("request", "/body", f"not JSON: {parsed.reason}")]
        errors, more = self._errors(schema, parsed.value)
        out = [violation("request", "/body" + pointer, message) for pointer, message in errors]
        if more:
            out.append(violation("request", "/body", f"and {more} more of the same kind"))
        return out

    # -- answers --------------------------------------------------------------------------------

    def check_answer(
        self, method: str, path: str, status: int, headers: Mapping[str, str], body: bytes
    ) -> list[Violation]:
        """How an answer breaks the document: a status it does not list for the operation, the
        content type, the body against the schema of that status (a page's shape, the error
        shape), a redirect. [] when the answer conforms."""
        if 300 <= status < 400:
            location = headers.get("location")
            target = f" to {location}" if location is not None else " without a Location"
            return [violation("redirect", "", f"{status}{target}; the document has no redirects")]
        found = self._find(method, path)
        if found is None:
            # Not an operation: the answer must still be an error, in the error shape.
            if status < 400:
                return [
                    violation(
                        "status",
                        "",
                        f"{status} for {method} {path}, which the document does not have "
                        "(expected an error)",
                    )
                ]
            return self._check_body(
                _ERROR_RESPONSE,
                status,
                headers,
                body,
                page=False,
            )
        operation = found[0]
        responses = operation.responses
        response = responses.get(str(status)) or responses.get(f"{status // 100}XX")
        response = response or responses.get("default")
        out: list[Violation] = []
        if response is None:
            listed = ", ".join(sorted(responses))
            out.append(
                violation(
                    "status",
                    "",
                    f"{status} is not an answer of {operation.operation_id} "
                    f"(the document lists {listed})",
                )
            )
            if status < 400:
                return out
            # An unlisted error still has to have the error shape.
            response = _ERROR_RESPONSE
        page = status < 400 and operation.operation_id.startswith("list_")
        return out + self._check_body(response, status, headers, body, page=page)

    def _check_body(
        self,
        response: dict[str, Any],
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        *,
        page: bool,
    ) -> list[Violation]:
        content = response.get("content")
        if not content:
            return []
        rule = "error-shape" if status >= 400 else "body"
        got = _media_type(headers.get("content-type"))
        if got not in content:
            expected = " or ".join(content)
            shown = got or "no content type"
            return [violation("content-type", "", f"{shown} where the document says {expected}")]
        schema = content[got].get("schema")
        if got != _JSON or schema is None:
            return []
        parsed = _parse_json(body)
        if isinstance(parsed, _NotJson):
            return [violation(rule, "", f"not JSON: {parsed.reason}")]
        out: list[Violation] = []
        errors, more = self._errors(schema, parsed.value)
        for pointer, message in errors:
            # The page itself (has_more, data, a key missing at the top) or one of its records.
            named = "page" if page and pointer.count("/") <= 1 else rule
            out.append(violation(named, pointer, message))
        if more:
            out.append(violation(rule, "", f"and {more} more of the same kind"))
        return out

    # -- records --------------------------------------------------------------------------------

    def record_problem(self, model: str, record: Any) -> str | None:
        """The first way `record` breaks the document's schema `model` (`Conversation`), as
        `/pointer: message`; None when it conforms. Compiled on first use."""
        schema = self._components["schemas"][model]
        errors, _ = self._errors(schema, record)
        if not errors:
            return None
        pointer, message = errors[0]
        return safe_line(f"{pointer or '/'}: {message}")[:MAX_MESSAGE]

    # -- schemas --------------------------------------------------------------------------------

    def _errors(self, schema: dict[str, Any], instance: Any) -> tuple[list[tuple[str, str]], int]:
        """(JSON pointer, message) of the first ways `instance` breaks `schema`, and how many
        more there are (counted up to MAX_COUNTED)."""
        validator = self._validator(schema)
        out: list[tuple[str, str]] = []
        more = 0
        try:
            for error in validator.iter_errors(instance):
                if len(out) < MAX_SCHEMA_VIOLATIONS:
                    pointer = "".join(
                        f"/{_pointer_part(str(part))}" for part in error.instance_path
                    )
                    out.append((pointer, error.message))
                else:
                    more += 1
                    if more == MAX_COUNTED:
                        break
        except ValueError:
            # jsonschema_rs walks at most 255 levels ("Recursion limit reached"): a small body
            # can nest deeper, and no value the document describes does.
            out.append(("", TOO_DEEP))
        return out, more

    def _validator(self, schema: dict[str, Any]) -> jsonschema_rs.Validator:
        # By identity: every schema checked is the document's own (or _ERROR_RESPONSE's), kept
        # alive beside its validator, so an id is never reused for another.
        found = self._validators.get(id(schema))
        if found is None:
            # The components beside the schema, so that "#/components/schemas/..." resolves.
            whole = {**schema, "components": self._components}
            found = (schema, jsonschema_rs.Draft202012Validator(whole))
            self._validators[id(schema)] = found
        return found[1]

    def _operations(self) -> Iterable[_Operation]:
        for _, _, operations in self._paths:
            yield from operations.values()

    @staticmethod
    def _schemas_of(operation: _Operation) -> Iterable[dict[str, Any]]:
        for param in operation.parameters:
            yield param.get("schema", {})
        bodies = [operation.request_body or {}, *operation.responses.values()]
        for spec in bodies:
            for media in spec.get("content", {}).values():
                if "schema" in media:
                    yield media["schema"]


@cache
def _loaded() -> Contract:
    return Contract(document())


@dataclass(frozen=True)
class _Json:
    value: Any


@dataclass(frozen=True)
class _NotJson:
    reason: str


def _parse_json(body: bytes) -> _Json | _NotJson:
    """The body as JSON (UTF-8, no NaN or Infinity), or why it is not."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return _NotJson("the body is not UTF-8")
    if not text.strip():
        return _NotJson("the body is empty")
    try:
        return _Json(json.loads(text, parse_constant=_no_constant))
    except (ValueError, RecursionError) as exc:
        return _NotJson(str(exc))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _media_type(value: str | None) -> str:
    """`application/json; charset=utf-8` -> `application/json` ("" when absent)."""
    return (value or "").partition(";")[0].strip().lower()


def _coerce(schema: dict[str, Any], text: str) -> Any:
    """A parameter's text as the type its schema says (an integer's digits as a number)."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "integer" in kinds and re.fullmatch(r"-?[0-9]{1,18}", text):
        return int(text)
    if "number" in kinds and re.fullmatch(r"-?[0-9]{1,18}(\.[0-9]{1,18})?", text):
        return float(text)
    return text


def _pointer_part(text: str) -> str:
    """One JSON pointer reference token (RFC 6901 escapes)."""
    return text.replace("~", "~0").replace("/", "~1")
