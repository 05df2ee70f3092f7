"""`--fields` and `--jq` (DESIGN 4.3) through the installed console script against a real
`convrisk serve` subprocess on 127.0.0.1: each behaviour once. Its variants (the local backend,
every format) run in-process in tests/cli/test_shape.py, under the same test names."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from convrisk.api_client import Client, resources
from convrisk.api_client.record_types import Conversation, RiskProfile
from convrisk.api_client.remote.http import HTTPBackend
from convrisk.cli.errors import JqFailed
from convrisk.cli.output.fields import JqProgram, Shape
from convrisk.cli.output.printer import Printer
from convrisk.cli.output.resource_kinds import CONVERSATIONS, RISK_PROFILES
from convrisk.local_backend.backend import LocalBackend
from tests.local_backend.varied import fill_varied

from .both_backends import TOKEN, Serve, isolated_env
from .both_backends import serve as serve  # a fixture: one `convrisk serve` for this module
from .console import CONVRISK, SAFETY_TIMEOUT, run
from .odd_service import stdout_against as _odd
from .screen import on_screen

CONV_FIELDS = ", ".join(resources.CONVERSATIONS.names())
ESC_GROUP = "g_\x1b[31mred"


@dataclass
class Backend:
    """The console script on one backend, and a Python client on the same data to seed it."""

    name: str
    home: Path
    env: dict[str, str]
    client: Client

    def run(
        self, *args: str, stdin: str | None = None, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        """Run `convrisk ARGS` (stdin /dev/null unless given); never raises on failure."""
        return run({**self.env, **extra}, *args, input=stdin)

    def ok(self, *args: str, stdin: str | None = None, **extra: str) -> str:
        """stdout of a run that must succeed."""
        result = self.run(*args, stdin=stdin, **extra)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def count(self, resource: str = "conversations") -> int:
        """How many records of a resource exist now."""
        target = getattr(self.client, resource)
        return sum(len(page["data"]) for page in target.iter_pages({}, limit=None))


@pytest.fixture
def backend(serve: Serve, tmp_path: Path) -> Iterator[Backend]:
    """The module's `convrisk serve`, its data emptied first: the one e2e run of each behaviour
    (tests/cli/test_shape.py runs each, in-process, on the local database and over HTTP)."""
    home = tmp_path / "home"
    home.mkdir()
    env = isolated_env(home, CONVRISK_BASE_URL=serve.url, CONVRISK_TOKEN=TOKEN)
    with Client(HTTPBackend(serve.url, TOKEN)) as client:
        resources: list[Any] = [client.conversations, client.risk_profiles]
        for resource in resources:
            for page in list(resource.iter_pages({}, limit=None)):
                for record in page["data"]:
                    resource.delete(record["id"])
        yield Backend("remote", home, env, client)


def seed(client: Client) -> tuple[Conversation, Conversation, Conversation]:
    """Three conversations, newest last: with a contact, a group (ESC in its id), a muted one."""
    first = client.conversations.create({"contact_id": "c_1"})
    second = client.conversations.create({"group_id": ESC_GROUP})
    third = client.conversations.create({"contact_id": "c_3"})
    third = client.conversations.update(third["id"], {"is_muted": True})
    return first, second, third


def seed_profile(client: Client) -> RiskProfile:
    """One risk profile with nested details."""
    return client.risk_profiles.create(
        {
            "customer_id": "cus_1",
            "profile_type": "moderate",
            "score": 72.5,
            "details": {"tab": "a\tb", "nested": {"n": [1, 2]}},
        }
    )


def lines(text: str) -> list[Any]:
    """JSON lines parsed."""
    return [json.loads(line) for line in text.splitlines()]


# -- --fields ----------------------------------------------------------------------------------


def test_fields_choose_and_order_the_columns_of_tsv_and_csv(backend: Backend) -> None:
    first, second, third = seed(backend.client)
    tsv = backend.ok("conv", "list", "--fields", "is_muted,id")
    assert tsv.splitlines() == [
        "is_muted\tid",
        f"true\t{third['id']}",
        f"false\t{second['id']}",
        f"false\t{first['id']}",
    ]
    rows = list(
        csv.reader(io.StringIO(backend.ok("conv", "list", "--fields", "group_id, id", "-o", "csv")))
    )
    assert rows == [
        ["group_id", "id"],
        ["", third["id"]],
        ["g_\\x1b[31mred", second["id"]],  # escaped, as in any CSV
        ["", first["id"]],
    ]


def test_fields_choose_and_order_the_keys_of_json_and_jsonl(backend: Backend) -> None:
    first, second, third = seed(backend.client)
    wanted = ["group_id", "id", "is_muted"]
    as_json = json.loads(backend.ok("conv", "list", "--fields", ",".join(wanted), "-o", "json"))
    expected = [{key: dict(record)[key] for key in wanted} for record in (third, second, first)]
    assert as_json == expected and [list(row) for row in as_json] == [wanted] * 3
    paged = backend.ok(
        "conv", "list", "--all", "--fields", ",".join(wanted), "-o", "jsonl", CONVRISK_PAGE_SIZE="2"
    )
    assert lines(paged) == expected and [list(row) for row in lines(paged)] == [wanted] * 3
    one = json.loads(
        backend.ok("conv", "get", first["id"], "--fields", "created_at,id", "-o", "json")
    )
    assert list(one.items()) == [("created_at", first["created_at"]), ("id", first["id"])]
    several = backend.ok(
        "conv",
        "get",
        "-",
        "--fields",
        "id",
        "-o",
        "jsonl",
        stdin=f"{first['id']}\n{second['id']}\n",
    )
    assert lines(several) == [{"id": first["id"]}, {"id": second["id"]}]


def test_fields_apply_to_create_update_and_delete(backend: Backend) -> None:
    created = json.loads(
        backend.ok(
            "conv",
            "create",
            "--contact-id",
            "c_new",
            "--fields",
            "contact_id,is_pinned",
            "-o",
            "json",
        )
    )
    assert created == {"contact_id": "c_new", "is_pinned": False}
    conv_id = backend.ok("conv", "list", "-o", "id").strip()
    updated = backend.ok("conv", "update", conv_id, "--pin", "--fields", "is_pinned")
    assert updated.splitlines() == ["is_pinned", "true"]
    profile = seed_profile(backend.client)
    risk = json.loads(
        backend.ok(
            "risk",
            "update",
            profile["id"],
            "--score",
            "80",
            "--fields",
            "score,details",
            "-o",
            "json",
        )
    )
    assert risk == {"score": 80, "details": profile["details"]}
    deleted = backend.ok("conv", "delete", conv_id, "--yes", "--fields", "deleted", "-o", "jsonl")
    assert lines(deleted) == [{"deleted": True}]


def test_an_unknown_field_is_a_usage_error_that_lists_the_fields_and_creates_nothing(
    backend: Backend,
) -> None:
    result = backend.run("conv", "create", "--contact-id", "c_x", "--fields", "id,colour")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        f"Error: Unknown field 'colour' in --fields; a conversation has: {CONV_FIELDS}.\n"
    )
    assert backend.count() == 0
    as_json = backend.run("conv", "list", "--fields", "", "-o", "json")
    assert as_json.returncode == 2 and as_json.stdout == ""
    assert json.loads(as_json.stderr)["error"]["param"] == "--fields"
    deletion = backend.run("conv", "delete", "conv_x", "--yes", "--fields", "score")
    assert deletion.returncode == 2 and "a deletion has: id, deleted." in deletion.stderr
    risk = backend.run("risk", "list", "--fields", "id,id")
    assert risk.returncode == 2 and "--fields names 'id' more than once" in risk.stderr


def test_fields_with_the_id_format_is_a_usage_error(backend: Backend) -> None:
    # The id format from the settings too: tests/cli/test_shape.py.
    seed(backend.client)
    result = backend.run("conv", "list", "--fields", "id", "-o", "id")
    assert result.returncode == 2 and result.stdout == ""
    assert "--fields" in result.stderr and "id format" in result.stderr


# -- --jq --------------------------------------------------------------------------------------


def test_jq_with_jsonl_runs_on_each_record_across_pages(backend: Backend) -> None:
    first, second, third = seed(backend.client)
    out = backend.ok(
        "conv",
        "list",
        "--all",
        "-o",
        "jsonl",
        "--jq",
        "{id, n: 1}, .is_muted",
        CONVRISK_PAGE_SIZE="2",
    )
    assert out.splitlines() == [
        json.dumps({"id": third["id"], "n": 1}, separators=(",", ":")),
        "true",
        json.dumps({"id": second["id"], "n": 1}, separators=(",", ":")),
        "false",
        json.dumps({"id": first["id"], "n": 1}, separators=(",", ":")),
        "false",
    ]
    assert (
        backend.ok("conv", "get", first["id"], "-o", "jsonl", "--jq", ".id") == first["id"] + "\n"
    )


def test_jq_without_o_or_with_json_runs_once_over_the_document(backend: Backend) -> None:
    # Without -o here; with -o json, and the settings' formats, in tests/cli/test_shape.py.
    first, second, third = seed(backend.client)
    ids = backend.ok("conv", "list", "--jq", 'map(.id) | join(",")')
    assert ids == f"{third['id']},{second['id']},{first['id']}\n"
    one = backend.ok("conv", "get", first["id"], "--jq", "[type, .contact_id]")
    assert one == '["object","c_1"]\n'
    several = backend.ok("conv", "get", first["id"], third["id"], "--jq", "type")
    assert several == "array\n"
    # The settings' output format does not count: only -o chooses.
    assert backend.ok("conv", "list", "--jq", "length", CONVRISK_OUTPUT="jsonl") == "3\n"


def test_jq_prints_strings_raw_and_other_values_as_compact_json(backend: Backend) -> None:
    seed(backend.client)
    profile = seed_profile(backend.client)
    out = backend.ok("conv", "list", "-o", "jsonl", "--jq", ".group_id")
    assert out.splitlines() == ["null", ESC_GROUP, "null"]  # piped: raw, as jq -r
    details = backend.ok("risk", "get", profile["id"], "--jq", ".details, .details.tab, .score")
    assert details.splitlines() == ['{"tab":"a\\tb","nested":{"n":[1,2]}}', "a\tb", "72.5"]
    assert backend.ok("risk", "list", "--jq", "empty") == ""


def test_fields_come_first_then_jq(backend: Backend) -> None:
    seed(backend.client)
    out = backend.ok(
        "conv", "list", "-o", "jsonl", "--fields", "is_muted,id", "--jq", "keys_unsorted"
    )
    assert out.splitlines() == ['["is_muted","id"]'] * 3
    document = backend.ok("conv", "list", "--fields", "contact_id", "--jq", "map(.contact_id)")
    assert document == '["c_3",null,"c_1"]\n'


def test_jq_that_does_not_compile_is_a_usage_error_with_jqs_message(backend: Backend) -> None:
    result = backend.run("conv", "create", "--contact-id", "c_x", "--jq", ".id |||")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("Error: --jq does not compile: syntax error, unexpected")
    assert result.stderr.count("\n") == 1  # one line
    assert backend.count() == 0
    undefined = backend.run("risk", "list", "--jq", "nosuchfunction(1)", "-o", "jsonl")
    assert undefined.returncode == 2 and undefined.stdout == ""
    error = json.loads(undefined.stderr)["error"]
    assert error["param"] == "--jq" and "nosuchfunction/1 is not defined" in error["message"]
    empty = backend.run("conv", "list", "--jq", "")
    assert empty.returncode == 2 and "--jq does not compile" in empty.stderr


def test_jq_with_o_table_csv_or_id_is_a_usage_error(backend: Backend) -> None:
    # -o table here; csv and id too in tests/cli/test_shape.py.
    seed(backend.client)
    result = backend.run("conv", "update", "conv_x", "--mute", "-o", "table", "--jq", ".id")
    assert result.returncode == 2 and result.stdout == ""
    assert "--jq prints its own results and cannot be combined with -o table" in result.stderr
    assert [c["is_muted"] for c in lines(backend.ok("conv", "list", "-o", "jsonl"))] == [
        True,
        False,
        False,
    ]


def test_a_jq_error_on_the_data_stops_with_exit_1_after_the_results_before_it(
    backend: Backend,
) -> None:
    first, second, third = seed(backend.client)
    program = 'if .contact_id == "c_1" then error("no way: \\(.id)") else .id end'
    result = backend.run(
        "conv", "list", "--all", "-o", "jsonl", "--jq", program, CONVRISK_PAGE_SIZE="1"
    )
    assert result.returncode == 1
    assert result.stdout.splitlines() == [third["id"], second["id"]]
    error = {"type": "jq_error", "message": f"--jq failed: no way: {first['id']}", "param": "--jq"}
    assert result.stderr == json.dumps({"error": error}) + "\n"
    document = backend.run("conv", "list", "--jq", ".[] | .contact_id | ascii_downcase")
    assert document.returncode == 1 and document.stdout == "c_3\n"
    assert document.stderr.startswith("Error: --jq failed: ")


def test_delete_with_jq(backend: Backend) -> None:
    first, second, _ = seed(backend.client)
    out = backend.ok(
        "conv",
        "delete",
        first["id"],
        second["id"],
        "--yes",
        "--jq",
        'map("\\(.id) \\(.deleted)")[]',
    )
    assert out.splitlines() == [f"{first['id']} true", f"{second['id']} true"]
    assert backend.count() == 1


def test_several_ids_with_one_missing_run_jq_over_those_found(backend: Backend) -> None:
    first, _, third = seed(backend.client)
    result = backend.run(
        "conv", "get", first["id"], "conv_" + "0" * 26, third["id"], "--jq", "map(.id)"
    )
    assert result.returncode == 3
    assert json.loads(result.stdout) == [first["id"], third["id"]]
    assert "conv_" + "0" * 26 in result.stderr


# -- a remote that omits fields, and numbers as jq spells them -----------------------------------


def test_a_field_a_remote_record_lacks_stays_missing_in_json_and_empty_in_a_table(
    service: str, tmp_path: Path
) -> None:
    wanted = "contact_id,id,created_at"
    assert lines(_odd(service, tmp_path, "conv", "list", "--fields", wanted, "-o", "jsonl")) == [
        {"id": "conv_1", "created_at": 1714564800123},
        {"contact_id": 42, "id": "conv_2", "created_at": 1714564800.5},
        {"id": "conv_3"},
    ]
    assert _odd(service, tmp_path, "conv", "list", "--fields", wanted).splitlines() == [
        "contact_id\tid\tcreated_at",
        "\tconv_1\t2024-05-01 12:00:00Z",
        "42\tconv_2\t2024-05-01 12:00:00Z",
        "\tconv_3\t",
    ]
    assert (
        _odd(service, tmp_path, "conv", "get", "conv_3", "--fields", "contact_id", "-o", "json")
        == "{}\n"
    )
    # Extra fields are not --fields names, but jq sees the whole record; big numbers are exact.
    assert (
        _odd(service, tmp_path, "conv", "list", "-o", "jsonl", "--jq", ".extra // empty") == "x\n"
    )
    big = _odd(service, tmp_path, "risk", "get", "rp_2", "--jq", ".details.big, .score")
    exact, score = big.splitlines()
    assert exact == str(2**70) and float(score) == 1e300  # jq spells it 1E+300


# -- on a terminal (local) ---------------------------------------------------------------------


def _terminal_env(tmp_path: Path) -> tuple[dict[str, str], Client]:
    home = tmp_path / "tty"
    env = isolated_env(home)
    db = home / "data" / "convrisk" / "convrisk.db"
    db.parent.mkdir(parents=True)
    return env, Client(LocalBackend(db))


def test_on_a_terminal_fields_choose_the_table_columns_and_the_detail_view(tmp_path: Path) -> None:
    env, client = _terminal_env(tmp_path)
    with client:
        made = client.conversations.create({"group_id": ESC_GROUP})
    table = on_screen(env, "conv", "list", "--fields", "group_id,id", columns=80)
    assert table == ["GROUP          ID", f"g_\\x1b[31mred  {made['id']}"]
    detail = on_screen(env, "conv", "get", made["id"], "--fields", "id,created_at", columns=80)
    assert len(detail) == 2
    assert detail[0].split() == ["id", made["id"]] and detail[1].startswith("created_at")
    assert detail[1].endswith(" UTC")


def test_on_a_terminal_jq_strings_show_control_characters_escaped_but_keep_tabs(
    tmp_path: Path,
) -> None:
    env, client = _terminal_env(tmp_path)
    with client:
        client.conversations.create({"group_id": ESC_GROUP + "\r\x07"})
    shown = on_screen(
        env, "conv", "list", "-o", "jsonl", "--jq", r'.group_id, "a\tb", {g: .group_id}', columns=80
    )
    assert shown == ["g_\\x1b[31mred\\r\\x07", "a       b", '{"g":"g_\\u001b[31mred\\r\\u0007"}']


def test_ctrl_c_ends_a_jq_program_that_computes_without_printing(tmp_path: Path) -> None:
    """libjq never returns to Python while it computes: Ctrl-C must end the process anyway, at
    once, as it ends `jq` itself."""
    env, client = _terminal_env(tmp_path)
    with client:
        client.conversations.create({"contact_id": "c_1"})
    child = subprocess.Popen(
        [CONVRISK, "conv", "list", "--jq", "last(range(1e12))"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        time.sleep(1.5)  # well inside the loop (start-up takes a fraction of a second)
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=SAFETY_TIMEOUT)
    assert child.returncode == -signal.SIGINT and out == b""


# -- the local export path: jq reads the JSON text SQLite builds --------------------------------

# Programs over varied records (tests/local_backend/varied.py: strings with newlines, controls,
# unicode and a lone surrogate, numbers such as 0.1, 1e300, 2**70 and 1.50 as written by hand):
# one result per record, several, none, numbers jq computes (1e400), and strings it builds.
EACH_PROGRAMS = [
    ".",
    ".id, .contact_id, .details",
    "select(.is_muted == true or .score == 0.1) | .id",
    "empty",
    "(.details // {} | tostream | tojson), 1e400, 0.1, (.score // 0 | . * 3)",
    'to_entries | map("\\(.key)=\\(.value)") | join("\\n")',
]
DOCUMENT_PROGRAMS = ["length", "map(.id)", ".[3]", "[.[] | .details // .group_id] | tojson"]


@pytest.fixture(scope="module")
def varied_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The varied database of the export path's byte-identity tests."""
    path = tmp_path_factory.mktemp("jq-export") / "varied.db"
    fill_varied(path)
    return path


