"""`puffer-tui bench train ENV`: training agent-steps/second of the real Trainer, in-process.

The first epoch (allocation, warm-up) is not counted. SPS is the agent steps of the counted
epochs over their wall time; the breakdown is the trainer's own timing of those epochs, and
the CPU per step that of this process's threads and its env workers over the same epochs.
`--json FILE` keeps the result with the date, machine, load and command
(benchmarks/run_record.py); `--report FILE` prints it as the Markdown table on the docs
(benchmarks/train_speed_report.py).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from puffer_tui.engine.shared.config import ConfigError, load_config
from puffer_tui.engine.shared.config_flags import add_arguments as add_config_arguments
from puffer_tui.engine.shared.config_flags import overrides_from_args
from puffer_tui.engine.shared.protocol import TIMING, TIMING_KEYS


def add_arguments(p):
    p.add_argument("env", metavar="ENV", nargs="?",
                   help="environment to train (with --peer sb3: gym:CartPole-v1, the default)")
    p.add_argument("--seconds", type=float, default=10.0,
                   help="measured training time, after one warm-up epoch (default 10)")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write the result, the machine and the command to FILE as JSON (the "
                        "table is printed as well); with no FILE, print the JSON instead of "
                        "the table")
    p.add_argument("--report", action="append", type=Path, metavar="FILE",
                   help="run nothing: print the Markdown table of an earlier --json FILE "
                        "(repeatable), with its date, machine and command")
    p.add_argument("--peer", choices=("sb3",),
                   help="also train a peer in the same run and compare: sb3 = Stable-Baselines3 "
                        "PPO with its defaults on CartPole-v1 (pip install \"puffer-tui[bench]\")")
    p.add_argument("--budget", type=float, default=300.0,
                   help="with --peer: wall seconds each side may train before it gives up on "
                        "a mean episode length of 475 (default 300)")
    add_config_arguments(p)
    p.set_defaults(accepts_extra=True)


def timed_epochs(trainer, seconds: float, totals: dict) -> tuple[int, int, float]:
    """(steps, epochs, wall seconds) of whole epochs run until `seconds` have passed (or the
    budget is spent); each epoch's timing shares are added into `totals`."""
    start_step, start, epochs = trainer.global_step, time.perf_counter(), 0
    while True:
        row = trainer.run_epoch()
        epochs += 1
        for key in TIMING_KEYS:
            totals[key] += float(row[TIMING].get(key, 0.0))
        elapsed = time.perf_counter() - start
        if elapsed >= seconds or trainer.done:
            return trainer.global_step - start_step, epochs, elapsed


def measure(config, seconds: float) -> dict:
    # lazy: pulls gymnasium, torch, the trainer, the policy, the vectorizer, psutil, which this
    # module does not load
    from puffer_tui.benchmarks.vec_runners import tree_cpu_seconds
    from puffer_tui.engine.algo.trainer import Trainer

    trainer = Trainer(config)
    try:
        trainer.run_epoch()  # warm-up: not measured
        totals = dict.fromkeys(TIMING_KEYS, 0.0)
        cpu = tree_cpu_seconds()
        steps, epochs, elapsed = timed_epochs(trainer, seconds, totals)
        cpu = tree_cpu_seconds() - cpu
        threads = trainer.torch_threads[0]  # what the trainer chose (train.torch_threads 0: auto)
        precision, numpy_math = trainer.precision, trainer.numpy_math
    finally:
        trainer.close()
    timed = sum(totals.values()) or 1.0
    return {
        "env": config.env_name,
        "backend": config.vec.backend,
        "num_envs": config.vec.num_envs,
        "num_workers": config.vec.num_workers,
        "torch_threads": threads,
        "precision": precision,
        "math": "numpy" if numpy_math else "torch",  # whose pool got the threads
        "sps": steps / elapsed,
        "steps": steps,
        "epochs": epochs,
        "seconds": elapsed,
        "cpu_seconds": cpu,  # this process's threads and its env workers'
        "cpu_us_per_step": 1e6 * cpu / steps if steps else None,
        "timing": totals,
        "timing_pct": {k: 100.0 * v / timed for k, v in totals.items()},
    }


