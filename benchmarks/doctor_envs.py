"""Deliberately broken envs for `python -m puffer_tui.benchmarks.doctor` (and the diagnosis
tests): Gymnasium's CartPole-v1 with its rewards scaled, one observation column scaled, or
each step slowed down after a while. Used as env specs, e.g.
`puffer_tui.benchmarks.doctor_envs:cartpole --env.reward_scale 1000`.
"""

from __future__ import annotations

import time

import gymnasium
import numpy as np


class _Broken(gymnasium.Wrapper):
    def __init__(self, env, reward_scale, obs_scale, obs_column, slow_after, slow_seconds):
        super().__init__(env)
        self.reward_scale, self.obs_scale, self.obs_column = reward_scale, obs_scale, obs_column
        self.slow_after, self.slow_seconds, self.steps = slow_after, slow_seconds, 0
        if obs_scale != 1.0:
            low, high = env.observation_space.low.copy(), env.observation_space.high.copy()
            low[obs_column] *= obs_scale
            high[obs_column] *= obs_scale
            self.observation_space = gymnasium.spaces.Box(low, high, dtype=np.float32)

    def _obs(self, obs):
        if self.obs_scale != 1.0:
            obs = np.array(obs, dtype=np.float32)
            obs[self.obs_column] *= self.obs_scale
        return obs

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return self._obs(obs), info

    def step(self, action):
        self.steps += 1
        if self.slow_after and self.steps > self.slow_after:
            time.sleep(self.slow_seconds)  # a slower env: the learner is not the bottleneck
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._obs(obs), reward * self.reward_scale, terminated, truncated, info


def cartpole(reward_scale: float = 1.0, obs_scale: float = 1.0, obs_column: int = 1,
             slow_after: int = 0, slow_seconds: float = 0.0):
    """CartPole-v1, broken on purpose: rewards x reward_scale, observation column obs_column
    x obs_scale, each step sleeps slow_seconds once an env has taken slow_after steps."""
    return _Broken(gymnasium.make("CartPole-v1"), reward_scale, obs_scale, obs_column,
                   slow_after, slow_seconds)
