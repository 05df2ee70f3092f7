"""convrisk run in-process with environment variables for one run only, as the e2e tests give
them to one subprocess: `Runs(invoke, monkeypatch).run("conv", "list", CONVRISK_PAGE_SIZE="2")`."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.cli.conftest import Invoke, Result


@dataclass
class Runs:
    """Runs of main() through `invoke`, each with its own extra environment variables."""

    invoke: Invoke
    monkeypatch: pytest.MonkeyPatch

    def run(self, *args: str, stdin: str | None = None, **env: str) -> Result:
        """Run `convrisk ARGS` with `env` set for this run; stdin empty unless given."""
        with self.monkeypatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            return self.invoke(*args, input=stdin)

    def ok(self, *args: str, stdin: str | None = None, **env: str) -> str:
        """stdout of a run that must succeed."""
        return self.run(*args, stdin=stdin, **env).ok().stdout
