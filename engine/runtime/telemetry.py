"""Telemetry snapshots for the control server (built on the server's thread).

Built from explicit inputs: the run's config and name, the engine's `EngineState`, and
`trainer()` (the trainer once built, else None). Reads only what is safe from another
thread: `trainer.progress` (the trainer keeps it cheap and consistent), the last metrics row
(handed over whole by the main thread through `record`), the live config fields and the
worker pids, and the vec env's own telemetry calls (Ray: `worker_stats`, `cluster_usage`,
which keep their own counters and sample Ray at a low rate). Field meanings are in
docs/protocol.md; "workers" and "cluster" in docs/many-machines.md.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from puffer_tui.engine.runtime.engine_state import EngineState
from puffer_tui.engine.shared.config import Config, live_specs
from puffer_tui.engine.shared.protocol import (
    CLUSTER,
    ENV,
    EVAL,
    LOSSES,
    TIMING,
    TIMING_PCT,
    WORKERS,
    RunState,
)


class Telemetry:
    def __init__(self, config: Config, run_name: str, state: EngineState,
                 trainer: Callable[[], object | None]):
        self.config = config
        self.run_name = run_name
        self.state = state
        self._trainer = trainer
        self.last_row: dict = {}
        self._device: str | None = None

    def record(self, row: dict) -> None:
        """Main thread: the epoch's metrics row (replaced whole, never changed after)."""
        self.last_row = row

    def snapshot(self) -> dict:
        config = self.config
        trainer = self._trainer()
        progress = dict(trainer.progress or {}) if trainer is not None else {}
        row = self.last_row
        total = config.train.total_timesteps
        step = int(progress.get("global_step", row.get("global_step", 0)) or 0)
        sps = float(progress.get("sps", row.get("sps", 0.0)) or 0.0)
        state = self.state.run_state
        if state != RunState.RUNNING:
            sps = 0.0  # "SPS now": nothing is stepping while paused, stopping or finished
        eta = (total - step) / sps if sps > 0 else None
        live_config = trainer.config if trainer is not None else config
        return {
            "time": time.time(),
            "state": state,
            "env": config.env_name,
            "run": self.run_name,
            "global_step": step,
            "total_timesteps": total,
            "epoch": int(progress.get("epoch", row.get("epoch", 0)) or 0),
            "sps": sps,
            "uptime": float(progress.get("uptime", row.get("uptime", 0.0)) or 0.0),
            "eta": eta,
            "learning_rate": row.get("learning_rate", live_config.train.learning_rate),
            # the trainer's groups as it made them (the row is nested, nothing to pick apart)
            "losses": dict(row.get(LOSSES) or {}),
            "timing": dict(row.get(TIMING) or {}),
            "timing_pct": dict(row.get(TIMING_PCT) or {}),
            "stats": dict(row.get(ENV) or {}),
            # the last row's evaluation, if it ran one; its epoch tells the app a new one
            EVAL: {**row[EVAL], "epoch": row.get("epoch")} if row.get(EVAL) else {},
            "hyperparameters": {
                s.key: getattr(getattr(live_config, s.section), s.name) for s in live_specs()
            },
            "processes": self._processes(trainer),
            # per learner rank (last epoch) and per Ray actor (last second): where, how fast
            WORKERS: [*(row.get(WORKERS) or ()), *_vec_call(trainer, "worker_stats", [])],
            CLUSTER: _vec_call(trainer, "cluster_usage", None),
            "device": self._device_name(trainer),
            "preset": getattr(trainer, "preset", ""),  # the family preset (run header)
            "gpu": self._gpu(),
        }

    @staticmethod
    def _processes(trainer) -> list[dict]:
        processes = [{"role": "engine", "pid": os.getpid()}]
        world = getattr(trainer, "world", None)
        for rank, pid in world.local_peer_pids() if world is not None else ():
            processes.append({"role": "rank", "index": rank, "pid": int(pid)})
        pids = trainer.worker_pids if trainer is not None else []
        for index, pid in enumerate(pids):
            processes.append({"role": "worker", "index": index, "pid": int(pid)})
        return processes

    def _device_name(self, trainer) -> str:
        if self._device is None and trainer is not None:
            # the precision "auto" chose, next to the device it chose it for
            mixed = getattr(trainer, "precision", "float32") == "bfloat16"
            self._device = str(trainer.device) + (" bf16" if mixed else "")
        if self._device is not None:
            return self._device
        wanted = self.config.train.device
        return "cuda:0" if wanted == "cuda" else "cpu" if wanted == "cpu" else "auto"

    def _gpu(self) -> dict | None:
        if not (self._device or "").startswith("cuda"):
            return None
        try:
            import torch

            free, total = torch.cuda.mem_get_info()
            try:
                utilization = torch.cuda.utilization()
            except Exception:  # needs pynvml
                utilization = None
            return {"name": torch.cuda.get_device_name(), "utilization": utilization,
                    "memory_used": total - free, "memory_total": total}
        except Exception:
            return None


def _vec_call(trainer, name: str, default):
    """The vec env's telemetry method `name` (only some backends have one); `default` when it
    has none or it fails (a vec env closed by a worker error)."""
    method = getattr(getattr(trainer, "vecenv", None), name, None)
    if method is None:
        return default
    try:
        return method()
    except Exception:
        return default
