"""Where an epoch's wall time goes: env, forward, copy, learn, misc.

Sections are measured with perf_counter around the code that does the work; on CUDA the
device is synchronized before a section's clock is read, so asynchronous kernels are billed
to the section that launched them rather than to whichever section next waits on them.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import torch

from puffer_tui.engine.shared.protocol import TIMING, TIMING_KEYS, TIMING_PCT

SECTIONS = TIMING_KEYS


class Timing:
    def __init__(self, device: torch.device):
        self.sync = device.type == "cuda"
        self.device = device
        self.seconds = dict.fromkeys(SECTIONS, 0.0)
        self._open: list[str] = []  # the sections being timed now, outermost first
        # what a loop timing its sections by hand reads (adding to `seconds` itself): the
        # clock, after the device's queued work on CUDA as `section` does
        self.clock = self._synchronized_clock if self.sync else time.perf_counter

    def reset(self) -> None:
        # in place: a loop timing by hand holds this dict
        self.seconds.update(dict.fromkeys(SECTIONS, 0.0))

    @contextmanager
    def section(self, name: str):
        start = time.perf_counter()
        self._open.append(name)
        try:
            yield
        finally:
            self._open.pop()
            if self.sync:
                torch.cuda.synchronize(self.device)
            self.seconds[name] += time.perf_counter() - start

    def _synchronized_clock(self) -> float:
        torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def exclude(self, seconds: float) -> None:
        """Take `seconds` the engine spent blocked (paused at a safe point) out of every
        section open now: the epoch's total leaves it out too, so a section that kept it
        would report more than 100% of the epoch."""
        for name in self._open:
            self.seconds[name] -= seconds

    def metrics(self, total: float) -> dict:
        """The timing groups: seconds and percent per section; misc = total - the rest."""
        measured = sum(v for k, v in self.seconds.items() if k != "misc")
        self.seconds["misc"] = max(total - measured, 0.0)
        denominator = max(total, 1e-12)
        return {TIMING: {k: float(v) for k, v in self.seconds.items()},
                TIMING_PCT: {k: 100.0 * v / denominator for k, v in self.seconds.items()}}
