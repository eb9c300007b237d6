"""Rules of breakout (paddle, bounces, bricks, lives, episode end), its frame, seeded
determinism and a random-action fuzz."""

import numpy as np
import pytest

import puffer_tui.envs as envs
from puffer_tui.engine.native import ActionError
from puffer_tui.envs.breakout import BALL, LEFT, PADDLE, RIGHT, STAY, arena_shape

PADDLE_X, BALL_X, BALL_Y, BALL_VX, BALL_VY, LIVES = range(6)


def make(num_envs=1, seed=0, **settings):
    return envs.make("breakout", num_envs=num_envs, seed=seed, log_interval=10**9, **settings)


def track(obs):
    """Keep the paddle under the ball."""
    gap = obs[:, BALL_X] - obs[:, PADDLE_X]
    return np.where(gap < -0.02, LEFT, np.where(gap > 0.02, RIGHT, STAY)).astype(np.int32)


def test_reset_shows_every_brick_a_centred_paddle_and_a_ball_going_up():
    env = make(num_envs=8, seed=1, brick_rows=3, brick_cols=5)
    obs, _ = env.reset()
    assert obs.shape == (8, 6 + 15)
    assert np.all(obs[:, 6:] == 1.0)
    assert np.allclose(obs[:, PADDLE_X], 0.5) and np.all(obs[:, LIVES] == 1.0)
    assert np.all(obs[:, BALL_VY] < -0.7), "served upwards, at most 45 degrees off vertical"
    assert np.allclose(np.hypot(obs[:, BALL_VX], obs[:, BALL_VY]), 1.0)
    assert len(set(obs[:, BALL_VX].round(5))) > 1, "serve angles are random"


def test_paddle_moves_by_its_speed_and_stops_at_the_walls():
    env = make(brick_cols=4, brick_width=3, paddle_width=4, paddle_speed=1.0)  # 12 wide
    env.reset()
    x0 = env.observations[0, PADDLE_X] * 12
    env.step(np.array([LEFT], np.int32))
    assert env.observations[0, PADDLE_X] * 12 == pytest.approx(x0 - 1)
    for _ in range(10):
        env.step(np.array([RIGHT], np.int32))
    assert env.observations[0, PADDLE_X] * 12 == pytest.approx(12 - 2), "right wall"
    for _ in range(10):
        env.step(np.array([LEFT], np.int32))
    assert env.observations[0, PADDLE_X] * 12 == pytest.approx(2), "left wall"


def test_the_ball_stays_inside_and_keeps_its_speed():
    env = make(num_envs=16, seed=2, ball_speed=1.7)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(500):
        obs, *_ = env.step(rng.integers(0, 3, 16).astype(np.int32))
        assert np.all((obs[:, BALL_X] >= 0) & (obs[:, BALL_X] < 1))
        assert np.all((obs[:, BALL_Y] >= 0) & (obs[:, BALL_Y] < 1))
        assert np.allclose(np.hypot(obs[:, BALL_VX], obs[:, BALL_VY]), 1.0, atol=1e-5)
        assert np.all(np.abs(obs[:, BALL_VY]) >= 0.49), "never flatter than 60 degrees"


def test_a_tracking_paddle_breaks_every_brick_and_each_brick_pays_one():
    env = make(num_envs=4, seed=3, brick_rows=2, brick_cols=4, lives=5, life_reward=0.0)
    env.reset()
    total = np.zeros(4)
    done = np.zeros(4, bool)
    for _ in range(20_000):
        before = env.observations[:, 6:].sum(axis=1)
        obs, rew, term, trunc, _ = env.step(track(env.observations))
        live = ~done & ~term
        broken = before - obs[:, 6:].sum(axis=1)
        assert np.all(rew[live] == broken[live]), "reward = bricks broken this step"
        total += np.where(done, 0, rew)
        assert np.all(obs[term, 6:] == 1.0), "autoreset restores the wall"
        done |= term
        assert not trunc.any()
        if done.all():
            break
    assert done.all() and np.all(total == 8)
    log = env.log()
    assert log["score"] == 1.0 and log["bricks_broken"] == 8 and log["n"] >= 4


