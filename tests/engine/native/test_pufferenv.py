"""A C env through the NativeEnv contract (engine/native/pufferenv.py), on `squared`: reset
and step write into the buffers the env was handed, a seed fixes the episode, get_state /
set_state continue exactly, and wrong use is refused with a message."""

import numpy as np
import pytest

from puffer_tui.engine.native import ActionError, allocate_buffers
from puffer_tui.envs.squared import Squared

AGENT, TARGET = 1, 2  # squared's tile ids in its observation grid
SIZE = 5


def squared(num_envs=3, seed=0, **settings):
    return Squared(num_envs=num_envs, seed=seed, size=SIZE, **settings)


def walk(env, steps, seed=1):
    """Each step's (observations, rewards, terminals, truncations), copied."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        env.step(rng.integers(0, 5, env.num_agents).astype(np.int32))
        out.append((env.observations.copy(), env.rewards.copy(), env.terminals.copy(),
                    env.truncations.copy()))
    return out


def test_reset_puts_the_agent_at_the_centre_and_the_targets_on_the_edges():
    env = squared(num_envs=2)
    obs, infos = env.reset(seed=7)
    assert obs.shape == (2, SIZE * SIZE) and infos == []
    for grid in obs.reshape(2, SIZE, SIZE):
        assert grid[SIZE // 2, SIZE // 2] == AGENT
        assert (grid == AGENT).sum() == 1
        targets = np.argwhere(grid == TARGET)
        assert len(targets) == 4
        assert all(r in (0, SIZE - 1) or c in (0, SIZE - 1) for r, c in targets)


def test_step_writes_into_the_buffers_it_was_given():
    layout = Squared.layout(Squared.resolve({"size": SIZE}))
    buffers = allocate_buffers(layout.observation_space, layout.action_space, 2)
    env = Squared(num_envs=2, seed=0, buf=buffers, size=SIZE)
    env.reset(seed=0)
    before = buffers["observations"].copy()
    env.step(np.full(2, 1, np.int32))  # one move off the centre
    assert env.observations is buffers["observations"]
    assert not np.array_equal(buffers["observations"], before)
    assert env.frame(0).shape == (SIZE, SIZE)
    assert np.array_equal(env.frame(1).ravel(), buffers["observations"][1])


def test_the_same_seed_replays_the_same_episode_and_another_seed_another():
    runs = []
    for seed in (3, 3, 4):
        env = squared()
        env.reset(seed=seed)
        runs.append(np.stack([step[0] for step in walk(env, 40)]))
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_a_restored_state_continues_exactly_where_the_saved_one_would_have():
    """The C state plus the observation buffer (an env may redraw only the cells that
    changed, which is why the vec's saved state keeps its buffers too)."""
    env = squared()
    env.reset(seed=11)
    walk(env, 13)
    saved, observations = env.get_state(), env.observations.copy()
    expected = walk(env, 30, seed=2)

    copy = squared()
    copy.set_state(saved)
    np.copyto(copy.observations, observations)
    for want, got in zip(expected, walk(copy, 30, seed=2)):
        for u, v in zip(want, got):
            assert np.array_equal(u, v)


def test_a_state_of_other_settings_or_counts_is_refused_before_anything_changes():
    env = squared()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="settings"):
        Squared(num_envs=3, size=SIZE + 2).set_state(env.get_state())
    with pytest.raises(ValueError, match="holds 3 envs"):
        squared(num_envs=2).set_state(env.get_state())


def test_out_of_range_actions_and_a_step_before_reset_are_refused():
    env = squared(num_envs=2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, np.int32))
    env.reset(seed=0)
    with pytest.raises(ActionError):
        env.step(np.array([0, 5], np.int32))
    with pytest.raises(ValueError, match="log_interval"):
        squared(log_interval=0)


def test_settings_are_resolved_with_defaults_and_out_of_bounds_ones_refused():
    env = squared(num_envs=1)
    assert env.settings["size"] == SIZE and env.settings["max_ticks"] == 2 * SIZE * 4
    with pytest.raises(ValueError, match="size"):
        Squared(size=2)
