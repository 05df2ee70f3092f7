"""CSV is read strictly (issue 18, item 2): a quoted cell that is never closed, or that runs past
the 1 MiB limit, or text after a closing quote, is one failed record naming the line where it
starts; nothing after it is read, so no record is merged from several lines or invented from
the middle of a cell. A quoted cell that spans lines and is closed is still one good cell.
The installed convrisk against `convrisk serve`; on both backends in-process in
tests/cli/test_import_csv_strict.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .both_backends import Cli
from .both_backends import over_serve as over_serve  # a fixture: convrisk against its own serve


def results(stdout: str) -> list[dict[str, Any]]:
    """The JSON-lines results of an import."""
    return [json.loads(line) for line in stdout.splitlines()]


def test_an_unclosed_quote_is_a_failed_record_never_a_merge(
    over_serve: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "c.csv"
    path.write_text('contact_id\n"c_1\nc_2\nc_3\n')
    result = over_serve.run("conv", "import", str(path))
    assert result.returncode == 1
    (row,) = results(result.stdout)
    assert (row["line"], row["status"]) == (2, "failed")
    assert "line 2 has a quoted cell that is never closed" in row["error"]["message"]
    assert "Error: line 2 has a quoted cell that is never closed" in result.stderr
    assert "1 record: 0 created, 0 updated, 0 replayed, 1 failed." in result.stderr
    assert over_serve.count("conversations") == 0


def test_a_cell_over_the_limit_stops_there_and_invents_nothing(
    over_serve: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "c.csv"
    lines = "".join(f"c_{n:06d}\n" for n in range(120_000))  # about 1.1 MB inside one cell
    path.write_text(f'contact_id\nc_first\n"c_open\n{lines}')
    result = over_serve.run("conv", "import", str(path))
    assert result.returncode == 1
    rows = results(result.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [(2, "created"), (3, "failed")]
    assert (
        "line 3 has a cell longer than 1 MiB (a quote never closed?)" in rows[1]["error"]["message"]
    )
    assert "2 records: 1 created, 0 updated, 0 replayed, 1 failed." in result.stderr
    assert over_serve.count("conversations") == 1


def test_text_after_a_closing_quote_fails_that_record_and_reads_no_further(
    over_serve: Cli,
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.csv"
    path.write_text('contact_id\nc_1\n"c_2"x\nc_3\n')
    result = over_serve.run("conv", "import", str(path))
    assert result.returncode == 1
    rows = results(result.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [(2, "created"), (3, "failed")]
    assert "line 3 is not valid CSV" in rows[1]["error"]["message"]
    assert "Nothing after it was read" in rows[1]["error"]["message"]
    assert over_serve.count("conversations") == 1
    # Fixed, the same command replays what was done and creates the rest.
    path.write_text('contact_id\nc_1\n"c_2"\nc_3\n')
    fixed = over_serve.run("conv", "import", str(path))
    assert fixed.returncode == 0, fixed.stderr
    assert [r["status"] for r in results(fixed.stdout)] == ["replayed", "created", "created"]
    assert over_serve.count("conversations") == 3


def test_a_closed_quoted_cell_may_span_lines(over_serve: Cli, tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text(
        "customer_id,profile_type,score,details\n"
        'cus_1,moderate,1,"{\n""a"": 1\n}"\n'
        "cus_2,moderate,2,\n"
    )
    result = over_serve.run("risk", "import", str(path))
    assert result.returncode == 0, result.stderr
    rows = results(result.stdout)
    assert [(r["line"], r["status"]) for r in rows] == [(2, "created"), (5, "created")]
    assert over_serve.store.risk_profiles.retrieve(rows[0]["id"])["details"] == {"a": 1}
