"""Timed loops for `puffer-tui bench vec`: one function per family of vectorizer.

Every loop feeds actions from a fixed pre-generated array (so the RNG is not measured), runs
a short warm-up, then counts agent-steps for `seconds` of wall time.

Tested in: tests/benchmarks/test_vec_bench.py (bench vec end to end)
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from gymnasium import spaces

ACTION_BLOCK = 256  # pre-generated action batches, cycled
WARMUP_STEPS = 20


def fixed_actions(space, rows: int, seed: int = 0) -> np.ndarray:
    """ACTION_BLOCK batches of `rows` random actions from the single-agent `space`."""
    rng = np.random.default_rng(seed)
    if isinstance(space, spaces.Discrete):
        return rng.integers(0, space.n, (ACTION_BLOCK, rows)).astype(np.int32)
    if isinstance(space, spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, (ACTION_BLOCK, rows, *space.shape)).astype(np.int32)
    if isinstance(space, spaces.Box):
        return rng.uniform(space.low, space.high, (ACTION_BLOCK, rows, *space.shape)).astype(
            np.float32)
    raise TypeError(f"no fixed actions for {space!r}")


# CPU seconds (this process, its threads and its live child processes) per agent step of the
# last _timed window: what survives a loaded machine, read by benchmarks/vec.py after each run
last_cpu_per_step: float | None = None


def tree_cpu_seconds() -> float:
    """User + system CPU of this process (all its threads) and its live descendants."""
    import psutil

    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return total


def _timed(step, rows_per_step: int, seconds: float) -> float:
    global last_cpu_per_step
    for i in range(WARMUP_STEPS):
        step(i)
    steps = 0
    cpu = tree_cpu_seconds()
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        step(steps)
        steps += 1
        now = time.perf_counter()
        if now >= deadline:
            last_cpu_per_step = (tree_cpu_seconds() - cpu) / (steps * rows_per_step)
            return steps * rows_per_step / (now - start)


def run_ours(workload, backend: str, num_workers: int, batch_size: int, zero_copy: bool,
             seconds: float, **options) -> float:
    """Agent-steps/second of one of our backends, driven through the async API."""
    # lazy: pulls the vectorizer, which this module does not load
    from puffer_tui.engine.vec import make

    vec = make(workload.creator(), num_envs=workload.num_envs, backend=backend,
               num_workers=num_workers, batch_size=batch_size, zero_copy=zero_copy, seed=0,
               **options)
    try:
        actions = fixed_actions(vec.single_action_space, vec.agents_per_batch)
        vec.async_reset(0)

        def step(i):
            vec.recv()
            vec.send(actions[i % ACTION_BLOCK])

        return _timed(step, vec.agents_per_batch, seconds)
    finally:
        vec.close()


def run_gymnasium(workload, kind: str, seconds: float) -> float:
    """Gymnasium's SyncVectorEnv, or AsyncVectorEnv (one process per env, shared memory on)."""
    from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

    creators = [workload.gym_creator] * workload.num_envs
    if kind == "sync":
        env = SyncVectorEnv(creators)
    else:
        env = AsyncVectorEnv(creators, shared_memory=True)
    try:
        env.reset(seed=0)
        actions = fixed_actions(env.single_action_space, workload.num_envs)
        return _timed(lambda i: env.step(actions[i % ACTION_BLOCK]), workload.num_envs, seconds)
    finally:
        env.close()


def envpool_available() -> bool:
    try:
        import envpool  # noqa: F401
    except ImportError:
        return False
    return True


def run_envpool(workload, num_threads: int, batch_size: int, seconds: float) -> float:
    """EnvPool's own C++ env (not the Python one), async when batch_size < num_envs."""
    import envpool

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # its float64 Box bounds
        env = envpool.make(workload.envpool_id, env_type="gymnasium",
                           num_envs=workload.num_envs, batch_size=batch_size,
                           num_threads=num_threads, seed=0, **workload.envpool_options)
    try:
        actions = fixed_actions(env.action_space, batch_size)
        env.async_reset()

        def step(i):
            env_id = env.recv()[-1]["env_id"]
            env.send(actions[i % ACTION_BLOCK], env_id)

        return _timed(step, batch_size, seconds)
    finally:
        env.close()
