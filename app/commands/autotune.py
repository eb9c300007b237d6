"""`puffer-tui autotune ENV`: find the fastest vectorization layout for one env on this machine.

    puffer-tui autotune gym:CartPole-v1 --save cartpole-fast.toml
    puffer-tui train gym:CartPole-v1 --preset cartpole-fast.toml

The measuring is in puffer_tui.benchmarks.autotune_run; this module is the command line.

Tested in: tests/benchmarks/test_autotune.py (the command end to end, its saved preset trained with)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from puffer_tui.engine.shared.atomic_write import write_atomic
from puffer_tui.engine.shared.config import ConfigError, load_config
from puffer_tui.engine.shared.config_flags import add_arguments, overrides_from_args


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.add_argument("env", metavar="ENV",
                   help="environment: a name from `puffer-tui envs`, gym:ID, MODULE:CALLABLE")
    p.add_argument("--seconds", type=float, default=60.0,
                   help="wall-time budget of the whole tuning, start-ups included (default 60)")
    p.add_argument("--save", metavar="PRESET.toml",
                   help="write the best layout as a preset for `puffer-tui train ENV --preset`")
    p.add_argument("--num-envs", metavar="N[,N...]",
                   help="total envs to try (default: the env's vec.num_envs); other totals "
                        "change the batch each epoch learns from")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_arguments(p)  # --train.* flags shape the training timing; --vec.num-envs the total
    p.set_defaults(run=run, accepts_extra=True)


def _fail(message: str) -> int:
    print(f"puffer-tui autotune: error: {message}", file=sys.stderr)
    return 2


def _totals(text: str | None, default: int) -> list[int]:
    if text is None:
        return [default]
    try:
        totals = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        totals = []
    if not totals or min(totals) < 1:
        raise ValueError(f"--num-envs {text}: give positive whole numbers, e.g. 32,64,128")
    return list(dict.fromkeys(totals))


def run(args) -> int:
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.engine.startup.preflight import check_start

    if not args.seconds > 0:
        return _fail(f"--seconds {args.seconds}: must be > 0")
    save = Path(args.save).expanduser() if args.save else None
    if save is not None and not save.parent.is_dir():
        return _fail(f"--save {args.save}: folder {save.parent} does not exist")
    try:
        overrides = overrides_from_args(args, getattr(args, "extra", []) or [])
        config = load_config(args.env, overrides)
        check_start(config)  # an env spec that cannot be built: one line, exit 2
        totals = _totals(args.num_envs, config.vec.num_envs)
    except (ConfigError, ValueError) as e:
        return _fail(str(e))
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.benchmarks.autotune_run import check_totals

    try:
        if args.num_envs:
            check_totals(args.env, overrides, totals)
    except ConfigError as e:
        return _fail(str(e))
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop); pulls gymnasium, the vectorizer, which this module does not load
    from puffer_tui.benchmarks.autotune_run import autotune, preset_text, print_report
    from puffer_tui.engine.vec.sizing import available_cores

    outcome = _with_progress(lambda progress: autotune(
        args.env, overrides, args.seconds, totals, available_cores(), progress, _spent()))
    if outcome.best is None:
        print_report(outcome, _console(sys.stderr))
        return _fail("no layout could be measured (see the notes above)")
    if save is not None:
        measured_with = config.as_dict()  # the flags' values, typed
        settings = {key: measured_with[key.split(".")[0]][key.split(".", 1)[1]]
                    for key in overrides if key.startswith(("env.", "train."))}
        write_atomic(save, preset_text(outcome, settings))
    if args.json:
        print(json.dumps({**outcome.as_dict(), "saved": str(save) if save else None}, indent=2))
        return 0
    console = _console(sys.stdout)
    print_report(outcome, console)
    if save is not None:
        console.print(f"saved {outcome.best.layout.label} to {save}: "
                      f"puffer-tui train {args.env} --preset {save}")
    return 0


def _spent() -> float:
    """Seconds since this process started (the budget counts them), 0 if unknown."""
    import time

    try:
        import psutil

        return max(0.0, time.time() - psutil.Process().create_time())
    except Exception:
        return 0.0


def _console(stream):
    from rich.console import Console

    return Console(file=stream)


def _with_progress(work):
    """Run work(progress) under a rich progress bar on stderr (one step per layout timed)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=_console(sys.stderr), transient=True) as bar:
        task = bar.add_task("autotune", total=None)

        def progress(text="", advance=0, total=None):
            bar.update(task, description=text or None, advance=advance, total=total)

        return work(progress)
