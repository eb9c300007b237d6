"""`puffer-tui train ENV`: prepare a run directory, start the engine, and watch it.

    puffer-tui train squared --headless --train.total-timesteps 2e6 --env.size 9
    puffer-tui train --resume runs/squared-20261122-001401 --headless
    puffer-tui train --from squared-20261122-001401/best.pt --train.learning-rate 1e-3

Without --headless the Textual dashboard opens (puffer_tui.app.app.run_app).

Tested in: tests/app/test_cli_train.py, tests/app/test_cli_resume_checks.py,
tests/app/test_extend_run.py, tests/app/test_cli_no_terminal.py, tests/app/test_cli_env_specs.py
"""

from __future__ import annotations

import argparse
import math
import sys

from puffer_tui.app.services.run_service import check_flags, new_run, plan_resume
from puffer_tui.app.terminal import LOG_EVERY, PROGRESS_MODES, no_terminal
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import config_flags
from puffer_tui.engine.shared import exit_codes as ec
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import ConfigError, env_specs
from puffer_tui.engine.shared.config_flags import add_arguments
from puffer_tui.engine.shared.run_dir import RunDirError


class _HelpWithEnvSettings(argparse.Action):
    """-h/--help that also lists every env's settings under the one "env settings" heading
    (computed only when asked: it imports every env)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        for group in parser._action_groups:
            if group.title == ENV_SETTINGS_TITLE:
                group.description = env_settings_help()
        parser.print_help()
        parser.exit()


ENV_SETTINGS_TITLE = "env settings"


def env_settings_help() -> str:
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import env_names

    lines = ["--env.NAME V, for the chosen ENV (its preset may change the defaults); for a",
             "gym:ID or MODULE:CALLABLE env, the keyword arguments of its constructor (typed from",
             "its signature, else read as TOML literals) and --env.import MODULE (a package",
             "that registers Gymnasium ids on import):"]
    for name in env_names():
        try:
            specs = env_specs(name)
        except Exception as e:  # an env that fails to load should not hide the others
            lines.append(f"  {name}: unavailable ({e})")
            continue
        lines.append(f"  {name}:")
        for s in specs:
            flag = f"--env.{s.name.replace('_', '-')}"
            lines.append(f"    {flag:<24} {s.help} (default {s.default}; {s.bounds_text()})")
    return "\n".join(lines)


def env_flags(env_name: str | None = None) -> list[str]:
    """`--env.*` flags of one env, or of every env (for spelling suggestions)."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import env_names

    names = env_names()
    flags = []
    for name in [env_name] if env_name in names else names:
        try:
            flags += [s.flag for s in env_specs(name)]
        except Exception:  # an env that fails to load offers no suggestions
            continue
    return sorted(set(flags))


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=help_text, add_help=False,
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=ec.help_epilog((ec.FINISHED, ec.ERROR, ec.USAGE, ec.STOPPED,
                                              ec.LEFT_RUNNING)))
    p.add_argument("-h", "--help", action=_HelpWithEnvSettings,
                   help="show this help (with every env's settings) and exit")
    p.add_argument("env", nargs="?", metavar="ENV",
                   help="environment to train: a name from `puffer-tui envs`, gym:ID (a "
                        "Gymnasium id), MODULE:CALLABLE or pz:MODULE:CALLABLE")
    p.add_argument("--headless", action="store_true",
                   help="no dashboard: a plain progress display; Ctrl-C, SIGTERM and SIGHUP "
                        "(a closed terminal) checkpoint and stop the engine")
    p.add_argument("--progress", choices=PROGRESS_MODES, default=None,
                   help="with --headless: panel (a live panel), lines (a plain line every "
                        "--log-every seconds: step, SPS, score, return, losses, ETA), jsonl "
                        "(one JSON object a line on stdout, for scripts; other output on "
                        "stderr); default auto: panel in a terminal, lines in a pipe or file")
    p.add_argument("--log-every", type=float, default=None, metavar="S",
                   help=f"with --headless: seconds between progress lines (default "
                        f"{LOG_EVERY:g}); the panel redraws on its own")
    p.add_argument("--detach", action="store_true",
                   help="with --headless: the engine outlives the command (Ctrl-C, SIGTERM, "
                        "SIGHUP leave it training); reattach with `puffer-tui attach RUN`, "
                        "stop it with `puffer-tui stop RUN`")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="continue a run from its latest checkpoint (a path or a run name)")
    p.add_argument("--from", dest="branch_from", metavar="RUN[/CHECKPOINT]",
                   help="start a new run from a run's checkpoint (its latest, or a file in its "
                        "checkpoints/ such as best.pt) with the overrides given: any setting "
                        "the parent's weights still fit; the new run records its parent")
    p.add_argument("--fallback-checkpoint", action="store_true",
                   help="with --resume: if the latest checkpoint is corrupt, use the previous one")
    p.add_argument("--runs-dir", metavar="D",
                   help="where runs are created (default $PUFFER_TUI_RUNS or ./runs)")
    p.add_argument("--preset", metavar="FILE",
                   help="preset TOML (e.g. from `puffer-tui sweep best`) over the env's own "
                        "preset, below the flags; it may name the ENV")
    add_arguments(p)
    p.add_argument("--nproc", dest="train.nproc", default=None, metavar="N",
                   help="learner processes started through torchrun (DistributedDataParallel); "
                        "the same as --train.nproc N")
    p.set_defaults(run=run, accepts_extra=True, extra_flags=env_flags)


