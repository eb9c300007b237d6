"""`puffer-tui bench vec`: agent-steps/second of our vectorizers against Gymnasium's and EnvPool's.

For each workload every backend gets the same total number of envs and a few settings; the
best setting of each backend is compared. Gymnasium's AsyncVectorEnv runs one process per
env; ours pack several envs into each of a few workers ("mp inline": worker 0's block is
stepped by the caller, so that the processes do not outnumber the cores). Timings on a shared machine are
noisy: use --repeat to keep the best of several runs. `--json FILE` keeps every setting's
figures with the date, machine, load and command (benchmarks/run_record.py), and `--report
FILE` prints them as the Markdown table on the docs (benchmarks/vec_report.py).
"""

from __future__ import annotations

import json
import statistics
import sys
import warnings
from dataclasses import asdict
from functools import partial
from pathlib import Path

from puffer_tui.benchmarks import vec_runners
from puffer_tui.benchmarks.vec_report import report
from puffer_tui.benchmarks.vec_table import Result, best_by_backend, ratios
from puffer_tui.benchmarks.vec_workloads import workloads

# serial-pool: the serial backend with batch_size < num_envs, for envs that pool themselves in
# the caller's process (ALE ids: ale-py's C++ threads, engine/vec/async_block.py)
OURS = ("serial", "serial-pool", "multiprocessing", "multiprocessing-pool",
        "multiprocessing-inline")


def add_arguments(p):
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write every setting's figures, the machine and the command to FILE "
                        "as JSON (the table is printed as well); with no FILE, print the JSON "
                        "instead of the table")
    p.add_argument("--report", action="append", type=Path, metavar="FILE",
                   help="run nothing: print the Markdown table of an earlier --json FILE "
                        "(repeatable), with its date, machine and command")
    p.add_argument("--seconds", type=float, default=1.5, help="time per setting (default 1.5)")
    p.add_argument("--repeat", type=int, default=1,
                   help="rounds per setting, taken in turn across settings (default 1)")
    p.add_argument("--stat", choices=("best", "median"), default="best",
                   help="a setting's figure over its rounds: the best (highest steps/s, lowest "
                        "CPU) or the median of each (default best; median with --repeat >= 3 "
                        "on a busy machine)")
    p.add_argument("--workload", action="append",
                   help="only these workloads (repeatable): squared, cartpole, delay, pong "
                        "(pong: the atari extra)")
    p.add_argument("--squared-envs", type=int, default=65536,
                   help="total squared envs (default 65536)")
    p.add_argument("--cartpole-envs", type=int, default=64,
                   help="total CartPole-v1 envs (default 64)")
    p.add_argument("--delay-envs", type=int, default=2,
                   help="total envs of each delay workload (default 2)")
    p.add_argument("--pong-envs", type=int, default=8,
                   help="total ALE/Pong-v5 envs (default 8)")


