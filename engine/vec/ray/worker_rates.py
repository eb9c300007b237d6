"""Per-worker throughput for telemetry: the agent-steps each worker (a Ray actor) delivered,
as steps per second over the last window of at least MIN_WINDOW_S seconds.

The vec's thread counts (`add`); the telemetry thread samples (`rates`). Counts only grow, so
an unlocked read at worst splits one step between two windows.

Tested in: tests/engine/runtime/test_telemetry_workers.py"""

from __future__ import annotations

import time
from collections.abc import Callable

MIN_WINDOW_S = 1.0  # snapshots asked for more often get the last window's rates again


class WorkerRates:
    def __init__(self, workers: int, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._counts = [0] * workers
        self._since = clock()
        self._then = [0] * workers
        self._rates = [0.0] * workers

    def add(self, worker: int, steps: int) -> None:
        self._counts[worker] += steps

    def rates(self) -> list[float]:
        now = self._clock()
        window = now - self._since
        if window >= MIN_WINDOW_S:
            counts = list(self._counts)
            self._rates = [(c - p) / window for c, p in zip(counts, self._then, strict=True)]
            self._since, self._then = now, counts
        return list(self._rates)
