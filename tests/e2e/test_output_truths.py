"""Issue 18 item 9, the output: asked-for columns never vanish, DETAILS gives way before TYPE,
`-o table` draws the table even piped, times say they are UTC, one field order in every format,
format names in any case, a format a command cannot print is refused, `--jq .id` on a list says
how to mean each record, and a local "No such" says where it looked. The installed `convrisk`,
piped or on a pseudo-terminal rendered by pyte: each behaviour once. Every width, and both
resources, run in-process (on a pyte screen) in tests/cli/test_output_truths.py."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from .console import db_of, run
from .screen import on_screen

ASKED = ("id", "contact_id", "group_id", "created_at", "last_active_at", "is_pinned")
TITLES = ["ID", "CONTACT", "GROUP", "CREATED", "LAST ACTIVE", "PINNED"]


# From 46 columns the id and one cell of each asked column fit; a narrower screen wraps the rows
# rather than cut the id or drop a column asked for. The narrowest and the widest here; 60, 80
# and 100 too in-process.
def test_columns_asked_for_with_fields_never_vanish_and_the_id_stays_whole(
    env: dict[str, str], store: Any
) -> None:
    made = [store.conversations.create({"contact_id": f"c_{n}" + "x" * 30}) for n in range(3)]
    for columns in (50, 140):
        lines = on_screen(env, "conv", "list", "--fields", ",".join(ASKED), columns=columns)
        header, *rows = lines
        assert len(rows) == len(made)  # each row one screen line
        cells = re.split(r" {2,}", header.strip())
        assert len(cells) == len(ASKED), lines
        for title, cell in zip(TITLES, cells, strict=True):
            assert title == cell or (cell.endswith("…") and title.startswith(cell[:-1])), lines
        assert sorted(row.split(" ")[0] for row in rows) == sorted(m["id"] for m in made)
        if columns >= 100:
            assert cells == TITLES


def test_the_risk_table_lets_details_give_way_before_the_type_is_cut(
    env: dict[str, str], store: Any
) -> None:
    columns = 90  # 80 and 100 too, in-process
    kind = "conservative-plus"
    store.risk_profiles.create(
        {
            "customer_id": "cus_1",
            "profile_type": kind,
            "score": 5,
            "details": {"limits": {"max": 1000, "region": "eu-west", "currency": "EUR"}},
        }
    )
    header, row = on_screen(env, "risk", "list", columns=columns)
    assert "TYPE" in header and kind in row, [header, row]
    if "DETAILS" in header:  # shown at all: then TYPE is whole, as checked above
        assert len(row) <= columns


def test_o_table_draws_the_table_even_when_piped_and_the_default_stays_tsv(
    env: dict[str, str], store: Any
) -> None:
    conv = store.conversations.create({"contact_id": "c_1"})
    env = {**env, "COLUMNS": "100"}
    for fmt in ("table", "TABLE"):
        table = run(env, "conv", "list", "-o", fmt)
        assert table.returncode == 0, table.stderr
        header, row = table.stdout.splitlines()
        titles = re.split(r" {2,}", header)
        assert titles[:2] == ["ID", "WITH"] and titles[-1] == "CREATED"
        assert row.startswith(f"{conv['id']}  contact c_1  ")
        assert "\t" not in table.stdout and "\x1b" not in table.stdout  # no colour unless forced
    tsv = run(env, "conv", "list")
    assert tsv.stdout.splitlines()[0].startswith("id\tcontact_id\t")
    detail = run(env, "conv", "get", conv["id"], "-o", "table")
    assert re.split(r" {2,}", detail.stdout.splitlines()[0]) == ["id", conv["id"]]


def test_times_in_tsv_and_csv_say_utc_and_read_back_as_the_same_moment(
    env: dict[str, str], store: Any
) -> None:
    conv = store.conversations.create({"contact_id": "c_1"})
    assert run(env, "conv", "update", conv["id"], "--archived-at", "1714566896").returncode == 0
    header, row = run(env, "conv", "list").stdout.splitlines()
    cells = dict(zip(header.split("\t"), row.split("\t"), strict=True))
    assert cells["archived_at"] == "2024-05-01 12:34:56Z"
    [record] = csv.DictReader(io.StringIO(run(env, "conv", "list", "-o", "csv").stdout))
    assert record["archived_at"] == "2024-05-01 12:34:56Z"
    again = run(
        env, "conv", "update", conv["id"], "--archived-at", cells["archived_at"], "-o", "json"
    )
    assert json.loads(again.stdout)["archived_at"] == 1714566896


def test_json_tsv_and_csv_give_the_fields_in_one_order(env: dict[str, str], store: Any) -> None:
    noun = "risk"  # and conv, in-process
    store.risk_profiles.create(
        {"customer_id": "c", "profile_type": "moderate", "score": 1, "details": {}}
    )
    [record] = json.loads(run(env, noun, "list", "-o", "json").stdout)
    tsv_header = run(env, noun, "list").stdout.splitlines()[0].split("\t")
    csv_header = run(env, noun, "list", "-o", "csv").stdout.splitlines()[0].split(",")
    assert list(record) == tsv_header == csv_header


def test_format_names_are_read_in_any_case_from_o_the_environment_and_the_config(
    env: dict[str, str], store: Any
) -> None:
    conv = store.conversations.create({"contact_id": "c_1"})
    assert json.loads(run(env, "conv", "list", "-o", "JSON").stdout)[0]["id"] == conv["id"]
    assert run({**env, "CONVRISK_OUTPUT": "Id"}, "conv", "list").stdout == f"{conv['id']}\n"
    assert run(env, "config", "set", "output", "JSONL").returncode == 0
    assert run(env, "config", "get", "output").stdout == "jsonl\n"
    assert json.loads(run(env, "conv", "list").stdout)["id"] == conv["id"]


def test_a_format_a_command_cannot_print_is_refused_and_a_default_one_gives_way(
    env: dict[str, str],
) -> None:
    refused = run(env, "status", "-o", "id")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == "Error: -o id cannot print statuses: use table, json, jsonl or csv.\n"
    planned = run(env, "conv", "create", "--contact-id", "c_1", "--dry-run", "-o", "id")
    assert planned.returncode == 2 and planned.stdout == ""
    assert "-o id cannot print planned conversation operations" in planned.stderr
    defaulted = run({**env, "CONVRISK_OUTPUT": "id"}, "status")
    assert defaulted.returncode == 0, defaulted.stderr
    assert defaulted.stdout.splitlines()[0].startswith("profile  default")


def test_jq_indexing_a_list_as_one_record_says_how_to_mean_each_record(
    env: dict[str, str], store: Any
) -> None:
    store.conversations.create({"contact_id": "c_1"})
    failed = run(env, "conv", "list", "--jq", ".id")
    assert failed.returncode == 1 and failed.stdout == ""
    # libjq's own words ('string "id"' before jq 1.7.1, 'string ("id")' after), then the hint.
    assert failed.stderr.startswith("Error: --jq failed: Cannot index array with string ")
    assert len(failed.stderr.splitlines()) == 1
    assert ".[].id" in failed.stderr and "-o jsonl" in failed.stderr
    one = run(env, "conv", "get", store.conversations.list()["data"][0]["id"], "--jq", ".x.y")
    assert one.returncode == 0 and one.stdout == "null\n"


def test_a_local_no_such_says_it_looked_in_the_local_database(env: dict[str, str]) -> None:
    missing = "conv_01M889CXJJXHPHS931G0N99YZZ"
    result = run(env, "conv", "get", missing)
    assert result.returncode == 3
    assert result.stderr == (
        f"Error: No such conversation: {missing} in the local database {db_of(env)}\n"
    )
