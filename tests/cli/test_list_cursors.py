"""The variants of tests/e2e/test_list_cursors.py in-process: each bad cursor a usage error."""

from __future__ import annotations

import pytest

from tests.cli.conftest import Invoke


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--starting-after", "conv_1", "--ending-before", "conv_2"], "not both"),
        (["--ending-before", " "], "--ending-before must not be empty"),
        (["--ending-before", "rp_01ARZ3NDEKTSV4RRFFQ69G5FAV"], "ending_before"),
    ],
)
def test_bad_cursors_are_usage_errors(invoke: Invoke, args: list[str], message: str) -> None:
    result = invoke("conv", "list", *args)
    assert result.code == 2
    assert message in result.stderr and result.stdout == ""
