"""cartpole: CartPole-v1 dynamics against gymnasium, rules, determinism, fuzz and frames."""

import math

import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

import puffer_tui.envs as envs

THETA_LIMIT = 12 * 2 * math.pi / 360
SKY, TRACK, CART, POLE, POST = range(5)


def gym_step_from(gym_env, state, action):
    """gymnasium's next observation and termination from `state` (our float32 observation)."""
    gym_env.state = np.asarray(state, dtype=np.float64)
    gym_env.steps_beyond_terminated = None
    obs, reward, terminated, truncated, _ = gym_env.step(int(action))
    return obs, reward, terminated


def test_every_step_matches_gymnasium_cartpole_v1():
    """Step our envs and, from each of our pre-step states, gymnasium's CartPole-v1 with the
    same action: next states agree to float32 rounding and so does termination."""
    n, max_steps = 16, 60
    env = envs.make("cartpole", num_envs=n, seed=5, max_steps=max_steps)
    env.reset()
    gym_env = CartPoleEnv()
    gym_env.reset(seed=0)
    rng = np.random.default_rng(5)
    ticks = np.zeros(n, int)
    compared = terminations = truncations = 0
    for _ in range(400):
        before = env.observations.copy()
        # half the envs balance (long episodes reach max_steps), half act at random (falls);
        # a balancer biased right drives its cart off the track
        lean = (before[:, 2] + 0.5 * before[:, 3] > np.where(np.arange(n) % 4 == 0, 0.05, 0))
        balance = np.arange(n) % 2 == 0
        actions = np.where(balance, lean, rng.integers(0, 2, n)).astype(np.int32)
        obs, rew, term, trunc, _ = env.step(actions)
        ticks += 1
        assert (rew == 1.0).all(), "reward is 1 on every step, the last one included"
        for i in range(n):
            gym_obs, gym_rew, gym_term = gym_step_from(gym_env, before[i], actions[i])
            assert gym_rew == 1.0
            assert bool(term[i]) == gym_term, f"env {i}: termination differs from gymnasium"
            assert bool(trunc[i]) == (not gym_term and ticks[i] == max_steps)
            if term[i] or trunc[i]:
                terminations += int(term[i])
                truncations += int(trunc[i])
                ticks[i] = 0
                continue
            np.testing.assert_allclose(obs[i], gym_obs, rtol=2e-6, atol=2e-7)
            compared += 1
    assert compared > 4000 and terminations > 20 and truncations > 5


def test_open_loop_rollout_tracks_gymnasium():
    """From the same start, the same action sequence keeps both simulations together (the
    upright pole is unstable, so float32 vs float64 rounding grows; a loose tolerance)."""
    env = envs.make("cartpole", num_envs=1, seed=11)
    obs, _ = env.reset()
    gym_env = CartPoleEnv()
    gym_env.reset(seed=0)
    gym_env.state = obs[0].astype(np.float64)
    rng = np.random.default_rng(11)
    for t in range(60):
        a = int(rng.integers(0, 2))
        gym_obs, _, gym_term, _, _ = gym_env.step(a)
        _, _, term, _, _ = env.step(np.array([a], np.int32))
        assert bool(term[0]) == gym_term, f"step {t}"
        if gym_term:
            break
        np.testing.assert_allclose(env.observations[0], gym_obs, rtol=1e-4, atol=1e-5)
    assert t >= 8, "the rollout should last a few steps"


def test_reset_state_is_uniform_in_small_box():
    env = envs.make("cartpole", num_envs=4096, seed=2)
    obs, _ = env.reset()
    assert (np.abs(obs) <= 0.05).all()
    assert obs.min() < -0.045 and obs.max() > 0.045, "uses the whole [-0.05, 0.05) range"
    assert abs(float(obs.mean())) < 0.005


def test_pole_falls_when_always_pushed_one_way_and_logs_it():
    env = envs.make("cartpole", num_envs=1, seed=0, max_steps=500, log_interval=1)
    env.reset()
    t = 0
    while t < 100:
        _, rew, term, trunc, infos = env.step(np.array([1], np.int32))
        t += 1
        assert rew[0] == 1.0 and not trunc[0]
        if term[0]:
            break
    assert term[0] and 5 <= t <= 30
    log = infos[0]
    assert log["n"] == 1 and log["episode_length"] == t and log["episode_return"] == t
    assert log["pole_fell"] == 1.0 and log["cart_out"] == 0.0
    assert log["score"] == pytest.approx(t / 500)
    # autoreset: the observation is the start of a new episode
    assert (np.abs(env.observations[0]) <= 0.05).all()


