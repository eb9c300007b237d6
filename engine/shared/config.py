"""The run configuration: one typed schema, the single source of truth.

Four sections: `env` (the env's own settings, declared by its class), `vec`, `train` and
`eval` (dataclasses below), and the top-level `parent` (the run and checkpoint a branched run
started from; empty for a fresh run). Every field has a type, default, bounds, one-line help and a `live` flag
(may change while training). A config is built from defaults, then the env's `config.toml`
preset, then overrides (`train.learning_rate=3e-4` or CLI `--train.learning-rate 3e-4`), and
validated; the CLI flags and the app's hyperparameter editor are generated from `schema()`.
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

SECTIONS = ("env", "vec", "train", "eval")
STOP_WINDOW = 5  # epochs whose mean episode score train.stop_at_score compares


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


# `search`: the field's default sweep distribution (engine/sweep/space.py), (low, high, scale)
# with scale "linear", "log", or "log-relative" (bounds are factors of the preset's value).
def _f(default, help, low=None, high=None, live=False, choices=None, search=None):
    meta = {"help": help, "low": low, "high": high, "live": live, "choices": choices,
            "search": search}
    return field(default=default, metadata=meta)


@dataclass
class VecConfig:
    backend: str = _f("serial", "vectorization backend (ray: pip install puffer-tui[ray])",
                      choices=("serial", "multiprocessing", "ray"))
    num_envs: int = _f(4096, "environments simulated in parallel", 1, 1_000_000)
    num_workers: int = _f(2, "worker processes (multiprocessing) or Ray actors (ray)", 1, 1024)
    batch_size: int = _f(0, "envs per recv() (0: num_envs, i.e. synchronous)", 0, 1_000_000)
    zero_copy: bool = _f(True, "pool returns contiguous blocks of envs in turn (no copies); "
                         "off: any finished workers, gathered")
    inline: bool = _f(False, "multiprocessing: the trainer's process steps one block of envs "
                      "itself, one worker process fewer (faster when the workers fill the "
                      "cores; a crash of an env in that block ends the run)")
    worker_timeout: float = _f(15.0, "seconds a worker may take to step or reset before it is "
                               "reported hung, with its stack (multiprocessing)", 0.1, 86400.0)
    ray_address: str = _f("", "Ray cluster host:port (ray backend; empty: RAY_ADDRESS or a "
                          "running local Ray, else start one here)")
    ray_num_cpus: float = _f(1.0, "CPUs each Ray actor asks the cluster for (ray backend)",
                             0.01, 1024.0)


@dataclass
class TrainConfig:
    total_timesteps: int = _f(20_000_000, "agent steps to train for", 1, 10**13, live=True,
        search=(0.25, 2.0, "log-relative"))
    seed: int = _f(1, "seed for torch, numpy and the envs", 0, 2**31 - 1)
    device: str = _f("auto", "torch device (auto: CUDA when present)", choices=("auto", "cpu", "cuda"))
    torch_threads: int = _f(0, "CPU threads for torch (0: one per core not taken by env workers or other load)", 0, 512)
    compile: bool = _f(False, "torch.compile the policy")
    policy: str = _f("auto", "policy network (auto: a CNN for image observations, else an MLP)",
                     choices=("auto", "mlp", "cnn", "lstm"))
    cnn_channels: int = _f(32, "CNN: channels of the first conv layer (the next two have twice "
                           "as many)", 4, 1024)
    hidden_size: int = _f(128, "width of the policy's hidden layers", 4, 8192,
        search=(32, 512, "log"))
    activation: str = _f("gelu", "MLP nonlinearity (tanh: the usual one for continuous control)",
                         choices=("gelu", "tanh", "relu"))
    separate_critic: bool = _f(False, "MLP: the value function has its own network (no trunk "
                               "shared with the policy)")
    init_log_std: float = _f(0.0, "Box actions: initial log std of the Gaussian (kept within "
                             "[-5, 2] while training)", -5.0, 2.0)
    action_squash: str = _f("clip", "Box actions: clip the Gaussian sample to the bounds, or "
                            "squash it into them with tanh", choices=("clip", "tanh"))
    normalize_observations: bool = _f(False, "running mean/std normalization of float vector "
                                      "observations (images and integer grids: left alone)")
    observation_clip: float = _f(10.0, "clip normalized observations to [-c, c] (0: off)",
                                 0.0, 1e6)
    normalize_rewards: bool = _f(False, "divide rewards by the running std of the discounted "
                                 "return")
    reward_clip: float = _f(10.0, "clip scaled rewards to [-c, c] (0: off)", 0.0, 1e9)
    lstm_sequence_resets: bool = _f(
        True, "LSTM: reset the state at episode ends inside training sequences too (exact; "
        "off: one fused LSTM call per minibatch, faster on CPU)")
    horizon: int = _f(64, "steps per segment of the rollout buffer (and BPTT length)", 2, 8192)
    batch_size: int = _f(0, "samples per epoch (0: num_agents * horizon)", 0, 2**31 - 1)
    minibatch_size: int = _f(8192, "samples per gradient step", 1, 2**31 - 1)
    update_epochs: int = _f(1, "passes over each batch", 1, 64, live=True,
        search=(1, 4, "linear"))
    learning_rate: float = _f(0.015, "Adam learning rate", 0.0, 1.0, live=True,
        search=(1e-4, 1e-1, "log"))
    anneal_lr: bool = _f(True, "cosine-anneal the learning rate to 0 over the run", live=True)
    gamma: float = _f(0.995, "discount factor", 0.0, 1.0, live=True,
        search=(0.9, 0.999, "linear"))
    gae_lambda: float = _f(0.90, "GAE lambda", 0.0, 1.0, live=True,
        search=(0.8, 0.99, "linear"))
    vtrace_rho_clip: float = _f(1.0, "V-trace importance-ratio clip for advantages", 0.0, 100.0, live=True)
    vtrace_c_clip: float = _f(1.0, "V-trace trace-cutting clip", 0.0, 100.0, live=True)
    refresh_advantages: bool = _f(True, "recompute advantages before each minibatch with the "
                                  "latest values and ratios (V-trace; off: once per batch, "
                                  "as standard PPO)", live=True)
    prio_alpha: float = _f(0.8, "prioritized segment sampling exponent (0: uniform)", 0.0, 1.0, live=True,
        search=(0.0, 1.0, "linear"))
    prio_beta0: float = _f(0.2, "initial importance-weight exponent, annealed to 1", 0.0, 1.0, live=True)
    clip_coef: float = _f(0.2, "PPO policy clip", 0.0, 10.0, live=True,
        search=(0.05, 0.5, "linear"))
    vf_coef: float = _f(2.0, "value loss coefficient", 0.0, 100.0, live=True,
        search=(0.25, 5.0, "log"))
    vf_clip_coef: float = _f(0.2, "value clip (0: off)", 0.0, 100.0, live=True)
    ent_coef: float = _f(0.001, "entropy bonus coefficient", 0.0, 1.0, live=True,
        search=(1e-5, 1e-1, "log"))
    max_grad_norm: float = _f(1.5, "gradient norm clip", 0.0, 1000.0, live=True,
        search=(0.1, 5.0, "log"))
    reward_clamp: float = _f(0.0, "clamp rewards to [-c, c] (0: off)", 0.0, 1e9, live=True)
    adam_beta1: float = _f(0.95, "Adam beta1", 0.0, 0.9999,
        search=(0.8, 0.99, "linear"))
    adam_beta2: float = _f(0.999, "Adam beta2", 0.0, 0.99999)
    adam_eps: float = _f(1e-8, "Adam epsilon", 1e-12, 1e-2)
    optimizer: str = _f("adam", "optimizer (muon: torch.optim.Muon for the hidden 2-D weights, "
                        "Adam for the rest)", choices=("adam", "muon"))
    precision: str = _f("float32", "autocast of the policy's passes (bfloat16: mixed "
                        "precision; auto: bfloat16 where native)",
                        choices=("float32", "bfloat16", "auto"))
    wandb: bool = _f(False, "log metrics, config, live changes and recordings to Weights & "
                     "Biases (pip install puffer-tui[wandb]; WANDB_MODE=offline needs no account)")
    wandb_project: str = _f("puffer-tui", "Weights & Biases project name")
    nproc: int = _f(1, "learner processes (torchrun ranks, DistributedDataParallel)", 1, 1024)
    stop_at_score: float = _f(0.0, "finish once the mean episode score of the last "
                              f"{STOP_WINDOW} epochs with episodes reaches this (0: off)",
                              -1e12, 1e12, live=True)
    checkpoint_interval: int = _f(200, "epochs between checkpoints (0: only on stop)", 0, 10**9)


@dataclass
class EvalConfig:
    interval: int = _f(0, "epochs between evaluations of the policy on separate envs (0: off)",
                       0, 10**9, live=True)
    episodes: int = _f(8, "episodes per evaluation", 1, 100_000, live=True)
    num_envs: int = _f(8, "envs the evaluation steps at once (its own, not the training envs)",
                       1, 65_536)
    deterministic: bool = _f(True, "evaluate the most likely action (false: sample)", live=True)
    record_every: int = _f(0, "evaluations between recordings of an episode into "
                           "RUN_DIR/recordings/ (0: never)", 0, 10**9, live=True)
    record_format: str = _f("gif", "format of periodic recordings", choices=("gif", "mp4"))
    record_scale: int = _f(4, "pixels per tile of native envs in recordings", 1, 64)
    env_overrides: str = _f("", "env settings of the evaluation envs only, as a TOML inline "
                            "table, e.g. {max_steps = 1000} (empty: the run's own)")


# The sections held as dataclasses (env is a plain dict: its fields belong to the env class).
TYPED_SECTIONS = {"vec": VecConfig, "train": TrainConfig, "eval": EvalConfig}


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

    # The rules env settings share live in engine/native/settings.py, imported when first
    # needed: importing engine.native pulls numpy and gymnasium, which reading a config need not.
    def bounds_text(self) -> str:
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


def _section_specs(section: str, cls) -> list[FieldSpec]:
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
        specs += _section_specs(name, cls)
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
    return _validated(data)


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
        specs = {s.name: s for s in _section_specs(name, cls_)}
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
    v, t = c.vec, c.train
    if v.backend in ("multiprocessing", "ray") and v.num_envs % v.num_workers:
        raise ConfigError(
            f"vec.num_envs ({v.num_envs}) must be a multiple of vec.num_workers ({v.num_workers})"
        )
    if v.batch_size and (v.batch_size > v.num_envs or v.num_envs % v.batch_size):
        raise ConfigError(
            f"vec.batch_size ({v.batch_size}) must divide vec.num_envs ({v.num_envs}) (0: all)"
        )
    if t.batch_size and t.batch_size % t.horizon:
        raise ConfigError(
            f"train.batch_size ({t.batch_size}) must be a multiple of train.horizon ({t.horizon})"
        )
    if t.batch_size and t.minibatch_size > t.batch_size:
        raise ConfigError(
            f"train.minibatch_size ({t.minibatch_size}) exceeds train.batch_size ({t.batch_size})"
        )
    if t.separate_critic and t.policy == "lstm":
        raise ConfigError("train.separate_critic is for MLP policies; with train.policy lstm "
                          "the actor and critic share the LSTM (set separate_critic false)")
    if t.minibatch_size % t.horizon:
        raise ConfigError(
            f"train.minibatch_size ({t.minibatch_size}) must be a multiple of train.horizon "
            f"({t.horizon}): minibatches are whole segments"
        )


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
    from puffer_tui.envs import load_preset

    data: dict = {"env_name": env_name, **_empty_sections()}
    python = getattr(_env_class(env_name), "python", False)
    if python:
        for section, values in python_env_defaults().items():
            data[section].update(values)
    sized_by_default = python and "vec.num_workers" not in (overrides or {})
    if preset:
        try:
            sections = load_preset(env_name)
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


# -- command line -------------------------------------------------------------------------------


def add_arguments(parser) -> None:
    """Add a `--vec.*` / `--train.*` / `--eval.*` flag per field (text, parsed later)."""
    for section, cls in TYPED_SECTIONS.items():
        group = parser.add_argument_group(f"{section} settings")
        for spec in _section_specs(section, cls):
            live = " [live]" if spec.live else ""
            group.add_argument(
                spec.flag, dest=spec.key, default=None, metavar="V",
                help=f"{spec.help}{live} (default {spec.default}; {spec.bounds_text()})",
            )
    parser.add_argument_group(
        "env settings", "--env.NAME V for the chosen env's settings (see `puffer-tui envs`)"
    )


def overrides_from_args(args, extra: list[str]) -> dict[str, str]:
    """`{"section.name": text}` from parsed `--vec.*`/`--train.*`/`--eval.*` flags and
    `--env.*` extras."""
    prefixes = tuple(f"{name}." for name in TYPED_SECTIONS)
    overrides = {
        key: value for key, value in vars(args).items()
        if key.startswith(prefixes) and value is not None
    }
    i = 0
    while i < len(extra):
        token = extra[i]
        if not token.startswith("--env."):
            raise ConfigError(f"unrecognized argument {token!r}")
        key, eq, value = token[2:].partition("=")
        if not eq:
            if i + 1 >= len(extra):
                raise ConfigError(f"{token} needs a value")
            i += 1
            value = extra[i]
        overrides[key.replace("-", "_")] = value
        i += 1
    return overrides