def settings_for(workload, cores: int) -> list[tuple[str, int, int, bool]]:
    """(backend, num_workers, batch_size, zero_copy) of our backends to try on `workload`."""
    n = workload.num_envs
    sync_workers = max(d for d in range(1, min(cores, n) + 1) if n % d == 0)
    out = [("serial", 1, n, True), ("multiprocessing", sync_workers, n, True)]
    # Pools: half the workers in flight while the other half is returned, with as many
    # workers as cores (no oversubscription) or twice as many (room to skip slow ones).
    # Gathered batches (zero_copy=False) may take any finished workers; zero-copy ones wait
    # for a contiguous block.
    for workers, batch, zero_copy in ((cores, n // 2, True), (cores, n // 2, False),
                                      (2 * cores, n // 2, False), (2 * cores, n // 4, False)):
        fits = workers <= n and n % workers == 0 and batch >= 1 and batch % (n // workers) == 0
        if fits and not (zero_copy and n % batch):
            setting = ("multiprocessing-pool", workers, batch, zero_copy)
            if setting not in out:
                out.append(setting)
    # Inline: the caller steps one block itself, with as many blocks as cores: synchronous,
    # and overlapped (half the envs step while the caller handles the other half).
    if cores > 1 and sync_workers > 1:
        out.append(("multiprocessing-inline", sync_workers, n, True))
        if n % 2 == 0 and sync_workers == 2:
            out.append(("multiprocessing-inline", 2, n // 2, True))
    return out


def _ours(workload, backend, workers, batch, zero_copy, seconds):
    real = "serial" if backend in ("serial", "serial-pool") else "multiprocessing"
    extra = {"inline": True} if backend == "multiprocessing-inline" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pools oversubscribe on purpose
        return vec_runners.run_ours(workload, real, workers, batch, zero_copy, seconds, **extra)


def plan_runs(workload, seconds: float, cores: int) -> list[tuple[Result, object]]:
    """(result to fill, timed function) for every backend and setting tried on `workload`."""
    n, name = workload.num_envs, workload.name
    runs = [
        (Result(name, backend, n, workers, batch, 0.0, zero_copy),
         partial(_ours, workload, backend, workers, batch, zero_copy, seconds))
        for backend, workers, batch, zero_copy in settings_for(workload, cores)
    ]
    # async batches of half and a quarter of the envs: EnvPool's (below, with up to 2 x cores
    # threads), and ours in this process (ALE: a block of games per batch, a thread or more
    # each: so no more blocks than EnvPool's most threads, which it is given too)
    pool_batches = sorted({b for b in (n // 2, n // 4) if b >= 1 and n % b == 0}, reverse=True)
    if getattr(workload.creator(), "async_batches", False):
        for batch in (b for b in pool_batches if n // b <= 2 * cores):
            runs.append((Result(name, "serial-pool", n, 1, batch, 0.0, True),
                         partial(_ours, workload, "serial-pool", 1, batch, True, seconds)))
    if workload.gym_creator is not None:
        for kind in ("sync", "async"):
            runs.append((Result(name, f"gymnasium-{kind}", n, 1 if kind == "sync" else n, n, 0.0),
                         partial(vec_runners.run_gymnasium, workload, kind, seconds)))
    if workload.envpool_id and vec_runners.envpool_available():
        # a thread per core, and twice that: ours' workers hold a block of games each, whose
        # C++ threads add up to more than the cores (2 workers x 2 threads on 2 cores), so
        # EnvPool gets to try as many (its fastest setting is the one compared)
        for threads in sorted({cores, min(2 * cores, n)}):
            for batch in [n, *pool_batches]:
                runs.append((Result(name, "envpool", n, threads, batch, 0.0),
                             partial(vec_runners.run_envpool, workload, threads, batch,
                                     seconds)))
    return runs


def run_workload(workload, seconds: float, repeat: int, cores: int, log,
                 stat: str = "best") -> list[Result]:
    """Every setting, `repeat` rounds taken in turn (so a burst of load elsewhere on the
    machine hits all backends alike); each setting's figure is its best or median round."""
    runs = plan_runs(workload, seconds, cores)
    for round_index in range(repeat):
        for result, fn in runs:
            log(f"{result.workload}: {result.backend} workers={result.num_workers} "
                f"batch={result.batch_size} (round {round_index + 1}/{repeat})")
            try:
                sps = fn()
                result.rounds.append([sps, vec_runners.last_cpu_per_step * 1e6])
            except Exception as exc:  # one broken backend must not end the whole benchmark
                result.error = f"{type(exc).__name__}: {exc}"
                result.rounds.append([None, None])
    for result, _ in runs:
        summarize(result, stat)
    return [result for result, _ in runs]


def summarize(result: Result, stat: str) -> None:
    """The setting's steps/s and CPU per step over its successful rounds."""
    done = [r for r in result.rounds if r[0] is not None]
    if not done:
        return
    if stat == "median":
        result.sps = statistics.median(r[0] for r in done)
        result.cpu_us_per_step = statistics.median(r[1] for r in done)
    else:
        result.sps = max(r[0] for r in done)
        result.cpu_us_per_step = min(r[1] for r in done)


def against_envpool(results: list[Result]) -> dict[str, dict]:
    """Per workload with EnvPool rows: EnvPool's fastest setting, ours (the fastest of those
    no more costly per step than it, else the fastest), and ours / EnvPool in steps/s and in
    CPU per step, overall and round by round (a round's settings ran one after another, so
    each round's ratio sees much the same load on both sides); and every setting of ours."""
    out = {}
    best = best_by_backend(results)
    for workload in dict.fromkeys(r.workload for r in results):
        theirs = best.get((workload, "envpool"))
        ours = [best[(workload, b)] for b in OURS if (workload, b) in best]
        if theirs is None or not theirs.sps or not ours:
            continue
        settings = [r for r in results if r.workload == workload and r.backend in OURS
                    and r.sps and r.cpu_us_per_step]
        # ours: the fastest setting that is also no more costly per step, else the fastest
        cheaper = [r for r in settings if r.cpu_us_per_step <= theirs.cpu_us_per_step]
        mine = max(cheaper or ours, key=lambda r: r.sps)
        pairs = [(a, b) for a, b in zip(mine.rounds, theirs.rounds, strict=False)
                 if a[0] is not None and b[0] is not None]
        out[workload] = {
            "ours": {"backend": mine.backend, "num_workers": mine.num_workers,
                     "batch_size": mine.batch_size},
            "envpool": {"num_workers": theirs.num_workers, "batch_size": theirs.batch_size},
            "sps_ratio": mine.sps / theirs.sps,
            "cpu_ratio": mine.cpu_us_per_step / theirs.cpu_us_per_step,
            "sps_ratio_rounds": [a[0] / b[0] for a, b in pairs],
            "cpu_ratio_rounds": [a[1] / b[1] for a, b in pairs],
            "every_setting": [{"backend": r.backend, "num_workers": r.num_workers,
                               "batch_size": r.batch_size, "sps_ratio": r.sps / theirs.sps,
                               "cpu_ratio": r.cpu_us_per_step / theirs.cpu_us_per_step}
                              for r in settings],
        }
    return out


def select_workloads(names, sizes):
    chosen = workloads(*sizes)
    if not names:
        return chosen
    keys = {"squared": "squared", "cartpole": "CartPole-v1", "delay": "delay",
            "pong": "ALE/Pong-v5"}
    unknown = [n for n in names if n not in keys]
    if unknown:
        raise SystemExit(f"unknown workload(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(keys)}")
    if "pong" in names and not any(w.name == keys["pong"] for w in chosen):
        raise SystemExit('the pong workload needs ale-py: pip install "puffer-tui[atari]"')
    return [w for w in chosen if any(w.name.startswith(keys[n]) for n in names)]


def run(args) -> int:
    if args.report:
        # lazy: kept off the benchmark's own path

        print(report(args.report))
        return 0
    # lazy: pulls the vectorizer, which this module does not load
    from puffer_tui.engine.vec.sizing import available_cores

    if args.seconds <= 0 or args.repeat < 1:
        raise SystemExit("--seconds must be > 0 and --repeat >= 1")
    out_file = None if args.json in (None, "-") else Path(args.json)
    if out_file is not None and not out_file.parent.is_dir():
        raise SystemExit(f"puffer-tui bench vec: error: --json {out_file}: no directory "
                         f"{out_file.parent}")
    sizes = (args.squared_envs, args.cartpole_envs, args.delay_envs, args.pong_envs)
    if min(sizes) < 1:
        raise SystemExit("--squared-envs, --cartpole-envs, --delay-envs and --pong-envs must "
                         "be >= 1")
    cores = available_cores()
    # lazy: torch (the CPU capability), which the vectorizers' measurements do not need
    from puffer_tui.benchmarks.run_record import finish, record, typed_command

    run_info = record(typed_command("puffer-tui", "bench", "vec"))

    def log(text):
        print(f"  {text}", file=sys.stderr, flush=True)

    results = []
    for workload in select_workloads(args.workload, sizes):
        results += run_workload(workload, args.seconds, args.repeat, cores, log, args.stat)
    summary = ratios(results)
    peers = against_envpool(results)
    # lazy: torch (the CPU capability), as run_record above
    from puffer_tui.benchmarks.machine import machine_line

    data = {**finish(run_info), "cores": cores, "stat": args.stat, "repeat": args.repeat,
            "seconds": args.seconds, "results": [asdict(r) for r in results],
            "best": [{"workload": w, "backend": b, **v} for (w, b), v in summary.items()],
            "against_envpool": peers}
    if args.json == "-":
        print(json.dumps(data, indent=2))
        return 0
    if out_file is not None:
        out_file.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {out_file}", file=sys.stderr)
    info = run_info["machine"]
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.benchmarks.vec_table import print_peers, print_table

    print_table(results, best_by_backend(results), summary, cores)
    print_peers(peers, args.stat)
    print(f"measured on {machine_line(info)}")
    return 0
