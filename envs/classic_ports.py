"""Gymnasium ids stepped by their C ports: the same env, without Python in every step.

    port_creator("Acrobot-v1", {})       # a creator of the native acrobot, or None

gym:Acrobot-v1 and gym:Pendulum-v1 are simulated by envs/acrobot and envs/pendulum: Gymnasium's
equations in its operand order and precision (their tests compare every step with
Gymnasium's), all of a vector's envs in one C call. One Gymnasium Acrobot-v1 step costs ~100
µs of Python on the 2-core dev box, more than the whole training step of its small network;
the port's is under 1 µs. What differs from Gymnasium: the random stream of the start states,
and the autoreset (same-step, as every native env). `--env.native false` steps Gymnasium's
own env instead, as does any setting the port does not know (it is Gymnasium's then).

EnvPool ships C++ versions of these envs too, but only for Linux and Python <= 3.11, and the
ports are a page each on this project's own C contract.
"""

from __future__ import annotations

import functools

from puffer_tui.envs.acrobot import Acrobot
from puffer_tui.envs.pendulum import Pendulum

NATIVE_KEY = "native"
# Gymnasium id -> (native env class, {Gymnasium setting: native setting})
PORTS = {
    "Acrobot-v1": (Acrobot, {"max_episode_steps": "max_steps"}),
    "Pendulum-v1": (Pendulum, {"max_episode_steps": "max_steps", "g": "g"}),
}
# settings that are not the env's (read by env_spec before gymnasium.make)
NOT_ENV_SETTINGS = (NATIVE_KEY, "import")


def port_of(env_id: str):
    """The native env class that steps `env_id`, or None when it has no port."""
    entry = PORTS.get(env_id)
    return entry[0] if entry else None


def wants_port(env_id: str, settings: dict) -> bool:
    """Whether `env_id` with these settings steps through its port."""
    return (port_of(env_id) is not None
            and settings.get(NATIVE_KEY, True) not in (False, "false")
            and _port_settings(env_id, settings) is not None)


def _port_settings(env_id: str, settings: dict) -> dict | None:
    _, names = PORTS[env_id]
    given = {k: v for k, v in settings.items() if k not in NOT_ENV_SETTINGS}
    if set(given) - set(names):
        return None  # a setting only Gymnasium's env knows
    return {names[k]: v for k, v in given.items()}


def port_creator(env_id: str, settings: dict):
    """A picklable creator of `env_id`'s port with these (Gymnasium-named) settings, with
    `.layout`; None when the id has no port or the settings want Gymnasium's env."""
    if not wants_port(env_id, settings):
        return None
    cls = port_of(env_id)
    resolved = cls.resolve(_port_settings(env_id, settings))
    creator = functools.partial(cls, **resolved)  # creator(num_envs=, seed=, buf=)
    creator.layout = cls.layout(resolved)
    return creator


def port_note(env_id: str, settings: dict) -> str:
    """The run header's line when the port steps the env, else ""."""
    if not wants_port(env_id, settings):
        return ""
    return (f"gym:{env_id} steps through its C port ({port_of(env_id).name}: Gymnasium's "
            f"dynamics, every env in one call); --env.native false for Gymnasium's own")
