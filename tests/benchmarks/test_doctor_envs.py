"""benchmarks/doctor_envs.py: CartPole-v1 broken on purpose as the doctor benchmark asks, each
break alone (rewards scaled, one observation column and its bounds scaled, steps slowed after a
while), and unbroken by default."""

from __future__ import annotations

import gymnasium
import numpy as np

from puffer_tui.benchmarks import doctor_envs
from puffer_tui.engine.shared.config import load_config


def played(env, steps: int = 5):
    obs, _ = env.reset(seed=3)
    rows, rewards = [obs], []
    for _ in range(steps):
        obs, reward, *_ = env.step(0)
        rows.append(obs)
        rewards.append(reward)
    return np.array(rows), np.array(rewards)


def test_by_default_it_is_cartpole_itself():
    broken, plain = doctor_envs.cartpole(), gymnasium.make("CartPole-v1")
    assert broken.observation_space == plain.observation_space
    (obs, rewards), (plain_obs, plain_rewards) = played(broken), played(plain)
    assert np.array_equal(obs, plain_obs) and np.array_equal(rewards, plain_rewards)


def test_rewards_and_one_column_are_scaled_and_the_bounds_with_it():
    plain = gymnasium.make("CartPole-v1")
    broken = doctor_envs.cartpole(reward_scale=1000.0, obs_scale=1e4, obs_column=1)
    (obs, rewards), (plain_obs, plain_rewards) = played(broken), played(plain)
    assert np.array_equal(rewards, 1000.0 * plain_rewards)
    assert np.allclose(obs[:, 1], 1e4 * plain_obs[:, 1])
    assert np.array_equal(np.delete(obs, 1, axis=1), np.delete(plain_obs, 1, axis=1))
    low, high = broken.observation_space.low, broken.observation_space.high
    assert (low[1], high[1]) == (np.float32(plain.observation_space.low[1] * 1e4),
                                 np.float32(plain.observation_space.high[1] * 1e4))
    assert np.array_equal(low[[0, 2, 3]], plain.observation_space.low[[0, 2, 3]])


def test_steps_sleep_only_after_the_env_has_taken_slow_after(monkeypatch):
    slept = []
    monkeypatch.setattr(doctor_envs.time, "sleep", slept.append)
    env = doctor_envs.cartpole(slow_after=3, slow_seconds=0.25)
    played(env, steps=5)
    assert slept == [0.25, 0.25]


def test_it_is_an_env_spec_whose_breaks_are_env_settings():
    config = load_config("puffer_tui.benchmarks.doctor_envs:cartpole", {"env.reward_scale": "1000"})
    assert config.env["reward_scale"] == 1000
