"""What every test shares: children started with SIGINT's default action, whatever pytest got."""

from __future__ import annotations

import signal
from types import FrameType

import pytest


def _ignore(signum: int, frame: FrameType | None) -> None:
    """Do nothing: pytest still ignores Ctrl-C, as it was started to."""


def pytest_configure(config: pytest.Config) -> None:
    """Started with SIGINT ignored (nohup, some CI runners), pytest would pass that on to every
    child it starts, and the Ctrl-C tests would see a convrisk that cannot be interrupted. A
    handler instead of SIG_IGN is not passed on: exec resets a handled signal to its default."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, _ignore)
