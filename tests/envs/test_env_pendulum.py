"""pendulum: Pendulum-v1 dynamics against Gymnasium's, rules, determinism, fuzz and frames."""

import math

import numpy as np
import pytest
from gymnasium.envs.classic_control.pendulum import PendulumEnv

import puffer_tui.envs as envs

EMPTY, PIVOT, ROD, BOB = range(4)


def state_of(obs) -> np.ndarray:
    obs = obs.astype(np.float64)
    return np.array([math.atan2(obs[1], obs[0]), obs[2]])


@pytest.mark.parametrize("g", [10.0, 9.81])
def test_every_step_matches_gymnasium_pendulum_v1(g):
    """From each of our pre-step states, Gymnasium's Pendulum-v1 with the same float32 torque
    (inside and beyond the bounds) gives our reward and next observation, to float32 rounding
    of the state read back."""
    n = 16
    env = envs.make("pendulum", num_envs=n, seed=5, g=g, max_steps=150)
    env.reset()
    gym_env = PendulumEnv(g=g)
    gym_env.reset(seed=0)
    rng = np.random.default_rng(5)
    compared = truncations = 0
    for step in range(400):
        before = env.observations.copy()
        actions = rng.uniform(-3, 3, (n, 1)).astype(np.float32)
        obs, rew, term, trunc, _ = env.step(actions)
        assert not term.any()
        assert trunc.all() == ((step + 1) % 150 == 0) and trunc.all() == trunc.any()
        for i in range(n):
            gym_env.state = state_of(before[i])
            gym_obs, gym_rew, _, _, _ = gym_env.step(actions[i])
            assert rew[i] == pytest.approx(gym_rew, rel=2e-5, abs=2e-5)
            truncations += int(trunc[i])
            final = env.final_observations[i] if trunc[i] else obs[i]
            np.testing.assert_allclose(final, gym_obs, rtol=1e-5, atol=2e-5)
            compared += 1
    assert compared == 400 * n and truncations == 2 * n


def test_open_loop_rollout_tracks_gymnasium():
    env = envs.make("pendulum", num_envs=1, seed=11)
    obs, _ = env.reset()
    gym_env = PendulumEnv()
    gym_env.reset(seed=0)
    gym_env.state = state_of(obs[0])
    rng = np.random.default_rng(11)
    for _ in range(100):
        a = rng.uniform(-2, 2, 1).astype(np.float32)
        gym_obs, gym_rew, _, _, _ = gym_env.step(a)
        _, rew, _, _, _ = env.step(a[None])
        np.testing.assert_allclose(env.observations[0], gym_obs, rtol=1e-4, atol=1e-4)
        assert rew[0] == pytest.approx(gym_rew, rel=1e-4, abs=1e-4)


def test_reset_draws_the_whole_circle_and_small_speeds():
    env = envs.make("pendulum", num_envs=4096, seed=2)
    obs, _ = env.reset()
    angles = np.arctan2(obs[:, 1], obs[:, 0])
    assert angles.min() < -3.0 and angles.max() > 3.0
    assert (np.abs(obs[:, 2]) <= 1.0).all() and np.abs(obs[:, 2]).max() > 0.99
    assert abs(float(angles.mean())) < 0.1


def test_truncation_logs_the_return_as_the_score():
    env = envs.make("pendulum", num_envs=1, seed=3, max_steps=5, log_interval=1)
    env.reset()
    total = 0.0
    for t in range(1, 6):
        _, rew, term, trunc, infos = env.step(np.zeros((1, 1), np.float32))
        total += float(rew[0])
        assert rew[0] <= 0 and not term[0] and trunc[0] == (t == 5)
    log = infos[0]
    assert log["n"] == 1 and log["episode_length"] == 5
    assert log["episode_return"] == pytest.approx(total, rel=1e-5)
    assert log["score"] == log["episode_return"]


def test_same_seed_same_trajectory_and_different_seed_differs():
    def rollout(seed):
        env = envs.make("pendulum", num_envs=8, seed=seed)
        env.reset()
        rng = np.random.default_rng(0)
        return [tuple(x.copy() for x in env.step(
            rng.uniform(-2, 2, (8, 1)).astype(np.float32))[:2]) for _ in range(300)]

    a, b, c = rollout(7), rollout(7), rollout(8)
    assert all(all(np.array_equal(x, y) for x, y in zip(s, u)) for s, u in zip(a, b))
    assert not all(np.array_equal(s[0], u[0]) for s, u in zip(a, c))


def test_nonfinite_torque_is_refused_before_any_env_steps():
    env = envs.make("pendulum", num_envs=2, seed=0)
    env.reset()
    before = env.observations.copy()
    with pytest.raises(Exception, match="action"):
        env.step(np.array([[0.0], [np.nan]], np.float32))
    assert np.array_equal(env.observations, before)


def test_frame_draws_the_rod_from_the_pivot():
    env = envs.make("pendulum", num_envs=1, seed=0)
    env.reset()
    # swing it to hang straight down: a strong torque against gravity's pull overshoots, so
    # read the frame of whatever angle it has and check the bob's side matches sin(theta)
    tiles = env.frame(0)
    assert tiles.shape == (9, 19) and tiles[4, 9] == PIVOT
    (bob_row,), (bob_col,) = np.nonzero(tiles == BOB)
    cos_t, sin_t = env.observations[0, :2]
    assert np.sign(bob_col - 9) == np.sign(round(float(sin_t) * 8)) or round(sin_t * 8) == 0
    assert np.sign(4 - bob_row) == np.sign(round(float(cos_t) * 4)) or round(cos_t * 4) == 0
    assert (tiles == ROD).sum() >= 3


def test_gym_id_and_port_share_the_pendulum_preset():
    assert envs.load_preset("pendulum") == envs.load_preset("gym:Pendulum-v1")
