"""Rules of snake (moves, eating, growth, death, corpses, respawn, masks, truncation), windows,
seeded determinism and a random-action fuzz over extreme sizes."""

import numpy as np
import pytest

import puffer_tui.envs as envs
from puffer_tui.engine.native import ActionError

UP, DOWN, LEFT, RIGHT = range(4)
EMPTY, FOOD, CORPSE, WALL, BODY, HEAD = range(6)
MOVES = {UP: (-1, 0), DOWN: (1, 0), LEFT: (0, -1), RIGHT: (0, 1)}


def make(num_envs=1, seed=0, **settings):
    return envs.make("snake", num_envs=num_envs, seed=seed, log_interval=10**9, **settings)


def heads(frame):
    return [tuple(rc) for rc in np.argwhere(frame == HEAD)]


def windows(env, frame):
    """Window around each head of `frame`, padded with walls as the env pads its grid."""
    v = env.settings["vision"]
    padded = np.pad(frame, v, constant_values=WALL)
    return {(r, c): padded[r : r + 2 * v + 1, c : c + 2 * v + 1].ravel() for r, c in heads(frame)}


def test_reset_places_every_snake_and_the_food():
    env = make(num_envs=4, seed=2, width=20, height=12, num_snakes=7, num_food=9)
    env.reset()
    assert env.num_agents == 28 and env.masks.all()
    for i in range(4):
        frame = env.frame(i)
        assert frame.shape == (12, 20)
        assert len(heads(frame)) == 7 and (frame == FOOD).sum() == 9
        assert not np.isin(frame, (BODY, CORPSE, WALL)).any()


