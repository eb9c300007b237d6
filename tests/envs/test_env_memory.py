"""Rules of memory (phases, rewards, episode end, autoreset), seeded determinism, fuzz."""

import numpy as np
import pytest

import puffer_tui.envs as envs
from puffer_tui.engine.native import ActionError

BIT, SHOW, WAIT, RECITE = range(4)
PHASES = {"show": [1, 0, 0], "wait": [0, 1, 0], "recite": [0, 0, 1]}
# frame tiles (memory.h)
EMPTY, BIT0, BIT1, GOOD0, GOOD1, BAD0, BAD1, SHOWING, RECITING, WAITING = range(10)


def run_episode(env, choose):
    """Step one full episode; `choose(tick, shown_bits)` gives the action of every env.

    Returns the bits shown (per env), and per-step observations (before acting), rewards,
    terminals and infos."""
    s = env.settings
    ticks = 2 * s["length"] + s["delay"]
    shown, obs_seen, rewards, terminals, infos = [], [], [], [], []
    for t in range(ticks):
        obs = env.observations.copy()
        obs_seen.append(obs)
        if t < s["length"]:
            shown.append((obs[:, BIT] > 0).astype(np.int32))
        _, rew, term, trunc, info = env.step(choose(t, shown))
        assert not trunc.any(), "memory never truncates"
        rewards.append(rew.copy())
        terminals.append(term.copy())
        infos.append(info)
    return np.array(shown).T, obs_seen, np.array(rewards), np.array(terminals), infos


@pytest.mark.parametrize("length,delay", [(1, 0), (1, 1), (3, 2), (5, 0), (4, 7)])
def test_observation_by_phase(length, delay):
    env = envs.make("memory", num_envs=4, seed=1, length=length, delay=delay)
    env.reset()
    _, obs_seen, _, _, _ = run_episode(env, lambda t, shown: np.zeros(4, np.int32))
    for t, obs in enumerate(obs_seen):
        if t < length:
            phase = "show"
            assert np.all(np.abs(obs[:, BIT]) == 1), "a bit is shown as +1 or -1"
        elif t < length + delay:
            phase = "wait"
            assert np.all(obs[:, BIT] == 0)
        else:
            phase = "recite"
            assert np.all(obs[:, BIT] == 0)
        assert np.all(obs[:, SHOW:] == PHASES[phase]), f"tick {t}: expected the {phase} phase"


@pytest.mark.parametrize("length,delay", [(1, 0), (3, 2), (64, 5)])
def test_reciting_the_shown_bits_scores_one_and_ends_the_episode(length, delay):
    env = envs.make("memory", num_envs=8, seed=5, length=length, delay=delay, log_interval=10**6)
    env.reset()

    def recite(t, shown):
        i = t - length - delay
        return np.array(shown)[i] if i >= 0 else np.zeros(8, np.int32)

    _, _, rewards, terminals, _ = run_episode(env, recite)
    ticks = 2 * length + delay
    assert np.all(rewards[: length + delay] == 0)
    assert np.allclose(rewards[length + delay :], 1.0 / length)
    assert np.all(terminals[-1]) and not terminals[:-1].any(), "terminal exactly at the end"
    log = env.log()
    assert log["n"] == 8 and log["score"] == 1.0 and log["episode_length"] == ticks
    assert log["episode_return"] == pytest.approx(1.0, abs=1e-5)
    # autoreset: the observation after the final step starts a new episode
    assert np.all(env.observations[:, SHOW:] == PHASES["show"])
    assert np.all(np.abs(env.observations[:, BIT]) == 1)


def test_wrong_bits_earn_nothing_and_score_counts_correct_bits():
    length = 6
    env = envs.make("memory", num_envs=16, seed=9, length=length, delay=3, log_interval=10**6)
    env.reset()
    bits = None

    def choose(t, shown):
        nonlocal bits
        i = t - length - 3
        if i < 0:
            return np.ones(16, np.int32)  # ignored outside the recite phase
        bits = np.array(shown).T
        # right on even bits, wrong on odd ones
        return np.where(i % 2 == 0, bits[:, i], 1 - bits[:, i]).astype(np.int32)

    _, _, rewards, _, _ = run_episode(env, choose)
    assert np.all(rewards[: length + 3] == 0), "actions outside recite are ignored"
    recite_rewards = rewards[length + 3 :]
    assert np.allclose(recite_rewards[0::2], 1 / length) and np.all(recite_rewards[1::2] == 0)
    log = env.log()
    assert log["score"] == pytest.approx(0.5) and log["n"] == 16


def test_memoryless_policy_scores_about_half():
    env = envs.make("memory", num_envs=512, seed=2, length=8, delay=2, log_interval=10**6)
    env.reset()
    for _ in range(4):
        run_episode(env, lambda t, shown: np.ones(512, np.int32))
    log = env.log()
    assert log["n"] == 4 * 512
    assert 0.45 < log["score"] < 0.55


