"""The token `convrisk serve` makes can be pasted as an argument: it never starts with `-`."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from convrisk.api_client.endpoint import token_problem
from convrisk.local_backend.serve import token as serve_token


def test_a_made_token_never_starts_with_a_dash_even_when_the_random_part_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = secrets.token_urlsafe
    monkeypatch.setattr(secrets, "token_urlsafe", lambda n: "-" + real(n)[1:])
    stored = serve_token.load_or_create(tmp_path / "s.db")
    assert stored.created
    assert not stored.token.startswith("-")
    assert token_problem(stored.token) is None
    assert len(stored.token) >= 43  # 256 random bits, as before


def test_made_tokens_differ(tmp_path: Path) -> None:
    made = {serve_token.load_or_create(tmp_path / f"{i}.db").token for i in range(20)}
    assert len(made) == 20
    assert not any(token.startswith("-") for token in made)
