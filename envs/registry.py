"""Name -> native env class, loaded lazily so listing envs compiles nothing extra."""

from __future__ import annotations

import functools
import importlib
import tomllib
from pathlib import Path

# name -> class name inside puffer_tui.envs.<name>
_CLASSES = {
    "squared": "Squared",
    "cartpole": "CartPole",
    "bandit": "Bandit",
    "memory": "Memory",
    "password": "Password",
    "stochastic": "Stochastic",
    "snake": "Snake",
    "cpr": "CPR",
    "breakout": "Breakout",
}
ENV_NAMES = tuple(_CLASSES)


class UnknownEnvError(KeyError):
    def __str__(self):
        return str(self.args[0])


def env_class(name: str):
    """The NativeEnv subclass registered as `name`."""
    if name not in _CLASSES:
        raise UnknownEnvError(f"unknown env {name!r}; available envs: {', '.join(ENV_NAMES)}")
    module = importlib.import_module(f"puffer_tui.envs.{name}")
    return getattr(module, _CLASSES[name])


def make(name: str, num_envs: int = 1, seed: int = 0, buf=None, **settings):
    """A native vectorized env: `num_envs` C envs of `name` stepped in one call."""
    return env_class(name)(num_envs=num_envs, seed=seed, buf=buf, **settings)


def creator(name: str, **settings):
    """A picklable `creator(num_envs=, seed=, buf=)` for the vectorizers."""
    env_class(name).resolve(settings)  # fail here, not later inside a worker
    return functools.partial(make, name, **settings)


def load_preset(name: str) -> dict:
    """The env's config.toml preset as a dict of sections ({} if it has none)."""
    env_class(name)
    path = Path(__file__).parent / name / "config.toml"
    if not path.exists():
        return {}
    with path.open("rb") as f:
        return tomllib.load(f)
