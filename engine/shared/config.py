"""The run configuration: one typed schema, the single source of truth.

Four sections: `env` (the env's own settings, declared by its class), `vec`, `train` and
`eval` (dataclasses below), and the top-level `parent` (the run and checkpoint a branched run
started from; empty for a fresh run). Every field has a type, default, bounds, one-line help and a `live` flag
(may change while training). A config is built from defaults, then the env's `config.toml`
preset, then overrides (`train.learning_rate=3e-4` or CLI `--train.learning-rate 3e-4`), and
validated; the CLI flags and the app's hyperparameter editor are generated from `schema()`.

Tested in: tests/engine/shared/test_field_rules.py, tests/engine/shared/test_presets_base.py,
tests/app/test_config_encoding.py, tests/app/test_resume_config_fit.py,
tests/app/test_cli_refusals.py, tests/engine/sweep/test_sweep_space.py (the schema's search ranges)
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from puffer_tui.engine.shared.atomic_write import write_atomic
from puffer_tui.engine.shared.config_fields import (  # noqa: F401 (the sections are config's words)
    STOP_WINDOW,
    TYPED_SECTIONS,
    EvalConfig,
    TrainConfig,
    VecConfig,
)

SECTIONS = ("env", "vec", "train", "eval")


class ConfigError(ValueError):
    """A config value that is unknown, mistyped or out of bounds; the text names the field."""


class TomlValue:
    """The type of a Python env's undeclared settings (`--env.KEY V` for a Gymnasium kwarg the
    env's signature does not type): the text is read as a TOML literal, else kept as text."""


def parse_toml_literal(text: str) -> Any:
    """`3` -> 3, `0.5` -> 0.5, `true` -> True, `[1, 2]` -> [1, 2], `"a"` / `a` -> "a"."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


@dataclass
class Config:
    env_name: str = "squared"
    env: dict = field(default_factory=dict)
    vec: VecConfig = field(default_factory=VecConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    parent: str = ""  # "RUN_DIR/checkpoints/NAME.pt" this run branched from ("": none)

    def as_dict(self) -> dict:
        data = {"env_name": self.env_name, "env": dict(self.env)}
        data.update({name: dataclasses.asdict(getattr(self, name)) for name in TYPED_SECTIONS})
        if self.parent:
            data["parent"] = self.parent
        return data


@dataclass(frozen=True)
class FieldSpec:
    """One field of the schema, as the CLI and the app see it."""

    section: str
    name: str
    type: type
    default: Any
    low: float | None
    high: float | None
    help: str
    live: bool
    choices: tuple | None = None
    search: tuple | None = None  # default sweep distribution (see _f)

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def flag(self) -> str:
        return f"--{self.section}.{self.name.replace('_', '-')}"

    def bounds_text(self) -> str:
        # lazy: pulls gymnasium, which this module does not load
        from puffer_tui.engine.native.settings import bounds_text

        if self.type is TomlValue:
            return "a TOML value (3, 0.5, true, [1, 2], text)"

        return bounds_text(self.type, self.low, self.high, self.choices)

    def coerce(self, value: Any) -> Any:
        """`value` (a typed value or the text a person typed) checked against type and bounds."""
        try:
            value = _convert(self.type, value)
        except (TypeError, ValueError):
            raise ConfigError(
                f"{self.key}: {value!r} is not a valid {self.type.__name__} "
                f"(expected {self.bounds_text()})"
            ) from None
        # lazy: pulls gymnasium, which this module does not load
        from puffer_tui.engine.native.settings import check_allowed

        try:
            check_allowed(self.key, value, self.type, self.low, self.high, self.choices)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return value


def _convert(kind: type, value: Any) -> Any:
    if kind is TomlValue:
        return parse_toml_literal(value) if isinstance(value, str) else value
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise ValueError(value)
    if kind is int:
        if isinstance(value, bool):
            raise TypeError(value)
        if isinstance(value, int):
            return value
        number = float(str(value).replace("_", "")) if not isinstance(value, float) else value
        if not math.isfinite(number) or not number.is_integer():
            raise ValueError(value)
        return int(number)
    if kind is float:
        if isinstance(value, bool):
            raise TypeError(value)
        number = float(str(value).replace("_", "")) if not isinstance(value, (int, float)) else float(value)
        if not math.isfinite(number):
            raise ValueError(value)
        return number
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def section_specs(section: str, cls) -> list[FieldSpec]:
    return [
        FieldSpec(section, f.name, type(f.default), f.default, f.metadata["low"],
                  f.metadata["high"], f.metadata["help"], f.metadata["live"], f.metadata["choices"],
                  f.metadata["search"])
        for f in dataclasses.fields(cls)
    ]


def env_specs(env_name: str) -> list[FieldSpec]:
    """The env section's fields, from the env class's declared settings (never live)."""
    return [
        FieldSpec("env", s.name, s.type, s.default, s.low, s.high, s.help, False)
        for s in _env_class(env_name).settings_schema
    ]


def _env_class(env_name: str):
    """The env (class or env source) of a spec, or ConfigError saying why and the fix."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import env_class

    try:
        return env_class(env_name)
    except (KeyError, ValueError) as e:
        raise ConfigError(str(e)) from None


