"""A tiny Gymnasium env for the Python API's tests: it raises from its own `step` on command.

    puffer_tui.train("exploding_gym_env:make", env={"explode_at": 50}, inline=True)

The exception comes from a named function of this module, so a test can find it in the
traceback the script sees (inline runs re-raise the env's own exception).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class EnvExploded(RuntimeError):
    pass


def explode(step: int):
    raise EnvExploded(f"the env exploded on purpose at step {step}")


class Walk(gym.Env):
    """Walk right along a line of 8 cells: reward 1 at the end; `explode_at` > 0 raises in
    step once each env has stepped that often."""

    def __init__(self, explode_at: int = 0):
        self.observation_space = spaces.Box(0.0, 1.0, (8,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.explode_at = explode_at
        self.steps = 0
        self.position = 0

    def _obs(self):
        obs = np.zeros(8, np.float32)
        obs[self.position] = 1.0
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = 0
        return self._obs(), {}

    def step(self, action):
        self.steps += 1
        if self.explode_at and self.steps >= self.explode_at:
            explode(self.steps)
        self.position = max(0, min(7, self.position + (1 if action == 1 else -1)))
        done = self.position == 7
        return self._obs(), float(done), done, False, {}


def make(explode_at: int = 0):
    return Walk(explode_at)
