"""cartpole_v1: CartPole-v1 dynamics against Gymnasium's, rules, determinism and frames."""

import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

import puffer_tui.envs as envs

SKY, TRACK, CART, POLE, POST = range(5)


def test_every_step_matches_gymnasium_cartpole_v1():
    """From each of our pre-step states, Gymnasium's CartPole-v1 gives our reward,
    termination and next observation. The state is read back from our float64 fields
    through the float32 observation, so the comparison is to float32 rounding; the open-loop
    test below follows one trajectory at full precision."""
    n = 16
    env = envs.make("cartpole_v1", num_envs=n, seed=5, max_steps=60)
    env.reset()
    gym_env = CartPoleEnv()
    gym_env.reset(seed=0)
    rng = np.random.default_rng(5)
    compared = terminals = truncations = 0
    for _ in range(400):
        before = env.observations.copy()
        actions = rng.integers(0, 2, n).astype(np.int32)
        obs, rew, term, trunc, _ = env.step(actions)
        for i in range(n):
            gym_env.state = before[i].astype(np.float64)
            gym_env.steps_beyond_terminated = None
            gym_obs, gym_rew, gym_term, _, _ = gym_env.step(int(actions[i]))
            assert rew[i] == gym_rew == 1.0
            assert bool(term[i]) == gym_term
            terminals += int(term[i])
            truncations += int(trunc[i])
            if not term[i]:
                final = env.final_observations[i] if trunc[i] else obs[i]
                np.testing.assert_allclose(final, gym_obs, rtol=1e-5, atol=1e-6)
            compared += 1
    assert compared == 400 * n and terminals > 50 and truncations > 0


def _state_offset(env) -> int:
    """Where env 0's float64 (x, x_dot, theta, theta_dot) lie in its state bytes: the one run
    of four aligned doubles that round to its float32 observation."""
    raw = env.get_state()["c"]
    obs = env.observations[0]
    with np.errstate(all="ignore"):  # other bytes read as doubles may be anything
        found = [offset for offset in range(0, len(raw) - 31, 8)
                 if np.array_equal(np.frombuffer(raw, np.float64, 4, offset)
                                   .astype(np.float32), obs)]
    assert len(found) == 1, found
    return found[0]


def _state(env, offset: int) -> np.ndarray:
    return np.frombuffer(env.get_state()["c"], np.float64, 4, offset).copy()


def test_a_whole_episode_is_gymnasiums_to_the_bit():
    """From our float64 start state, Gymnasium's CartPole-v1 and ours hold the same float64
    state after every step of a long balancing episode (the same arithmetic in the same
    order, no FMA contraction), and the same float32 observation."""
    env = envs.make("cartpole_v1", num_envs=1, seed=11, max_steps=500)
    env.reset()
    offset = _state_offset(env)
    gym_env = CartPoleEnv()
    gym_env.reset(seed=0)
    gym_env.state = _state(env, offset)
    steps = 0
    while True:
        x, x_dot, theta, theta_dot = gym_env.state  # a balancing controller: a long episode
        action = int(theta + 0.5 * theta_dot + 0.01 * x + 0.1 * x_dot > 0)
        gym_obs, _, gym_term, _, _ = gym_env.step(action)
        obs, _, term, trunc, _ = env.step(np.array([action], np.int32))
        steps += 1
        assert bool(term[0]) == gym_term
        if term[0] or trunc[0]:
            break
        assert np.array_equal(_state(env, offset), gym_env.state), steps
        assert np.array_equal(obs[0], gym_obs), steps
    assert steps == 500 and trunc[0] and not term[0]


def test_an_episode_logs_its_return_as_the_score():
    env = envs.make("cartpole_v1", num_envs=1, seed=3, log_interval=1)
    env.reset()
    steps = 0
    while True:
        _, rew, term, trunc, infos = env.step(np.ones(1, np.int32))  # always right: falls
        steps += 1
        if term[0] or trunc[0]:
            break
    assert 5 < steps < 100 and term[0] and not trunc[0]
    log = infos[0]
    assert log["n"] == 1 and log["episode_length"] == steps
    assert log["episode_return"] == log["score"] == steps


def test_reset_draws_small_states():
    env = envs.make("cartpole_v1", num_envs=4096, seed=2)
    obs, _ = env.reset()
    assert (np.abs(obs) <= 0.05).all() and np.abs(obs).max() > 0.0499
    assert np.abs(obs.mean(0)).max() < 0.005


def test_same_seed_same_trajectory_and_different_seed_differs():
    def rollout(seed):
        env = envs.make("cartpole_v1", num_envs=8, seed=seed)
        env.reset()
        rng = np.random.default_rng(0)
        return [tuple(x.copy() for x in env.step(rng.integers(0, 2, 8).astype(np.int32))[:3])
                for _ in range(300)]

    a, b, c = rollout(7), rollout(7), rollout(8)
    assert all(all(np.array_equal(x, y) for x, y in zip(s, u)) for s, u in zip(a, b))
    assert not all(np.array_equal(s[0], u[0]) for s, u in zip(a, c))


def test_an_action_out_of_range_is_refused_before_any_env_steps():
    env = envs.make("cartpole_v1", num_envs=2, seed=0)
    env.reset()
    before = env.observations.copy()
    with pytest.raises(Exception, match="action"):
        env.step(np.array([0, 2], np.int32))
    assert np.array_equal(env.observations, before)


def test_frame_draws_the_cart_between_the_posts_and_the_pole_above_it():
    env = envs.make("cartpole_v1", num_envs=1, seed=0)
    env.reset()
    tiles = env.frame(0)
    assert tiles.shape == (9, 40)
    assert tiles[8, 0] == tiles[8, 39] == POST and (tiles[8, 1:39] == TRACK).all()
    (cart_cols,) = np.nonzero(tiles[7] == CART)
    assert len(cart_cols) == 3 and abs(cart_cols[1] - 20) <= 1  # x near 0: the middle
    assert (tiles[1:7] == POLE).sum() == 6 and (tiles[1:7, 18:23] == POLE).sum() == 6


def test_gym_id_and_port_share_the_cartpole_v1_preset():
    assert envs.load_preset("cartpole_v1") == envs.load_preset("gym:CartPole-v1")