def test_a_still_paddle_loses_its_lives_and_the_episode_ends():
    env = make(num_envs=32, seed=4, lives=2, paddle_width=1, brick_cols=16, life_reward=-0.5)
    env.reset()
    lost = np.zeros(32, int)
    for _ in range(5000):
        before = env.observations.copy()
        obs, rew, term, _, _ = env.step(np.full(32, STAY, np.int32))
        broken = before[:, 6:].sum(axis=1) - obs[:, 6:].sum(axis=1)
        lost_now = ((obs[:, LIVES] < before[:, LIVES]) & ~term) | term
        expected = np.where(term, 0, broken) - 0.5 * lost_now
        assert np.allclose(rew[lost_now], expected[lost_now]), "a lost ball pays life_reward"
        lost += lost_now & ~term
        if term.any():
            break
    assert term.any() and np.all(lost[term] == 1), "one life lost before the last"
    log = env.log()
    assert log["lives_lost"] == 2 and log["score"] == pytest.approx(log["bricks_broken"] / 96)


def test_truncation_after_max_ticks():
    env = make(seed=5, max_ticks=40, paddle_width=36)  # a paddle as wide as the arena
    env.reset()
    for t in range(40):
        _, _, term, trunc, _ = env.step(np.array([STAY], np.int32))
        assert trunc[0] == (t == 39) and not term[0]
    log = env.log()
    assert log["n"] == 1 and log["episode_length"] == 40 and log["lives_lost"] == 0


def test_frame_draws_bricks_paddle_and_ball_where_the_observation_says():
    env = make(seed=6, brick_rows=4, brick_cols=6, brick_width=2, paddle_width=5)
    env.reset()
    rng = np.random.default_rng(2)
    rows, cols = arena_shape(env.settings)
    assert env.frame_shape == (rows, cols) == (3 + 4 + 14, 12)
    for _ in range(300):
        obs, *_ = env.step(rng.integers(0, 3, 1).astype(np.int32))
        frame = env.frame()
        # the ball is never inside a standing brick, so the brick rows show exactly the bricks
        bricks = frame[3:7].reshape(4, 6, 2)
        standing = obs[0, 6:].reshape(4, 6) == 1.0
        assert np.array_equal(((bricks >= 1) & (bricks <= 6)).all(axis=2), standing)
        assert np.all(((bricks >= 1) & (bricks <= 6)).any(axis=2) == standing)
        paddle = (frame == PADDLE).sum()
        assert paddle == (frame[rows - 2] == PADDLE).sum(), "the paddle lies on one row"
        assert paddle == 5 or (paddle == 4 and (frame[rows - 2] == BALL).any())
        (r, c), = np.argwhere(frame == BALL)
        assert abs(r + 0.5 - obs[0, BALL_Y] * rows) <= 0.5 + 1e-4
        assert abs(c + 0.5 - obs[0, BALL_X] * cols) <= 0.5 + 1e-4


def test_same_seed_same_trajectories_and_different_seeds_differ():
    def rollout(seed):
        env = make(num_envs=4, seed=seed)
        env.reset()
        rng = np.random.default_rng(0)
        return [env.step(rng.integers(0, 3, 4).astype(np.int32))[0].copy() for _ in range(300)]

    a, b, c = rollout(8), rollout(8), rollout(9)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert any(not np.array_equal(x, z) for x, z in zip(a, c))


@pytest.mark.parametrize(
    "settings",
    [
        dict(brick_rows=1, brick_cols=1, brick_width=1, paddle_width=1),
        dict(brick_rows=32, brick_cols=64, brick_width=8, paddle_width=64, ball_speed=4.0),
        dict(brick_rows=2, brick_cols=2, ball_speed=0.05, paddle_speed=8.0, lives=1),
        dict(lives=100, max_ticks=1, paddle_speed=0.1),
    ],
)
def test_random_actions_keep_the_invariants(settings):
    env = make(num_envs=8, seed=10, **settings)
    env.reset()
    rng = np.random.default_rng(3)
    for _ in range(400):
        obs, rew, term, trunc, _ = env.step(rng.integers(0, 3, 8).astype(np.int32))
        assert np.isfinite(obs).all() and np.all(np.abs(obs) <= 1.0)
        assert np.all(rew >= -1) and np.all(rew == np.round(rew)), "bricks +1, a lost ball -1"
        assert not (term & trunc).any() and env.masks.all()
    log = env.log()
    if log:
        assert 0.0 <= log["score"] <= 1.0


def test_bad_settings_and_actions_are_refused_with_clear_errors():
    with pytest.raises(ValueError, match="wider than the arena"):
        make(brick_cols=2, brick_width=2, paddle_width=5)
    env = make()
    env.reset()
    with pytest.raises(ActionError, match="out of range"):
        env.step(np.array([3], np.int32))
    with pytest.raises(ActionError, match="integer dtype"):
        env.step(np.array([1.0], np.float32))
