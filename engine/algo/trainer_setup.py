"""What the trainer is built from: its device, its torch threads and its vec env (the
config's `vec` section). engine/algo/trainer.py re-exports these names."""

from __future__ import annotations

import functools
import os

import torch

from puffer_tui.engine import vec
from puffer_tui.engine.algo import cpu_load
from puffer_tui.engine.shared.config import Config, ConfigError
from puffer_tui.engine.vec.sizing import available_cores
from puffer_tui.envs import creator


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device = cuda, but torch sees no CUDA device (use auto or cpu)")
    return torch.device(name)


def resolve_precision(name: str, device: torch.device) -> str:
    """train.precision as the learner runs it: "auto" is bfloat16 where the device multiplies
    bfloat16 natively (a CUDA GPU from Ampere on; a CPU with AVX512-BF16 or AMX-BF16, where
    oneDNN's bf16 products run well ahead of float32: docs/measurement-log.md), else float32
    (an emulated bfloat16 is slower than float32)."""
    if name != "auto":
        return name
    if device.type == "cuda":  # natively from Ampere (compute capability 8) on
        return "bfloat16" if torch.cuda.get_device_properties(device).major >= 8 else "float32"
    if device.type == "cpu" and cpu_has_native_bf16():
        return "bfloat16"
    return "float32"


def cpu_has_native_bf16() -> bool:
    """Whether this CPU has bfloat16 dot-product instructions (Linux /proc/cpuinfo flags;
    elsewhere: no, float32 is the safe choice)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


def auto_threads(config: Config, phase: str = "collect", busy: float | None = None) -> int:
    """Torch threads for `train.torch_threads = 0`: the cores this process may use, less the
    cores env workers take, less the cores other processes keep busy right now (measured:
    engine/algo/cpu_load.py). Oversubscribing is far worse than idling a core: each parallel
    op then waits for a descheduled thread (on a busy 2-core box 2 threads trained several
    times slower than 1: docs/measurement-log.md). For the "learn" phase the workers' cores
    count as free: they wait for the next actions while PPO updates (a CNN update gains from
    the second thread). `busy`: the other processes' cores as already measured (the trainer's
    LoadWatch between epochs); None measures now."""
    # learner ranks on this machine (torchrun) share its cores; then the cores are already
    # shared out, and the sibling ranks starting alongside must not be counted again as load
    ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1)
    cores = max(1, available_cores() // ranks)
    workers = config.vec.num_workers if config.vec.backend in ("multiprocessing", "ray") else 0
    if ranks > 1:
        busy = 0
    else:  # a core mostly busy is taken
        busy = int((cpu_load.busy_cores_of_others() if busy is None else busy) + 0.5)
    if phase == "learn":
        return max(1, cores - busy)
    free = cores - workers - busy
    return max(1, min(cores - workers, free))


@functools.cache
def _blas_threads():
    """threadpoolctl's controller of the BLAS libraries loaded now (numpy's OpenBLAS: the
    matrix products of engine/algo/numpy_mlp.py), looked up once."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def set_compute_threads(threads: int) -> None:
    """`threads` for torch's ops, one for numpy's BLAS (the matrix products of the plain-MLP
    path, engine/algo/numpy_mlp.py). OpenBLAS's idle workers busy-wait long after
    each product, so a second BLAS thread holds the core that torch's pool, the env or
    another process needs: with both pools at 2 threads on 2 cores each switch between a numpy
    product and a torch op (erf_, Adam's fused step) waited for the other pool's spinning
    worker to be descheduled; unlimited, OpenBLAS also takes every core. The figures (an erf_
    after a numpy product, `bench train cartpole` at each split of threads) are on
    docs/measurement-log.md."""
    torch.set_num_threads(threads)
    _blas_threads().limit(limits=1, user_api="blas")


def compute_threads() -> tuple[int, int]:
    """(torch's threads, numpy's BLAS threads) as set now."""
    blas = [info["num_threads"] for info in _blas_threads().info() if info["user_api"] == "blas"]
    return torch.get_num_threads(), max(blas, default=1)


def make_vecenv(config: Config, seed: int | None = None):
    v = config.vec
    seed = config.train.seed if seed is None else seed
    kwargs = {"num_envs": v.num_envs, "backend": v.backend, "seed": seed}
    if v.backend != "serial":
        kwargs.update(num_workers=v.num_workers, batch_size=v.batch_size or v.num_envs,
                      zero_copy=v.zero_copy, timeout=v.worker_timeout)
    if v.backend == "multiprocessing" and v.inline:
        kwargs.update(inline=True)
    if v.backend == "ray":
        kwargs.update(address=v.ray_address, num_cpus=v.ray_num_cpus)
    env_creator = creator(config.env_name, **config.env)
    if v.backend == "serial" and v.batch_size and getattr(env_creator, "async_batches", False):
        kwargs.update(batch_size=v.batch_size)  # an async pool in this process (ALE)
    return vec.make(env_creator, **kwargs)
