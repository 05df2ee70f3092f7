"""The record types (api_client/record_types.py) are what the description generates."""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
import typing
from pathlib import Path
from types import ModuleType

import pytest

from convrisk.api_client import record_types
from convrisk.api_client.resources import (
    CONVERSATIONS,
    RESOURCES,
    RISK_PROFILES,
    Field,
    Filter,
    Resource,
)
from tests import record_types as generator


def load(text: str, folder: Path) -> ModuleType:
    """Import generated module text as a module of its own."""
    path = folder / "generated_record_types.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("generated_record_types", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_checked_in_record_types_are_what_the_description_generates() -> None:
    assert generator.TARGET.read_text(encoding="utf-8") == generator.generate(), (
        f"api_client/record_types.py differs from the description: run `{generator.COMMAND}`"
    )


def test_check_names_the_command_that_writes_the_record_types_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "api_client" / "record_types.py"
    target.parent.mkdir()
    target.write_text(generator.generate().replace("is_muted: bool", "is_muted: str"))
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    monkeypatch.setattr(generator, "TARGET", target)
    assert generator.main(["--check"]) == 1
    assert "run `python -m tests.record_types --write`" in capsys.readouterr().out
    assert generator.main(["--write"]) == 0
    assert generator.main(["--check"]) == 0
    assert target.read_text() == generator.generate()


@pytest.mark.parametrize("resource", list(RESOURCES.values()), ids=lambda r: r.name)
def test_a_record_requires_only_its_id_and_a_create_the_required_fields(
    resource: Resource,
) -> None:
    model = resource.model
    record = getattr(record_types, model)
    assert record.__required_keys__ == frozenset({"id"})
    create = getattr(record_types, f"{model}CreateParams")
    assert create.__required_keys__ == {f.name for f in resource.creatable() if f.required}
    for kind in ("UpdateParams", "Filters"):
        assert getattr(record_types, f"{model}{kind}").__required_keys__ == frozenset()


def test_a_field_added_to_the_description_gets_its_key_in_the_record_update_and_filters(
    tmp_path: Path,
) -> None:
    flagged = dataclasses.replace(
        CONVERSATIONS,
        fields=(*CONVERSATIONS.fields, Field("is_flagged", "boolean", update=True)),
        filters=(*CONVERSATIONS.filters, Filter("flagged", "boolean", "is_flagged")),
    )
    module = load(generator.generate([flagged]), tmp_path)
    hints = {
        kind: typing.get_type_hints(getattr(module, f"Conversation{kind}"))
        for kind in ("", "CreateParams", "UpdateParams", "Filters")
    }
    assert list(hints[""])[-1] == "is_flagged"
    assert hints[""]["is_flagged"] is bool
    assert hints["UpdateParams"]["is_flagged"] is bool
    assert hints["Filters"]["flagged"] == bool | None
    assert "is_flagged" not in hints["CreateParams"]
    assert not hasattr(module, "RiskProfile")


def formatted(text: str) -> bool:
    """Whether `ruff format` (with the project's settings) would leave this module text as it is."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "format",
            "--check",
            "--stdin-filename",
            "generated.py",
            "-",
        ],
        input=text,
        capture_output=True,
        text=True,
        cwd=generator.ROOT,
        check=False,
    )
    return run.returncode == 0


@pytest.mark.parametrize(
    "doc",
    ["Short.", " ".join(["A conversation described at a length no single line can hold."] * 3)],
    ids=["short", "long"],
)
def test_the_generated_module_is_as_ruff_format_leaves_it(doc: str, tmp_path: Path) -> None:
    text = generator.generate([dataclasses.replace(CONVERSATIONS, doc=doc), RISK_PROFILES])
    assert formatted(text)
    assert max(len(line) for line in text.splitlines()) <= generator.WIDTH
    assert load(text, tmp_path).Conversation.__doc__.split() == doc.split()