def _record_path(db: Path, name: str, program: str, *, each: bool) -> tuple[bytes, str | None]:
    """What --jq prints when given the records (the path of --fields), in-process: stdout's
    bytes and the message of a jq error, if any."""
    kind = CONVERSATIONS if name == "conversations" else RISK_PROFILES
    printer = Printer(
        "jsonl" if each else "json", env={}, shape=Shape(jq=JqProgram(program, each=each))
    )
    out = io.StringIO()
    failure = None
    with LocalBackend(db) as store, contextlib.redirect_stdout(out):
        pages = getattr(Client(store), name).iter_pages({}, limit=None, page_size=3)
        try:
            printer.pages(kind, pages, hint_more=False)
        except JqFailed as exc:
            failure = exc.message
    return out.getvalue().encode("utf-8"), failure


def test_jq_on_the_local_export_path_prints_byte_for_byte_what_it_prints_from_records(
    varied_db: Path, tmp_path: Path
) -> None:
    """One program on each record and one over the document, of conversations: every program
    on both lists runs in-process in tests/cli/test_shape.py."""
    env = isolated_env(tmp_path / "home", CONVRISK_PAGE_SIZE="3")
    for output, program in (["-o", "jsonl"], EACH_PROGRAMS[4]), ([], DOCUMENT_PROGRAMS[3]):
        result = subprocess.run(
            [CONVRISK, "--db", str(varied_db), "conv", "list", "--all", *output, "--jq", program],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=SAFETY_TIMEOUT,
        )
        assert result.returncode == 0, (program, result.stderr)
        expected, failure = _record_path(varied_db, "conversations", program, each=bool(output))
        assert failure is None
        assert result.stdout == expected, program


def test_a_jq_error_part_way_through_a_page_of_the_export_path_stops_as_on_records(
    varied_db: Path, tmp_path: Path
) -> None:
    with LocalBackend(varied_db) as store:
        ids = [record["id"] for record in Client(store).conversations.iterate()]
    # The 8th record is in the middle of the third page of 3; its first result is printed.
    program = f'.id, if .id == "{ids[7]}" then error("stop at \\(.id)") else empty end'
    result = subprocess.run(
        [CONVRISK, "--db", str(varied_db), "conv", "list", "--all", "-o", "jsonl", "--jq", program],
        env=isolated_env(tmp_path / "home", CONVRISK_PAGE_SIZE="3"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
    )
    expected, failure = _record_path(varied_db, "conversations", program, each=True)
    assert failure == f"--jq failed: stop at {ids[7]}"
    assert result.returncode == 1
    assert result.stdout == expected == "".join(f"{id}\n" for id in ids[:8]).encode()
    error = {"type": "jq_error", "message": failure, "param": "--jq"}
    assert result.stderr == (json.dumps({"error": error}) + "\n").encode()
