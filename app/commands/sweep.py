"""`puffer-tui sweep ENV --trials N`: a hyperparameter search whose trials are ordinary runs.

    puffer-tui sweep bandit --trials 8 --parallel 2 --headless
    puffer-tui sweep cartpole --trials 30 --objective pareto --sweep.train.ent-coef 1e-4,1e-2,log
    puffer-tui sweep --resume bandit-20261122-131500 --headless
    puffer-tui sweep best bandit-20261122-131500 > best.toml   # then: train --preset best.toml

Everything is checked before the sweep directory exists; then the driver (python -m
puffer_tui.engine.sweep) starts in its own session and this command watches it.

Tested in: tests/engine/sweep/test_sweep_driver.py (real sweeps through the command line),
tests/engine/sweep/test_sweep_space.py, tests/app/test_cli_refusals.py
"""

from __future__ import annotations

import argparse
import re
import sys
import time

from puffer_tui.app.commands.train import env_flags
from puffer_tui.app.services.run_service import check_flags
from puffer_tui.app.terminal import no_terminal
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import config_flags
from puffer_tui.engine.shared import exit_codes as ec
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared import sweep_settings as st
from puffer_tui.engine.shared.config import ConfigError, schema
from puffer_tui.engine.shared.config_flags import add_arguments, take_flags
from puffer_tui.engine.shared.run_dir import RunDirError, socket_answers
from puffer_tui.engine.shared.sweep_settings import DIRECTIONS, OBJECTIVES, PRUNERS, SweepError

SWEEP_FLAG = "--sweep."
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=__doc__.split("\n\n")[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="--sweep.FIELD low,high[,log] (or a,b,c for a choice field, or off)\n"
                              "overrides a field's search range; --train.X V fixes a field.\n\n"
                              + ec.help_epilog((ec.FINISHED, ec.ERROR, ec.USAGE, ec.STOPPED,
                                                ec.LEFT_RUNNING)))
    p.add_argument("env", nargs="?", metavar="ENV", help="environment (or `best` NAME)")
    p.add_argument("name", nargs="?", metavar="NAME", help=argparse_suppress())
    p.add_argument("--trials", type=int, metavar="N", help="trials in the study (all drivers)")
    p.add_argument("--parallel", type=int, metavar="K", help="trials at once (default 1)")
    p.add_argument("--metric", default="score", help="metrics.jsonl column to optimize")
    p.add_argument("--direction", default="maximize", choices=DIRECTIONS)
    p.add_argument("--objective", default="score", choices=OBJECTIVES,
                   help="score, score-per-hour, pareto (score against wall-clock seconds), or "
                        "time-to-reach (training seconds until the metric reaches --reach)")
    p.add_argument("--reach", type=float, metavar="V",
                   help="with --objective time-to-reach: the metric's value to reach "
                        "(e.g. 475 for cartpole's episode_length)")
    p.add_argument("--pruner", choices=PRUNERS,
                   help="stops hopeless trials (default median; none for pareto)")
    p.add_argument("--study", metavar="NAME", help="study and sweep directory name")
    p.add_argument("--storage", metavar="URL",
                   help="Optuna storage (default sqlite in the sweep dir; postgresql://...)")
    p.add_argument("--seed", type=int, help="sampler seed")
    p.add_argument("--preset", metavar="FILE", help="preset TOML applied before the flags")
    p.add_argument("--resume", metavar="NAME", help="continue a sweep (a name or a path)")
    p.add_argument("--trial", type=int, metavar="N", help="with `best`: this trial instead")
    p.add_argument("--headless", action="store_true",
                   help="a plain live table and a summary instead of the app's sweep view")
    p.add_argument("--runs-dir", metavar="D", help="runs root (default $PUFFER_TUI_RUNS or ./runs)")
    add_arguments(p)
    p.set_defaults(run=run, accepts_extra=True, extra_flags=extra_flags)


def argparse_suppress():
    return argparse.SUPPRESS


def extra_flags() -> list[str]:
    return env_flags() + [SWEEP_FLAG + s.key.replace("_", "-") for s in schema()]


