"""The variants of tests/e2e/test_output_truths.py in-process: asked-for columns at every width
and the risk table's DETAILS giving way at each, on a pyte screen, and one field order for both
resources."""

from __future__ import annotations

import re

import pytest

from convrisk.local_backend.backend import LocalBackend
from tests.cli.conftest import Invoke
from tests.cli.screen_in_process import on_screen
from tests.e2e.test_output_truths import ASKED, TITLES


@pytest.mark.parametrize("columns", [50, 60, 80, 100, 140])
def test_columns_asked_for_with_fields_never_vanish_and_the_id_stays_whole(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    made = [backend.conversations.create({"contact_id": f"c_{n}" + "x" * 30}) for n in range(3)]
    lines = on_screen(monkeypatch, "conv", "list", "--fields", ",".join(ASKED), columns=columns)
    header, *rows = lines
    assert len(rows) == len(made)  # each row one screen line
    cells = re.split(r" {2,}", header.strip())
    assert len(cells) == len(ASKED), lines
    for title, cell in zip(TITLES, cells, strict=True):
        assert title == cell or (cell.endswith("…") and title.startswith(cell[:-1])), lines
    assert sorted(row.split(" ")[0] for row in rows) == sorted(m["id"] for m in made)
    if columns >= 100:
        assert cells == TITLES


@pytest.mark.parametrize("columns", [80, 90, 100])
def test_the_risk_table_lets_details_give_way_before_the_type_is_cut(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    kind = "conservative-plus"
    backend.risk_profiles.create(
        {
            "customer_id": "cus_1",
            "profile_type": kind,
            "score": 5,
            "details": {"limits": {"max": 1000, "region": "eu-west", "currency": "EUR"}},
        }
    )
    header, row = on_screen(monkeypatch, "risk", "list", columns=columns)
    assert "TYPE" in header and kind in row, [header, row]
    if "DETAILS" in header:  # shown at all: then TYPE is whole, as checked above
        assert len(row) <= columns


@pytest.mark.parametrize("noun", ["conv", "risk"])
def test_json_tsv_and_csv_give_the_fields_in_one_order(
    backend: LocalBackend, invoke: Invoke, noun: str
) -> None:
    if noun == "conv":
        backend.conversations.create({"contact_id": "c_1"})
    else:
        backend.risk_profiles.create(
            {"customer_id": "c", "profile_type": "moderate", "score": 1, "details": {}}
        )
    [record] = invoke(noun, "list", "-o", "json").ok().json()
    tsv_header = invoke(noun, "list").ok().lines()[0].split("\t")
    csv_header = invoke(noun, "list", "-o", "csv").ok().lines()[0].split(",")
    assert list(record) == tsv_header == csv_header
