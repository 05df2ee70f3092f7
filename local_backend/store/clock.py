"""The sandbox's clock (`serve --clock`): a time that starts where told, then steps or stands."""

from __future__ import annotations

import threading

STEP_SECONDS = 1


class SandboxClock:
    """Whole Unix seconds that start at `start` and move `step` seconds at each reading (0:
    frozen).

    The store takes one stamp per object it creates or changes (a replayed create takes none;
    a change to a conversation, which has no updated_at, neither), so with a step of 1 s the
    n-th object stamped gets start + n - 1 seconds, whatever the wall clock says.
    """

    def __init__(self, start: int, step: int = STEP_SECONDS) -> None:
        self.start = start
        self.step = step
        self._stamps = 0
        self._lock = threading.Lock()

    @property
    def frozen(self) -> bool:
        """Whether the time never moves."""
        return self.step == 0

    def now(self) -> float:
        """The time of the latest stamp (the start before any), without moving the clock."""
        with self._lock:
            return float(self.start + max(self._stamps - 1, 0) * self.step)

    def __call__(self) -> float:
        """The time of this stamp; the next one is `step` seconds later."""
        with self._lock:
            stamp = self.start + self._stamps * self.step
            self._stamps += 1
        return float(stamp)

    def rewind(self) -> None:
        """Back to the start: the next stamp is `start` again (a sandbox reset)."""
        with self._lock:
            self._stamps = 0
