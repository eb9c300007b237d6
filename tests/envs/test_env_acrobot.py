"""acrobot: Acrobot-v1 dynamics against Gymnasium's, rules, determinism, fuzz and frames."""

import math

import numpy as np
import pytest
from gymnasium.envs.classic_control.acrobot import AcrobotEnv

import puffer_tui.envs as envs

EMPTY, PIVOT, LINK1, LINK2, GOAL = range(5)


def state_of(obs) -> np.ndarray:
    """The state behind a float32 observation (angles back from their cos and sin)."""
    obs = obs.astype(np.float64)
    return np.array([math.atan2(obs[1], obs[0]), math.atan2(obs[3], obs[2]), obs[4], obs[5]])


def tip_height(state) -> float:
    return -math.cos(state[0]) - math.cos(state[1] + state[0])


def test_every_step_matches_gymnasium_acrobot_v1():
    """From each of our pre-step states, Gymnasium's Acrobot-v1 with the same action gives the
    next observation, reward and termination ours gave (the state read back from a float32
    observation, so agreement is to float32 rounding, grown by one Runge-Kutta step)."""
    n, max_steps = 16, 120
    env = envs.make("acrobot", num_envs=n, seed=5, max_steps=max_steps)
    env.reset()
    gym_env = AcrobotEnv()
    gym_env.reset(seed=0)
    rng = np.random.default_rng(5)
    ticks = np.zeros(n, int)
    compared = terminations = truncations = 0
    for _ in range(600):
        before = env.observations.copy()
        # half the envs pump energy into the swing (they reach the goal), half act at random
        pump = np.where(before[:, 5] > 0, 2, 0)  # torque along the elbow's swing
        actions = np.where(np.arange(n) % 2 == 0, pump, rng.integers(0, 3, n)).astype(np.int32)
        obs, rew, term, trunc, _ = env.step(actions)
        ticks += 1
        for i in range(n):
            gym_env.state = state_of(before[i])
            gym_obs, gym_rew, gym_term, _, _ = gym_env.step(int(actions[i]))
            near_goal = abs(tip_height(gym_env.state) - 1.0) < 1e-4
            if not near_goal:
                assert bool(term[i]) == gym_term, f"env {i}: termination differs"
                assert rew[i] == gym_rew
            assert bool(trunc[i]) == (not term[i] and ticks[i] == max_steps)
            if term[i] or trunc[i]:
                terminations += int(term[i])
                truncations += int(trunc[i])
                ticks[i] = 0
                continue
            np.testing.assert_allclose(obs[i], gym_obs, rtol=1e-5, atol=2e-5)
            compared += 1
    assert compared > 8_000 and terminations > 20 and truncations > 5


def test_open_loop_rollout_tracks_gymnasium():
    """From the same start the same actions keep both simulations together for a while (the
    start state is read back from the first observation, so they differ by float32 rounding;
    the swing is chaotic, so the tolerance is loose and the rollout short)."""
    env = envs.make("acrobot", num_envs=1, seed=11)
    obs, _ = env.reset()
    gym_env = AcrobotEnv()
    gym_env.reset(seed=0)
    gym_env.state = state_of(obs[0])
    rng = np.random.default_rng(11)
    for _ in range(40):
        a = int(rng.integers(0, 3))
        gym_obs, _, _, _, _ = gym_env.step(a)
        env.step(np.array([a], np.int32))
        np.testing.assert_allclose(env.observations[0], gym_obs, rtol=1e-4, atol=1e-4)


def test_reset_state_is_uniform_in_small_box():
    env = envs.make("acrobot", num_envs=4096, seed=2)
    obs, _ = env.reset()
    states = np.array([state_of(row) for row in obs])
    assert (np.abs(states) <= 0.1 + 1e-6).all()
    assert states.min() < -0.095 and states.max() > 0.095, "uses the whole [-0.1, 0.1) range"
    assert abs(float(states.mean())) < 0.005


