"""The run service: starting, resuming and branching runs, for the CLI verbs and the launcher.

Every rule about what may start lives here once: flag checks with a "did you mean", the env's
preset under a `--preset` file under the flags, the preflight checks, the run dir's label, and
every reason to refuse a resume, each found before anything is written. `puffer-tui train`
(app/commands/train.py) and the launcher (app/run_preparation.py) both call it; it imports neither.
No Textual, no argparse.

Tested in: tests/app/test_extend_run.py, tests/app/test_cli_resume_checks.py,
tests/app/test_cli_refusals.py (closest_flag's suggestions), tests/app/test_resume_config_fit.py
"""

from __future__ import annotations

import difflib

from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import ConfigError, load

RESUME_CHANGEABLE = ("train.total_timesteps", "train.nproc")  # besides the live fields


def check_flags(overrides: dict, env_name: str) -> None:
    """Each override alone against its field, so the error names the flag as it was typed."""
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

    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.app.engine_launcher import engine_running
    from puffer_tui.engine.shared import checkpoint as ckpt

    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.engine.shared.resume_check import check_fits_checkpoint
    from puffer_tui.engine.startup.preflight import check_device

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
    step = int(state["global_step"]) if state else checkpoint_step(latest)
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


def checkpoint_step(path) -> int | None:
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.engine.shared.checkpoint import parse_name

    try:
        return parse_name(path.name)[0]
    except ValueError:
        return None


def extend_command(run_dir, step: int) -> str:
    """The command that trains a finished run on to twice the steps it has."""
    return f"puffer-tui train --resume {run_dir} --train.total-timesteps {2 * max(step, 1)}"


def resume_advice(run_dir) -> str:
    """What to type to continue a run that is not training: resume, extend, or start anew."""
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.engine.shared import checkpoint as ckpt

    latest = ckpt.latest_checkpoint(run_dir)
    if latest is None:
        env = rd.run_info(run_dir).env
        return f"it has no checkpoint to resume from; start a new run with `puffer-tui train {env}`"
    step = checkpoint_step(latest)
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




def closest_flag(typed: str, flags: list[str]) -> str | None:
    """The known flag nearest to a misspelled one (dashes and underscores alike), if any is."""
    def norm(flag: str) -> str:
        return flag.lstrip("-").replace("_", "-").lower()

    by_norm = {norm(f): f for f in flags}
    typed = norm(typed.partition("=")[0])
    # an abbreviation (refused: allow_abbrev is off) names the one flag it begins
    starting = [f for n, f in by_norm.items() if typed and n.startswith(typed)]
    if len(starting) == 1:
        return starting[0]
    match = difflib.get_close_matches(typed, list(by_norm), n=1, cutoff=0.75)
    return by_norm[match[0]] if match else None


def new_run(env_name: str, overrides: dict, root, preset: dict | None = None,
            preset_path=None):
    """A new run's directory with its config.toml, written once every check passed: the
    flags (each against its field), the preset (the env family's, then `preset` from a
    `--preset` file, then the flags on top), the preflight checks (device, env, sizes,
    budget, memory). Raises ConfigError / OSError before anything is written."""
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop); pulls gymnasium, which this module does not load
    from puffer_tui.engine.startup.preflight import check_start
    from puffer_tui.envs.env_spec import run_label

    check_flags(overrides, env_name)  # an env spec that cannot be resolved fails here
    if preset:
        # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
        from puffer_tui.engine.shared.presets import preset_overrides

        overrides = {**preset_overrides(preset, env_name, preset_path), **overrides}
    config = cfg.load_config(env_name, overrides)
    check_start(config)
    run_dir = rd.create_run_dir(run_label(config.env_name), rd.runs_root(root))
    cfg.save(config, run_dir / rd.CONFIG_FILE)
    return run_dir
