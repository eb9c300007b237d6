"""How num_envs, num_workers and batch_size fit together, with errors that say what to pick.

Tested in: tests/engine/vec/mp/test_mp_backend.py, tests/engine/algo/test_core_count.py"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkerPlan:
    num_workers: int
    envs_per_worker: int
    workers_per_batch: int  # == num_workers: synchronous; fewer: an async pool

    @property
    def batch_size(self) -> int:
        return self.workers_per_batch * self.envs_per_worker


def usable_cores() -> list[int]:
    """The ids of the CPU cores this process may run on, sorted (its affinity where the OS
    says; else every core): the one place the engine asks the OS about cores."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return cores or list(range(os.cpu_count() or 1))


def available_cores() -> int:
    """How many CPU cores this process may run on (see `usable_cores`)."""
    return len(usable_cores())


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _show(values: list[int], limit: int = 8) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (", ..." if len(values) > limit else "")


def plan_workers(
    num_envs: int,
    num_workers: int | None,
    batch_size: int | None,
    zero_copy: bool,
    cores: int | None = None,
) -> WorkerPlan:
    """Check the sizes; raise ValueError naming valid choices, warn when workers > cores."""
    cores = available_cores() if cores is None else cores
    if not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
    if num_workers is None:
        num_workers = max(d for d in _divisors(num_envs) if d <= cores)
    if not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"num_workers must be a positive integer, got {num_workers!r}")
    if num_workers > num_envs:
        raise ValueError(
            f"num_workers={num_workers} exceeds num_envs={num_envs}: every worker needs at least "
            f"one env; choose num_workers <= {num_envs}"
        )
    if num_envs % num_workers:
        below = num_envs // num_workers * num_workers
        raise ValueError(
            f"num_envs={num_envs} does not divide evenly among num_workers={num_workers}; "
            f"choose num_workers in ({_show(_divisors(num_envs))}) or num_envs a multiple of "
            f"{num_workers} (e.g. {max(below, num_workers)} or {below + num_workers})"
        )
    if num_workers > cores:
        warnings.warn(
            f"num_workers={num_workers} is more than the {cores} CPU cores available: workers "
            f"will take turns on the cores. Unless an async pool needs the spare workers, choose "
            f"num_workers <= {cores} and more envs per worker.",
            RuntimeWarning,
            stacklevel=3,
        )
    envs_per_worker = num_envs // num_workers
    batch_size = num_envs if batch_size is None else batch_size
    if not isinstance(batch_size, int) or not 1 <= batch_size <= num_envs:
        raise ValueError(
            f"batch_size must be an integer in [1, num_envs={num_envs}], got {batch_size!r}"
        )
    if batch_size % envs_per_worker:
        choices = [k * envs_per_worker for k in range(1, num_workers + 1)]
        raise ValueError(
            f"batch_size={batch_size} is not a whole number of workers ({envs_per_worker} envs "
            f"each); choose batch_size in ({_show(choices)})"
        )
    workers_per_batch = batch_size // envs_per_worker
    if zero_copy and num_workers % workers_per_batch:
        choices = [d * envs_per_worker for d in _divisors(num_workers)]
        raise ValueError(
            f"zero_copy batches are contiguous blocks of workers, so num_envs={num_envs} must be a "
            f"multiple of batch_size={batch_size}; choose batch_size in ({_show(choices)}) "
            f"or zero_copy=False"
        )
    return WorkerPlan(num_workers, envs_per_worker, workers_per_batch)