def run(args) -> int:
    if args.report:
        # lazy: kept off the benchmark's own path
        from puffer_tui.benchmarks.train_speed_report import report

        print(report(args.report))
        return 0
    if args.seconds <= 0:
        raise SystemExit("--seconds must be > 0")
    out_file = None if args.json in (None, "-") else Path(args.json)
    if out_file is not None and not out_file.parent.is_dir():
        raise SystemExit(f"puffer-tui bench train: error: --json {out_file}: no directory "
                         f"{out_file.parent}")
    if args.peer:
        # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
        from puffer_tui.benchmarks.peer_sb3 import ENV_SPEC, require_sb3

        if args.env not in (None, ENV_SPEC):
            raise SystemExit(f"--peer {args.peer} compares on {ENV_SPEC}: give that ENV or none")
        if not args.budget > 0:
            raise SystemExit("--budget must be > 0")
        require_sb3()
        args.env = ENV_SPEC
    elif args.env is None:
        raise SystemExit("name the ENV to train (see `puffer-tui envs`)")
    try:
        overrides = overrides_from_args(args, getattr(args, "extra", []) or [])
        if not args.peer:  # a budget large enough that the run never ends while measured
            overrides.setdefault("train.total_timesteps", 10**12)
        config = load_config(args.env, overrides)
        # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
        from puffer_tui.engine.startup.preflight import check_start

        check_start(config)  # an env that cannot be built: one line, not a traceback
    except ConfigError as e:
        raise SystemExit(f"puffer-tui bench train: error: {e}") from None
    # lazy: torch (the CPU capability) and git
    from puffer_tui.benchmarks.run_record import record, typed_command

    run_info = record(typed_command("puffer-tui", "bench", "train"))
    if args.peer:
        # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
        from puffer_tui.benchmarks.peer_sb3 import measure_peer, print_table

        data = {**run_info, "peer": measure_peer(config, args.budget)}
        if _write(data, args.json, out_file):
            print_table(data["peer"])
        return 0
    data = {**run_info, "train": measure(config, args.seconds)}
    if _write(data, args.json, out_file):
        print_table_of(data)
    return 0


def _write(data: dict, json_arg, out_file: Path | None) -> bool:
    """The JSON where --json asked for it, the run's load at its end added; True when the
    table is to be printed too (not with a bare --json, whose JSON goes to stdout)."""
    # lazy: torch (the CPU capability) and git, as in run()
    from puffer_tui.benchmarks.run_record import finish

    finish(data)
    if json_arg == "-":
        print(json.dumps(data, indent=2))
        return False
    if out_file is not None:
        out_file.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {out_file}", file=sys.stderr)
    return True


def print_table_of(data: dict) -> None:
    """The terminal table of one measured run, then the machine it ran on."""
    # lazy: torch (the CPU capability, in the machine line), as in run()
    from puffer_tui.benchmarks.output import print_result

    result = data["train"]
    rows = [("agent-steps/s", f"{result['sps']:,.0f}"),
            ("steps / epochs", f"{result['steps']:,} / {result['epochs']}"),
            ("seconds", f"{result['seconds']:.2f}"),
            ("CPU µs/step", f"{result['cpu_us_per_step']:,.1f}")]
    rows += [(f"  {key}", f"{result['timing'][key]:.2f} s  ({result['timing_pct'][key]:.0f}%)")
             for key in TIMING_KEYS]
    title = (f"training {result['env']}: {result['num_envs']} envs, "
             f"{result['backend']} backend, {result['precision']} in "
             f"{result['math']}, {result['torch_threads']} "
             f"thread{'' if result['torch_threads'] == 1 else 's'}")
    print_result("train", result, False, title, ("measure", "value"), rows)
