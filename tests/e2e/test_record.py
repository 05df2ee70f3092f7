"""`convrisk serve --proxy-to URL --record FILE` through the installed script: in front of another
`convrisk serve` the file written at the stop (SIGTERM or SIGINT) holds the last state of each
record answered, none deleted, and `serve --load FILE` and `sandbox restore FILE` take it; in
front of a service answering what is not a record, nothing of that is recorded, and it is noted.
The refusals at start run in-process in tests/cli/test_proxy.py."""

from __future__ import annotations

import json
import signal
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import described
from tests.loopback import JSONService, on_loopback, running, url_of

from .both_backends import TOKEN, isolated_env, serving
from .console import run

pytestmark = pytest.mark.e2e

AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONV = "/v1/conversations"
RISK = "/v1/risk-profiles"
CONV_ID = "conv_01JD0000000000000000000001"
OTHER_ID = "conv_01JD0000000000000000000002"


def new(parent: Path, name: str) -> Path:
    """A fresh folder for one serve's database, or one client's HOME."""
    folder = parent / name
    folder.mkdir()
    return folder


def cli(home: Path, url: str) -> dict[str, str]:
    """convrisk pointed at `url` with the token, from a HOME of its own, no journal."""
    return isolated_env(home, CONVRISK_BASE_URL=url, CONVRISK_TOKEN=TOKEN, CONVRISK_JOURNAL="off")


def ok(env: dict[str, str], *args: str) -> str:
    """Run convrisk; it must exit 0. Its stdout."""
    done = run(env, *args)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def get(env: dict[str, str], kind: str, object_id: str) -> dict[str, Any]:
    """One record as `get -o json` prints it."""
    record: dict[str, Any] = json.loads(ok(env, kind, "get", object_id, "-o", "json"))
    return record