def _fail(message: str) -> int:
    print(f"puffer-tui sweep: error: {message}", file=sys.stderr)
    return ec.USAGE


def split_extra(extra: list[str]) -> tuple[list[str], dict[str, str]]:
    """(the --env.* tokens, {"train.learning_rate": "1e-4,1e-2,log"} from --sweep.* tokens)."""
    ranges, env = take_flags(extra, SWEEP_FLAG, "a range: low,high[,log]")
    return env, ranges


def run(args) -> int:
    try:
        if args.env == "best":
            return print_best(args)
        if args.name is not None:
            raise ConfigError(f"unexpected {args.name!r}: one ENV (or `best NAME`)")
        sweep_dir, settings, watch = (resume_sweep(args) if args.resume else new_sweep(args))
    except (ConfigError, SweepError, RunDirError) as e:
        return _fail(str(e))
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.app.commands.sweep_watch import launch_and_view, launch_and_watch

    if not args.headless and no_terminal() is None:
        return launch_and_view(sweep_dir, settings, args.runs_dir)
    if not args.headless:  # the sweep view's escape codes would land in a file or pipe
        print(f"puffer-tui sweep: {no_terminal()}: no sweep view; watching as with "
              f"--headless", file=sys.stderr, flush=True)
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.app.stop_signals import TermAsCtrlC

    with TermAsCtrlC():  # SIGTERM, SIGHUP: stop the sweep as Ctrl-C does
        return launch_and_watch(sweep_dir, settings, watch)


def new_sweep(args):
    """(sweep dir, settings, True): everything checked before the directory is created."""
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop); pulls gymnasium, which this module does not load
    from puffer_tui.engine.shared.presets import preset_overrides, read_preset
    from puffer_tui.engine.sweep.space import build_space, space_to_json
    from puffer_tui.envs import load_preset
    from puffer_tui.envs.env_spec import run_label

    if not args.env:
        raise cfg.ConfigError("name the ENV to sweep (see `puffer-tui envs`), or --resume NAME")
    check_counts(args)
    rd.check_runs_root(rd.runs_root(args.runs_dir))  # the sweep and its trials' runs go there
    if args.objective == "time-to-reach" and args.reach is None:
        raise cfg.ConfigError("--objective time-to-reach needs --reach V, the value of --metric "
                              "to reach (e.g. --metric episode_length --reach 475)")
    if args.reach is not None and args.objective != "time-to-reach":
        raise cfg.ConfigError(f"--reach is for --objective time-to-reach, not {args.objective}")
    if args.objective == "pareto" and args.pruner not in (None, "none"):
        raise cfg.ConfigError(f"--pruner {args.pruner} cannot judge a pareto objective (Optuna "
                              f"prunes single-objective studies only); drop it")
    env_extra, ranges = split_extra(getattr(args, "extra", []) or [])
    overrides = config_flags.overrides_from_args(args, env_extra)
    check_flags(overrides, args.env)
    preset = read_preset(args.preset) if args.preset else {}
    fixed = {**preset_overrides(preset, args.env, args.preset), **overrides}
    base = cfg.load_config(args.env, fixed)
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.engine.startup.preflight import check_start

    check_start(base)
    try:
        env_preset = load_preset(args.env)
    except (KeyError, ValueError) as e:
        raise cfg.ConfigError(str(e)) from None
    sweep_section = {**st_flatten(env_preset.get("sweep", {})),
                     **st_flatten(preset.get("sweep", {}))}
    space = build_space(base, sweep_section, ranges,
                        include_cost=args.objective in ("score-per-hour", "pareto"),
                        fixed=tuple(overrides))
    name = args.study or f"{run_label(args.env)}-{time.strftime('%Y%m%d-%H%M%S')}"
    if not NAME_PATTERN.match(name):
        raise cfg.ConfigError(f"--study {name!r}: use letters, digits, '.', '_' and '-'")
    sweep_dir = st.sweep_dir(name, args.runs_dir)
    if sweep_dir.exists():
        raise st.SweepError(f"sweep {name} already exists in {sweep_dir.parent}; continue it "
                            f"with `puffer-tui sweep --resume {name}`, join its study from "
                            f"another runs dir (--storage sqlite:///{sweep_dir / st.STUDY_FILE}"
                            f" --runs-dir OTHER), or pick another --study")
    settings = st.SweepSettings(
        name=name, env_name=args.env, trials=args.trials, parallel=args.parallel or 1,
        metric=args.metric, direction=args.direction, objective=args.objective,
        pruner=args.pruner or ("none" if args.objective == "pareto" else "median"),
        storage=args.storage or "", base=base.as_dict(), fixed=fixed,
        space=space_to_json(space), seed=args.seed, reach=args.reach)
    if args.storage:  # a database elsewhere: reach it (and check the study) before writing
        # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
        from puffer_tui.engine.sweep.study import open_study

        open_study(settings, sweep_dir)
    try:
        sweep_dir.mkdir(parents=True, mode=0o700)
    except OSError as e:
        raise RunDirError(f"cannot create the sweep folder {sweep_dir} ({e.strerror or e}); "
                          f"{rd.ROOT_ADVICE}") from None
    st.save_settings(settings, sweep_dir)
    return sweep_dir, settings, True


