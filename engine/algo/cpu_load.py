"""How many of this process's cores other processes keep busy right now, measured.

Not the load average: it trails the machine by a minute (a run started right after another
one finished sees the old run's load) and in some VMs it never drops below 1 on an idle
machine (this project's 2-core dev box reads 1.0 with both cores 99% idle), which made the
trainer take one torch thread of two. Instead: the busy time of the usable cores over a short
window, less the time this process and its children spent in it.

`LoadWatch` measures the same thing over the time since its last look, without waiting: the
trainer asks it between epochs, so a run that started beside another (both saw an idle
machine, each took every core, and each op then waited for a descheduled thread) gives the
cores back once the other's load shows.

Tested in: tests/engine/algo/test_core_count.py.
"""

from __future__ import annotations

import threading
import time

import psutil

from puffer_tui.engine.vec.sizing import usable_cores

WINDOW_SECONDS = 0.2  # long enough to average over a scheduler tick, short enough for startup
MAX_AGE_SECONDS = 5.0  # a measurement this recent is reused (tests build many trainers)

_lock = threading.Lock()
_last: tuple[float, float] | None = None  # (monotonic time, busy cores)


def _busy(t) -> float:
    """Seconds a CPU did not idle (steal counts as busy: the hypervisor had the core; guest
    time is already inside user and nice)."""
    idle = t.idle + getattr(t, "iowait", 0.0)
    guest = getattr(t, "guest", 0.0) + getattr(t, "guest_nice", 0.0)
    return sum(t) - idle - guest


def _busy_seconds(cores: list[int]) -> float:
    """CPU seconds the given cores have not idled since boot. Per core where the ids index
    psutil's list (offline CPUs shift it), else the whole machine's."""
    per_cpu = psutil.cpu_times(percpu=True)
    if len(cores) < len(per_cpu) and max(cores) < len(per_cpu):
        return sum(_busy(per_cpu[core]) for core in cores)
    return _busy(psutil.cpu_times())


def _own_seconds(process: psutil.Process) -> float:
    """CPU seconds of this process, of its children that have ended (the OS adds them to
    ours when they are reaped) and of its live children: a child reaped during the window
    moves from the last to the second, so it is counted once either way."""
    t = process.cpu_times()
    seconds = t.user + t.system + getattr(t, "children_user", 0.0) + \
        getattr(t, "children_system", 0.0)
    for child in process.children(recursive=True):
        try:
            c = child.cpu_times()
        except psutil.Error:
            continue
        seconds += c.user + c.system
    return seconds


def busy_cores_of_others(window: float = WINDOW_SECONDS, max_age: float = MAX_AGE_SECONDS) -> float:
    """Cores of this process's affinity that other processes used over the last `window`
    seconds (a fraction: 0.0 idle, 1.5 = one and a half cores busy); 0.0 where the OS does
    not say (the caller then uses every core, as with an idle machine)."""
    global _last
    with _lock:
        now = time.monotonic()
        if _last is not None and now - _last[0] <= max_age:
            return _last[1]
        try:
            others = _measure(window)
        except (psutil.Error, OSError, ValueError):
            others = 0.0
        _last = (time.monotonic(), others)
        return others


def _measure(window: float) -> float:
    cores = usable_cores()
    process = psutil.Process()
    before = _sample(cores, process)
    time.sleep(window)
    return _others_between(before, _sample(cores, process), cores)


def _sample(cores: list[int], process: psutil.Process) -> tuple[float, float, float]:
    """(monotonic time, the cores' busy seconds, ours and our children's CPU seconds)."""
    return time.monotonic(), _busy_seconds(cores), _own_seconds(process)


def _others_between(before: tuple, after: tuple, cores: list[int]) -> float:
    """Other processes' busy cores between two samples: the cores' busy time less ours."""
    elapsed = max(after[0] - before[0], 1e-6)
    others = max(0.0, (after[1] - before[1]) - (after[2] - before[2])) / elapsed
    return min(others, float(len(cores)))


class LoadWatch:
    """Cores of this process's affinity that other processes used since the last look."""

    def __init__(self):
        self._process = psutil.Process()
        self._mark = self._sample()

    def _sample(self) -> tuple[float, float, float] | None:
        try:
            return _sample(usable_cores(), self._process)
        except (psutil.Error, OSError, ValueError):
            return None

    def others_since_last(self, min_seconds: float) -> float | None:
        """Other processes' busy cores, averaged since the last look that returned a value
        (or since this watch was made); None, keeping the mark, when under `min_seconds` have
        passed (too short a span to average over the scheduler) or the OS does not say."""
        now = self._sample()
        if now is None or self._mark is None:
            self._mark = now
            return None
        if now[0] - self._mark[0] < min_seconds:
            return None
        others = _others_between(self._mark, now, usable_cores())
        self._mark = now
        return others


def forget() -> None:
    """Drop the cached measurement (the next call measures again)."""
    global _last
    with _lock:
        _last = None