def recorded(path: Path) -> dict[str, dict[str, Any]]:
    """The records of a snapshot file by id, each without its "resource" key."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return {line["id"]: {k: v for k, v in line.items() if k != "resource"} for line in lines}


def everything(env: dict[str, str]) -> list[dict[str, Any]]:
    """Every record a service holds, conversations then risk profiles, each oldest first."""
    out: list[dict[str, Any]] = []
    for kind in ("conv", "risk"):
        listed = json.loads(ok(env, kind, "list", "--all", "-o", "json"))
        out += sorted(listed, key=lambda record: record["id"])
    return out


def test_the_file_written_at_sigterm_holds_the_last_states_and_loads_back(
    tmp_path: Path,
) -> None:
    rec = tmp_path / "out" / "recorded.jsonl"
    rec.parent.mkdir()
    with serving(new(tmp_path, "up")) as upstream:
        direct = cli(new(tmp_path, "direct"), upstream.url)
        with serving(
            new(tmp_path, "proxy"), "--proxy-to", upstream.url, "--record", str(rec)
        ) as proxy:
            assert any(str(rec) in line and "written to" in line for line in proxy.banner)
            via = cli(new(tmp_path, "via"), proxy.url)
            a, b, c = (
                ok(via, "conv", "create", "--contact-id", f"ct_{n}", "-o", "id").strip()
                for n in range(3)
            )
            risk_args = ["--customer-id", "cus_1", "--profile-type", "moderate", "--score", "40"]
            r = ok(via, "risk", "create", *risk_args, "-o", "id").strip()
            ok(via, "conv", "update", a, "--mute")
            ok(via, "risk", "update", r, "--score", "81.5")
            ok(via, "conv", "delete", b, "--yes")
            # Made behind the proxy's back: recorded once a page through the proxy shows it.
            d = ok(direct, "conv", "create", "--group-id", "g_1", "-o", "id").strip()
            ok(via, "conv", "list", "--all")
            # Changed behind its back after: the file holds the state the proxy last saw.
            seen_c = get(direct, "conv", c)
            ok(direct, "conv", "update", c, "--pin")
            assert not rec.exists()  # written at the stop, not before
            code, log = proxy.stop(signal.SIGTERM)
        assert code == 0, log
        assert "--record: 3 conversations and 1 risk profile written to" in log
        held = recorded(rec)
        assert sorted(held) == sorted([a, c, d, r])
        assert held[a] == get(direct, "conv", a)
        assert held[a]["is_muted"] is True
        assert held[d] == get(direct, "conv", d)
        assert held[r] == get(direct, "risk", r)
        assert held[r]["score"] == 81.5
        assert held[c] == seen_c
        assert held[c]["is_pinned"] is False
        assert stat.S_IMODE(rec.stat().st_mode) == 0o600
        assert sorted(p.name for p in rec.parent.iterdir()) == ["recorded.jsonl"]
    # A sandbox started from it serves exactly those records, and snapshots them byte for byte.
    expected = [held[i] for i in sorted([a, c, d])] + [held[r]]
    with serving(new(tmp_path, "loaded"), "--load", str(rec)) as loaded:
        on_loaded = cli(new(tmp_path, "on-loaded"), loaded.url)
        assert everything(on_loaded) == expected
        snap = tmp_path / "again.jsonl"
        ok(on_loaded, "sandbox", "snapshot", str(snap))
        assert snap.read_bytes() == rec.read_bytes()
    # And `sandbox restore` takes it into a running one.
    with serving(new(tmp_path, "restored")) as fresh:
        on_fresh = cli(new(tmp_path, "on-fresh"), fresh.url)
        ok(on_fresh, "conv", "create", "--contact-id", "ct_gone")
        ok(on_fresh, "sandbox", "restore", str(rec), "--yes")
        assert everything(on_fresh) == expected


def test_sigint_writes_the_recording_too(tmp_path: Path) -> None:
    rec = tmp_path / "recorded.jsonl"
    rec.write_text("an earlier recording, replaced at the stop\n")
    with serving(new(tmp_path, "up")) as upstream:
        with serving(
            new(tmp_path, "proxy"), "--proxy-to", upstream.url, "--record", str(rec)
        ) as proxy:
            via = cli(new(tmp_path, "via"), proxy.url)
            made = ok(via, "conv", "create", "--contact-id", "ct_1", "-o", "id").strip()
            code, log = proxy.stop(signal.SIGINT)
        assert code == 0, log
        direct = cli(new(tmp_path, "direct"), upstream.url)
        assert recorded(rec) == {made: get(direct, "conv", made)}


def test_a_proxy_without_db_opens_none_of_the_users_databases(tmp_path: Path) -> None:
    home = new(tmp_path, "proxy")
    default = home / "data" / "convrisk" / "convrisk.db"
    with (
        serving(new(tmp_path, "up")) as upstream,
        serving(home, "--proxy-to", upstream.url, db_path=default) as proxy,
    ):
        via = cli(new(tmp_path, "via"), proxy.url)
        ok(via, "conv", "create", "--contact-id", "ct_1")
        assert httpx.get(f"{proxy.url}/__sandbox/requests", headers=AUTH).status_code == 200
    assert not default.parent.exists() or list(default.parent.iterdir()) == []


def _conversation(object_id: str, **values: Any) -> dict[str, Any]:
    return described.conversation(object_id, 1_700_000_000, **({"contact_id": "ct_1"} | values))


class NotRecords(JSONService):
    """A service whose 2xx answers are not (all) records of what was asked."""

    def do_GET(self) -> None:
        if self.path == f"{CONV}/{CONV_ID}":
            data = b"<html><body>maintenance</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif self.path.startswith(CONV):
            nameless = {k: v for k, v in _conversation(OTHER_ID).items() if k != "id"}
            page = {"has_more": False, "data": [_conversation(CONV_ID), nameless]}
            self.send_json(200, page)
        else:
            self.send_json(404, {"error": {"type": "not_found", "message": "No such thing."}})

    def do_POST(self) -> None:
        token = self.headers.get("Authorization", "").partition(" ")[2]
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        # The token echoed in a field of the wrong type: never shown in the note.
        self.send_json(200, _conversation(OTHER_ID, is_muted=token))

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_json(200, _conversation(OTHER_ID))  # the record of another id


def test_answers_that_are_not_records_are_not_recorded_and_noted_once_each(
    tmp_path: Path,
) -> None:
    rec = tmp_path / "recorded.jsonl"
    with (
        running(on_loopback(NotRecords)) as service,
        serving(
            new(tmp_path, "proxy"), "--proxy-to", url_of(service), "--record", str(rec)
        ) as proxy,
        httpx.Client(base_url=proxy.url, headers=AUTH, timeout=20) as client,
    ):
        for _ in range(2):
            assert client.get(f"{CONV}/{CONV_ID}").status_code == 200
            assert client.get(CONV).status_code == 200
            assert client.post(CONV, json={"contact_id": "ct_1"}).status_code == 200
            assert client.put(f"{CONV}/{CONV_ID}", json={"is_muted": True}).status_code == 200
            assert client.get(f"{RISK}/rp_01JD0000000000000000000001").status_code == 404
        code, log = proxy.stop()
    assert code == 0, log
    notes = [line for line in log.splitlines() if "notice: --record:" in line]
    said = [line.partition("notice: --record: ")[2] for line in notes]
    assert said == [
        f"GET {CONV}/{CONV_ID}: the body is not JSON; not recorded",
        f"GET {CONV}: 1 of its 2 records are not recorded (/data/1: not a conversation: /: "
        '"id" is a required property); not recorded',
        f'POST {CONV}: not a conversation: /is_muted: "***" is not of type "boolean"; not recorded',
        f"PUT {CONV}/{CONV_ID}: the conversation of another id ({OTHER_ID}); not recorded",
        f"1 conversation and 0 risk profiles written to {rec} (8 not recorded: not records)",
    ]
    assert TOKEN not in log
    assert recorded(rec) == {CONV_ID: _conversation(CONV_ID)}


def test_a_folder_gone_by_the_stop_is_exit_1_naming_the_file_and_the_records_are_kept(
    tmp_path: Path,
) -> None:
    folder = new(tmp_path, "out")
    rec = folder / "recorded.jsonl"
    with serving(new(tmp_path, "up")) as upstream:
        with serving(
            new(tmp_path, "proxy"), "--proxy-to", upstream.url, "--record", str(rec)
        ) as proxy:
            via = cli(new(tmp_path, "via"), proxy.url)
            made = ok(via, "conv", "create", "--contact-id", "ct_1", "-o", "id").strip()
            folder.rmdir()
            code, log = proxy.stop()
        assert code == 1, log
        error = [line for line in log.splitlines() if line.startswith("Error: ")]
        assert len(error) == 1, log
        assert error[0].startswith(f"Error: Cannot write the recording to {rec}: No such file")
        kept = Path(error[0].partition("; kept in ")[2].removesuffix(" instead."))
        try:
            direct = cli(new(tmp_path, "direct"), upstream.url)
            assert recorded(kept) == {made: get(direct, "conv", made)}
        finally:
            kept.unlink()
