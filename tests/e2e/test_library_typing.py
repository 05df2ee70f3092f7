"""A program using the library under `mypy --strict`: the keywords of each verb are typed from
the description, so a misspelt field or a wrong value type is told before the program runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .console import SAFETY_TIMEOUT

# The checkout, where convrisk/ is: mypy does not read an editable install's import hook.
CHECKOUT = Path(__file__).resolve().parents[2]

PROGRAM = """\
from collections.abc import Iterator

from convrisk import Client, Conversation, Page, RiskProfile


def use(client: Client) -> None:
    conv: Conversation = client.conversations.create(contact_id="c_1", idempotency_key="k")
    client.conversations.update(conv["id"], is_muted=True, pinned_message_id=None)
    page: Page[Conversation] = client.conversations.list(limit=5, muted=True)
    walk: Iterator[RiskProfile] = client.risk_profiles.iterate(profile_type="moderate")
    client.risk_profiles.create(customer_id="c", profile_type="t", score=1.5, details={})
    print(page.has_more, page.cursor, next(walk)["score"], client.conversations.delete("x"))
    client.conversations.create(contact="c_1")  # line 13: no such field
    client.conversations.update(conv["id"], is_muted="yes")  # line 14: not a bool
    client.conversations.iterate(mutd=True)  # line 15: no such filter
    client.risk_profiles.create(customer_id="c")  # line 16: required fields missing
    client.risk_profiles.update(conv["id"], customer_id="c")  # line 17: not updatable
"""


def test_mypy_strict_tells_a_wrong_keyword_or_type_on_its_line(tmp_path: Path) -> None:
    program = tmp_path / "app.py"
    program.write_text(PROGRAM, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", str(program)],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(CHECKOUT)},
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT * 4,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    lines = sorted({int(line.split(":")[1]) for line in errors})
    assert lines == [13, 14, 15, 16, 17], result.stdout
    assert '"contact"' in result.stdout and '"mutd"' in result.stdout
