"""stochastic: the end-of-episode reward formula, episode rules, determinism, fuzz, frames."""

import numpy as np
import pytest

import puffer_tui.envs as envs
from puffer_tui.envs.stochastic import episode_reward

EMPTY, BAR_NOW, BAR_LAST, BAND, TARGET = range(5)


def run_episode(env, actions_per_step):
    """Step through one episode; returns the per-step (rewards, terminals, truncations)."""
    trace = []
    for actions in actions_per_step:
        _, rew, term, trunc, _ = env.step(np.asarray(actions, np.int32))
        trace.append((rew.copy(), term.copy(), trunc.copy()))
    return trace


@pytest.mark.parametrize("p,horizon", [(0.75, 20), (0.5, 10), (0.95, 40), (0.6, 33)])
def test_last_step_reward_follows_the_formula_for_every_count(p, horizon):
    """Env k chooses action 0 on exactly k of the episode's steps, for every k."""
    n = horizon + 1
    env = envs.make("stochastic", num_envs=n, seed=0, p=p, horizon=horizon, log_interval=10**6)
    env.reset()
    rng = np.random.default_rng(0)
    # each env's zeros at random positions, so the order of choices must not matter
    plan = np.ones((horizon, n), np.int32)
    for k in range(n):
        plan[rng.choice(horizon, k, replace=False), k] = 0
    trace = run_episode(env, plan)
    for rew, term, trunc in trace[:-1]:
        assert (rew == 0).all() and not term.any() and not trunc.any()
    rew, term, trunc = trace[-1]
    assert term.all() and not trunc.any(), "a full-length episode ends terminal"
    expected = [episode_reward(k / horizon, p, horizon) for k in range(n)]
    np.testing.assert_allclose(rew, expected, rtol=0, atol=2e-6)
    log = env.log()
    assert log["n"] == n and log["episode_length"] == horizon
    assert log["score"] == pytest.approx(np.mean(expected), abs=1e-5)
    assert log["episode_return"] == pytest.approx(log["score"])
    assert log["action0_fraction"] == pytest.approx(0.5, abs=1e-6)


def test_optimal_random_policy_scores_near_one_and_deterministic_ones_do_not():
    horizon, p, n = 100, 0.75, 2048
    env = envs.make("stochastic", num_envs=n, seed=1, p=p, horizon=horizon, log_interval=10**6)
    env.reset()
    rng = np.random.default_rng(1)
    run_episode(env, (rng.random((horizon, n)) >= p).astype(np.int32))
    optimal = env.log()["score"]
    assert optimal > 0.99
    run_episode(env, np.zeros((horizon, n), np.int32))
    always_zero = env.log()["score"]
    run_episode(env, np.ones((horizon, n), np.int32))
    always_one = env.log()["score"]
    # float32 sums over 2048 episodes: a few ulps of error
    assert always_zero == pytest.approx(episode_reward(1.0, p, horizon), abs=2e-5)
    assert always_zero < 0.8 and always_one < 0.15


def test_episodes_restart_and_observation_is_constant():
    env = envs.make("stochastic", num_envs=4, seed=2, horizon=10, log_interval=1)
    obs, _ = env.reset()
    assert (obs == 1.0).all()
    for t in range(1, 36):
        obs, rew, term, trunc, infos = env.step(np.array([0, 1, 0, 1], np.int32))
        assert (obs == 1.0).all() and not trunc.any()
        assert term.all() == (t % 10 == 0) and term.any() == (t % 10 == 0)
        assert bool(infos) == (t % 10 == 0)
        if infos:
            assert infos[0]["action0_fraction"] == 0.5 and infos[0]["n"] == 4
    # reset() mid-episode starts a fresh episode: 10 more steps to the next end
    env.reset()
    terms = [env.step(np.zeros(4, np.int32))[2].all() for _ in range(10)]
    assert terms == [False] * 9 + [True]


def test_same_seed_same_trajectory():
    """The env draws no random numbers: a trajectory is fixed by the actions alone, so the
    same actions give the same trajectory under the same seed and under any other."""
    def rollout(seed):
        env = envs.make("stochastic", num_envs=16, seed=seed, horizon=10)
        env.reset()
        rng = np.random.default_rng(0)
        return [env.step(rng.integers(0, 2, 16, dtype=np.int32))[1].copy() for _ in range(50)]

    a, b, c = rollout(3), rollout(3), rollout(4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert all(np.array_equal(x, y) for x, y in zip(a, c))
    assert any((x != 0).any() for x in a)


@pytest.mark.parametrize("p,horizon", [(0.5, 10), (0.95, 10), (0.5, 10_000), (0.95, 10_000)])
def test_random_action_fuzz(p, horizon):
    n = 32
    env = envs.make("stochastic", num_envs=n, seed=3, p=p, horizon=horizon, log_interval=997)
    env.reset()
    space = env.single_observation_space
    rng = np.random.default_rng(3)
    actions = rng.integers(0, 2, (64, n), dtype=np.int32)
    ends = 0
    floor = episode_reward(0.0, p, horizon) - 1e-6
    for t in range(horizon + 10 if horizon > 100 else 2000):
        obs, rew, term, trunc, infos = env.step(actions[t % 64])
        assert space.contains(obs[0]) and (obs == 1.0).all() and not trunc.any()
        assert ((rew == 0) | (term & (rew >= floor) & (rew <= 1))).all()
        ends += int(term.sum())
        for log in infos:
            assert floor <= log["score"] <= 1.0 and 0 <= log["action0_fraction"] <= 1
    assert ends >= n


def test_frame_shows_fractions_and_target():
    env = envs.make("stochastic", num_envs=1, seed=0, p=0.75, horizon=20)
    env.reset()
    assert env.frame_shape == (3, 40)
    tiles = env.frame(0)
    assert (tiles[:2] == EMPTY).all(), "no bars before any step"
    assert (tiles[2] == TARGET).sum() == 1 and int(np.flatnonzero(tiles[2] == TARGET)[0]) == 30
    band = np.flatnonzero(tiles[2] != EMPTY)
    assert band.min() < 30 < band.max() and np.all(np.diff(band) == 1)
    for _ in range(10):
        env.step(np.array([0], np.int32))
    tiles = env.frame(0)
    assert (tiles[0] == BAR_NOW).all(), "all action 0 so far: a full bar"
    for _ in range(10):
        env.step(np.array([1], np.int32))
    tiles = env.frame(0)
    assert (tiles[0] == EMPTY).all(), "a new episode has no choices yet"
    assert (tiles[1] == BAR_LAST).sum() == 20, "the last episode chose action 0 half the time"
    env.step(np.array([1], np.int32))
    assert (env.frame(0)[0] == EMPTY).all()


def test_bad_settings_name_the_field():
    for bad in (0.49, 0.96, 1, "0.7"):
        with pytest.raises(ValueError, match="stochastic.p"):
            envs.make("stochastic", p=bad)
    for bad in (9, 10_001, 20.5):
        with pytest.raises(ValueError, match="stochastic.horizon"):
            envs.make("stochastic", horizon=bad)
    with pytest.raises(ValueError, match="unknown setting"):
        envs.make("stochastic", target=0.7)
