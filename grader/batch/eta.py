"""How long the rest of a run will take, counting the submissions still being graded.

A rate from finished submissions alone says "1 second left" while one
submission has been hanging for ten: this estimate gives each submission in
flight what finished submissions that took longer than its age still took
(as long again where none did, up to the per-submission limit), and each
waiting one the mean duration, shared over the lanes seen working at once.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Callable


class Estimate:
    """Told when each submission starts and finishes; ``remaining()`` in seconds, None until one finished."""

    def __init__(self, total: int, done: int = 0, *, limit: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total, self.done, self.limit, self.clock = total, done, limit, clock
        self.running: dict[str, float] = {}  # student -> when it started
        self.durations: list[float] = []
        self.lanes = 1  # the most submissions seen in flight at once
        self._lock = threading.Lock()  # a progress bar reads from its own thread

    def start(self, student: str) -> None:
        with self._lock:
            self.running[student] = self.clock()
            self.lanes = max(self.lanes, len(self.running))

    def finish(self, student: str) -> None:
        with self._lock:
            self.done += 1
            began = self.running.pop(student, None)
            if began is not None:
                self.durations.append(self.clock() - began)

    def remaining(self) -> float | None:
        with self._lock:
            if not self.durations:
                return None
            now = self.clock()
            residuals = [self._residual(now - began) for began in self.running.values()]
            waiting = max(0, self.total - self.done - len(self.running))
            work = sum(residuals) + waiting * statistics.fmean(self.durations)
            return max(max(residuals, default=0.0), work / self.lanes)

    def _residual(self, age: float) -> float:
        """What a submission graded for ``age`` seconds still needs, judging by those that finished."""
        longer = [duration - age for duration in self.durations if duration > age]
        if longer:
            return statistics.fmean(longer)
        expected = age if self.limit is None else min(age, self.limit - age)
        return max(0.0, expected)
