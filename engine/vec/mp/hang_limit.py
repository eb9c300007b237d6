"""When a silent worker is called hung: a limit from what its healthy work was measured to take.

A fixed limit either kills a slow env (16 Python envs a worker, each reset building a world
for a second or more) or waits far too long for a fast one that hung. So the workers measure
their longest silence while busy (the time between two messages to the main process: an
answer, or a heartbeat an env sends between its units of work, engine/native/progress.py)
and report it whenever it grows; the limit is MARGIN times the slowest of these, and never
less than the floor, `vec.worker_timeout`. A worker that keeps sending heartbeats is never
called hung, however long its whole reset takes.
"""

from __future__ import annotations

import math

MARGIN = 5.0  # a healthy wait may be this many times the slowest one measured (a loaded box)
GROWTH = 1.1  # a worker reports its longest silence again when it grew by this factor
MIN_REPORTED_S = 0.001  # shorter silences are not worth a message
HEARTBEAT_MAX_S = 1.0  # a busy worker says it is alive at least this often (when it can)
# What a worker was doing, as the error names it.
ACTIVITIES = {"build": "building envs", "reset": "resets", "step": "steps"}


def heartbeat_interval(floor: float) -> float:
    """How often a busy worker sends a heartbeat: several times within the smallest limit."""
    return min(HEARTBEAT_MAX_S, floor / MARGIN)


class HangLimit:
    """The main process's view: the slowest silence measured per activity, and the limit."""

    def __init__(self, floor: float, margin: float = MARGIN):
        self.floor, self.margin = float(floor), float(margin)
        self.measured: dict[str, float] = {}  # activity -> longest healthy silence (s)
        self.slowest = 0.0  # kept, not computed: a watchdog thread reads it (inline_watch.py)

    def note(self, activity: str, seconds: float) -> None:
        if seconds > self.measured.get(activity, 0.0):
            self.measured[activity] = float(seconds)
            self.slowest = max(self.slowest, float(seconds))

    def seconds(self) -> float:
        return max(self.floor, self.margin * self.slowest)

    def describe(self, silent_for: float, where: str = "") -> str:
        """Why a worker silent for `silent_for` seconds is called hung, and the way out;
        `where` says where the block runs when that is not a worker process of its own."""
        limit = self.seconds()
        if self.measured:
            times = ", ".join(f"{ACTIVITIES.get(k, k)} {_seconds(v)}" for k, v in
                              sorted(self.measured.items(), key=lambda kv: -kv[1]))
            basis = (f"the limit is the larger of --vec.worker-timeout ({self.floor:g} s) and "
                     f"{self.margin:g}x the longest wait measured between a worker's signs of "
                     f"progress ({times})")
        else:
            basis = f"the limit is --vec.worker-timeout ({self.floor:g} s), nothing measured yet"
        raise_to = max(2 * limit, silent_for * 2)
        suggestion = 10 ** math.ceil(math.log10(raise_to)) if raise_to > 0 else 60
        suggestion = min((s for s in (suggestion / 5, suggestion / 2, suggestion)
                          if s >= raise_to), default=suggestion)
        return (f"no answer within {limit:.3g} s{where} (is the env hung?): {basis}; if the "
                f"env is only slow, allow it more: --vec.worker-timeout {suggestion:g}")


def _seconds(value: float) -> str:
    if value >= 1.0:
        return f"{value:.3g} s"
    return f"{value * 1000:.3g} ms" if value >= 0.001 else "under 1 ms"
