"""The CPU a benchmark measured on, for its header and its JSON: a speed figure means little
without it. The same code trains cartpole at ~100k agent-steps/s on one machine and far
slower on another, and what differs is not only the clock: torch's "CPU capability" (the
vector instructions its kernels dispatch to: AVX512, AVX2 or DEFAULT, lowered by
ATEN_CPU_CAPABILITY) and whether the CPU multiplies bfloat16 natively (train.precision auto
then trains in bfloat16 through autograd; without it in float32 through numpy,
engine/algo/numpy_mlp.py).

    machine()       # {"cpu": "AMD EPYC", "cores": 2, "torch_cpu_capability": "AVX2", ...}
    machine_line()  # "AMD EPYC, 2 cores, torch CPU capability AVX2, no native bfloat16"
"""

from __future__ import annotations

import functools
import platform


@functools.cache
def cpu_model() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo; elsewhere what platform says)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def torch_cpu_capability() -> str:
    """The instruction set torch's CPU kernels run: AVX512, AVX2, DEFAULT (or "?" where this
    torch cannot say)."""
    import torch

    get = getattr(torch.backends.cpu, "get_cpu_capability", None)
    return get() if get is not None else "?"


def machine() -> dict:
    """What a benchmark's JSON records of the machine."""
    # lazy: torch, and the trainer's setup module that decides train.precision auto
    from puffer_tui.engine.algo.trainer_setup import cpu_has_native_bf16
    from puffer_tui.engine.vec.sizing import available_cores

    return {"cpu": cpu_model(), "cores": available_cores(),
            "torch_cpu_capability": torch_cpu_capability(),
            "native_bfloat16": cpu_has_native_bf16()}


def machine_line(info: dict | None = None) -> str:
    """The header line of a benchmark's output, from `machine()`."""
    info = info or machine()
    bf16 = "native bfloat16" if info["native_bfloat16"] else "no native bfloat16"
    return (f"{info['cpu']}, {info['cores']} cores, torch CPU capability "
            f"{info['torch_cpu_capability']}, {bf16}")