def _open_env_spec(env_name: str, name: str) -> FieldSpec | None:
    """A Python env accepts settings it does not declare (passed on to its constructor)."""
    if not getattr(_env_class(env_name), "open_settings", False):
        return None
    return FieldSpec("env", name, TomlValue, None, None, None,
                     "passed to the env's constructor as given", False)


def schema(env_name: str | None = None) -> list[FieldSpec]:
    """Every field: the env's (if named), then vec, train and eval."""
    specs = env_specs(env_name) if env_name else []
    for name, cls in TYPED_SECTIONS.items():
        specs += section_specs(name, cls)
    return specs


def spec_for(key: str, env_name: str | None = None) -> FieldSpec:
    """The field called `section.name` (dashes allowed), or ConfigError listing what exists."""
    section, _, name = key.partition(".")
    name = name.replace("-", "_")
    if section not in SECTIONS or not name:
        raise ConfigError(f"unknown config key {key!r}: use section.name with section in "
                          f"{', '.join(SECTIONS)} (e.g. train.learning_rate)")
    specs = {s.name: s for s in schema(env_name) if s.section == section}
    if name not in specs and section == "env" and env_name:
        open_spec = _open_env_spec(env_name, name)
        if open_spec is not None:
            return open_spec
    if name not in specs:
        raise ConfigError(
            f"unknown config key {section}.{name}; {section} has: {', '.join(sorted(specs))}"
        )
    return specs[name]


def flat_sections(data: dict) -> dict:
    """{"train.learning_rate": 0.015, "env_name": ..., ...}: a config dict's sections as
    dotted keys (top-level values kept as they are)."""
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{name}": v for name, v in value.items()})
        else:
            flat[key] = value
    return flat


def live_specs() -> list[FieldSpec]:
    return [s for s in schema() if s.live]


def apply(config: Config, values: dict[str, Any]) -> Config:
    """A copy of `config` with `{"section.name": value}` applied and the whole config validated."""
    data = config.as_dict()
    for key, value in values.items():
        spec = spec_for(key, config.env_name)
        data[spec.section][spec.name] = spec.coerce(value)
    _given_discount_kept(data, values)
    return _validated(data)


def _given_discount_kept(data: dict, given) -> None:
    """A gamma someone chose (a flag, a preset file, a sweep's trial) is not raised by the
    time-limit rule (engine/algo/time_limit_horizon.py), unless the rule was given too."""
    keys = {spec_for(key).key for key in given if key.startswith("train.")}
    if "train.gamma" in keys and "train.gamma_from_time_limit" not in keys:
        data["train"]["gamma_from_time_limit"] = False


