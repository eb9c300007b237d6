"""Per-core CPU, the engine's and workers' CPU, and RAM, sampled with psutil.

`sample()` never sleeps: psutil's cpu_percent(interval=None) measures since the previous
call, so calling it once a second from a worker thread gives one-second averages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psutil


@dataclass
class ProcessLoad:
    role: str  # "engine" or "worker N"
    pid: int
    cpu: float | None  # percent of one core; None while unknown or gone
    rss: int = 0


@dataclass
class SystemSample:
    cores: list[float] = field(default_factory=list)  # percent per logical core
    processes: list[ProcessLoad] = field(default_factory=list)
    app_cpu: float = 0.0  # this app's own CPU, percent of one core
    ram_used: int = 0
    ram_total: int = 0


class SystemMonitor:
    """Keeps psutil.Process handles alive between samples so their CPU deltas make sense."""

    def __init__(self):
        self._procs: dict[int, psutil.Process] = {}
        self._self = psutil.Process()
        psutil.cpu_percent(percpu=True)  # prime the per-core deltas
        self._self.cpu_percent(None)

    def sample(self, processes: list[dict] | None = None) -> SystemSample:
        """Loads now; `processes` is the engine's telemetry list ({"role", "pid", "index"?})."""
        out = SystemSample(cores=psutil.cpu_percent(percpu=True))
        mem = psutil.virtual_memory()
        out.ram_used, out.ram_total = mem.total - mem.available, mem.total
        out.app_cpu = self._self.cpu_percent(None)
        wanted = {}
        for p in processes or ():
            pid = p.get("pid")
            if isinstance(pid, int):
                role = p.get("role", "?")
                if "index" in p:
                    role = f"{role} {p['index']}"
                wanted[pid] = role
        for pid in list(self._procs):
            if pid not in wanted:
                del self._procs[pid]
        for pid, role in wanted.items():
            out.processes.append(self._load(pid, role))
        return out

    def _load(self, pid: int, role: str) -> ProcessLoad:
        proc = self._procs.get(pid)
        try:
            if proc is None:
                proc = self._procs[pid] = psutil.Process(pid)
                proc.cpu_percent(None)  # first call only primes; report unknown until next
                return ProcessLoad(role, pid, None, proc.memory_info().rss)
            return ProcessLoad(role, pid, proc.cpu_percent(None), proc.memory_info().rss)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            self._procs.pop(pid, None)
            return ProcessLoad(role, pid, None)
