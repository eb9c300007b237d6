"""`puffer-tui train ENV`: prepare a run directory, start the engine, and watch it.

    puffer-tui train squared --headless --train.total-timesteps 2e6 --env.size 9
    puffer-tui train --resume runs/squared-20261122-001401 --headless
    puffer-tui train --from squared-20261122-001401/best.pt --train.learning-rate 1e-3

Without --headless the Textual dashboard opens (puffer_tui.app.app.run_app).
"""

from __future__ import annotations

import argparse
import sys

RESUME_CHANGEABLE = ("train.total_timesteps", "train.nproc")  # besides the live fields


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
    from puffer_tui.engine.config import env_specs
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
    from puffer_tui.engine.config import env_specs
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
    from puffer_tui.engine.config import add_arguments

    p = sub.add_parser(name, help=help_text, description=help_text, add_help=False,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-h", "--help", action=_HelpWithEnvSettings,
                   help="show this help (with every env's settings) and exit")
    p.add_argument("env", nargs="?", metavar="ENV",
                   help="environment to train: a name from `puffer-tui envs`, gym:ID (a "
                        "Gymnasium id), MODULE:CALLABLE or pz:MODULE:CALLABLE")
    p.add_argument("--headless", action="store_true",
                   help="no dashboard: a plain progress display; Ctrl-C, SIGTERM and SIGHUP "
                        "(a closed terminal) checkpoint and stop the engine")
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
    return 2


def check_flags(overrides: dict, env_name: str) -> None:
    """Each override alone against its field, so the error names the flag as it was typed."""
    from puffer_tui.app.cli import closest_flag
    from puffer_tui.engine import config as cfg

    for key, value in overrides.items():
        try:
            spec = cfg.spec_for(key, env_name)
        except cfg.ConfigError as e:
            flags = [s.flag for s in cfg.schema(env_name)]
            typed = "--" + key.replace("_", "-")
            suggestion = closest_flag(typed, flags)
            hint = f"; did you mean {suggestion}?" if suggestion else ""
            raise cfg.ConfigError(f"{e}{hint}") from None
        try:
            spec.coerce(value)
        except cfg.ConfigError as e:
            raise cfg.ConfigError(f"{spec.flag} {value}: {e}") from None


def plan_resume(resume, overrides: dict, root, env: str | None = None,
                fallback_checkpoint: bool = False):
    """(run_dir, config to write or None): every reason to refuse the resume of `resume` (a
    run dir or name) is found here, before anything is written or started. The app's launcher
    asks the same questions."""
    from pathlib import Path

    from puffer_tui.app.engine_launcher import engine_running
    from puffer_tui.engine import checkpoint as ckpt
    from puffer_tui.engine import config as cfg
    from puffer_tui.engine import run_dir as rd
    from puffer_tui.engine.preflight import check_device
    from puffer_tui.engine.resume_check import check_fits_checkpoint

    run_dir = rd.find_run(resume, root)
    config = cfg.load(Path(run_dir) / rd.CONFIG_FILE)
    if env and env != config.env_name:
        raise cfg.ConfigError(f"{run_dir.name} trains {config.env_name}, not {env}")
    changed = None
    if overrides:
        check_flags(overrides, config.env_name)
        for key in overrides:
            spec = cfg.spec_for(key, config.env_name)
            if not spec.live and spec.key not in RESUME_CHANGEABLE:
                raise cfg.ConfigError(
                    f"{spec.key} cannot change when resuming (the checkpoint depends on it); "
                    f"only live fields and {', '.join(RESUME_CHANGEABLE)} can")
        changed = config = cfg.apply(config, overrides)
    if engine_running(run_dir):
        pid = rd.read_status(run_dir).get("pid", "?")
        raise rd.RunDirError(f"{run_dir.name} is still training (engine pid {pid}); watch it "
                             f"with `puffer-tui attach {run_dir}`")
    latest = ckpt.latest_checkpoint(run_dir)
    if latest is None:
        raise ckpt.CheckpointError(
            f"{run_dir.name} has no checkpoint to resume from (none in "
            f"{ckpt.checkpoint_dir(run_dir)}: it ended before its first one); start a new run "
            f"with `puffer-tui train {config.env_name}`")
    check_device(config)
    # a damaged checkpoint is named here, not in an engine traceback after config.toml changed
    # (unless the run is over anyway: then how to extend it is the news)
    try:
        _, state = ckpt.load_latest(run_dir, fallback=fallback_checkpoint,
                                    on_skip=lambda path, e: None)
    except ckpt.CheckpointError:
        state = None
    step = int(state["global_step"]) if state else _checkpoint_step(latest)
    total = resumed_total(config, state)
    given = any(cfg.spec_for(key, config.env_name).key == "train.total_timesteps"
                for key in overrides)
    if step is not None and step >= total:
        if given:
            raise cfg.ConfigError(
                f"--train.total-timesteps {total} is not above the {step:,} steps "
                f"{run_dir.name} has trained; ask for more: `{extend_command(run_dir, step)}`")
        raise cfg.ConfigError(
            f"{run_dir.name} already trained {step:,} of its {total:,} steps; to train on, "
            f"raise the budget: `{extend_command(run_dir, step)}`")
    if state is None:
        ckpt.load_latest(run_dir, fallback=fallback_checkpoint, on_skip=lambda path, e: None)
    elif isinstance(state.get("config"), dict):  # config.toml must still describe the weights
        check_fits_checkpoint(run_dir, config, state["config"],
                              {cfg.spec_for(key, config.env_name).key for key in overrides})
    return run_dir, changed