def test_each_observation_is_the_window_around_its_head():
    env = make(num_envs=2, seed=5, width=16, height=11, num_snakes=6, num_food=12, vision=3)
    env.reset()
    rng = np.random.default_rng(0)
    w = 2 * 3 + 1
    for _ in range(30):
        for i in range(2):
            views = windows(env, env.frame(i))
            for s in range(6):
                obs = env.observations[i * 6 + s]
                if not env.masks[i * 6 + s]:
                    continue
                assert obs[(w * w) // 2] == HEAD, "the head is at the window's centre"
                assert any(np.array_equal(obs, view) for view in views.values())
        env.step(rng.integers(0, 4, 12).astype(np.int32))


def test_a_lone_snake_moves_one_cell_per_step_and_dies_at_the_wall():
    env = make(width=9, height=7, num_snakes=1, num_food=0, death_reward=-2.0)
    env.reset()
    (r, c), = heads(env.frame())
    start = c
    for _ in range(8 - c):
        _, rew, term, trunc, _ = env.step(np.array([RIGHT], np.int32))
        c += 1
        assert heads(env.frame()) == [(r, c)] and rew[0] == 0 and not term[0]
        assert (env.frame() == BODY).sum() == 0, "a length-1 snake has no body"
    _, rew, term, trunc, _ = env.step(np.array([RIGHT], np.int32))
    assert term[0] and not trunc[0] and rew[0] == -2.0
    assert len(heads(env.frame())) == 1 and env.masks[0], "the dead snake respawned at once"
    log = env.log()
    assert log["n"] == 1 and log["died"] == 1 and log["episode_length"] == 9 - start
    assert log["snake_length"] == 1 and log["episode_return"] == -2.0


def test_eating_food_grows_the_snake_and_a_full_field_masks_the_dead_until_there_is_room():
    # A 2x2 field: one snake, three food. Every cell is taken, so eaten food cannot reappear.
    env = make(width=2, height=2, num_snakes=1, num_food=3, food_reward=0.25, corpse_rate=1.0,
               max_length=4)
    env.reset()
    (r, c), = heads(env.frame())
    action = LEFT if c == 1 else RIGHT
    _, rew, term, _, _ = env.step(np.array([action], np.int32))
    assert rew[0] == 0.25 and not term[0]
    frame = env.frame()
    assert (frame == BODY).sum() == 1 and len(heads(frame)) == 1, "length 2 after eating"
    assert (frame == FOOD).sum() == 2, "no empty cell for the eaten food yet"
    # turn back into the body: death; corpses fill the field, so the snake cannot respawn
    back = RIGHT if action == LEFT else LEFT
    _, rew, term, _, _ = env.step(np.array([back], np.int32))
    assert term[0] and rew[0] == -1.0
    assert not env.masks[0] and not env.observations[0].any(), "waiting snakes are masked out"
    frame = env.frame()
    assert (frame == CORPSE).sum() == 2 and (frame == FOOD).sum() == 2
    _, rew, term, _, _ = env.step(np.array([UP], np.int32))
    assert not env.masks[0] and rew[0] == 0 and not term[0], "still no room"
    log = env.log()
    assert log["n"] == 1 and log["snake_length"] == 2 and log["food_eaten"] == 1
    assert log["score"] == pytest.approx(2 / 4)


def snake_length(frame):
    return int((frame == BODY).sum() + (frame == HEAD).sum())


@pytest.mark.parametrize("max_length", [2, 3, 64])
def test_rewards_growth_and_corpses_step_by_step(max_length):
    rewards = {"food_reward": 0.25, "corpse_reward": 0.5, "death_reward": -2.0}
    env = make(seed=11, width=6, height=5, num_snakes=1, num_food=4, corpse_rate=1.0,
               max_length=max_length, **rewards)
    env.reset()
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(600):
        before, was_waiting = env.frame(), not env.masks[0]
        _, rew, term, _, _ = env.step(rng.integers(0, 4, 1).astype(np.int32))
        after = env.frame()
        seen.add(float(rew[0]))
        if was_waiting or not env.masks[0]:
            assert rew[0] == 0 or (rew[0] == -2.0 and not was_waiting)
            continue
        grew = min(snake_length(before) + 1, max_length)
        if rew[0] == 0.25:
            assert snake_length(after) == grew and (after == FOOD).sum() <= 4
        elif rew[0] == 0.5:
            assert snake_length(after) == grew
            assert (after == CORPSE).sum() == (before == CORPSE).sum() - 1
        elif rew[0] == -2.0:
            assert term[0] and snake_length(after) == 1, "respawned with length 1"
            assert (after == CORPSE).sum() >= (before == CORPSE).sum()
        else:
            assert rew[0] == 0 and snake_length(after) == snake_length(before)
        assert snake_length(after) <= max_length
    assert {0.25, -2.0} <= seen


def test_truncation_after_max_steps_removes_and_respawns_the_snake():
    env = make(width=20, height=20, num_snakes=1, num_food=0, max_steps=7)
    env.reset()
    for t in range(7):
        (r, c), = heads(env.frame())
        _, rew, term, trunc, _ = env.step(np.array([RIGHT if c < 10 else LEFT], np.int32))
        assert not term[0] and trunc[0] == (t == 6)
    assert len(heads(env.frame())) == 1 and env.masks[0]
    log = env.log()
    assert log["n"] == 1 and log["died"] == 0 and log["episode_length"] == 7


def test_same_seed_same_trajectories_and_different_seeds_differ():
    def rollout(seed):
        env = make(num_envs=3, seed=seed, width=14, height=10, num_snakes=5, num_food=8)
        env.reset()
        rng = np.random.default_rng(0)
        out = []
        for _ in range(150):
            o, r, t, tr, _ = env.step(rng.integers(0, 4, 15).astype(np.int32))
            out.append((o.copy(), r.copy(), t.copy(), tr.copy(), env.masks.copy()))
        return out

    a, b, c = rollout(4), rollout(4), rollout(5)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            assert np.array_equal(u, v)
    assert any(not np.array_equal(x[0], z[0]) for x, z in zip(a, c))


@pytest.mark.parametrize(
    "settings",
    [
        dict(width=2, height=2, num_snakes=4, num_food=0, vision=1),
        dict(width=3, height=2, num_snakes=2, num_food=4, vision=15, max_length=1),
        dict(width=2, height=9, num_snakes=1, num_food=1, corpse_rate=0.0, max_steps=1),
        dict(width=24, height=24, num_snakes=300, num_food=100, vision=2, max_length=500),
        dict(width=1024, height=3, num_snakes=64, num_food=0, vision=4, corpse_rate=1.0),
    ],
)
def test_random_actions_keep_the_invariants(settings):
    env = make(num_envs=3, seed=7, **settings)
    env.reset()
    n = settings["num_snakes"]
    rng = np.random.default_rng(1)
    allowed = {0.0, 0.1, -1.0}
    for _ in range(120):
        obs, rew, term, trunc, _ = env.step(rng.integers(0, 4, 3 * n).astype(np.int32))
        assert set(np.unique(rew).tolist()) <= {np.float32(x) for x in allowed}
        assert obs.max() <= HEAD
        assert not obs[~env.masks].any(), "masked snakes see zeros"
        for i in range(3):
            frame = env.frame(i)
            assert len(heads(frame)) == env.masks[i * n : (i + 1) * n].sum()
            assert (frame == FOOD).sum() <= settings["num_food"]
            assert not (frame == WALL).any()
    log = env.log()
    if log:
        assert 0.0 <= log["score"] <= 1.0 and log["snake_length"] >= 1


def test_bad_settings_and_actions_are_refused_with_clear_errors():
    with pytest.raises(ValueError, match="exceed"):
        make(width=4, height=4, num_snakes=10, num_food=7)
    with pytest.raises(ValueError, match="vision"):
        make(vision=0)
    env = make(num_snakes=2)
    env.reset()
    with pytest.raises(ActionError, match="out of range"):
        env.step(np.array([0, 4], np.int32))
    with pytest.raises(ActionError, match="shape"):
        env.step(np.array([0], np.int32))
