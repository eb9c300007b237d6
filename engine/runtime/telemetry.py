"""Telemetry snapshots for the control server (built on the server's thread).

The one place a snapshot is made and its "now" rules decided: SPS reads 0 and ETA null unless
the run is running (nothing steps while it starts, pauses, stops or has ended). Clients show
the snapshot's numbers as they are (engine/shared/protocol.py `TelemetrySnapshot`).

Telemetry reads nothing of the engine's objects itself: it is handed its inputs. At build,
the run's config and name and the `RunControl`; between epochs, the metrics row (`record`,
replaced whole by the main thread); once the trainer is built, a `TrainerFeed` (`attach`): the
facts fixed for the run (device, preset, processes) and the getters of what moves (progress,
the live config, the vec env's worker rates and Ray cluster), each safe to call from the
server's thread. Field meanings are in docs/protocol.md; "workers" and "cluster" in
docs/many-machines.md.

Tested in: tests/engine/runtime/test_telemetry_workers.py,
tests/engine/shared/test_telemetry_snapshot.py"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.shared.config import Config, live_specs
from puffer_tui.engine.shared.protocol import (
    ENV,
    EVAL,
    LOSSES,
    TIMING,
    TIMING_PCT,
    WORKERS,
    RunState,
    TelemetrySnapshot,
)


@dataclass(frozen=True)
class TrainerFeed:
    """What the engine hands telemetry once its trainer is built."""

    progress: Callable[[], dict]  # {global_step, epoch, sps, uptime}: kept fresh by the trainer
    live_config: Config  # the trainer's own, which a live `set` changes in place
    device: str  # "cuda:0 bf16": the device and the precision "auto" chose for it
    preset: str  # the family preset the defaults came from (run header)
    processes: tuple[dict, ...]  # learner ranks on this machine, env workers
    worker_stats: Callable[[], list]  # Ray actors: where and how fast ([] otherwise)
    cluster_usage: Callable[[], dict | None]  # Ray's CPUs (None otherwise)

    @classmethod
    def of(cls, trainer) -> TrainerFeed:
        """The feed of engine/algo/trainer.py's Trainer: read once, on the main thread."""
        mixed = getattr(trainer, "precision", "float32") == "bfloat16"
        world = getattr(trainer, "world", None)
        ranks = world.local_peer_pids() if world is not None else ()
        processes = (*({"role": "rank", "index": rank, "pid": int(pid)} for rank, pid in ranks),
                     *({"role": "worker", "index": i, "pid": int(pid)}
                       for i, pid in enumerate(trainer.worker_pids)))
        vecenv = getattr(trainer, "vecenv", None)
        return cls(progress=lambda: trainer.progress, live_config=trainer.config,
                   device=str(trainer.device) + (" bf16" if mixed else ""),
                   preset=getattr(trainer, "preset", ""), processes=processes,
                   worker_stats=_guarded(vecenv, "worker_stats", []),
                   cluster_usage=_guarded(vecenv, "cluster_usage", None))


class Telemetry:
    def __init__(self, config: Config, run_name: str, state: RunControl):
        self.config = config
        self.run_name = run_name
        self.state = state
        self.last_row: dict = {}
        self.feed: TrainerFeed | None = None
        self.diagnoses: Callable[[], list] = list  # the doctor's in force, once it exists

    def record(self, row: dict) -> None:
        """Main thread: the epoch's metrics row (replaced whole, never changed after)."""
        self.last_row = row

    def attach(self, feed: TrainerFeed, diagnoses: Callable[[], list] = list) -> None:
        """Main thread, once the trainer is built; `diagnoses()`: those in force (the doctor's),
        for clients that attach after they fired."""
        self.feed, self.diagnoses = feed, diagnoses

    def wire(self) -> dict:
        """The snapshot as the control server sends it (its `telemetry_fn`)."""
        return self.snapshot().to_wire()

    def snapshot(self) -> TelemetrySnapshot:
        feed, row, state = self.feed, self.last_row, self.state.run_state
        progress = dict(feed.progress() or {}) if feed is not None else {}
        live_config = feed.live_config if feed is not None else self.config
        total = self.config.train.total_timesteps

        def number(key: str, kind: type):
            return kind(progress.get(key, row.get(key, 0)) or 0)

        step, uptime = number("global_step", int), number("uptime", float)
        # The "now" rules: nothing steps unless running, so no speed and no ETA.
        sps = number("sps", float) if state == RunState.RUNNING else 0.0
        return TelemetrySnapshot(
            time=time.time(), state=state, env=self.config.env_name, run=self.run_name,
            global_step=step, total_timesteps=total, epoch=number("epoch", int),
            sps=sps, sps_mean=step / uptime if uptime > 0 else 0.0, uptime=uptime,
            eta=(total - step) / sps if sps > 0 else None,
            learning_rate=row.get("learning_rate", live_config.train.learning_rate),
            # the trainer's groups as it made them (the row is nested, nothing to pick apart)
            losses=dict(row.get(LOSSES) or {}), timing=dict(row.get(TIMING) or {}),
            timing_pct=dict(row.get(TIMING_PCT) or {}), stats=dict(row.get(ENV) or {}),
            # the last row's evaluation, if it ran one; its epoch tells the app a new one
            eval={**row[EVAL], "epoch": row.get("epoch")} if row.get(EVAL) else {},
            hyperparameters={s.key: getattr(getattr(live_config, s.section), s.name)
                             for s in live_specs()},
            processes=[{"role": "engine", "pid": os.getpid()},
                       *(feed.processes if feed is not None else ())],
            # per learner rank (last epoch) and per Ray actor (last second): where, how fast
            workers=[*(row.get(WORKERS) or ()), *(feed.worker_stats() if feed else ())],
            cluster=feed.cluster_usage() if feed is not None else None,
            device=feed.device if feed is not None else self._wanted_device(),
            preset=feed.preset if feed is not None else "",
            gpu=_gpu() if feed is not None and feed.device.startswith("cuda") else None,
            diagnoses=list(self.diagnoses()),
        )

    def _wanted_device(self) -> str:
        wanted = self.config.train.device
        return "cuda:0" if wanted == "cuda" else "cpu" if wanted == "cpu" else "auto"


def _guarded(vecenv, name: str, default) -> Callable:
    """The vec env's telemetry method `name` (only some backends have one), answering
    `default` when it has none or it fails (a vec env closed by a worker error)."""
    method = getattr(vecenv, name, None)

    def call():
        if method is None:
            return default
        try:
            return method()
        except Exception:
            return default

    return call


def _gpu() -> dict | None:
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
