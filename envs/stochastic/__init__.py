"""stochastic: the best policy picks action 0 with probability p, blind to a constant input.

Reward, at an episode's last step only: r = 1 - max(0, |f - p| - tol) / max(p, 1 - p), where
f is the episode's fraction of action-0 choices and tol = 2 * sqrt(p (1 - p) / horizon)
(see stochastic.h). Score = r.
"""

import math

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui.envs.stochastic import binding


def episode_reward(f: float, p: float, horizon: int) -> float:
    """r of an episode whose action-0 fraction was f (the formula of stochastic.h)."""
    tol = 2 * math.sqrt(p * (1 - p) / horizon)
    return 1 - max(0.0, abs(f - p) - tol) / max(p, 1 - p)


class Stochastic(NativeEnv):
    name = "stochastic"
    order = 6
    description = "blind: best is action 0 with probability p"
    binding = binding
    palette = {
        0: ("·", "grey39"),
        1: ("█", "bold bright_cyan"),   # action-0 fraction so far this episode
        2: ("█", "cyan"),               # action-0 fraction of the last episode
        3: ("─", "yellow"),             # target p +- tol
        4: ("▲", "bold yellow"),        # target p
    }
    settings_schema = (
        Setting("p", 0.75, 0.5, 0.95, "target probability of action 0"),
        Setting("horizon", 100, 10, 10_000, "steps per episode"),
    )

    @classmethod
    def layout(cls, s):
        return EnvLayout(
            observation_space=spaces.Box(0.0, 1.0, (1,), np.float32),
            action_space=spaces.Discrete(2),
            frame_shape=(3, 40),
        )
