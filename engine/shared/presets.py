"""Preset files: what `puffer-tui sweep best` writes and `puffer-tui train --preset FILE` reads.

    env_name = "bandit"          # optional; must match the ENV trained
    [train]
    learning_rate = 0.0042
    [sweep]                      # optional search ranges (ignored by train)
    train.ent_coef = [1e-5, 1e-2, "log"]

Its values apply on top of the env's own preset (envs/NAME/config.toml), below flags.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from pathlib import Path

from puffer_tui.engine.shared import config as cfg


def read_preset(path: str | os.PathLike) -> dict:
    """The file's tables ({"env_name"?, "env", "vec", "train", "sweep"}); ConfigError if bad."""
    path = Path(path).expanduser()
    try:
        data = tomllib.loads(cfg.read_utf8(path, f"--preset {path}"))
    except tomllib.TOMLDecodeError as e:
        raise cfg.ConfigError(f"--preset {path}: not valid TOML ({e})") from None
    unknown = sorted(set(data) - {"env_name", "base", "sweep", *cfg.SECTIONS})
    if unknown:
        raise cfg.ConfigError(f"--preset {path}: unknown table or key {unknown[0]!r} (a preset "
                              f"has env_name, base, [env], [vec], [train] and [sweep])")
    for section in (*cfg.SECTIONS, "sweep"):
        if not isinstance(data.get(section, {}), dict):
            raise cfg.ConfigError(f"--preset {path}: {section} must be a table")
    if "base" in data:
        data = _over_base(data, path)
    check_keys(data, path)
    return data


def check_keys(data: dict, path) -> None:
    """Every [vec], [train] and [eval] key a field of its section; ConfigError naming the file
    and the closest field (env settings depend on the env: the run's checks read those)."""
    for section, cls in cfg.TYPED_SECTIONS.items():
        fields = [s.name for s in cfg.section_specs(section, cls)]
        for key in data.get(section, {}):
            if key in fields:
                continue
            close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
            hint = (f"did you mean {close[0]}?" if close else
                    f"`puffer-tui train --help` lists the --{section}.* fields")
            raise cfg.ConfigError(f"--preset {path}: [{section}] has no field {key!r}; {hint}")


def _over_base(data: dict, path: Path) -> dict:
    """`base = "FILE.toml"` (a file beside this one, else one of the built-in presets of
    envs/gym_presets, as a copy of Pendulum-v1.toml names its family): its sections first,
    this file's values over them."""
    # lazy: the built-in presets' reader, only for a preset that names a base
    from puffer_tui.envs.gym_presets.family import PRESETS, read_preset_file

    base = str(data.pop("base"))
    beside, built_in = path.parent / base, PRESETS / base
    where = beside if beside.is_file() else built_in if built_in.is_file() else None
    if where is None or where.resolve() == path.resolve():
        raise cfg.ConfigError(f"--preset {path}: base = {base!r} is neither a file beside it "
                              f"nor a built-in preset ({PRESETS})")
    try:
        merged = read_preset_file(where)
    except (OSError, ValueError) as e:
        raise cfg.ConfigError(f"--preset {path}: its base {where}: {e}") from None
    for section, values in data.items():
        merged[section] = {**merged.get(section, {}), **values} if section in cfg.SECTIONS \
            else values
    return merged


def preset_overrides(data: dict, env_name: str, path: str | os.PathLike) -> dict:
    """{"train.learning_rate": value, ...} of a preset read by read_preset, for `env_name`."""
    named = data.get("env_name")
    if named is not None and named != env_name:
        raise cfg.ConfigError(f"--preset {path} is for {named}, not {env_name}")
    for key in data.get("env", {}):
        try:
            cfg.spec_for(f"env.{key}", env_name)  # an open spec (gym:ID) takes its kwargs
        except cfg.ConfigError:
            names = [s.name for s in cfg.env_specs(env_name)]
            close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}?" if close else \
                f"{env_name} has {', '.join(names) or 'no settings'}"
            raise cfg.ConfigError(f"--preset {path}: [env] of {env_name} has no setting "
                                  f"{key!r}; {hint}") from None
    return {f"{section}.{name}": value for section in cfg.SECTIONS
            for name, value in data.get(section, {}).items()}


def preset_toml(config: cfg.Config, header: list[str]) -> str:
    """`config` as a preset: only the values that differ from the env's own preset."""
    reference = cfg.load_config(config.env_name).as_dict()
    mine = config.as_dict()
    lines = [f"# {line}" for line in header]
    lines.append(f"env_name = {cfg._toml_value(config.env_name)}")
    for section in cfg.SECTIONS:
        changed = {k: v for k, v in mine[section].items() if reference[section].get(k) != v}
        if changed:
            lines += ["", f"[{section}]"]
            lines += [f"{k} = {cfg._toml_value(v)}" for k, v in changed.items()]
    return "\n".join(lines) + "\n"
