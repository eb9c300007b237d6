"""Native envs of other packages: the entry-point group `puffer_tui.envs` (name -> class).

A package registers its env in its own pyproject.toml (see examples/puffer_tui_plugin_example):

    [project.entry-points."puffer_tui.envs"]
    my_env = "my_package:MyEnv"     # a NativeEnv subclass

Entry points are read once per process; loading one imports only that package.

Tested in: tests/envs/test_env_plugin.py
"""

from __future__ import annotations

import functools
from importlib.metadata import entry_points

GROUP = "puffer_tui.envs"


@functools.cache
def plugin_entry_points() -> dict:
    """name -> EntryPoint of every installed plugin env (built-in names are not overridden)."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def plugin_names(exclude=()) -> tuple[str, ...]:
    return tuple(sorted(name for name in plugin_entry_points() if name not in exclude))


def load_plugin(name: str):
    """The class the plugin registered as `name`; ValueError saying which package failed."""
    ep = plugin_entry_points()[name]
    try:
        cls = ep.load()
    except Exception as e:
        dist = ep.dist.name if ep.dist is not None else "its package"
        raise ValueError(f"plugin env {name!r} ({ep.value}, from {dist}) failed to load: "
                         f"{type(e).__name__}: {e}; reinstall {dist}") from None
    if not (isinstance(cls, type) and hasattr(cls, "layout") and hasattr(cls, "resolve")):
        raise ValueError(f"plugin env {name!r} ({ep.value}) is not a NativeEnv class "
                         f"(got {cls!r}); its entry point must name the class")
    return cls
