"""The shape of the code that issue 31 set: small folders, and each settable field named in the
description, its generated types and its migration only."""

import re
from pathlib import Path

import pytest

from convrisk.api_client.resources import RESOURCES

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cli", "api_client", "local_backend")
# The description, the TypedDicts generated from it, and the schema's migrations.
NAMING_FILES = {
    "api_client/resources.py",
    "api_client/record_types.py",
    "local_backend/store/database.py",
}


def product_files() -> list[Path]:
    """Every file of the product: its modules and the data they read (root_help.txt)."""
    files = [
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".txt")
    ]
    # The library's modules beside convrisk/'s links to the packages (which are not followed).
    return files + sorted((ROOT / "convrisk").glob("*.py"))


def test_no_package_folder_holds_more_than_fifteen_modules() -> None:
    crowded = {
        folder.relative_to(ROOT).as_posix(): count
        for package in PACKAGES
        for folder in [ROOT / package, *(ROOT / package).rglob("*/")]
        if folder.is_dir() and folder.name != "__pycache__"
        if (count := len(list(folder.glob("*.py")))) > 15
    }
    assert crowded == {}


def test_no_module_is_over_seven_hundred_lines() -> None:
    long = {
        path.relative_to(ROOT).as_posix(): lines
        for path in product_files()
        if path.suffix == ".py"
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 700
    }
    assert long == {}


@pytest.mark.parametrize(
    "name",
    sorted(
        {
            field.name
            for resource in RESOURCES.values()
            for field in resource.fields
            if field.update and not field.create
        }
    ),
)
def test_a_settable_field_is_named_only_by_its_description_types_and_migration(
    name: str,
) -> None:
    word = re.compile(rf"\b{re.escape(name)}\b")
    naming = {
        path.relative_to(ROOT).as_posix()
        for path in product_files()
        if word.search(path.read_text(encoding="utf-8"))
    }
    assert naming <= NAMING_FILES, sorted(naming - NAMING_FILES)
