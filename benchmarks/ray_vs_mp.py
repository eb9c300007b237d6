"""Ray vec backend against multiprocessing: agent-steps/s with the same number of actors and
workers, on native `squared` and on a pure-Python env that burns 1 ms of CPU per step.

    python -m puffer_tui.benchmarks.ray_vs_mp [--workers 2] [--repeat 3] [--seconds 3]

Both run synchronously (batch = all envs), driven by the same loop as `puffer-tui bench vec`
(benchmarks/vec_runners.py). The runs of each repeat alternate between the backends, so that
load from elsewhere on a shared machine falls on both; the median of the repeats is kept.
One local Ray (no dashboard, as many CPUs as workers) is started first and shut down at the
end, so Ray's start-up is not timed; nor is either backend's start of its workers.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import warnings

from puffer_tui.benchmarks import vec_runners
from puffer_tui.benchmarks.vec_workloads import DelayEnv, Workload, _gym, _native


def cases(workers: int) -> list[Workload]:
    delay = functools.partial(DelayEnv, delay_s=1e-3, spread=0.0)
    return [
        Workload("squared 65536", "native C env, size 11", 65536,
                 functools.partial(_native, "squared", size=11)),
        Workload("squared 4096", "native C env, size 11", 4096,
                 functools.partial(_native, "squared", size=11)),
        Workload("delay 1ms x1", "Python env, 1 ms CPU per step, 1 env per worker", workers,
                 functools.partial(_gym, delay), delay),
    ] + [
        Workload(f"delay 1ms x{k}", f"Python env, 1 ms CPU per step, {k} envs per worker",
                 k * workers, functools.partial(_gym, delay), delay)
        for k in (8, 16, 32)  # Ray's round trip per call, spread over more env steps
    ]


def measure(workload: Workload, backend: str, workers: int, seconds: float) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return vec_runners.run_ours(workload, backend, workers, workload.num_envs, True,
                                    seconds)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=2, help="actors / worker processes")
    p.add_argument("--repeat", type=int, default=3, help="runs per backend and workload")
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per run")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)
    import ray

    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False,
             logging_level="WARNING")
    rows = []
    try:
        for workload in cases(args.workers):
            runs = {"multiprocessing": [], "ray": []}
            for _ in range(args.repeat):
                for backend in runs:
                    runs[backend].append(measure(workload, backend, args.workers, args.seconds))
            mp, rv = (statistics.median(runs[b]) for b in ("multiprocessing", "ray"))
            rows.append({"workload": workload.name, "num_envs": workload.num_envs,
                         "workers": args.workers, "mp_sps": runs["multiprocessing"],
                         "ray_sps": runs["ray"], "mp_median": mp, "ray_median": rv,
                         "ratio": rv / mp})
    finally:
        ray.shutdown()
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'workload':16} {'envs':>6} {'mp SPS (median)':>16} {'ray SPS (median)':>17} "
          f"{'ray/mp':>7}")
    for r in rows:
        print(f"{r['workload']:16} {r['num_envs']:>6} {r['mp_median']:>16,.0f} "
              f"{r['ray_median']:>17,.0f} {r['ratio']:>7.2f}")


if __name__ == "__main__":
    main()
