"""`convrisk risk`: every verb and flag against the local backend on a temporary database."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Invoke


def create(invoke: Invoke, *flags: str) -> dict[str, object]:
    args = ("risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate")
    result = invoke(*args, *flags, "-o", "json").ok().json()
    assert isinstance(result, dict)
    return result


def test_create_keeps_score_and_details_as_given(invoke: Invoke) -> None:
    whole = create(invoke, "--score", "72", "--details", '{"horizon": 10, "tags": ["a"]}')
    assert whole["score"] == 72 and isinstance(whole["score"], int)
    assert whole["details"] == {"horizon": 10, "tags": ["a"]}
    assert whole["customer_id"] == "cus_1" and whole["profile_type"] == "moderate"
    assert whole["created_at"] == whole["updated_at"]
    fraction = create(invoke, "--score", "72.5")
    assert fraction["score"] == 72.5 and fraction["details"] == {}


def test_details_from_a_file_and_from_stdin(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "details.json"
    path.write_text('{"from": "file"}', encoding="utf-8")
    assert create(invoke, "--score", "1", "--details", f"@{path}")["details"] == {"from": "file"}
    args = ("risk", "create", "--customer-id", "c", "--profile-type", "t", "--score", "2")
    piped = invoke(*args, "--details", "-", "-o", "json", input='{"from": "stdin"}\n').ok()
    assert piped.json()["details"] == {"from": "stdin"}


def test_bad_input_exits_2_naming_the_problem_and_creates_nothing(
    invoke: Invoke, tmp_path: Path
) -> None:
    (tmp_path / "list.json").write_text("[1, 2]", encoding="utf-8")
    base = ("risk", "create", "--customer-id", "cus_1", "--profile-type", "moderate")
    problems = {
        ("--score", "high"): "--score",
        ("--score", "nan"): "finite",
        ("--score", "inf"): "finite",
        ("--score", "-Infinity"): "finite",
        ("--score", "1", "--details", "[1]"): "JSON object",
        ("--score", "1", "--details", '"text"'): "JSON object",
        ("--score", "1", "--details", "{oops"): "not valid JSON",
        ("--score", "1", "--details", '{"a": NaN}'): "not valid JSON",
        ("--score", "1", "--details", f"@{tmp_path / 'missing.json'}"): "cannot read",
        ("--score", "1", "--details", f"@{tmp_path / 'list.json'}"): "JSON object",
        ("--score", "1", "--details", "-"): "not valid JSON",  # empty stdin
    }
    for flags, named in problems.items():
        result = invoke(*base, *flags)
        assert result.code == 2, flags
        assert named in result.stderr and result.stderr.count("\n") == 1, result.stderr
    missing = invoke("risk", "create", "--customer-id", "c", "--score", "1")
    assert missing.code == 2 and "--profile-type" in missing.stderr
    blank = invoke("risk", "create", "--customer-id", " ", "--profile-type", "t", "--score", "1")
    assert blank.code == 2 and "--customer-id" in blank.stderr
    assert invoke("risk", "list", "-o", "json").ok().json() == []


def test_list_filters_by_customer_and_type(invoke: Invoke) -> None:
    ids = {}
    for customer, kind in (("a", "moderate"), ("a", "aggressive"), ("b", "moderate")):
        args = ("risk", "create", "--customer-id", customer, "--profile-type", kind)
        ids[customer, kind] = invoke(*args, "--score", "5", "-o", "id").ok().stdout.strip()

    def listed(*flags: str) -> set[str]:
        return set(invoke("risk", "list", *flags, "-o", "id").ok().lines())

    assert listed("--customer-id", "a") == {ids["a", "moderate"], ids["a", "aggressive"]}
    assert listed("--profile-type", "moderate") == {ids["a", "moderate"], ids["b", "moderate"]}
    assert listed("--customer-id", "a", "--profile-type", "moderate") == {ids["a", "moderate"]}
    assert listed("--limit", "1") == {ids["b", "moderate"]}  # newest first


def test_update_changes_only_what_is_given(invoke: Invoke) -> None:
    rp = create(invoke, "--score", "10", "--details", '{"keep": false}')
    rid = str(rp["id"])
    scored = invoke("risk", "update", rid, "--score", "11.5", "-o", "json").ok().json()
    assert scored["score"] == 11.5 and scored["details"] == {"keep": False}
    assert scored["profile_type"] == "moderate"
    retyped = invoke("risk", "update", rid, "--profile-type", "aggressive", "-o", "json").ok()
    assert retyped.json()["profile_type"] == "aggressive" and retyped.json()["score"] == 11.5
    replaced = invoke("risk", "update", rid, "--details", '{"new": 1}', "-o", "json").ok().json()
    assert replaced["details"] == {"new": 1}
    assert invoke("risk", "get", rid, "-o", "json").ok().json() == replaced


def test_update_problems_exit_2_and_change_nothing(invoke: Invoke) -> None:
    rid = str(create(invoke, "--score", "10")["id"])
    before = invoke("risk", "get", rid, "-o", "json").ok().json()
    for flags, named in {
        (): "Nothing to change",
        ("--score", "NaN"): "finite",
        ("--details", "[]"): "JSON object",
        ("--profile-type", ""): "--profile-type",
    }.items():
        result = invoke("risk", "update", rid, *flags)
        assert result.code == 2 and named in result.stderr, (flags, result.stderr)
    both = invoke("risk", "update", "-", "--details", "-", input=f"{rid}\n")
    assert both.code == 2 and "stdin" in both.stderr
    assert invoke("risk", "get", rid, "-o", "json").ok().json() == before


def test_delete_then_get_is_not_found(invoke: Invoke) -> None:
    rid = str(create(invoke, "--score", "10")["id"])
    deleted = invoke("risk", "delete", rid, "--yes", "-o", "jsonl").ok()
    assert deleted.jsonl() == [{"id": rid, "deleted": True}]
    gone = invoke("risk", "get", rid)
    assert gone.code == 3 and rid in gone.stderr


def test_csv_quotes_details_as_json_text(invoke: Invoke) -> None:
    import csv
    import io

    create(invoke, "--score", "3", "--details", '{"note": "a, \\"quoted\\" text"}')
    rows = list(csv.DictReader(io.StringIO(invoke("risk", "list", "-o", "csv").ok().stdout)))
    assert len(rows) == 1
    assert json.loads(rows[0]["details"]) == {"note": 'a, "quoted" text'}
    assert rows[0]["score"] == "3"
