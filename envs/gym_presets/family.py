"""The preset of a Python env without one of its own, chosen from its family.

    family_of(source) -> "mujoco" | "classic-control" | "continuous-control" | "mpe" | None

A Gymnasium id's own preset (ID.toml), its namespace's (ALE.toml) or its name's first part's
(MiniGrid.toml) comes first (envs/env_spec.py: GymSource.preset); failing those, the family:

- "mujoco": ids whose entry point is under gymnasium.envs.mujoco (locomotion);
- "mpe": PettingZoo's multi-particle envs (pettingzoo.mpe, mpe2);
- "continuous-control": any other env with Box actions (Pendulum, MountainCarContinuous,
  LunarLanderContinuous, your own module);
- "classic-control": any other env with discrete actions and vector observations
  (CartPole, Acrobot, MountainCar, your own module).

An env with image observations, discrete actions and no preset of its own gets none (the
defaults); one with Box actions (CarRacing-v3) is "continuous-control" all the same, its images
through a CNN: no development env has measured that family on images. Each family
is a TOML file here (FAMILY.toml), in the format `puffer-tui sweep best` writes: a sweep's
best file can take a family file's place (its env_name line is ignored here). `sweep best`
writes only the values that differ from the preset the sweep started from, so to make them a
family's defaults, put them into that family's file over its values.

Tested in: tests/envs/test_env_spec_sources.py (presets by id, then namespace, then family),
tests/envs/test_preset_base.py
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from gymnasium import spaces

from puffer_tui.envs.image_spaces import has_image

PRESETS = Path(__file__).parent
FAMILIES = ("mujoco", "mpe", "continuous-control", "classic-control")
LABELS = {"mujoco": "MuJoCo locomotion", "mpe": "PettingZoo MPE",
          "continuous-control": "continuous control", "classic-control": "classic control"}


def family_of(source, settings: dict | None = None) -> str | None:
    """The family of a PythonEnvSource (GymSource or CallableSource), or None."""
    entry = _entry_point_name(source)
    if entry.startswith("gymnasium.envs.mujoco"):
        return "mujoco"
    # the module the user named too: mpe2's env creators are closures PettingZoo's
    # parallel_wrapper_fn makes, whose own module is pettingzoo.utils.conversions
    named = getattr(source, "named_module", "")
    if any(".mpe" in name or name.startswith("mpe2") for name in (entry, named)):
        return "mpe"
    try:
        layout = source.layout(dict(settings or {}))
    except Exception:  # the env cannot be built here: config validation says why
        return None
    if isinstance(layout.action_space, spaces.Box):
        return "continuous-control"
    if isinstance(layout.action_space, (spaces.Discrete, spaces.MultiDiscrete)) and \
            not has_image(layout.observation_space):
        return "classic-control"
    return None


def _entry_point_name(source) -> str:
    """The dotted path of what builds the env: a Gymnasium id's entry point, or a callable's
    module and name."""
    gym_spec = None
    if hasattr(source, "env_id"):
        try:
            gym_spec = source._gym_spec({})
        except Exception:
            return ""
        entry = gym_spec.entry_point
        if isinstance(entry, str):
            return entry
        target = entry
    else:
        target = getattr(source, "target", None)
    if target is None:
        return ""
    return f"{getattr(target, '__module__', '') or ''}:{getattr(target, '__qualname__', '')}"


def family_path(family: str) -> Path:
    return PRESETS / f"{family}.toml"


def read_preset_file(path: Path, _seen: tuple = ()) -> dict:
    """A preset's sections ([vec], [train], ...); a top-level env_name (as `sweep best`
    writes it) names no section and is left out. A top-level `base = "FILE.toml"` (beside
    this one) is read first and this file's values go over its own, section by section, so
    an env's preset says only how it differs from its family's."""
    path = Path(path)
    with path.open("rb") as f:
        data = tomllib.load(f)
    data.pop("env_name", None)
    base = data.pop("base", None)
    if base is None:
        return data
    base_path = path.parent / str(base)
    if base_path.resolve() in _seen or base_path.resolve() == path.resolve():
        raise ValueError(f"preset {path.name}: base = {base!r} leads back to itself")
    if not base_path.is_file():
        raise ValueError(f"preset {path.name}: base = {base!r} is not a file beside it")
    merged = read_preset_file(base_path, (*_seen, path.resolve()))
    for section, values in data.items():
        if not isinstance(values, dict):
            raise ValueError(f"preset {path.name}: {section!r} is not a [section]")
        merged[section] = {**merged.get(section, {}), **values}
    return merged


def path_label(path) -> str:
    """What a preset file is called in the run header, the start event and the launcher:
    "MuJoCo locomotion preset (mujoco.toml)", "preset ALE.toml"."""
    family = Path(path).stem
    if family in LABELS:
        return f"{LABELS[family]} preset ({Path(path).name})"
    return f"preset {Path(path).name}"
