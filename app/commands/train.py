"""`puffer-tui train ENV`: prepare a run directory, start the engine, and watch it.

    puffer-tui train squared --headless --train.total-timesteps 2e6 --env.size 9
    puffer-tui train --resume runs/squared-20261122-001401 --headless

Without --headless the Textual dashboard opens (puffer_tui.app.app.run_app).
"""

from __future__ import annotations

import argparse
import sys

RESUME_CHANGEABLE = ("train.total_timesteps",)  # besides the live fields


class _HelpWithEnvSettings(argparse.Action):
    """-h/--help that also lists every env's settings (computed only when asked: it imports
    every env)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.epilog = env_settings_help()
        parser.print_help()
        parser.exit()


def env_settings_help() -> str:
    from puffer_tui.engine.config import env_specs
    from puffer_tui.envs import ENV_NAMES

    lines = ["env settings (--env.NAME V, for the chosen ENV; the preset may change defaults):"]
    for name in ENV_NAMES:
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


def add_parser(sub, name, help_text):
    from puffer_tui.engine.config import add_arguments

    p = sub.add_parser(name, help=help_text, description=help_text, add_help=False,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-h", "--help", action=_HelpWithEnvSettings,
                   help="show this help (with every env's settings) and exit")
    p.add_argument("env", nargs="?", metavar="ENV", help="environment to train (puffer-tui envs)")
    p.add_argument("--headless", action="store_true",
                   help="no dashboard: a plain progress display; Ctrl-C checkpoints and stops")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="continue a run from its latest checkpoint (a path or a run name)")
    p.add_argument("--fallback-checkpoint", action="store_true",
                   help="with --resume: if the latest checkpoint is corrupt, use the previous one")
    p.add_argument("--runs-dir", metavar="D",
                   help="where runs are created (default $PUFFER_TUI_RUNS or ./runs)")
    add_arguments(p)
    p.set_defaults(run=run, accepts_extra=True)


def _fail(message: str) -> int:
    print(f"puffer-tui train: error: {message}", file=sys.stderr)
    return 2


def check_flags(overrides: dict, env_name: str) -> None:
    """Each override alone against its field, so the error names the flag as it was typed."""
    from puffer_tui.engine import config as cfg

    for key, value in overrides.items():
        spec = cfg.spec_for(key, env_name)
        try:
            spec.coerce(value)
        except cfg.ConfigError as e:
            raise cfg.ConfigError(f"{spec.flag} {value}: {e}") from None


def prepare_run(args):
    """(run_dir, resuming) with config.toml written; raises ConfigError / RunDirError."""
    from pathlib import Path

    from puffer_tui.engine import config as cfg
    from puffer_tui.engine import run_dir as rd

    overrides = cfg.overrides_from_args(args, getattr(args, "extra", []) or [])
    root = rd.runs_root(args.runs_dir)
    if args.resume:
        run_dir = rd.find_run(args.resume, root)
        config = cfg.load(Path(run_dir) / rd.CONFIG_FILE)
        if args.env and args.env != config.env_name:
            raise cfg.ConfigError(f"{run_dir.name} trains {config.env_name}, not {args.env}")
        if overrides:
            check_flags(overrides, config.env_name)
            for key in overrides:
                spec = cfg.spec_for(key, config.env_name)
                if not spec.live and spec.key not in RESUME_CHANGEABLE:
                    raise cfg.ConfigError(
                        f"{spec.key} cannot change when resuming (the checkpoint depends on it); "
                        f"only live fields and {', '.join(RESUME_CHANGEABLE)} can")
            config = cfg.apply(config, overrides)
            cfg.save(config, Path(run_dir) / rd.CONFIG_FILE)
        return run_dir, True
    if not args.env:
        raise cfg.ConfigError("name the ENV to train (see `puffer-tui envs`), or --resume RUN_DIR")
    from puffer_tui.envs import ENV_NAMES

    if args.env not in ENV_NAMES:
        raise cfg.ConfigError(f"unknown env {args.env!r}; available: {', '.join(ENV_NAMES)}")
    check_flags(overrides, args.env)
    config = cfg.load_config(args.env, overrides)
    run_dir = rd.create_run_dir(config.env_name, root)
    cfg.save(config, run_dir / rd.CONFIG_FILE)
    return run_dir, False


def run(args) -> int:
    from puffer_tui.engine.checkpoint import CheckpointError
    from puffer_tui.engine.config import ConfigError
    from puffer_tui.engine.run_dir import RunDirError

    run_app = None
    if not args.headless:
        try:
            from puffer_tui.app.app import run_app
        except ImportError as e:
            return _fail(f"the Textual app is not available yet ({e}); use --headless")
    try:
        run_dir, resuming = prepare_run(args)
    except (ConfigError, RunDirError, CheckpointError) as e:
        return _fail(str(e))
    if run_app is not None:
        if resuming:
            from puffer_tui.app.engine_launcher import launch_engine

            launch_engine(run_dir, resume=True, fallback_checkpoint=args.fallback_checkpoint)
            return int(run_app(run_dir=run_dir, attach=True) or 0)
        return int(run_app(run_dir=run_dir, attach=False) or 0)
    return run_headless(run_dir, resuming, args.fallback_checkpoint)


def run_headless(run_dir, resume: bool, fallback: bool) -> int:
    from rich.console import Console

    from puffer_tui.app.engine_client import EngineClient
    from puffer_tui.app.engine_launcher import EngineStartError, launch_engine
    from puffer_tui.app.headless_display import HeadlessDisplay
    from puffer_tui.engine import run_dir as rd

    console = Console()
    console.print(f"run directory: {run_dir}")
    try:
        handle = launch_engine(run_dir, resume=resume, fallback_checkpoint=fallback)
        client = EngineClient.connect(run_dir)
    except EngineStartError as e:
        console.print(f"[bold red]the engine failed to start[/]\n{e}", markup=True)
        return 1
    display = HeadlessDisplay(client, run_dir, console)
    try:
        state = display.run()
    finally:
        client.close()
    if state in rd.FINAL_STATES:
        try:
            handle.wait(30)  # reap it; it exits right after closing the socket
        except Exception:
            pass
    info = rd.run_info(run_dir)
    checkpoint = info.last_checkpoint.name if info.last_checkpoint else "none"
    console.print(f"{state}: {info.global_step or 0:,} steps; last checkpoint {checkpoint}",
                  highlight=False)
    if state == "stopped":
        console.print(f"resume with: puffer-tui train --resume {run_dir} --headless")
    if state == "error":
        console.print(f"[bold red]the engine failed[/] (see {run_dir / rd.EVENTS_FILE})")
        if not display.errors and info.detail:
            console.print(info.detail, markup=False)
        return 1
    return 0 if state in ("finished", "stopped") else 1
