"""The settings a script gives `puffer_tui.train`: `train={...}`-style sections and dotted keys
turned into the CLI's `section.name` keys, Stable-Baselines3's argument names refused with the
names they have here, and the CLI's refusals reworded for a script (`train.learning_rate`
where the CLI says `--train.learning-rate`). Used by _pkg/api.py.

Tested in: tests/test_api.py"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from puffer_tui.engine.shared.checkpoint import CheckpointError
from puffer_tui.engine.shared.config import TYPED_SECTIONS, ConfigError
from puffer_tui.engine.shared.run_dir import RunDirError

SECTIONS = (*TYPED_SECTIONS, "env")  # the keyword arguments that take a dict of settings

# Stable-Baselines3's PPO arguments that have another name (or meaning) here
SB3_NAMES = {
    "n_steps": "train.horizon (steps each env takes per epoch)",
    "n_epochs": "train.update_epochs",
    "batch_size": "train.minibatch_size (SB3's batch_size is the minibatch; train.batch_size "
                  "here is the whole epoch's rollout, num_envs x horizon)",
    "clip_range": "train.clip_coef",
    "clip_range_vf": "train.vf_clip_coef",
    "n_envs": "vec.num_envs",
    "normalize_advantage": "always on",
}



class api_wording:
    """Refusals worded for a script: `train.learning_rate` where the CLI says
    `--train.learning-rate`, and `run.wait()` beside `puffer-tui attach`."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if isinstance(error, ConfigError | RunDirError | CheckpointError):
            text = re.sub(r"--(vec|train|eval|env)\.([a-z0-9-]+)(?:[ =](?!-)(\S+?))?(?=[,;:)?\s]|$)",
                          _dotted, str(error))
            raise type(error)(text) from None
        return False


def _dotted(match: re.Match) -> str:
    section, name, value = match.group(1), match.group(2).replace("-", "_"), match.group(3)
    return f"{section}.{name}" + (f"={value}" if value is not None else "")


def refuse_sb3_names(settings: Mapping[str, Any]) -> None:
    """An SB3 argument name is refused with the name it has here."""
    for key in settings:
        section, _, name = key.partition(".")
        if name in SB3_NAMES and not _known(key):
            raise ConfigError(f"{key} is Stable-Baselines3's name; here it is "
                              f"{SB3_NAMES[name]}")


def _known(key: str) -> bool:
    # lazy: kept off the import of puffer_tui
    from puffer_tui.engine.shared import config as cfg

    try:
        cfg.spec_for(key)
        return True
    except ConfigError:
        return False


def settings_from(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """`{"section.name": value}` from `train={...}`-style sections and dotted keys; anything
    else is refused with the keyword that was probably meant."""
    settings: dict[str, Any] = {}
    for key, value in overrides.items():
        if key in SECTIONS:
            if not isinstance(value, Mapping):
                raise ConfigError(f"{key}= takes a dict of settings, e.g. "
                                  f"{key}={{\"name\": value}}; got {value!r}")
            settings.update({f"{key}.{name}": v for name, v in value.items()})
        elif "." in key and key.split(".", 1)[0] in SECTIONS:
            settings[key] = value
        elif isinstance(value, Mapping):
            close = difflib.get_close_matches(key, SECTIONS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}=?" if close else ""
            raise ConfigError(f"unknown section {key}= (sections: {', '.join(SECTIONS)}){hint}")
        else:
            raise ConfigError(f"unknown keyword {key}={value!r}: settings go in a section, e.g. "
                              f"train={{\"{key}\": {value!r}}} (sections: "
                              f"{', '.join(SECTIONS)}), or as a dotted key \"train.{key}\"")
    return settings
