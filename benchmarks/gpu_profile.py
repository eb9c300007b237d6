"""Where one training epoch's time goes, by torch's profiler: the ops that cost the most device
time and the most host time, as text tables (what gpu_check's phase shares cannot say: whether a
phase is kernels or Python and launch overhead).

    python -m puffer_tui.benchmarks.gpu_profile ENV --out FILE [--epochs 2] [--set k=v ...]

One warm-up epoch is run first and not profiled. On CUDA the profile holds CPU and CUDA
activity; on the CPU (a dry run) only CPU activity.

Tested in: tests/benchmarks/test_gpu_check.py (the profiler tables)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from puffer_tui.benchmarks.gpu_measure import parse_sets
from puffer_tui.benchmarks.gpu_report import write_atomic
from puffer_tui.engine.shared.config import ConfigError, load_config


def profile(env: str, overrides: dict, epochs: int, rows: int = 25) -> str:
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    # lazy: pulls gymnasium, the trainer, the policy and the vectorizer
    from puffer_tui.engine.algo.trainer import Trainer

    config = load_config(env, {"train.total_timesteps": 10**12, **overrides})
    trainer = Trainer(config)
    try:
        cuda = trainer.device.type == "cuda"
        trainer.run_epoch()  # warm-up: allocation and first launches are not what we look for
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        steps = trainer.global_step
        start = time.perf_counter()
        with torch_profile(activities=activities) as prof:
            for _ in range(epochs):
                trainer.run_epoch()
            if cuda:
                torch.cuda.synchronize(trainer.device)
        wall = time.perf_counter() - start
        steps = trainer.global_step - steps
    finally:
        trainer.close()
    averages = prof.key_averages()
    # ops' own time against the wall: what is left is Python and waiting, which no op shows
    host_ops = sum(getattr(e, "self_cpu_time_total", 0.0) for e in averages) / 1e6
    device_ops = sum(getattr(e, "self_device_time_total", 0.0) for e in averages) / 1e6
    head = (f"{env} on {trainer.device} ({trainer.precision}), {trainer.num_agents} agents, "
            f"{epochs} epoch(s), {steps:,} agent steps in {wall:.2f} s under the profiler "
            f"({steps / wall:,.0f} steps/s; the profiler slows the host side)\n"
            f"overrides: {overrides}\n"
            f"ops' own time: host {host_ops:.2f} s, device {device_ops:.2f} s, of {wall:.2f} s "
            "wall\n")
    parts = [head]
    if cuda:
        parts += ["\n## by device time\n",
                  averages.table(sort_by="self_cuda_time_total", row_limit=rows)]
    parts += ["\n## by host time\n", averages.table(sort_by="self_cpu_time_total", row_limit=rows)]
    return "".join(parts)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m puffer_tui.benchmarks.gpu_profile",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("env")
    p.add_argument("--out", required=True, help="text file for the tables")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    if args.epochs < 1:
        raise SystemExit("gpu_profile: --epochs must be >= 1")
    try:
        text = profile(args.env, parse_sets(args.set), args.epochs)
    except ConfigError as e:
        raise SystemExit(f"gpu_profile: {args.env}: {e}") from None
    write_atomic(Path(args.out), text)
    print(text.splitlines()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