def resumed_total(config, state: dict | None) -> int:
    """The budget a resume trains to, as the trainer picks it (Trainer.load_state_dict): the
    one in config.toml when it was given for this resume (it differs from the one the
    checkpoint's engine was built with), else the checkpoint's, changed live or not."""
    ours = config.train.total_timesteps
    if not state:
        return ours
    built = (state.get("built_config") or {}).get("train", {}).get("total_timesteps", ours)
    live = (state.get("config") or {}).get("train", {}).get("total_timesteps", ours)
    return ours if built != ours else int(live)


def _checkpoint_step(path) -> int | None:
    from puffer_tui.engine.checkpoint import parse_name

    try:
        return parse_name(path.name)[0]
    except ValueError:
        return None


def extend_command(run_dir, step: int) -> str:
    """The command that trains a finished run on to twice the steps it has."""
    return f"puffer-tui train --resume {run_dir} --train.total-timesteps {2 * max(step, 1)}"


def resume_advice(run_dir) -> str:
    """What to type to continue a run that is not training: resume, extend, or start anew."""
    from puffer_tui.engine import checkpoint as ckpt
    from puffer_tui.engine import run_dir as rd
    from puffer_tui.engine.config import ConfigError, load

    latest = ckpt.latest_checkpoint(run_dir)
    if latest is None:
        env = rd.run_info(run_dir).env
        return f"it has no checkpoint to resume from; start a new run with `puffer-tui train {env}`"
    step = _checkpoint_step(latest)
    try:
        config = load(run_dir / rd.CONFIG_FILE)
        total = config.train.total_timesteps
    except (ConfigError, OSError):
        config, total = None, rd.run_info(run_dir).total_timesteps
    if step is not None and total and step >= total and config is not None:
        try:  # its budget may have been raised live: the checkpoint knows
            total = resumed_total(config, ckpt.load_checkpoint(latest))
        except ckpt.CheckpointError:
            pass
    if step is not None and total and step >= total:
        return f"it trained all its {total:,} steps; train it on with `{extend_command(run_dir, step)}`"
    return f"resume it with `puffer-tui train --resume {run_dir}`"


def prepare_run(args):
    """(run_dir, resuming) with config.toml written; raises ConfigError / RunDirError /
    CheckpointError before writing anything."""
    from puffer_tui.engine import config as cfg
    from puffer_tui.engine import run_dir as rd

    overrides = cfg.overrides_from_args(args, getattr(args, "extra", []) or [])
    root = rd.runs_root(args.runs_dir)
    preset = {}
    if getattr(args, "preset", None):
        from puffer_tui.engine.sweep.preset import read_preset

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
    check_flags(overrides, args.env)  # an env spec that cannot be resolved fails here
    if preset:
        from puffer_tui.engine.sweep.preset import preset_overrides

        overrides = {**preset_overrides(preset, args.env, args.preset), **overrides}
    config = cfg.load_config(args.env, overrides)
    from puffer_tui.engine.preflight import check_start

    check_start(config)
    from puffer_tui.envs.env_spec import run_label

    run_dir = rd.create_run_dir(run_label(config.env_name), root)
    cfg.save(config, run_dir / rd.CONFIG_FILE)
    return run_dir, False


def _prepare_branch(args, overrides: dict, root):
    """The branch's run dir, written once every check of engine/branch.py passed."""
    from puffer_tui.engine import branch
    from puffer_tui.engine.config import ConfigError

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
    from puffer_tui.engine.checkpoint import CheckpointError
    from puffer_tui.engine.config import ConfigError
    from puffer_tui.engine.run_dir import RunDirError

    run_app = None
    if args.detach and not args.headless:
        return _fail("--detach is for --headless (in the dashboard, q offers to detach and "
                     "leave the engine training)")
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
            from puffer_tui.app.engine_launcher import EngineStartError, launch_engine

            try:
                launch_engine(run_dir, resume=True, fallback_checkpoint=args.fallback_checkpoint)
            except EngineStartError as e:
                print(f"puffer-tui train: the engine failed to start: {e}", file=sys.stderr)
                return 1
            return int(run_app(run_dir=run_dir, attach=True) or 0)
        return int(run_app(run_dir=run_dir, attach=False) or 0)
    from puffer_tui.app.headless_run import run_headless

    return run_headless(run_dir, resuming, args.fallback_checkpoint, detach=args.detach)
