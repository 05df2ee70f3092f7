"""`convrisk serve` run in-process: options it refuses before it listens (a serve that starts
instead fails the test at once rather than serving for ever), and a serve that does start, for
a scenario run while it listens."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import convrisk.local_backend.serve.server as server_module


class ServeStarted(BaseException):
    """`serve` got as far as listening where it should have refused."""


class _Done(BaseException):
    """The scenario ran: `serve` is to stop (a BaseException, so that main() lets it by)."""


def never_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make an in-process `serve` that gets past its checks fail at once instead of serving."""

    def refuse(**options: Any) -> None:
        raise ServeStarted(f"serve started (on port {options.get('port')!r})")

    monkeypatch.setattr(server_module, "run_server", refuse)


def serve_then(
    monkeypatch: pytest.MonkeyPatch,
    invoke: Callable[..., Any],
    *args: str,
    scenario: Callable[[str], Any],
) -> Any:
    """Run `convrisk serve ARGS` in-process; once it listens, `scenario(url)` runs (in this
    thread, the server answering from its own), then serve stops. What the scenario returned."""
    real = server_module.run_server
    results: list[Any] = []

    def run_then_stop(**options: Any) -> None:
        announce: Callable[[str], None] = options["on_ready"]

        def ready(url: str) -> None:
            announce(url)
            results.append(scenario(url))
            raise _Done

        real(**{**options, "on_ready": ready})

    monkeypatch.setattr(server_module, "run_server", run_then_stop)
    refused = None
    try:
        refused = invoke("serve", *args)
    except _Done:
        pass
    finally:
        monkeypatch.setattr(server_module, "run_server", real)
    assert results, f"serve stopped before it listened: {refused}"
    return results[0]
