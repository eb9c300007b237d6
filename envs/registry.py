"""Env spec -> env class, loaded lazily so listing envs compiles nothing extra.

A spec is a built-in name, a plugin's name (entry-point group `puffer_tui.envs`), or a
`gym:` / `pz:` / `module:callable` spec (envs/env_spec.py); every kind answers the native
class API (settings_schema, resolve, layout, palette, description).

Tested in: tests/envs/test_env_plugin.py, tests/envs/test_env_new_folder.py,
tests/envs/test_env_spec_sources.py, tests/envs/test_env_reset_contract.py
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
import tomllib
from pathlib import Path

from puffer_tui.envs.env_folders import builtin_env_folders
from puffer_tui.envs.env_plugins import load_plugin, plugin_entry_points, plugin_names
from puffer_tui.envs.env_spec import GYM_PREFIX, EnvSpecError, resolve_spec

# The built-in C envs: every envs/NAME/ folder with a binding.pyx (envs/env_folders.py).
_FOLDERS = builtin_env_folders()
ENV_NAMES = tuple(_FOLDERS)


class UnknownEnvError(EnvSpecError, KeyError):
    def __str__(self):
        return str(self.args[0])


def env_names() -> tuple[str, ...]:
    """The built-in envs, then the installed plugins' (sorted)."""
    return ENV_NAMES + plugin_names(exclude=ENV_NAMES)


def env_class(name: str):
    """The class (or env source with the same API) that the spec `name` names."""
    if name in _FOLDERS:
        return _builtin_class(name)
    if ":" in name:
        return resolve_spec(name)
    if name in plugin_entry_points():
        try:
            return load_plugin(name)
        except ValueError as e:
            raise EnvSpecError(str(e)) from None
    raise UnknownEnvError(unknown_env_message(name))


def _builtin_class(name: str):
    folder = _FOLDERS[name]
    if folder.class_name is None:
        raise EnvSpecError(f"envs/{name}/__init__.py defines no env class with name = {name!r}; "
                           f"add one (a NativeEnv subclass, see envs/squared/__init__.py)")
    module = importlib.import_module(f"puffer_tui.envs.{name}")
    return getattr(module, folder.class_name)


def unknown_env_message(name: str) -> str:
    names = env_names()
    text = f"unknown env {name!r}"
    try:
        import gymnasium

        gym_ids = list(gymnasium.registry)
    except ImportError:
        gym_ids = []
    if name in gym_ids:
        return f"{text}; it is a Gymnasium id: use gym:{name}"
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    close += [GYM_PREFIX + c for c in difflib.get_close_matches(name, gym_ids, n=3, cutoff=0.75)]
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return (f"{text}; {hint}available envs: {', '.join(names)}; or gym:ID (a Gymnasium id), "
            f"MODULE:CALLABLE, pz:MODULE:CALLABLE")


def is_python_env(name: str) -> bool:
    """Whether the env steps in Python (the multiprocessing backend suits it best)."""
    return bool(getattr(env_class(name), "python", False))


def make(name: str, num_envs: int = 1, seed: int = 0, buf=None, evaluation: bool = False,
         **settings):
    """A vectorized env: `num_envs` envs of `name` stepped in one call (C envs in one call to
    the binding; Python envs one after another). `evaluation`: built to play a policy, not to
    train it (Atari then ends episodes at game over, not at each lost life)."""
    cls = env_class(name)
    if hasattr(cls, "make_creator"):
        creator = cls.make_creator(cls.resolve(settings), evaluation=evaluation)
        return creator(num_envs=num_envs, seed=seed, buf=buf)
    return cls(num_envs=num_envs, seed=seed, buf=buf, **settings)


def creator(name: str, **settings):
    """A picklable `creator(num_envs=, seed=, buf=)` for the vectorizers."""
    cls = env_class(name)
    checked = cls.resolve(settings)  # fail here, not later inside a worker
    if hasattr(cls, "make_creator"):
        return cls.make_creator(checked)
    return functools.partial(make, name, **settings)


def load_preset(name: str, settings: dict | None = None) -> dict:
    """The env's config.toml preset as a dict of sections ({} if it has none): a built-in's
    envs/NAME/config.toml, a plugin class's config.toml beside its module, a Gymnasium id's
    envs/gym_presets/ID.toml, a Python env's family preset (chosen with the run's env
    `settings`)."""
    cls = env_class(name)
    if hasattr(cls, "preset"):
        return cls.preset(settings)
    if name in _FOLDERS:
        path = _FOLDERS[name].path / "config.toml"
    else:
        path = Path(inspect.getfile(cls)).parent / "config.toml"
    if not path.exists():
        return {}
    with path.open("rb") as f:
        return tomllib.load(f)


def preset_label(env_name: str) -> str:
    """What the run's defaults came from (envs/gym_presets/family.py's path_label), "" when
    the env has no preset or cannot be looked up (the label is informational only)."""
    # cycle: importing envs.gym_presets.family loads this module
    from puffer_tui.envs.gym_presets.family import path_label

    try:
        source = env_class(env_name)
        path = source.preset_path() if hasattr(source, "preset_path") else None
    except Exception:  # noqa: BLE001 - an env that cannot be looked up has no label
        return ""
    return path_label(path) if path is not None else ""


def stepping_note(env_name: str, settings: dict) -> str:
    """The run header's line for a Gymnasium id with a C port (envs/classic_ports.py): the
    port steps it, or Gymnasium's own env and why; else ""."""
    # lazy: the ports load their C bindings
    from puffer_tui.envs.classic_ports import port_note

    if not env_name.startswith(GYM_PREFIX):
        return ""
    return port_note(env_name[len(GYM_PREFIX):], settings)
