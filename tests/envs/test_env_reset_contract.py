"""What PufferEnvs' reset() and step() share (engine/native/pufferenv.py): a step before the
first reset is refused naming the env (C, Gymnasium and PettingZoo envs), and the envs stepped
in Python start a reset from no reward and no episode end."""

import numpy as np
import pytest

from puffer_tui.envs import from_gymnasium
from puffer_tui.envs.pettingzoo_emulation import from_pettingzoo
from puffer_tui.envs.registry import make
from puffer_tui.envs.squared import Squared
from tests.envs.test_pettingzoo_emulation import make_dying_agents

PYTHON_STEPPED = {
    "gymnasium": lambda: from_gymnasium("CartPole-v1")(num_envs=2),
    "pettingzoo": lambda: from_pettingzoo(make_dying_agents)(num_envs=2),
}
KINDS = {"native": lambda: make("squared", num_envs=2), **PYTHON_STEPPED}


@pytest.mark.parametrize("kind", KINDS)
def test_a_step_before_reset_is_refused_naming_the_env(kind):
    env = KINDS[kind]()
    try:
        with pytest.raises(RuntimeError, match=rf"{env.name}: call reset\(\) before step\(\)"):
            env.step(np.zeros_like(env.actions))
        observations, infos = env.reset(seed=3)
        assert observations is env.observations and infos == []
        env.step(np.zeros_like(env.actions))  # allowed now
    finally:
        env.close()


@pytest.mark.parametrize("kind", PYTHON_STEPPED)
def test_reset_starts_from_no_reward_and_no_episode_end(kind):
    env = PYTHON_STEPPED[kind]()
    try:
        env.reset(seed=3)
        env.action_space.seed(0)
        for _ in range(5000):  # random play until a step ends an episode (a few dozen steps)
            env.step(env.action_space.sample().astype(env.actions.dtype))
            if (env.terminals | env.truncations).any():
                break
        assert (env.terminals | env.truncations).any() and env.rewards.any()
        env.reset(seed=3)
        assert not env.rewards.any() and not env.terminals.any() and not env.truncations.any()
        assert env.masks.any()
    finally:
        env.close()


COUNTED = {  # (num_envs, log_interval) -> an env of each kind
    "native": lambda n, log: Squared(num_envs=n, log_interval=log),
    "gymnasium": lambda n, log: from_gymnasium("CartPole-v1", log_interval=log)(num_envs=n),
    "pettingzoo": lambda n, log: from_pettingzoo(make_dying_agents, log_interval=log)(
        num_envs=n),
}


@pytest.mark.parametrize("kind", COUNTED)
def test_impossible_counts_are_refused_naming_the_count(kind):
    with pytest.raises(ValueError, match="num_envs must be >= 1, got 0"):
        COUNTED[kind](0, 32)
    with pytest.raises(ValueError, match="log_interval must be >= 1, got 0"):
        COUNTED[kind](1, 0)