def test_reaching_the_goal_terminates_with_reward_zero_and_logs_it():
    env = envs.make("acrobot", num_envs=1, seed=0, log_interval=1)
    env.reset()
    t, term = 0, [False]
    while not term[0] and t < 500:
        # torque along the elbow's swing pumps energy in
        a = 2 if env.observations[0, 5] > 0 else 0
        _, rew, term, trunc, infos = env.step(np.array([a], np.int32))
        t += 1
        assert rew[0] == (0.0 if term[0] else -1.0) and not trunc[0]
    assert term[0] and rew[0] == 0.0 and t < 200
    log = infos[0]
    assert log["n"] == 1 and log["episode_length"] == t and log["reached"] == 1.0
    assert log["episode_return"] == -(t - 1) and log["score"] == log["episode_return"]
    # autoreset: the observation is the start of a new episode
    assert np.abs(state_of(env.observations[0])).max() <= 0.1 + 1e-6


def test_truncation_at_max_steps_keeps_the_last_observation():
    env = envs.make("acrobot", num_envs=1, seed=3, max_steps=7, log_interval=1)
    env.reset()
    for t in range(1, 8):
        _, rew, term, trunc, infos = env.step(np.array([1], np.int32))
        assert rew[0] == -1.0 and not term[0]
        assert trunc[0] == (t == 7)
        if t == 6:
            sixth = env.observations[0].copy()
    # the kept final observation is one step on from the sixth, not the new episode's first
    final = env.final_observations[0]
    assert not np.array_equal(final, env.observations[0])
    assert np.abs(final - sixth).max() < 0.5
    assert infos[0]["episode_length"] == 7 and infos[0]["episode_return"] == -7.0
    assert infos[0]["reached"] == 0.0


def test_same_seed_same_trajectory_and_different_seed_differs():
    def rollout(seed):
        env = envs.make("acrobot", num_envs=32, seed=seed)
        env.reset()
        rng = np.random.default_rng(0)
        return [tuple(x.copy() for x in env.step(rng.integers(0, 3, 32, dtype=np.int32))[:4])
                for _ in range(200)]

    a, b, c = rollout(7), rollout(7), rollout(8)
    assert all(all(np.array_equal(x, y) for x, y in zip(s, u)) for s, u in zip(a, b))
    assert not all(np.array_equal(s[0], u[0]) for s, u in zip(a, c))


def test_random_action_fuzz_keeps_observations_in_space():
    env = envs.make("acrobot", num_envs=64, seed=4, log_interval=50)
    env.reset()
    space = env.single_observation_space
    rng = np.random.default_rng(4)
    for _ in range(2000):
        obs, rew, term, trunc, _ = env.step(rng.integers(0, 3, 64, dtype=np.int32))
        assert all(space.contains(row) for row in obs[::8])
        assert np.isin(rew, (-1.0, 0.0)).all() and not (term & trunc).any()
    with pytest.raises(Exception, match="action"):
        env.step(np.full(64, 3, np.int32))


def test_frame_draws_both_links_and_the_goal_line():
    env = envs.make("acrobot", num_envs=1, seed=0)
    env.reset()
    tiles = env.frame(0)
    assert tiles.shape == (13, 27) and tiles[6, 13] == PIVOT
    assert (tiles[3, ::2] == GOAL).all()
    # hanging down: both links below the pivot, the second under the first
    rows1, rows2 = np.nonzero(tiles == LINK1)[0], np.nonzero(tiles == LINK2)[0]
    assert rows1.min() > 6 and rows2.max() == 12 and rows2.mean() > rows1.mean()


def test_gym_id_and_port_share_the_classic_control_preset():
    assert envs.load_preset("acrobot") == envs.load_preset("gym:Acrobot-v1")
    assert envs.load_preset("acrobot")["vec"]["num_envs"] >= 16
