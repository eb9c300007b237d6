"""Gymnasium ids stepped by their C ports: the same env, without Python in every step.

    port_creator("Acrobot-v1", {})       # a creator of the native acrobot, or None

gym:Acrobot-v1, gym:CartPole-v1 and gym:Pendulum-v1 are simulated by envs/acrobot,
envs/cartpole_v1 and envs/pendulum: Gymnasium's
equations in its operand order and precision (their tests compare every step with
Gymnasium's), all of a vector's envs in one C call. One Gymnasium Acrobot-v1 step of Python
costs more than the whole training step of its small network; the port's step costs a small
fraction of it. What differs from Gymnasium: the random stream of the start states,
and the autoreset (same-step, as every native env). `--env.native false` steps Gymnasium's
own env instead, as does any setting the port does not know (it is Gymnasium's then).

EnvPool ships C++ versions of these envs too, but only for Linux and Python <= 3.11, and the
ports are a page each on this project's own C contract.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from puffer_tui.envs.acrobot import Acrobot
from puffer_tui.envs.cartpole_v1 import CartPoleV1
from puffer_tui.envs.pendulum import Pendulum


class GymnasiumDrawn:
    """A port drawn as its Gymnasium id is drawn: frame(i) is Gymnasium's own `rgb_array`
    picture of env i's state (read back from its observation), so the dashboard, eval
    --render and recordings show gym:CartPole-v1 as Gymnasium does, not the native env's
    tiles. Without Gymnasium's renderer (pygame: the classic-control extra) the tiles stay."""

    gym_id = ""
    _renderer = None  # Gymnasium's env, made on the first frame (per process: per worker)
    _no_renderer = False

    @staticmethod
    def state_of(obs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def frame(self, env_index: int = 0):
        if not self._no_renderer and 0 <= env_index < self.num_envs:
            renderer = self._gym_renderer()
            if renderer is not None:
                renderer.state = self.state_of(np.asarray(self.observations[env_index],
                                                          np.float64))
                if hasattr(renderer, "last_u"):
                    renderer.last_u = None  # Pendulum's torque arrow: not in the observation
                try:
                    return renderer.render()
                except Exception:  # noqa: BLE001 (any drawing failure: the tiles instead)
                    self._no_renderer = True
        return super().frame(env_index)

    def _gym_renderer(self):
        if self._renderer is None:
            try:
                # lazy: Gymnasium's env (and pygame) only once a frame is asked for
                import gymnasium

                env = gymnasium.make(self.gym_id, render_mode="rgb_array").unwrapped
                env.reset(seed=0)
            except Exception:  # noqa: BLE001 (no pygame, no display driver: the tiles)
                self._no_renderer = True
                return None
            self._renderer = env
        return self._renderer

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        super().close()


class GymCartPole(GymnasiumDrawn, CartPoleV1):
    gym_id = "CartPole-v1"

    @staticmethod
    def state_of(obs):
        return obs[:4].copy()  # x, x_dot, theta, theta_dot: the observation is the state


class GymAcrobot(GymnasiumDrawn, Acrobot):
    gym_id = "Acrobot-v1"

    @staticmethod
    def state_of(obs):
        # cos and sin of both angles, then both angular velocities
        return np.array([math.atan2(obs[1], obs[0]), math.atan2(obs[3], obs[2]),
                         obs[4], obs[5]])


class GymPendulum(GymnasiumDrawn, Pendulum):
    gym_id = "Pendulum-v1"

    @staticmethod
    def state_of(obs):
        return np.array([math.atan2(obs[1], obs[0]), obs[2]])  # cos, sin, angular velocity


NATIVE_KEY = "native"
# Gymnasium id -> (native env class, {Gymnasium setting: native setting})
PORTS = {
    "Acrobot-v1": (Acrobot, {"max_episode_steps": "max_steps"}),
    "CartPole-v1": (CartPoleV1, {"max_episode_steps": "max_steps"}),
    "Pendulum-v1": (Pendulum, {"max_episode_steps": "max_steps", "g": "g"}),
}
# what a Gymnasium id's port is made as: the same env, drawn as Gymnasium draws it
DRAWN_AS_GYMNASIUM = {"Acrobot-v1": GymAcrobot, "CartPole-v1": GymCartPole,
                      "Pendulum-v1": GymPendulum}
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
    """The settings under the port's names, or None when one is only Gymnasium's env's."""
    if settings_outside_port(env_id, settings):
        return None
    _, names = PORTS[env_id]
    return {names[k]: v for k, v in settings.items() if k not in NOT_ENV_SETTINGS}


def settings_outside_port(env_id: str, settings: dict) -> list[str]:
    """The settings (Gymnasium's names) that `env_id`'s port does not take, sorted."""
    _, names = PORTS[env_id]
    return sorted(k for k in settings if k not in NOT_ENV_SETTINGS and k not in names)


def check_native_setting(env_id: str, settings: dict) -> str | None:
    """What is wrong with `--env.native` in a new run's settings, or None: `true` is refused
    for an id without a port, and with a setting the port does not take (either would step
    Gymnasium's env after all, against what was asked); `false` asks for what runs anyway."""
    if settings.get(NATIVE_KEY) not in (True, "true"):
        return None
    if port_of(env_id) is None:
        ported = ", ".join(f"gym:{name}" for name in PORTS)
        return (f"--env.native: gym:{env_id} has no C port (the ports: {ported}); drop "
                f"--env.native")
    outside = settings_outside_port(env_id, settings)
    if outside:
        return (f"--env.native true: the C port of gym:{env_id} does not take "
                f"{_flags(outside)}; drop {'it' if len(outside) == 1 else 'them'}, or "
                f"--env.native false for Gymnasium's own env")
    return None


def check_port_values(env_id: str, settings: dict) -> str | None:
    """What is out of the port's bounds in these settings when the port steps the env, named
    by its flag and value (`--env.g -5.0`), or None."""
    if port_of(env_id) is None or not wants_port(env_id, settings):
        return None
    cls, names = PORTS[env_id]
    for gym_name, port_name in names.items():
        if gym_name not in settings:
            continue
        try:
            cls.resolve({port_name: settings[gym_name]})
        except ValueError as e:
            reason = str(e).replace(f"{cls.name}.{port_name}", f"env.{gym_name}")
            return (f"{_flags([gym_name])} {settings[gym_name]}: {reason} (the bounds of its C "
                    f"port {cls.name}; --env.native false steps Gymnasium's own env)")
    return None


def _flags(names: list[str]) -> str:
    return ", ".join(f"--env.{name.replace('_', '-')}" for name in names)


def port_creator(env_id: str, settings: dict):
    """A picklable creator of `env_id`'s port with these (Gymnasium-named) settings, with
    `.layout`; None when the id has no port or the settings want Gymnasium's env."""
    if not wants_port(env_id, settings):
        return None
    cls = port_of(env_id)
    resolved = cls.resolve(_port_settings(env_id, settings))
    # creator(num_envs=, seed=, buf=)
    creator = functools.partial(DRAWN_AS_GYMNASIUM.get(env_id, cls), **resolved)
    creator.layout = cls.layout(resolved)
    return creator


def port_note(env_id: str, settings: dict) -> str:
    """The run header's line for an id with a port: which implementation steps it, and why
    when it is Gymnasium's own; "" for an id without a port."""
    cls = port_of(env_id)
    if cls is None:
        return ""
    if wants_port(env_id, settings):
        return (f"gym:{env_id} steps through its C port ({cls.name}: Gymnasium's dynamics, "
                f"every env in one call); --env.native false for Gymnasium's own")
    if settings.get(NATIVE_KEY, True) in (False, "false"):
        return f"gym:{env_id} steps through Gymnasium's own env (--env.native false)"
    outside = settings_outside_port(env_id, settings)
    return (f"gym:{env_id} steps through Gymnasium's own env: its C port {cls.name} does not "
            f"take {_flags(outside)}")
