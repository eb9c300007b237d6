"""The vectorization layouts `puffer-tui autotune` tries, and how one is timed.

A layout is how a fixed number of envs is stepped: serially in the trainer's process, or by
multiprocessing workers (workers x envs per worker), synchronously (batch = all envs) or
overlapped (batch = half the envs: the trainer runs the policy on one half while the other
half steps), with zero-copy batches (contiguous blocks of workers) or gathered ones.
Every layout is timed through the same vec env the trainer builds (trainer_setup.make_vecenv).

Tested in: tests/benchmarks/test_autotune.py (the layouts it tries)
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

from puffer_tui.engine.shared.config import Config, ConfigError, load_config
from puffer_tui.engine.startup.memory_estimate import estimate, format_bytes
from puffer_tui.engine.startup.preflight import check_batch, check_env

WARMUP_STEPS = 10
MIN_WINDOW = 0.25  # seconds: the shortest window a rate is counted over
MAX_WINDOWS = 5


@dataclass(frozen=True)
class Layout:
    backend: str  # serial | multiprocessing
    num_envs: int
    num_workers: int = 1
    batch_size: int = 0  # 0: num_envs (synchronous)
    zero_copy: bool = True
    inline: bool = False  # the trainer's process steps worker 0's block (vec.inline)

    @property
    def overlapped(self) -> bool:
        return 0 < self.batch_size < self.num_envs

    @property
    def label(self) -> str:
        """`serial 64`, or workers x envs per worker and the mode (`2 x 32 overlap gather`:
        half the envs a batch, gathered from any workers done rather than zero-copy)."""
        if self.backend == "serial":
            return f"serial {self.num_envs}"
        per_worker = self.num_envs // self.num_workers
        mode = "sync"
        if self.overlapped:
            mode = "overlap" + ("" if self.zero_copy else " gather")
        return f"{self.num_workers} x {per_worker} {mode}" + (" inline" if self.inline else "")

    def vec_settings(self) -> dict:
        """The [vec] values of this layout, as a preset or `--vec.*` flags would give them."""
        return {"backend": self.backend, "num_envs": self.num_envs,
                "num_workers": self.num_workers, "batch_size": self.batch_size,
                "zero_copy": self.zero_copy, "inline": self.inline}


def candidate_layouts(totals: list[int], cores: int) -> list[Layout]:
    """Serial, then multiprocessing with 2..2*cores workers (as many as divide the envs),
    each synchronous and, with an even number of workers, overlapped with and without
    zero-copy. More workers than cores can pay when one half of them waits on the policy.
    With no more workers than cores, also inline (this process steps one block: one process
    per core), synchronous and overlapped."""
    out: list[Layout] = []
    for n in totals:
        out.append(Layout("serial", n))
        for workers in range(2, max(2, 2 * cores) + 1):
            if n % workers:
                continue
            out.append(Layout("multiprocessing", n, workers, 0, True))
            if workers % 2 == 0:
                out.append(Layout("multiprocessing", n, workers, n // 2, True))
                out.append(Layout("multiprocessing", n, workers, n // 2, False))
            if workers <= cores:
                out.append(Layout("multiprocessing", n, workers, 0, True, inline=True))
                if workers % 2 == 0:
                    out.append(Layout("multiprocessing", n, workers, n // 2, True, inline=True))
    return out


def layout_config(env_spec: str, overrides: dict, layout: Layout) -> Config:
    """The run config of `layout` (user flags first, the layout's [vec] on top); ConfigError
    if the layout cannot hold these settings (e.g. minibatches larger than its batch)."""
    vec = {f"vec.{k}": v for k, v in layout.vec_settings().items()}
    config = load_config(env_spec, {**overrides, **vec})
    check_batch(config, check_env(config).agents_per_env)
    return config


def memory_shortfall(config: Config, bytes_per_env: float, available: int | None) -> str | None:
    """Why `config` would not fit in memory (None if it fits): the engine's own estimate,
    plus what each env object was measured to hold beyond its buffers."""
    need = estimate(config).total + bytes_per_env * config.vec.num_envs
    if available is not None and need > available:
        return f"needs ~{format_bytes(need)}, {format_bytes(available)} free"
    return None


def _rss() -> int | None:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:
        return None


@dataclass
class VecTiming:
    sps: float  # agent-steps per second
    startup: float  # seconds to build the vec env and reset it
    bytes_per_env: float | None = None  # resident memory one env added (serial only)


def time_vec(config: Config, seconds: float) -> VecTiming:
    """Agent-steps/s of `config`'s vec env, driven like the trainer drives it (recv, then send
    a batch of fixed random actions), counted for `seconds` after a short warm-up."""
    # lazy: pulls gymnasium, torch, the trainer, the vectorizer, which this module does not load
    from puffer_tui.benchmarks.vec_runners import ACTION_BLOCK, fixed_actions
    from puffer_tui.engine.algo.trainer_setup import make_vecenv

    before = _rss()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # more workers than cores, on purpose
        vecenv = make_vecenv(config, seed=0)
    try:
        actions = fixed_actions(vecenv.single_action_space, vecenv.agents_per_batch)
        vecenv.async_reset(0)
        vecenv.recv()
        startup = time.perf_counter() - start
        per_env = None
        if before is not None and config.vec.backend == "serial":
            per_env = max(0, (_rss() or before) - before) / config.vec.num_envs
        vecenv.send(actions[0])
        for i in range(1, WARMUP_STEPS):
            vecenv.recv()
            vecenv.send(actions[i % ACTION_BLOCK])
        return VecTiming(_best_window_rate(vecenv, actions, seconds), startup, per_env)
    finally:
        vecenv.close()


def _best_window_rate(vecenv, actions, seconds: float) -> float:
    """Agent-steps/s of the fastest of a few windows of `seconds`: other processes' bursts of
    load on a shared machine slow some windows, and no layout should lose to one by chance."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.benchmarks.vec_runners import ACTION_BLOCK

    windows = max(1, min(MAX_WINDOWS, int(seconds / MIN_WINDOW)))
    end = time.perf_counter() + seconds
    best, steps = 0.0, 0
    for w in range(windows):
        t0, count = time.perf_counter(), 0
        deadline = t0 + (end - t0) / (windows - w)
        while True:
            vecenv.recv()
            vecenv.send(actions[steps % ACTION_BLOCK])
            steps += 1
            count += 1
            now = time.perf_counter()
            if now >= deadline:
                break
        best = max(best, count * vecenv.agents_per_batch / (now - t0))
    return best


def config_error_text(e: Exception) -> str:
    return str(e) if isinstance(e, ConfigError) else f"{type(e).__name__}: {e}"
