"""Does a run's config.toml still describe the checkpoint it resumes from?

    check_fits_checkpoint(run_dir, config, saved, given)   # ConfigError, one line

config.toml is a file users edit. A deleted section or line silently fell back to built-in
defaults (minibatch_size 4096 -> 8192, then written back), and an edited hidden_size crashed
the engine with a traceback and marked a finished run `error`. So before a resume writes or
starts anything, the settings the checkpoint was trained with (saved in it) are compared with
what config.toml resolves to: a field that config.toml lacks must resolve to the checkpoint's
value, and the env and the fields that shape the saved weights must not differ at all.

Tested in: tests/app/test_resume_config_fit.py
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from puffer_tui.engine.shared.config import Config, ConfigError, flat_sections, read_utf8

# The fields the saved weights and optimizer state are shaped by (the trainer's own check,
# engine/algo/checkpoint_state.check_compatible, refuses a checkpoint that differs in them, with a traceback).
SHAPES_THE_WEIGHTS = frozenset(f"train.{name}" for name in (
    "policy", "cnn_channels", "hidden_size", "activation", "separate_critic", "optimizer",
    "normalize_observations", "normalize_rewards", "action_squash", "exploration"))


def check_fits_checkpoint(run_dir: Path, config: Config, saved: dict, given=()) -> None:
    """`config`: config.toml with this resume's flags (`given`, dotted keys) applied; `saved`:
    the checkpoint's config dict. Flags may change what they are allowed to (checked before)."""
    path = Path(run_dir) / "config.toml"
    raw = tomllib.loads(read_utf8(path, str(path)))
    ours, theirs = flat_sections(config.as_dict()), flat_sections(saved)
    for key, trained in theirs.items():
        if key in given or key not in ours or ours[key] == trained or key == "parent":
            continue
        section, _, name = key.partition(".")
        lacking = bool(name) and name not in (raw.get(section) or {})
        if not (lacking or key == "env_name" or section == "env" or key in SHAPES_THE_WEIGHTS):
            continue  # a value the user chose in config.toml for a field that may change
        where = f"{Path(run_dir).name}/config.toml"
        if lacking:
            what = (f"lacks its [{section}] section" if section not in raw
                    else f"lacks {key}")
            raise ConfigError(
                f"{where} {what}: {key} would fall back to {ours[key]!r}, but the checkpoint "
                f"trained with {trained!r}; restore it (`{name} = {_toml(trained)}` under "
                f"[{section}]) before resuming")
        raise ConfigError(
            f"{where} has {key} = {ours[key]!r}, but the checkpoint was trained with "
            f"{trained!r} and depends on it; put {_toml(trained)} back, or start a new run from "
            f"it with `puffer-tui train --from {run_dir} --{key.replace('_', '-')} "
            f"{_toml(ours[key])}`")


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)
