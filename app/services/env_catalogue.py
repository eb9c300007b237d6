"""The envs as plain data for the app: names, descriptions and spaces in a few characters.

The launcher lists envs from here, so the app never imports a native env module itself (see
the import contracts in pyproject.toml); the settings schema comes from engine/shared/config.py.
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
        # plain ints: numpy 2 writes a list of its scalars as [np.int64(3), np.int64(3)]
        return f"MultiDiscrete[{' '.join(str(n) for n in space.nvec.ravel().tolist())}]"
    return str(space)


def describe_env(name: str) -> dict:
    """{name, description, observation_space, action_space} of an env's default settings
    (any env spec; a gym: or MODULE:CALLABLE one builds an env to learn its spaces)."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import env_class

    cls = env_class(name)
    layout = cls.layout(cls.resolve({}))
    return {"name": name, "description": cls.description,
            "observation_space": space_text(layout.observation_space),
            "action_space": space_text(layout.action_space)}


def describe_envs() -> list[dict]:
    """Every registered env described; one that fails to load is listed with why, so a broken
    env shows up in the list instead of hiding the others."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import env_names

    infos = []
    for name in env_names():  # built-ins, then the installed plugins
        try:
            infos.append(describe_env(name))
        except Exception as e:
            infos.append({"name": name, "description": f"unavailable: {e}",
                          "observation_space": "?", "action_space": "?"})
    return infos


# Packages that register Gymnasium ids on import, offered for completion when installed.
REGISTERING_PACKAGES = ("ale_py", "minigrid")


def spec_suggestions() -> list[str]:
    """Completions for the launcher's spec field: every installed plugin env, then `gym:ID`
    for every registered Gymnasium id (the packages above imported first where installed)."""
    import importlib

    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs import ENV_NAMES, env_names

    names = [n for n in env_names() if n not in ENV_NAMES]
    try:
        import gymnasium
    except ImportError:
        return names
    for module in REGISTERING_PACKAGES:
        try:
            importlib.import_module(module)
        except Exception:  # not installed, or broken: its ids are just not offered
            continue
    return names + [f"gym:{env_id}" for env_id in sorted(gymnasium.registry, key=_newest_first)]


def _newest_first(env_id: str):
    """Sort key: ids by name, the highest version first (CartPole-v1 before CartPole-v0)."""
    import re

    match = re.fullmatch(r"(.*)-v(\d+)", env_id)
    return (match.group(1), -int(match.group(2))) if match else (env_id, 0)


def preset_label(name: str) -> str:
    """Which preset an env's defaults come from (envs/gym_presets/family.py), for the
    launcher's env line; "" for none. Here, so the screens need not import the env registry."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs.registry import preset_label as label

    return label(name)
