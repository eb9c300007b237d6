"""Rules of password (guesses, reward only for the whole password, autoreset), the password's
dependence on password_seed alone, and a random-action fuzz."""

import itertools

import numpy as np
import pytest

import puffer_tui.envs as envs
from puffer_tui.engine.native import ActionError

# frame tiles (password.h)
EMPTY, GUESS0, GUESS1, GOOD0, GOOD1, BAD0, BAD1 = range(7)


def guess(env, bits_per_env):
    """Step one episode guessing bits_per_env[e, i] in env e; returns rewards and terminals."""
    rewards, terminals = [], []
    for i in range(env.settings["length"]):
        _, rew, term, trunc, _ = env.step(np.ascontiguousarray(bits_per_env[:, i], np.int32))
        assert not trunc.any(), "password never truncates"
        rewards.append(rew.copy())
        terminals.append(term.copy())
    return np.array(rewards), np.array(terminals)


def test_only_the_password_is_rewarded_and_it_is_unique():
    """All 2^5 guesses at once: exactly one, the advertised password, earns 1."""
    every = np.array(list(itertools.product([0, 1], repeat=5)), np.int32)
    env = envs.make("password", num_envs=len(every), seed=0, length=5, log_interval=10**6)
    env.reset()
    rewards, terminals = guess(env, every)
    assert not rewards[:-1].any() and not terminals[:-1].any(), "nothing until the last bit"
    assert terminals[-1].all()
    winners = np.flatnonzero(rewards[-1] == 1.0)
    assert len(winners) == 1 and set(np.unique(rewards[-1])) == {0.0, 1.0}
    assert np.array_equal(every[winners[0]], env.password)
    log = env.log()
    assert log["n"] == 32 and log["score"] == pytest.approx(1 / 32)
    assert log["bits_correct"] == pytest.approx(0.5), "each bit is right in half the guesses"
    assert log["episode_length"] == 5


def test_observation_records_guesses_and_resets_after_the_episode():
    env = envs.make("password", num_envs=2, seed=0, length=4)
    obs, _ = env.reset()
    assert np.all(obs == 0)
    plan = np.array([[1, 0, 0, 1], [0, 0, 1, 1]], np.int32)
    for i in range(3):
        obs, *_ = env.step(plan[:, i])
        expected = np.zeros((2, 4), np.float32)
        expected[:, : i + 1] = np.where(plan[:, : i + 1] == 1, 1.0, -1.0)
        assert np.array_equal(obs, expected)
    obs, _, term, _, _ = env.step(plan[:, 3])
    assert term.all() and np.all(obs == 0), "autoreset: a fresh episode's blank observation"


def test_password_is_the_same_for_every_env_and_episode_and_follows_password_seed():
    a = envs.make("password", num_envs=64, seed=1, length=12, log_interval=10**6)
    b = envs.make("password", num_envs=3, seed=99, length=12)
    assert np.array_equal(a.password, b.password), "the env seed does not change the password"
    a.reset()
    for _ in range(3):
        rewards, _ = guess(a, np.tile(a.password, (64, 1)))
        assert np.all(rewards[-1] == 1.0)
    assert a.log()["score"] == 1.0
    seeds = [envs.make("password", length=32, password_seed=s).password for s in range(8)]
    assert len({tuple(p) for p in seeds}) == 8, "different password seeds, different passwords"
    ones = np.mean(seeds)
    assert 0.3 < ones < 0.7


def test_one_wrong_bit_earns_nothing():
    env = envs.make("password", num_envs=6, seed=0, length=6, password_seed=7, log_interval=10**6)
    env.reset()
    plans = np.tile(env.password, (6, 1)).astype(np.int32)
    plans[np.arange(6), np.arange(6)] ^= 1  # env e flips bit e
    rewards, _ = guess(env, plans)
    assert np.all(rewards == 0)
    log = env.log()
    assert log["score"] == 0 and log["bits_correct"] == pytest.approx(5 / 6)


def test_frame_shows_guesses_then_the_judged_last_episode():
    env = envs.make("password", num_envs=1, seed=0, length=3, password_seed=5)
    env.reset()
    pw = [int(b) for b in env.password]
    assert env.frame_shape == (2, 3) and np.all(env.frame(0) == EMPTY)
    plan = [pw[0], 1 - pw[1], pw[2]]
    env.step(np.array([plan[0]], np.int32))
    assert list(env.frame(0)[0]) == [GUESS0 + plan[0], EMPTY, EMPTY]
    for bit in plan[1:]:
        env.step(np.array([bit], np.int32))
    f = env.frame(0)
    assert np.all(f[0] == EMPTY), "a new episode has begun"
    assert list(f[1]) == [GOOD0 + plan[0], BAD0 + plan[1], GOOD0 + plan[2]]
    assert set(np.unique(f)) <= set(env.palette)


def rollout(seed, steps=120, n=16):
    env = envs.make("password", num_envs=n, seed=seed, length=3)
    env.reset()
    rng = np.random.default_rng(0)
    trace = []
    for _ in range(steps):
        o, r, t, _, _ = env.step(rng.integers(0, 2, n, dtype=np.int32))
        trace.append((o.copy(), r.copy(), t.copy()))
    return trace


def test_same_seed_and_actions_give_the_same_trajectory():
    # password has no randomness of its own: trajectories depend only on the actions
    a, b, c = rollout(7), rollout(7), rollout(8)
    for trace in (b, c):
        assert all(all(np.array_equal(x, y) for x, y in zip(s, u)) for s, u in zip(a, trace))
    assert any(r.any() for _, r, _ in a), "random guessing finds a 3-bit password"


@pytest.mark.parametrize("length,password_seed", [(1, 0), (32, 2**32 - 1), (32, 0), (7, 42)])
def test_random_action_fuzz_keeps_observations_in_space(length, password_seed):
    env = envs.make("password", num_envs=32, seed=1, length=length, password_seed=password_seed)
    env.reset()
    rng = np.random.default_rng(1)
    for t in range(300):
        obs, rew, term, trunc, _ = env.step(rng.integers(0, 2, 32, dtype=np.int32))
        assert all(env.single_observation_space.contains(row) for row in obs[:2])
        done = (t + 1) % length == 0
        guessed = 0 if done else (t + 1) % length
        assert np.all(np.abs(obs[:, :guessed]) == 1) and np.all(obs[:, guessed:] == 0)
        assert np.all((rew == 0) | (rew == 1)) and (done or not rew.any())
        assert np.all(term == done) and not trunc.any()
    assert env.frame(31).max() <= max(env.palette)


def test_bad_actions_are_refused_with_clear_errors():
    env = envs.make("password", num_envs=4)
    env.reset()
    with pytest.raises(ActionError, match="out of range"):
        env.step(np.array([0, 3, 1, 0], np.int32))
    with pytest.raises(ActionError, match="integer dtype"):
        env.step(np.zeros(4, np.float32))


@pytest.mark.parametrize(
    "settings,field",
    [({"length": 0}, "password.length"), ({"length": 33}, "password.length"),
     ({"password_seed": -1}, "password.password_seed"),
     ({"password_seed": 2**32}, "password.password_seed"),
     ({"password_seed": "abc"}, "password.password_seed"), ({"seed_pw": 1}, "unknown setting")],
)
def test_bad_settings_name_the_field(settings, field):
    with pytest.raises(ValueError, match=field):
        envs.make("password", **settings)


def test_preset_matches_the_schema():
    preset = envs.load_preset("password")
    assert envs.env_class("password").resolve(preset["env"]) == {"length": 5, "password_seed": 42}