def _sampling_yields_to_flags(data: dict, given) -> None:
    """How minibatches are drawn, where a preset or the defaults chose it, gives way to a flag
    that rules that choice out: `--train.policy lstm` on an env whose preset shuffles single
    steps and keeps a separate critic (MuJoCo, classic control, MiniGrid, Atari) runs as asked,
    instead of being refused for settings the user never gave (and then refused again for the
    next one). Both sides given by the user: the config's rules refuse them, as before."""
    keys = {spec_for(key).key for key in given if key.startswith("train.")}
    train = data["train"]
    shuffled = train.get("shuffle_steps", False)
    if "train.policy" in keys and train.get("policy") == "lstm":
        for name in ("separate_critic", "shuffle_steps"):
            if f"train.{name}" not in keys:
                train[name] = False
    if "train.prio_alpha" in keys and train.get("prio_alpha", 0) > 0 and \
            "train.shuffle_steps" not in keys:
        train["shuffle_steps"] = False  # prioritized segments asked for: whole segments
    if "train.shuffle_steps" in keys and train.get("shuffle_steps") and \
            "train.prio_alpha" not in keys:
        train["prio_alpha"] = 0.0  # single steps asked for: drawn uniformly
    horizon = train.get("horizon", spec_for("train.horizon").default)
    minibatch = train.get("minibatch_size", spec_for("train.minibatch_size").default)
    if shuffled and not train["shuffle_steps"] and minibatch % horizon and \
            "train.minibatch_size" not in keys:  # whole segments now: the nearest whole size
        train["minibatch_size"] = whole_segments(minibatch, horizon)


def whole_segments(minibatch_size: int, horizon: int) -> int:
    """The nearest minibatch size of whole segments (at least one)."""
    return max(horizon, round(minibatch_size / horizon) * horizon)


def from_dict(data: dict) -> Config:
    """The validated Config of a `Config.as_dict()` (e.g. the one saved in a checkpoint)."""
    if not isinstance(data, dict) or "env_name" not in data:
        raise ConfigError("a config dict needs env_name (and env / vec / train / eval sections)")
    unknown = sorted(set(data) - TOP_LEVEL_KEYS)
    if unknown:
        raise ConfigError(f"config: unknown top-level key(s): {', '.join(unknown)}")
    return _validated({**_empty_sections(), **data})


TOP_LEVEL_KEYS = {"env_name", "parent", *SECTIONS}


def _empty_sections() -> dict:
    return {section: {} for section in SECTIONS}


def _validated(data: dict) -> Config:
    env_name = data["env_name"]
    if not isinstance(env_name, str) or not env_name:
        raise ConfigError(f"env_name must be an env spec (e.g. squared, gym:CartPole-v1), "
                          f"got {env_name!r}")
    env = _checked_env(env_name, dict(data["env"]))
    parent = data.get("parent", "")
    if not isinstance(parent, str):
        raise ConfigError(f"parent must be the path of a checkpoint, got {parent!r}")
    sections = {}
    for name, cls_ in TYPED_SECTIONS.items():
        given = dict(data.get(name, {}))
        specs = {s.name: s for s in section_specs(name, cls_)}
        unknown = sorted(set(given) - set(specs))
        if unknown:
            raise ConfigError(
                f"unknown config key {name}.{unknown[0]}; {name} has: {', '.join(sorted(specs))}"
            )
        sections[name] = cls_(**{k: specs[k].coerce(v) for k, v in given.items()})
    config = Config(env_name, env, **sections, parent=parent)
    _check_consistency(config)
    if config.eval.env_overrides:
        _checked_env(env_name, eval_env_settings(config), "eval.env_overrides")
    return config