def st_flatten(section):
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.engine.sweep.space import flatten_preset

    return flatten_preset(section)


def check_counts(args, resuming: bool = False) -> None:
    if args.trials is None and not resuming:
        raise ConfigError("--trials N is required (how many trials the study should hold)")
    if args.trials is not None and args.trials < 1:
        raise ConfigError(f"--trials {args.trials}: must be at least 1")
    if args.parallel is not None and args.parallel < 1:
        raise ConfigError(f"--parallel {args.parallel}: must be at least 1")


def resume_sweep(args):
    if args.env:
        raise ConfigError(f"--resume continues a sweep as it was set up; drop {args.env!r}")
    check_counts(args, resuming=True)
    sweep_dir = st.find_sweep(args.resume, args.runs_dir)
    settings = st.load_settings(sweep_dir)
    if socket_answers(sweep_dir / st.SOCKET_FILE):
        raise st.SweepError(f"sweep {settings.name} is still running (its driver answers on "
                            f"{sweep_dir / st.SOCKET_FILE})")
    changed = False
    if args.trials is not None and args.trials != settings.trials:
        settings.trials, changed = args.trials, True
    if args.parallel is not None and args.parallel != settings.parallel:
        settings.parallel, changed = args.parallel, True
    if changed:
        st.save_settings(settings, sweep_dir)
    return sweep_dir, settings, True


def print_best(args) -> int:
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.engine.shared.presets import preset_toml
    from puffer_tui.engine.sweep.study import open_study

    if not args.name:
        raise cfg.ConfigError("name the sweep: `puffer-tui sweep best NAME`")
    sweep_dir = st.find_sweep(args.name, args.runs_dir)
    settings = st.load_settings(sweep_dir)
    study = open_study(settings, sweep_dir)
    from optuna.trial import TrialState

    complete = {t.number: t for t in study.get_trials(states=(TrialState.COMPLETE,))}
    if not complete:
        raise st.SweepError(f"sweep {settings.name} has no completed trial yet")
    if args.trial is not None:
        if args.trial not in complete:
            raise st.SweepError(f"trial {args.trial} of {settings.name} did not complete; "
                                f"completed: {', '.join(map(str, sorted(complete)))}")
        trial = complete[args.trial]
    elif len(study.directions) == 1:
        trial = study.best_trial
    else:  # the Pareto front's highest score; --trial picks another point of the front
        sign = 1 if settings.direction == "maximize" else -1
        trial = max(study.best_trials, key=lambda t: sign * t.values[0])
    config = cfg.apply(cfg.from_dict(settings.base), dict(trial.params))
    values = ", ".join(f"{v:.6g}" for v in trial.values)
    header = [f"trial {trial.number} of sweep {settings.name} ({settings.objective}: {values}; "
              f"{trial.user_attrs.get('seconds', 0):.1f} s), run {trial.user_attrs.get('run_dir')}",
              "train with these values: puffer-tui train --preset THIS_FILE"]
    sys.stdout.write(preset_toml(config, header))
    return 0
