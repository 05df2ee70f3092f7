"""The record types generated from the description: `python -m tests.record_types --write` writes
api_client/record_types.py (the TypedDicts of each resource's record, create and update
parameters and list filters) from api_client/resources.py; `--check` says whether the checked-in
file is what the description generates (exit 1 if not). tests/test_record_types.py runs the check.

mypy cannot derive a TypedDict from data, so the types are code, generated here, outside the
product's import path: the product reads the generated module, never this one. The module has
no `from __future__ import annotations`, so that its classes know their required keys at run time
too (`__required_keys__`, `typing.get_type_hints`).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path

from convrisk.api_client.resources import RESOURCES, Field, Filter, Resource

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "api_client" / "record_types.py"
COMMAND = "python -m tests.record_types --write"
WIDTH = 100
INDENT = "    "

_PYTHON_TYPES = {
    "string": "str",
    "boolean": "bool",
    "number": "int | float",
    "timestamp": "Timestamp",
    "object": "dict[str, Any]",
}

_HEADER = (
    '"""The record and parameter types of each resource, generated from api_client/resources.py.\n'
    "\n"
    f"Do not edit: `{COMMAND}` writes this file from the description, and\n"
    "tests/test_record_types.py fails when it differs from what the description generates.\n"
    '"""\n'
    "\n"
)

_TIMESTAMP = """\
# A timestamp as the service sent it: integer Unix seconds from our own service, but a remote one
# may send milliseconds or floats. Kept unchanged so JSON output carries the service's values.
Timestamp = int | float
"""


def field_type(field: Field) -> str:
    """The annotation of a field's value: `str | None` for a nullable string."""
    python = _PYTHON_TYPES[field.type]
    return f"{python} | None" if field.nullable else python


def filter_type(filter_: Filter) -> str:
    """The annotation of a filter's value: None, like absent, means no filter."""
    return f"{_PYTHON_TYPES[filter_.type]} | None"


def spoken(names: Sequence[str]) -> str:
    """Names as a sentence lists them: `a`, `a or b`, `a, b or c`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def sentence_part(text: str) -> str:
    """A sentence made the second part of one: its first word lower-cased, unless a name."""
    if text[:1].isupper() and text[1:2].islower():
        return text[0].lower() + text[1:]
    return text


def create_rule(resource: Resource) -> str:
    """What a create body must hold, in words."""
    if resource.one_of:
        return f"exactly one of {spoken(resource.one_of)}"
    required = [field.name for field in resource.creatable() if field.required]
    if len(required) == len(resource.creatable()):
        return "every field required"
    if required:
        return f"{spoken(required)} required"
    return "every field optional"


def docstring(text: str) -> list[str]:
    """A class docstring's lines: one line when it fits, else wrapped under its first line."""
    one_line = f'{INDENT}"""{text}"""'
    if len(one_line) <= WIDTH:
        return [one_line]
    wrapped = textwrap.wrap(text, WIDTH - len(INDENT), break_long_words=False)
    return [f'{INDENT}"""{wrapped[0]}', *(INDENT + line for line in wrapped[1:]), f'{INDENT}"""']


def typed_dict(
    name: str, doc: str, keys: Iterable[tuple[str, str, bool]], *, total: bool
) -> list[str]:
    """A TypedDict class: each key's name, annotation, and whether it is Required.

    A key is marked Required only in a class that is not total (in a total one every key is).
    """
    lines = [f"class {name}(TypedDict{'' if total else ', total=False'}):", *docstring(doc), ""]
    for key, annotation, required in keys:
        shown = f"Required[{annotation}]" if required and not total else annotation
        lines.append(f"{INDENT}{key}: {shown}")
    return lines


def classes(resource: Resource) -> list[list[str]]:
    """The four TypedDicts of a resource: its record, create and update parameters, filters."""
    creatable = resource.creatable()
    every_create_required = all(field.required for field in creatable)
    return [
        typed_dict(
            resource.model,
            resource.doc,
            ((f.name, field_type(f), f.name == "id") for f in resource.fields),
            total=False,
        ),
        typed_dict(
            f"{resource.model}CreateParams",
            f"Create a {resource.noun}: {create_rule(resource)}.",
            ((f.name, field_type(f), f.required) for f in creatable),
            total=every_create_required,
        ),
        typed_dict(
            f"{resource.model}UpdateParams",
            f"Update a {resource.noun}: {sentence_part(resource.update_doc)}"
            if resource.update_doc
            else f"Update a {resource.noun}.",
            ((f.name, field_type(f), False) for f in resource.updatable()),
            total=False,
        ),
        typed_dict(
            f"{resource.model}Filters",
            f"List filters for {resource.plural}, combined with AND; None or absent means no "
            "filter.",
            ((f.name, filter_type(f), False) for f in resource.filters),
            total=False,
        ),
    ]


def generate(resources: Iterable[Resource] = RESOURCES.values()) -> str:
    """The text of the record types module, formatted as `ruff format` leaves it."""
    blocks = "\n\n\n".join("\n".join(cls) for resource in resources for cls in classes(resource))
    names = ["TypedDict"]
    if "Required[" in blocks:
        names.append("Required")
    if "Any]" in blocks:
        names.append("Any")
    typing_line = f"from typing import {', '.join(sorted(names))}\n"
    return f"{_HEADER}{typing_line}\n{_TIMESTAMP}\n\n{blocks}\n"


def main(argv: list[str] | None = None) -> int:
    """Write the module, or check that the checked-in one is what the description generates."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help=f"write {TARGET.relative_to(ROOT)}")
    action.add_argument("--check", action="store_true", help="exit 1 if it differs")
    args = parser.parse_args(argv)
    expected = generate()
    if args.write:
        TARGET.write_text(expected, encoding="utf-8")
        return 0
    if TARGET.read_text(encoding="utf-8") != expected:
        print(f"{TARGET.relative_to(ROOT)} differs from the description: run `{COMMAND}`")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
