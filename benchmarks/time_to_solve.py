"""Time to solve: train an env until its episodes reach a score, report steps and uptime.

    python -m puffer_tui.benchmarks.time_to_solve squared            # preset threshold
    python -m puffer_tui.benchmarks.time_to_solve cartpole --metric episode_length --threshold 475
    python -m puffer_tui.benchmarks.time_to_solve memory train.learning_rate=0.01 ...

Used by the learning tests. "Solved" means the episode mean of `metric` reached `threshold`
in two consecutive epochs that each finished at least `min_episodes` episodes (one epoch's
handful of early finishers is not a solve); the reported step and uptime are those of the
first of the two.

Tested in: tests/benchmarks/test_machine.py, tests/learning/test_learning.py
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field

from puffer_tui.engine.runtime.metrics import flatten
from puffer_tui.engine.shared.config import load_config

# What "solved" means per env (the bars): metric, threshold.
SOLVED = {
    "squared": ("score", 0.9),
    "cartpole": ("episode_length", 475.0),
    "bandit": ("score", 0.95),
    "stochastic": ("score", 0.95),
    "password": ("score", 0.95),
    "memory": ("score", 0.95),
}


@dataclass
class SolveResult:
    env: str
    solved: bool
    metric: str
    threshold: float
    value: float | None = None          # the metric at the solving epoch (or the last one)
    global_step: int = 0                # at the first solving epoch (or the end)
    uptime: float = 0.0                 # training seconds to the first solving epoch
    epochs: int = 0
    sps: float = 0.0                    # mean agent steps per second over the run
    parameters: int = 0
    precision: str = ""                 # train.precision as the trainer ran it
    math: str = ""                      # numpy (numpy_mlp.py) or torch
    threads: int = 0                    # the collection's compute threads
    history: list = field(default_factory=list)


def train_until_solved(config, metric: str, threshold: float, min_episodes: int = 1,
                       consecutive: int = 2, on_epoch=None) -> SolveResult:
    """Train with `config` until solved or train.total_timesteps is spent."""
    # lazy: pulls gymnasium, torch, the trainer, the policy, the vectorizer, which this module does not load
    from puffer_tui.engine.algo.trainer import Trainer

    result = SolveResult(config.env_name, False, metric, threshold)
    streak: list[dict] = []
    with Trainer(config) as trainer:
        result.parameters = trainer.policy.num_parameters()
        result.precision = trainer.precision
        result.math = "numpy" if trainer.numpy_math else "torch"
        result.threads = trainer.torch_threads[0]
        while not trainer.done:
            row = flatten(trainer.run_epoch())  # metrics.jsonl's columns: metric names as sweeps use
            if on_epoch:
                on_epoch(row)
            value = row.get(metric)
            result.history.append(value)
            if value is not None and row["episodes"] >= min_episodes:
                result.value = value
                streak = streak + [row] if value >= threshold else []
            if len(streak) >= consecutive:
                result.solved = True
                result.global_step = streak[0]["global_step"]
                result.uptime = streak[0]["uptime"]
                result.value = streak[0][metric]
                break
        result.epochs = trainer.epoch
        result.sps = trainer.global_step / max(trainer.uptime, 1e-9)
        if not result.solved:
            result.global_step, result.uptime = trainer.global_step, trainer.uptime
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("env")
    p.add_argument("overrides", nargs="*", help="section.key=value")
    p.add_argument("--metric")
    p.add_argument("--threshold", type=float)
    p.add_argument("--min-episodes", type=int, default=1)
    p.add_argument("--quiet", action="store_true")
    args = p.parse_intermixed_args(argv)
    metric, threshold = SOLVED.get(args.env, ("score", 0.9))
    metric, threshold = args.metric or metric, args.threshold or threshold
    config = load_config(args.env, dict(o.split("=", 1) for o in args.overrides))

    def show(row):
        if not args.quiet:
            print(f"epoch {row['epoch']:4d} step {row['global_step']:>10,} "
                  f"uptime {row['uptime']:7.1f}s sps {row['sps']:>9,.0f} "
                  f"{metric} {row.get(metric, float('nan')):.3f} eps {row['episodes']} "
                  f"ent {row['entropy']:.3f} kl {row['approx_kl']:.4f}", flush=True)

    # lazy: torch (the machine's CPU capability), which this module does not load
    from puffer_tui.benchmarks.machine import machine, machine_line

    info = machine()
    if not args.quiet:
        print(f"time to solve {args.env}: measured on {machine_line(info)}", flush=True)
    result = train_until_solved(config, metric, threshold, args.min_episodes, on_epoch=show)
    summary = asdict(result)
    summary.pop("history")
    summary["machine"] = info
    print(json.dumps(summary))
    return 0 if result.solved else 1


if __name__ == "__main__":
    raise SystemExit(main())
