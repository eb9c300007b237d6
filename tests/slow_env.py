"""A Gymnasium env that is slow on purpose, as a researcher's own env can be: its reset takes
`reset_seconds` (a world built in Python), and with `hang_at_step` its step never returns
from that step on (a real hang). Trained as `slow_env:make_env` (MODULE:CALLABLE, with this
folder on the path), its keyword arguments are `--env.reset-seconds` and so on.

`info_fields`: the episode-end info also carries custom numbers (`is_success`, `distance`,
a nested `episode` dict) and one value that is no number (`label`), as user envs report them.
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np


class SlowEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, reset_seconds: float = 2.5, hang_at_step: int = 0,
                 episode_steps: int = 1000, info_fields: bool = False):
        self.reset_seconds, self.hang_at_step = reset_seconds, hang_at_step
        self.episode_steps, self.info_fields = episode_steps, info_fields
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0
        self.steps = 0  # over all episodes: where a hang starts
        self.episodes = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        time.sleep(self.reset_seconds)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.steps += 1
        if self.hang_at_step and self.steps >= self.hang_at_step:
            time.sleep(1e9)
        self.t += 1
        done = self.t >= self.episode_steps
        info = {}
        if done and self.info_fields:
            self.episodes += 1
            # success every other episode: the logged mean is 0.5 over an even count
            info = {"is_success": self.episodes % 2 == 0, "distance": np.float32(3.5),
                    "episode": {"r": float(self.t), "l": self.t, "goal": 1.0},
                    "label": "not a number"}
        return np.full(2, 0.5 if action else -0.5, np.float32), float(action), done, False, info


def make_env(reset_seconds: float = 2.5, hang_at_step: int = 0, episode_steps: int = 1000,
             info_fields: bool = False):
    """A Gymnasium env with a slow reset (and a hang on request)."""
    return SlowEnv(reset_seconds, hang_at_step, episode_steps, info_fields)
