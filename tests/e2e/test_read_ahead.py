"""A remote `--all` asks for the next page while it prints this one: Ctrl-C still stops it at
once, a shorter list asks for no page it does not print, and the output is the same."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from bench.fill import fill
from convrisk.local_backend.backend import LocalBackend
from tests.loopback import JSONService, on_loopback, running, url_of

from .both_backends import TOKEN, Remote, isolated_env, serving
from .console import CONVRISK, SAFETY_TIMEOUT

HELD = 30.0  # seconds the slow service holds the second page at most (the test releases it)


class SlowSecondPage(JSONService):
    """The first page of two conversations at once; any later page only once released."""

    asked: ClassVar[threading.Event]
    release: ClassVar[threading.Event]

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        if "starting_after" in query:
            self.asked.set()
            self.release.wait(HELD)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client left
                self.send_json(200, {"has_more": False, "data": []})
            return
        data: list[dict[str, Any]] = [{"id": "conv_2"}, {"id": "conv_1"}]
        self.send_json(200, {"has_more": True, "data": data})


def test_ctrl_c_stops_at_once_with_the_next_page_in_flight(tmp_path: Path) -> None:
    SlowSecondPage.asked = threading.Event()
    SlowSecondPage.release = threading.Event()
    with running(on_loopback(SlowSecondPage)) as server:
        env = isolated_env(
            tmp_path,
            CONVRISK_BASE_URL=url_of(server),
            CONVRISK_TOKEN="tok",
            CONVRISK_PAGE_SIZE="2",
            CONVRISK_TIMEOUT="60",
        )
        child = subprocess.Popen(
            [CONVRISK, "conv", "list", "--all", "-o", "id"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None and child.stderr is not None
            assert [child.stdout.readline(), child.stdout.readline()] == ["conv_2\n", "conv_1\n"]
            assert SlowSecondPage.asked.wait(SAFETY_TIMEOUT)
            # The page is out; a moment for convrisk to note it printed and wait for the next.
            time.sleep(0.5)
            started = time.monotonic()
            child.send_signal(signal.SIGINT)
            code = child.wait(timeout=SAFETY_TIMEOUT)
            took = time.monotonic() - started
            err = child.stderr.read()
        finally:
            SlowSecondPage.release.set()
            if child.poll() is None:
                child.kill()
                child.wait(timeout=SAFETY_TIMEOUT)
    assert code == 130, err
    assert took < 5, f"Ctrl-C took {took:.1f} s"
    assert "with --starting-after conv_1." in err
    assert "Traceback" not in err


def test_a_list_asks_for_no_page_it_does_not_print(tmp_path: Path) -> None:
    with LocalBackend(tmp_path / "serve.db") as seed:
        fill(seed, "conversations", 250)
    with serving(tmp_path) as served:
        cli = Remote(tmp_path, served.url, TOKEN)
        every = cli.run("conv", "list", "--all", "-o", "jsonl")
        asked_all = len(served.log)
        some = cli.run("conv", "list", "--limit", "150", "-o", "jsonl")
        asked_some = len(served.log) - asked_all
        # The same records, in the same bytes, as the pages one by one.
        one_by_one = cli.run("conv", "list", "--limit", "250", "-o", "jsonl")
    assert every.returncode == some.returncode == 0, every.stderr + some.stderr
    assert every.stdout == one_by_one.stdout and len(every.stdout.splitlines()) == 250
    assert some.stdout == "".join(every.stdout.splitlines(keepends=True)[:150])
    assert (asked_all, asked_some) == (3, 2)