def _checked_env(env_name: str, given: dict, source: str = "env") -> dict:
    """The env settings typed and checked by the env's class (ConfigError naming `source`)."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.engine.native.settings import resolve_settings
    from puffer_tui.envs.env_spec import EnvSpecError

    cls = _env_class(env_name)
    try:
        # Keep what was given (defaults filled in), not derived values such as an automatic
        # max_ticks, so that a later override of the setting it derives from still applies.
        if hasattr(cls, "check_settings"):  # a Python env: the given kwargs, typed
            env = cls.check_settings(dict(given))
        else:
            env = resolve_settings(env_name, cls.settings_schema, dict(given))
        cls.resolve(dict(env))
    except EnvSpecError as e:  # says which spec already
        raise ConfigError(str(e) if source == "env" else f"{source}: {e}") from None
    except ValueError as e:
        raise ConfigError(f"{source}: {e}") from None
    return env


def eval_env_settings(config: Config) -> dict:
    """The evaluation envs' settings: the run's, with eval.env_overrides on top."""
    text = config.eval.env_overrides.strip()
    if not text:
        return dict(config.env)
    try:
        overrides = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"eval.env_overrides: {text!r} is not a TOML inline table such as "
                          f"{{max_steps = 1000}} ({e})") from None
    if not isinstance(overrides, dict):
        raise ConfigError(f"eval.env_overrides: {text!r} is not a TOML inline table such as "
                          f"{{max_steps = 1000}}")
    return {**config.env, **overrides}


def _check_consistency(c: Config) -> None:
    """The rules the sections must keep together; a refusal names a fix only when that fix,
    applied, passes every rule here too (one that would be refused next is never shown)."""
    found = _inconsistency(c)
    if found is None:
        return
    text, fixes = found
    accepted = [f for f in (_complete_fix(c, fix) for fix in fixes) if f is not None]
    if accepted:
        text += "; e.g. " + " or ".join(fix_flags(f) for f in accepted)
    raise ConfigError(text)


def fix_flags(fix: dict) -> str:
    """{"train.minibatch_size": 960} -> `--train.minibatch-size 960`."""
    return " ".join(f"{spec_for(key).flag} {_flag_value(value)}" for key, value in fix.items())


def _flag_value(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _complete_fix(c: Config, fix: dict, rounds: int = 3) -> dict | None:
    """`fix` with the further changes the rules then ask for (each rule's first fix), or
    None when no such set of changes passes them all."""
    fix = dict(fix)
    for _ in range(rounds):
        try:
            changed = _with(c, fix)
        except ConfigError:
            return None
        found = _inconsistency(changed) or _batch_fit(changed)
        if found is None:
            return fix
        if not found[1]:
            return None
        fix.update(found[1][0])  # may change one of ours again: only the end state counts
    return None


def _with(c: Config, changes: dict) -> Config:
    """A copy of `c` with `{"section.name": value}` set, each value checked by its field."""
    sections = {name: getattr(c, name) for name in TYPED_SECTIONS}
    for key, value in changes.items():
        spec = spec_for(key)
        sections[spec.section] = dataclasses.replace(sections[spec.section],
                                                     **{spec.name: spec.coerce(value)})
    return dataclasses.replace(c, **sections)


def _batch_fit(c: Config) -> tuple[str, list[dict]] | None:
    """The batch rules engine/startup/preflight.py checks with the env's agents, for one agent
    per env: not a rule here (a multi-agent env's batch is larger), but a fix offered here
    must not run into them."""
    v, t = c.vec, c.train
    rows = v.num_envs * t.horizon
    if t.batch_size and t.batch_size < rows:
        return "train.batch_size below num_envs * horizon", [{"train.batch_size": rows}]
    if t.minibatch_size > (t.batch_size or rows):
        return "train.minibatch_size above the batch", [
            {"train.minibatch_size": t.batch_size or rows}]
    return None


def _inconsistency(c: Config) -> tuple[str, list[dict]] | None:
    """(the first rule `c` breaks, the changes that would keep it: each a dict), or None."""
    v, t = c.vec, c.train
    if v.backend in ("multiprocessing", "ray") and v.num_envs % v.num_workers:
        workers = max(d for d in range(1, v.num_workers + 1) if v.num_envs % d == 0)
        envs = -(-v.num_envs // v.num_workers) * v.num_workers
        return (f"vec.num_envs ({v.num_envs}) must be a multiple of "
                f"vec.num_workers ({v.num_workers})",
                [{"vec.num_workers": workers}, {"vec.num_envs": envs}])
    if v.batch_size and (v.batch_size > v.num_envs or v.num_envs % v.batch_size):
        return (f"vec.batch_size ({v.batch_size}) must divide vec.num_envs "
                f"({v.num_envs}) (0: all)", [{"vec.batch_size": 0}])
    if t.batch_size and t.batch_size % t.horizon:
        return (f"train.batch_size ({t.batch_size}) must be a multiple of "
                f"train.horizon ({t.horizon})",
                [{"train.batch_size": -(-t.batch_size // t.horizon) * t.horizon}])
    if t.batch_size and t.minibatch_size > t.batch_size:
        return (f"train.minibatch_size ({t.minibatch_size}) exceeds "
                f"train.batch_size ({t.batch_size})", [{"train.minibatch_size": t.batch_size}])
    if t.separate_critic and t.policy == "lstm":
        return ("train.separate_critic is for MLP policies; with train.policy lstm "
                "the actor and critic share the LSTM (set separate_critic false)",
                [{"train.separate_critic": False}])
    if t.shuffle_steps and t.policy == "lstm":
        return ("train.shuffle_steps is for feedforward policies; an LSTM replays "
                "whole segments (set shuffle_steps false)", [{"train.shuffle_steps": False}])
    if t.shuffle_steps and t.prio_alpha > 0:
        return (f"train.shuffle_steps draws steps uniformly; train.prio_alpha "
                f"({t.prio_alpha}) prioritizes segments: set prio_alpha 0",
                [{"train.prio_alpha": 0.0}])
    if t.minibatch_size % t.horizon and not t.shuffle_steps:
        fixes = [{"train.minibatch_size": whole_segments(t.minibatch_size, t.horizon)}]
        if t.policy != "lstm" and t.prio_alpha == 0:
            fixes.append({"train.shuffle_steps": True})
        return (f"train.minibatch_size ({t.minibatch_size}) must be a multiple of train.horizon "
                f"({t.horizon}): minibatches are whole segments", fixes)
    return None


def python_env_defaults(cores: int | None = None) -> dict:
    """Sizes for an env stepped in Python: the multiprocessing backend with a worker per core,
    a few envs each, and minibatches that fit the smaller batch. The env's preset and the
    user's flags come on top."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0
        cores = cores or os.cpu_count() or 1
    workers = max(1, min(cores, 64))
    num_envs = 16 * workers
    # inline: this process steps one block itself, so that the processes do not outnumber
    # the cores (bench vec on 2 cores: CartPole 1.04x -> 1.53x Gymnasium's best, Pong 1.38x
    # -> 1.71x our serial backend; training SPS where the learner dominates: unchanged)
    return {"vec": {"backend": "multiprocessing", "num_workers": workers, "num_envs": num_envs,
                    "inline": workers > 1},
            "train": {"minibatch_size": num_envs * TrainConfig.horizon // 4}}


def load_config(env_name: str, overrides: dict[str, Any] | None = None, preset: bool = True) -> Config:
    """Defaults, then the env's preset (envs/NAME/config.toml), then `overrides`; validated.
    A Python env (gym:, module:callable) starts from `python_env_defaults()` instead of the
    native envs' sizes."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import load_preset

    data: dict = {"env_name": env_name, **_empty_sections()}
    # the env's own settings for this run, typed as config.toml will hold them
    env_settings = {spec_for(key, env_name).name: spec_for(key, env_name).coerce(value)
                    for key, value in (overrides or {}).items() if key.startswith("env.")}
    env = _env_class(env_name)
    if hasattr(env, "check_new_settings"):  # refused for new runs only (saved ones still load)
        try:
            env.check_new_settings(env.check_settings(dict(env_settings)))
        except ValueError as e:  # EnvSpecError names its spec
            raise ConfigError(str(e)) from None
    python = env.steps_in_python(env_settings) if hasattr(env, "steps_in_python") \
        else getattr(env, "python", False)
    if python:
        for section, values in python_env_defaults().items():
            data[section].update(values)
    sized_by_default = python and "vec.num_workers" not in (overrides or {})
    if preset:
        try:
            sections = load_preset(env_name, env_settings or None)
        except (KeyError, ValueError) as e:
            raise ConfigError(str(e)) from None
        for section, values in sections.items():
            if section == "sweep":  # search ranges, read by engine/sweep/space.py
                continue
            if section not in SECTIONS:
                raise ConfigError(f"{env_name} preset: unknown section [{section}]")
            data[section].update(values)
            sized_by_default &= not (section == "vec" and "num_workers" in values)
    if sized_by_default:  # a worker per core, as many as divide the envs evenly
        num_envs = spec_for("vec.num_envs").coerce(
            (overrides or {}).get("vec.num_envs", data["vec"]["num_envs"]))
        cores = data["vec"]["num_workers"]
        data["vec"]["num_workers"] = max(
            d for d in range(1, min(cores, num_envs) + 1) if num_envs % d == 0)
        if data["vec"]["num_workers"] == 1:  # one block: a worker process of its own
            data["vec"]["inline"] = False
    # One validation of defaults + preset + overrides together: the preset alone need not be
    # consistent with sizes chosen for this machine, and a Python env may not even resolve
    # without its settings (--env.import of the package that registers its id).
    for key, value in (overrides or {}).items():
        spec = spec_for(key, env_name)
        data[spec.section][spec.name] = spec.coerce(value)
    _given_discount_kept(data, overrides or {})
    _sampling_yields_to_flags(data, overrides or {})
    config = _validated(data)
    _check_backend_installed(config.vec.backend)
    return config


def _check_backend_installed(backend: str) -> None:
    """Refuse, before a run is created, a backend whose optional package is missing (only for
    new configs: a saved one still loads, e.g. to evaluate its checkpoints)."""
    if backend != "ray":
        return
    import importlib.util
    import sys

    try:
        missing = sys.modules.get("ray", 0) is None or importlib.util.find_spec("ray") is None
    except ValueError:
        missing = True
    if missing:
        raise ConfigError('vec.backend = ray needs Ray, which is not installed: '
                          'pip install "puffer-tui[ray]"')


# -- TOML ---------------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml_key(key: str) -> str:
    """A bare key where TOML allows one, else quoted (a Python env's kwarg may be any name)."""
    bare = key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else _toml_value(str(key))


def to_toml(config: Config) -> str:
    data = config.as_dict()
    lines = [f"env_name = {_toml_value(config.env_name)}"]
    if config.parent:
        lines.append(f"parent = {_toml_value(config.parent)}")
    for section in SECTIONS:
        lines += ["", f"[{section}]"]
        lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in data[section].items()]
    return "\n".join(lines) + "\n"


def from_toml(text: str, source: str = "config") -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: not valid TOML ({e})") from None
    if "env_name" not in data:
        raise ConfigError(f"{source}: missing env_name")
    unknown = sorted(set(data) - TOP_LEVEL_KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown top-level key(s): {', '.join(unknown)}")
    data.setdefault("env", {})
    return _validated(data)


def save(config: Config, path: str | os.PathLike) -> None:
    """Write the config as TOML, whole or not at all (see engine/shared/atomic_write.py)."""
    write_atomic(path, to_toml(config))


def load(path: str | os.PathLike) -> Config:
    path = Path(path)
    return from_toml(read_utf8(path, str(path)), str(path))


def read_utf8(path: Path, source: str) -> str:
    """A TOML file's text; ConfigError (one line) when it cannot be read or is not UTF-8,
    as TOML requires, instead of a UnicodeDecodeError traceback."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"{source}: cannot read it ({e.strerror or e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{source}: not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}); "
                          f"TOML files must be UTF-8: re-save it as UTF-8") from None
