"""The progress line counts in words (one conversation), and a table or CSV of nothing but
failed ids prints no lone header."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.conftest import Invoke


def test_progress_says_one_conversation(
    invoke: Invoke, terminal: object, backend: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convrisk.cli.output.printer import Printer
    from convrisk.cli.output.resource_kinds import CONVERSATIONS

    shown: list[str] = []
    monkeypatch.setattr(Printer, "progress", lambda self, text: shown.append(text))

    from convrisk.api_client.page import Page
    from convrisk.api_client.record_types import Conversation

    # A remote record with fields the interface does not list.
    item: Any = {
        "id": "conv_1",
        "object": "conversation",
        "contact_id": "c",
        "group_id": None,
        "is_pinned": False,
        "is_muted": False,
        "archived_at": None,
        "pinned_message_id": None,
        "created_at": 1,
        "updated_at": 1,
    }
    first: Page[Conversation] = Page(True, records=[item])
    second: Page[Conversation] = Page(False, records=[item])
    Printer("id", env={}).pages(CONVERSATIONS, [first, second], hint_more=False)
    assert shown == ["1 conversation..."]


@pytest.mark.parametrize("fmt", ["tsv", "csv"])
def test_get_of_only_failing_ids_prints_no_header(invoke: Invoke, fmt: str) -> None:
    chosen = [] if fmt == "tsv" else ["-o", fmt]  # piped, the default table format is TSV
    missing = (f"conv_01ARZ3NDEKTSV4RRFFQ69G5FA{n}" for n in range(3))
    result = invoke("conv", "get", *missing, *chosen)
    assert result.code == 3 and result.stdout == ""
    assert invoke("conv", "list", *chosen).ok().stdout != ""  # an empty list keeps its header
