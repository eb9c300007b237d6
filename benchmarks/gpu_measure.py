"""One measured training case of `gpu_check`: run in its own process, prints one JSON object.

    python -m puffer_tui.benchmarks.gpu_measure ENV --rounds 3 --seconds 5 [--set k=v ...]

The real Trainer trains ENV: one warm-up epoch (allocation, cuDNN autotuning, first CUDA
launches) is not counted, then `rounds` rounds of at least `seconds` each. steps/s is the
median of the rounds' agent-steps over their wall time; the phase shares are the trainer's own
timing (engine/algo/timing.py, synchronized on CUDA) summed over the rounds. On CUDA it adds the
peak memory torch allocated and the GPU's utilisation sampled while the rounds ran.

A process per case: a crashing env or a CUDA error ends that case only, a hung one is killed
by gpu_check's timeout, and each case's peak memory is its own.

Tested in: tests/benchmarks/test_gpu_check.py (gpu_check's CPU dry run runs each case through this
module)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import threading

from puffer_tui.benchmarks.train_speed import timed_epochs
from puffer_tui.engine.shared.config import ConfigError, load_config
from puffer_tui.engine.shared.protocol import TIMING_KEYS


class UtilisationSampler:
    """The GPU's utilisation (percent of time a kernel ran), sampled in a thread: NVML through
    pynvml when importable, else `nvidia-smi`, else nothing (`source` says which)."""

    def __init__(self, index: int = 0, interval: float = 0.2):
        self.index, self.interval = index, interval
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._read = self._reader()
        self._thread = None

    def _reader(self):
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
            self.source = "nvml"
            return lambda: float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        except Exception:  # not installed, or no driver: try the command line tool
            pass
        smi = shutil.which("nvidia-smi")
        if smi:
            self.source = "nvidia-smi"
            query = [smi, f"--id={self.index}", "--query-gpu=utilization.gpu",
                     "--format=csv,noheader,nounits"]
            return lambda: float(subprocess.run(query, capture_output=True, text=True,
                                                timeout=5, check=True).stdout.split()[0])
        self.source = None
        return None

    def __enter__(self):
        if self._read is not None:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def _loop(self):
        while not self._stop.wait(self.interval):
            try:
                self.samples.append(self._read())
            except Exception:  # one failed read is not a measurement: skip it
                pass

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def summary(self) -> dict | None:
        if not self.samples:
            return None
        return {"mean_pct": statistics.fmean(self.samples), "max_pct": max(self.samples),
                "samples": len(self.samples), "source": self.source}


def measure(env: str, overrides: dict, rounds: int, seconds: float) -> dict:
    import torch

    # lazy: pulls gymnasium, torch, the trainer, the policy, the vectorizer, which this module does not load
    from puffer_tui.engine.algo.trainer import Trainer

    # a budget the run never reaches while measured (bench train does the same)
    config = load_config(env, {"train.total_timesteps": 10**12, **overrides})
    trainer = Trainer(config)
    try:
        cuda = trainer.device.type == "cuda"
        trainer.run_epoch()  # warm-up: not measured
        if cuda:
            torch.cuda.synchronize(trainer.device)
        totals = dict.fromkeys(TIMING_KEYS, 0.0)
        round_sps, steps_total, epochs = [], 0, 0
        sampler = UtilisationSampler(trainer.device.index or 0) if cuda else None
        with sampler or _nothing():
            for _ in range(rounds):
                steps, round_epochs, elapsed = timed_epochs(trainer, seconds, totals)
                epochs += round_epochs
                steps_total += steps
                round_sps.append(steps / elapsed)
        timed = sum(totals.values()) or 1.0
        result = {
            "env": env, "device": str(trainer.device), "precision": trainer.precision,
            "overrides": overrides, "num_agents": trainer.num_agents,
            "policy": type(trainer.policy).__name__, "hidden_size": config.train.hidden_size,
            "recurrent": bool(trainer.policy.recurrent),
            "parameters": sum(p.numel() for p in trainer.policy.parameters()),
            "sps": statistics.median(round_sps), "round_sps": round_sps,
            "steps": steps_total, "epochs": epochs,
            "timing_s": totals, "timing_pct": {k: 100.0 * v / timed for k, v in totals.items()},
            "gpu_memory_peak_bytes": torch.cuda.max_memory_allocated(trainer.device)
            if cuda else None,
            "gpu_utilisation": sampler.summary() if sampler else None,
            "gpu_utilisation_source": sampler.source if sampler else None,
        }
    finally:
        trainer.close()
    return result


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def parse_sets(pairs: list[str]) -> dict:
    """`--set train.precision=bfloat16` pairs as config overrides (values parsed by the
    config's own typing when load_config validates them)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"gpu_measure: --set takes KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m puffer_tui.benchmarks.gpu_measure")
    p.add_argument("env")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    if args.rounds < 1 or not args.seconds > 0:
        raise SystemExit("gpu_measure: --rounds must be >= 1 and --seconds > 0")
    try:
        result = measure(args.env, parse_sets(args.set), args.rounds, args.seconds)
    except ConfigError as e:
        raise SystemExit(f"gpu_measure: {args.env}: {e}") from None
    print("GPU_MEASURE_RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
