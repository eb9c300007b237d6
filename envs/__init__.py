"""Environments: the registry of native C envs and the Gymnasium adapters.

    puffer_tui.envs.make("squared", num_envs=4096, seed=1, size=11)
    puffer_tui.envs.make_gymnasium("cartpole")           # one instance as a gymnasium.Env
    puffer_tui.envs.from_gymnasium("CartPole-v1")        # a creator for vec.make: any Gymnasium env
    puffer_tui.envs.creator("gym:CartPole-v1")           # the same from an env spec (env_spec.py)
"""

from puffer_tui.envs.env_spec import EnvSpecError
from puffer_tui.envs.gym_emulation import GymnasiumPufferEnv, from_gymnasium
from puffer_tui.envs.gym_native import NativeGymEnv, make_gymnasium
from puffer_tui.envs.gym_spaces import ActionLayout, ObservationLayout, unflatten_observations
from puffer_tui.envs.registry import (
    ENV_NAMES,
    creator,
    env_class,
    env_names,
    is_python_env,
    load_preset,
    make,
)

__all__ = [
    "ENV_NAMES",
    "ActionLayout",
    "EnvSpecError",
    "GymnasiumPufferEnv",
    "NativeGymEnv",
    "ObservationLayout",
    "creator",
    "env_class",
    "env_names",
    "from_gymnasium",
    "is_python_env",
    "load_preset",
    "make",
    "make_gymnasium",
    "unflatten_observations",
]
