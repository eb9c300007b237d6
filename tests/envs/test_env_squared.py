"""Rules of squared, seeded determinism, and a random-action fuzz."""

import numpy as np
import pytest

import puffer_tui.envs as envs
from puffer_tui.engine.native import ActionError

NOOP, DOWN, UP, LEFT, RIGHT = range(5)
EMPTY, AGENT, TARGET = range(3)


def grid(env, i=0):
    n = env.settings["size"]
    return env.observations[i].reshape(n, n)


def test_reset_places_agent_at_centre_and_targets_on_edges():
    env = envs.make("squared", num_envs=8, seed=0, size=9, num_targets=5)
    env.reset()
    for i in range(8):
        g = grid(env, i)
        assert g[4, 4] == AGENT
        assert (g == AGENT).sum() == 1
        assert (g == TARGET).sum() == 5
        inner = g[1:-1, 1:-1]
        assert not (inner == TARGET).any(), "targets must lie on the edges"


def walk_to(env, target_rc):
    """Actions that walk the agent from the centre to (row, col), one axis at a time."""
    n = env.settings["size"]
    r, c = n // 2, n // 2
    moves = []
    while r != target_rc[0]:
        moves.append(DOWN if target_rc[0] > r else UP)
        r += 1 if target_rc[0] > r else -1
    while c != target_rc[1]:
        moves.append(RIGHT if target_rc[1] > c else LEFT)
        c += 1 if target_rc[1] > c else -1
    return moves


def test_target_gives_plus_one_then_teleports_to_centre_and_episode_ends():
    env = envs.make("squared", num_envs=1, seed=3, size=7, num_targets=2, log_interval=1)
    env.reset()
    total = 0.0
    for k in range(2):
        g = grid(env)
        targets = np.argwhere(g == TARGET)
        moves = walk_to(env, tuple(targets[0]))
        for j, a in enumerate(moves):
            _, rew, term, trunc, infos = env.step(np.array([a]))
            total += rew[0]
            last = j == len(moves) - 1
            assert rew[0] == (1.0 if last else 0.0)
            assert not trunc[0]
            if last and k == 0:
                assert grid(env)[3, 3] == AGENT, "agent teleports back to the centre"
                assert (grid(env) == TARGET).sum() == 1, "a reached target disappears"
        if k == 1:
            assert term[0], "reaching the last target ends the episode"
            assert infos and infos[0]["score"] == 1.0 and infos[0]["episode_return"] == 2.0
            # autoreset: the observation is the first of a new episode
            assert (grid(env) == TARGET).sum() == 2
    assert total == 2.0


def test_walls_clamp_and_timeout_truncates():
    env = envs.make("squared", num_envs=1, seed=0, size=5, num_targets=1, max_ticks=6,
                    log_interval=1)
    env.reset()
    g = grid(env)
    target = tuple(np.argwhere(g == TARGET)[0])
    # a direction that never reaches the target: away from it along rows, else columns
    away = UP if target[0] >= 2 else DOWN
    if target[0] == 2:
        away = LEFT if target[1] == 4 else RIGHT
    for t in range(6):
        _, rew, term, trunc, infos = env.step(np.array([away]))
        assert rew[0] == 0.0 and not term[0]
        assert trunc[0] == (t == 5), "truncated exactly at max_ticks, and not terminal"
    assert infos[0]["score"] == 0.0 and infos[0]["episode_length"] == 6.0


def test_same_seed_same_trajectory_and_different_seed_differs():
    def rollout(seed):
        env = envs.make("squared", num_envs=16, seed=seed)
        env.reset()
        rng = np.random.default_rng(0)
        trace = []
        for _ in range(300):
            o, r, t, tr, _ = env.step(rng.integers(0, 5, 16, dtype=np.int32))
            trace.append((o.copy(), r.copy(), t.copy(), tr.copy()))
        return trace

    a, b, c = rollout(7), rollout(7), rollout(8)
    assert all(all(np.array_equal(x, y) for x, y in zip(s, u)) for s, u in zip(a, b))
    assert not all(np.array_equal(s[0], u[0]) for s, u in zip(a, c))


@pytest.mark.parametrize("size,targets", [(3, 1), (3, 8), (255, 1016), (11, 40)])
def test_random_action_fuzz_keeps_observations_in_range(size, targets):
    env = envs.make("squared", num_envs=32, seed=1, size=size, num_targets=targets)
    env.reset()
    rng = np.random.default_rng(1)
    for _ in range(400):
        obs, rew, _, _, _ = env.step(rng.integers(0, 5, 32, dtype=np.int32))
        assert env.single_observation_space.contains(obs[0])
        assert obs.max() <= 2 and ((obs == AGENT).sum(axis=1) == 1).all()
        assert ((rew == 0) | (rew == 1)).all()


def test_bad_actions_are_refused_with_clear_errors():
    env = envs.make("squared", num_envs=4)
    env.reset()
    with pytest.raises(ActionError, match="shape"):
        env.step(np.zeros(5, np.int32))
    with pytest.raises(ActionError, match="integer dtype"):
        env.step(np.zeros(4, np.float32))
    with pytest.raises(ActionError, match="out of range"):
        env.step(np.array([0, 1, 5, 0], np.int32))
    with pytest.raises(ActionError, match="out of range"):
        env.step(np.array([0, -1, 0, 0], np.int64))


def test_bad_settings_name_the_field():
    with pytest.raises(ValueError, match="squared.size"):
        envs.make("squared", size=2)
    with pytest.raises(ValueError, match="num_targets"):
        envs.make("squared", size=3, num_targets=9)
    with pytest.raises(ValueError, match="unknown setting"):
        envs.make("squared", colour=3)