def _fail(message: str) -> int:
    print(f"puffer-tui train: error: {message}", file=sys.stderr)
    return ec.USAGE


def prepare_run(args):
    """(run_dir, resuming) with config.toml written; raises ConfigError / RunDirError /
    CheckpointError before writing anything."""
    overrides = config_flags.overrides_from_args(args, getattr(args, "extra", []) or [])
    root = rd.runs_root(args.runs_dir)
    preset = {}
    if getattr(args, "preset", None):
        # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
        from puffer_tui.engine.shared.presets import read_preset

        if args.resume or args.branch_from:
            raise cfg.ConfigError("--preset is for a new run; a resumed or branched run starts "
                                  "from its checkpoint's config (give the changes as flags)")
        preset = read_preset(args.preset)
        args.env = args.env or preset.get("env_name")
    if args.branch_from:
        return _prepare_branch(args, overrides, root), True
    if args.resume:
        run_dir, changed = plan_resume(args.resume, overrides, root, args.env,
                                       args.fallback_checkpoint)
        if changed is not None:
            cfg.save(changed, run_dir / rd.CONFIG_FILE)
        return run_dir, True
    if not args.env:
        raise cfg.ConfigError("name the ENV to train (see `puffer-tui envs`), or --resume RUN_DIR")
    return new_run(args.env, overrides, root, preset, args.preset), False


def _prepare_branch(args, overrides: dict, root):
    """The branch's run dir, written once every check of engine/startup/branch.py passed."""
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.engine.startup import branch

    if args.resume:
        raise ConfigError("--from starts a new run from a checkpoint, --resume continues a "
                          "run: give one of them")
    if args.fallback_checkpoint:
        raise ConfigError("--fallback-checkpoint is for --resume; with --from name the "
                          "checkpoint to start from (RUN/NAME.pt)")
    plan = branch.plan_branch(args.branch_from, overrides, root, args.env,
                              check_overrides=check_flags)
    run_dir = branch.create_branch(plan, root)
    changed = ", ".join(plan.changes) if plan.changes else "no setting changed"
    print(f"branch of {plan.parent_run.name} at {plan.checkpoint.name} (step {plan.step:,}): "
          f"{changed}", flush=True)
    for note in plan.notes:
        print(f"  {note}", flush=True)
    return run_dir


def run(args) -> int:
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.engine.shared.checkpoint import CheckpointError

    run_app = None
    if args.detach and not args.headless:
        return _fail("--detach is for --headless (in the dashboard, q offers to detach and "
                     "leave the engine training)")
    note = None
    if not args.headless:
        why = no_terminal()
        if why is not None:  # a dashboard would write its escape codes into the file
            note = (f"puffer-tui train: {why}: no dashboard; training as with --headless "
                    f"(Ctrl-C, SIGTERM and SIGHUP checkpoint and stop; add --headless to "
                    f"skip this note)")
            args.headless = True
    for flag, value in (("--progress", args.progress), ("--log-every", args.log_every)):
        if value is not None and not args.headless:
            return _fail(f"{flag} is for --headless (the dashboard draws its own progress)")
    if args.log_every is not None and not (math.isfinite(args.log_every)
                                           and args.log_every > 0):
        return _fail(f"--log-every {args.log_every:g}: give the seconds between lines, "
                     f"more than 0 (e.g. --log-every 30)")
    if not args.headless:
        try:
            # lazy: pulls textual, which this module does not load
            from puffer_tui.app.app import run_app
        except ImportError as e:
            return _fail(f"the Textual app is not available yet ({e}); use --headless")
    try:
        run_dir, resuming = prepare_run(args)
    except (ConfigError, RunDirError, CheckpointError) as e:
        return _fail(str(e))
    if note:
        print(note, file=sys.stderr, flush=True)
    if run_app is not None:
        if resuming:
            # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
            from puffer_tui.app.engine_launcher import EngineStartError, launch_engine

            try:
                launch_engine(run_dir, resume=True, fallback_checkpoint=args.fallback_checkpoint)
            except EngineStartError as e:
                print(f"puffer-tui train: the engine failed to start: {e}", file=sys.stderr)
                return ec.ERROR
            return int(run_app(run_dir=run_dir, attach=True, owns_engine=True) or 0)
        return int(run_app(run_dir=run_dir, attach=False) or 0)
    # lazy: pulls textual, which this module does not load
    from puffer_tui.app.headless_run import run_headless

    return run_headless(run_dir, resuming, args.fallback_checkpoint, detach=args.detach,
                        progress=args.progress or "auto", log_every=args.log_every or LOG_EVERY)
