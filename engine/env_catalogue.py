"""The envs as plain data for the app: names, descriptions and spaces in a few characters.

The launcher lists envs from here, so the app never imports a native env module itself (see
the import contracts in pyproject.toml); the settings schema comes from engine/config.py.
"""

from __future__ import annotations


def space_text(space) -> str:
    """A space in a few characters: Box(121,) uint8, Discrete(5), MultiDiscrete[3 3]."""
    name = type(space).__name__
    if name == "Box":
        return f"Box{tuple(space.shape)} {space.dtype}"
    if name == "Discrete":
        return f"Discrete({space.n})"
    if name == "MultiDiscrete":
        return f"MultiDiscrete{list(space.nvec.ravel())}"
    return str(space)


def describe_env(name: str) -> dict:
    """{name, description, observation_space, action_space} of an env's default settings
    (any env spec; a gym: or MODULE:CALLABLE one builds an env to learn its spaces)."""
    from puffer_tui.envs import env_class

    cls = env_class(name)
    layout = cls.layout(cls.resolve({}))
    return {"name": name, "description": cls.description,
            "observation_space": space_text(layout.observation_space),
            "action_space": space_text(layout.action_space)}


def describe_envs() -> list[dict]:
    """Every registered env described; one that fails to load is listed with why, so a broken
    env shows up in the list instead of hiding the others."""
    from puffer_tui.envs import env_names

    infos = []
    for name in env_names():  # built-ins, then the installed plugins
        try:
            infos.append(describe_env(name))
        except Exception as e:
            infos.append({"name": name, "description": f"unavailable: {e}",
                          "observation_space": "?", "action_space": "?"})
    return infos