def test_bits_are_fresh_each_episode_and_differ_between_envs():
    env = envs.make("memory", num_envs=64, seed=3, length=16, delay=0)
    env.reset()
    first, *_ = run_episode(env, lambda t, shown: np.zeros(64, np.int32))
    second, *_ = run_episode(env, lambda t, shown: np.zeros(64, np.int32))
    assert not np.array_equal(first, second)
    assert len({tuple(row) for row in first}) > 60, "envs draw their own bits"
    assert 0.4 < first.mean() < 0.6


def test_frame_shows_bits_cursor_and_last_episode():
    env = envs.make("memory", num_envs=1, seed=4, length=3, delay=1)
    env.reset()
    assert env.frame_shape == (4, 3)
    f = env.frame(0)
    assert f[0, 0] in (BIT0, BIT1) and f[0, 1] == EMPTY and f[2, 0] == SHOWING
    assert np.all(f[3] == EMPTY), "no finished episode yet"
    bits = []
    for t in range(7):
        if t < 3:
            bits.append(int(env.observations[0, BIT] > 0))
        i = t - 4  # recite bit 0 right, the others wrong
        action = 0 if i < 0 else bits[0] if i == 0 else 1 - bits[i]
        if t == 3:
            assert np.all(env.frame(0)[2] == WAITING)
        if t == 5:
            f = env.frame(0)
            assert list(f[0]) == [BIT0 + b for b in bits]
            assert f[1, 0] == GOOD0 + bits[0] and f[2, 1] == RECITING
        env.step(np.array([action], np.int32))
    last = env.frame(0)[3]
    assert last[0] == GOOD0 + bits[0]
    assert list(last[1:]) == [BAD0 + (1 - b) for b in bits[1:]]
    assert set(np.unique(env.frame(0))) <= set(env.palette)


def rollout(seed, steps=200, n=16):
    env = envs.make("memory", num_envs=n, seed=seed, length=5, delay=3)
    env.reset()
    rng = np.random.default_rng(0)
    trace = []
    for _ in range(steps):
        o, r, t, _, _ = env.step(rng.integers(0, 2, n, dtype=np.int32))
        trace.append((o.copy(), r.copy(), t.copy()))
    return trace


def test_same_seed_same_trajectory_and_different_seed_differs():
    a, b, c = rollout(7), rollout(7), rollout(8)
    assert all(all(np.array_equal(x, y) for x, y in zip(s, u)) for s, u in zip(a, b))
    assert not all(np.array_equal(s[0], u[0]) for s, u in zip(a, c))


def test_reset_with_seed_replays():
    env = envs.make("memory", num_envs=4, seed=0, length=8, delay=0)
    first = env.reset(seed=11)[0].copy()
    env.step(np.zeros(4, np.int32))
    assert np.array_equal(env.reset(seed=11)[0], first)


@pytest.mark.parametrize("length,delay", [(1, 0), (1, 256), (64, 0), (64, 256), (17, 3)])
def test_random_action_fuzz_keeps_observations_in_space(length, delay):
    env = envs.make("memory", num_envs=32, seed=1, length=length, delay=delay)
    env.reset()
    rng = np.random.default_rng(1)
    ticks = 2 * length + delay
    for t in range(max(400, ticks + 5)):
        obs, rew, term, trunc, _ = env.step(rng.integers(0, 2, 32, dtype=np.int32))
        assert all(env.single_observation_space.contains(row) for row in obs[:2])
        assert np.all(obs[:, SHOW:].sum(axis=1) == 1), "exactly one phase flag"
        assert np.all((rew >= 0) & (rew <= 1.0 / length + 1e-6))
        assert np.all(term == ((t + 1) % ticks == 0)) and not trunc.any()
    assert obs.min() >= -1 and obs.max() <= 1
    assert env.frame(31).max() <= max(env.palette)


def test_bad_actions_are_refused_with_clear_errors():
    env = envs.make("memory", num_envs=4)
    env.reset()
    with pytest.raises(ActionError, match="out of range"):
        env.step(np.array([0, 1, 2, 0], np.int32))
    with pytest.raises(ActionError, match="shape"):
        env.step(np.zeros(3, np.int32))


@pytest.mark.parametrize(
    "settings,field",
    [({"length": 0}, "memory.length"), ({"length": 65}, "memory.length"),
     ({"delay": -1}, "memory.delay"), ({"delay": 257}, "memory.delay"),
     ({"length": 2.5}, "memory.length"), ({"bits": 3}, "unknown setting")],
)
def test_bad_settings_name_the_field(settings, field):
    with pytest.raises(ValueError, match=field):
        envs.make("memory", **settings)


def test_preset_matches_the_schema():
    preset = envs.load_preset("memory")
    assert envs.env_class("memory").resolve(preset["env"]) == {"length": 1, "delay": 1}
