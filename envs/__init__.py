"""Environments: the registry of native C envs and the Gymnasium adapters.

    puffer_tui.envs.make("squared", num_envs=4096, seed=1, size=11)
    puffer_tui.envs.make_gymnasium("cartpole")           # one instance as a gymnasium.Env
    puffer_tui.envs.from_gymnasium(lambda: gym.make("CartPole-v1"))   # any Gymnasium env
"""

from puffer_tui.envs.registry import (
    ENV_NAMES,
    creator,
    env_class,
    load_preset,
    make,
)

__all__ = ["ENV_NAMES", "creator", "env_class", "load_preset", "make"]