def test_cart_leaving_the_track_terminates():
    env = envs.make("cartpole", num_envs=1, seed=0, log_interval=1)
    env.reset()
    # balance around a pole leaning right, which carries the cart off the right end
    for _ in range(500):
        o = env.observations[0]
        a = int(o[2] + 0.5 * o[3] > 0.05)
        _, _, term, _, infos = env.step(np.array([a], np.int32))
        if term[0]:
            break
    assert term[0]
    assert infos[0]["cart_out"] == 1.0 and infos[0]["pole_fell"] == 0.0


def test_truncation_at_max_steps_is_not_termination():
    env = envs.make("cartpole", num_envs=1, seed=3, max_steps=7, log_interval=1)
    env.reset()
    for t in range(1, 8):
        o = env.observations[0]
        a = int(o[2] + 0.3 * o[3] > 0)
        _, rew, term, trunc, infos = env.step(np.array([a], np.int32))
        assert rew[0] == 1.0 and not term[0]
        assert trunc[0] == (t == 7)
    assert infos[0]["score"] == 1.0 and infos[0]["episode_length"] == 7
    assert infos[0]["pole_fell"] == 0.0 and infos[0]["cart_out"] == 0.0


def test_same_seed_same_trajectory_and_different_seed_differs():
    def rollout(seed):
        env = envs.make("cartpole", num_envs=32, seed=seed)
        env.reset()
        rng = np.random.default_rng(0)
        trace = []
        for _ in range(200):
            o, r, t, tr, _ = env.step(rng.integers(0, 2, 32, dtype=np.int32))
            trace.append((o.copy(), r.copy(), t.copy(), tr.copy()))
        return trace

    a, b, c = rollout(7), rollout(7), rollout(8)
    assert all(all(np.array_equal(x, y) for x, y in zip(s, u)) for s, u in zip(a, b))
    assert not all(np.array_equal(s[0], u[0]) for s, u in zip(a, c))
    # reset(seed) restarts the same stream
    env = envs.make("cartpole", num_envs=4, seed=1)
    first = env.reset(seed=9)[0].copy()
    env.step(np.ones(4, np.int32))
    assert np.array_equal(env.reset(seed=9)[0], first)


@pytest.mark.parametrize("max_steps", [1, 2, 1_000_000])
def test_random_action_fuzz_keeps_observations_in_space(max_steps):
    env = envs.make("cartpole", num_envs=64, seed=4, max_steps=max_steps, log_interval=50)
    env.reset()
    space = env.single_observation_space
    rng = np.random.default_rng(4)
    episodes = 0
    for _ in range(1000):
        obs, rew, term, trunc, infos = env.step(rng.integers(0, 2, 64, dtype=np.int32))
        assert all(space.contains(row) for row in obs[::8])
        assert np.isfinite(obs).all() and (rew == 1.0).all()
        assert (np.abs(obs[:, 0]) <= 2.4).all() and (np.abs(obs[:, 2]) <= THETA_LIMIT).all()
        assert not (term & trunc).any()
        if max_steps == 1:
            assert (term | trunc).all(), "every step ends a 1-step episode"
        for log in infos:
            episodes += log["n"]
            assert 0.0 < log["score"] <= 1.0
    assert episodes > 0


def test_frame_draws_cart_pole_and_track():
    env = envs.make("cartpole", num_envs=2, seed=0)
    env.reset()
    assert env.frame_shape == (9, 40)
    tiles = env.frame(0)
    assert tiles.shape == (9, 40) and tiles.max() <= max(env.palette)
    assert (tiles == CART).sum() == 3 and (tiles == POLE).sum() == 6
    assert (tiles[-1, 1:-1] == TRACK).all() and tiles[-1, 0] == POST
    # push right until the pole leans well left; its top is then left of its bottom
    for _ in range(6):
        env.step(np.array([1, 0], np.int32))
    for i, direction in ((0, -1), (1, 1)):
        tiles = env.frame(i)
        cols = [int(np.flatnonzero(tiles[r] == POLE)[0]) for r in (1, 6)]
        assert np.sign(cols[0] - cols[1]) == direction
        assert np.sign(env.observations[i, 2]) == direction
    with pytest.raises(IndexError):
        env.frame(2)


def test_bad_settings_name_the_field():
    with pytest.raises(ValueError, match="cartpole.max_steps"):
        envs.make("cartpole", max_steps=0)
    with pytest.raises(ValueError, match="cartpole.max_steps"):
        envs.make("cartpole", max_steps=2.5)
    with pytest.raises(ValueError, match="unknown setting"):
        envs.make("cartpole", gravity=3.0)
