"""Environments: the registry of native C envs and the Gymnasium adapters.

    puffer_tui.envs.make("squared", num_envs=4096, seed=1, size=11)
    puffer_tui.envs.make_gymnasium("cartpole")           # one instance as a gymnasium.Env
    puffer_tui.envs.from_gymnasium("CartPole-v1")        # a creator for vec.make: any Gymnasium env
"""

from puffer_tui.envs.gym_emulation import GymnasiumPufferEnv, from_gymnasium
from puffer_tui.envs.gym_native import NativeGymEnv, make_gymnasium
from puffer_tui.envs.gym_spaces import ActionLayout, ObservationLayout, unflatten_observations
from puffer_tui.envs.registry import (
    ENV_NAMES,
    creator,
    env_class,
    load_preset,
    make,
)

__all__ = [
    "ENV_NAMES",
    "ActionLayout",
    "GymnasiumPufferEnv",
    "NativeGymEnv",
    "ObservationLayout",
    "creator",
    "env_class",
    "from_gymnasium",
    "load_preset",
    "make",
    "make_gymnasium",
    "unflatten_observations",
]
