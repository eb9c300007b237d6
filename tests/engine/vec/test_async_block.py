"""gym:ALE/* on the serial backend with batch_size < num_envs: an async pool of ale-py's C++
threads in this process (engine/vec/async_block.py) behind the vec API: batches of the first
games to finish, every game stepped once per action sent, final observations, refused actions,
resets mid-run, the drawing of a game, and a real training run."""

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("ale_py.vector_env", reason="needs ale-py >= 0.11 (the atari extra)")

from puffer_tui.engine.vec import make  # noqa: E402
from puffer_tui.engine.vec.async_block import AsyncBlockPool  # noqa: E402
from puffer_tui.envs import creator  # noqa: E402

PONG = "gym:ALE/Pong-v5"


def _pool(num_envs=8, batch_size=4, **settings):
    return make(creator(PONG, **settings), num_envs=num_envs, backend="serial",
                batch_size=batch_size, seed=3)


def test_batches_are_games_that_each_step_once_per_action_sent():
    vec = _pool(max_num_frames_per_episode=100)  # 25 agent steps: episodes are cut short
    try:
        assert isinstance(vec, AsyncBlockPool) and vec.agents_per_batch == 4
        vec.async_reset(3)
        received = np.zeros(8, int)
        lengths = np.full(8, -1)  # agent steps into each game's episode (reset: 0)
        cut = 0
        for _ in range(120):
            obs, rewards, terminals, truncations, _, env_ids, masks = vec.recv()
            assert obs.shape == (4, 4, 84, 84) and obs.dtype == np.uint8
            assert rewards.dtype == np.float32 and masks.all() and len(set(env_ids)) == 4
            # a game comes back only after the actions of its last batch were sent
            received[env_ids] += 1
            lengths[env_ids] += 1
            ended = terminals | truncations
            if truncations.any():
                rows = env_ids[truncations & ~terminals]
                assert (lengths[rows] == 25).all()  # cut at the time limit, 25 steps in
                assert vec.final_observations[rows].reshape(len(rows), -1).any(axis=1).all()
                cut += len(rows)
            lengths[env_ids[ended]] = 0
            vec.send(np.full(4, 2, np.int32))
        # the blocks come back in turn: every game as often as every other
        assert (received == 60).all()
        assert cut >= 8
    finally:
        vec.close()


def test_a_pool_plays_the_same_games_as_stepping_them_all_at_once():
    serial = make(creator(PONG), num_envs=8, backend="serial", seed=5)
    pool = make(creator(PONG), num_envs=8, backend="serial", batch_size=4, seed=5)
    try:
        assert isinstance(pool, AsyncBlockPool)
        serial.async_reset(5)
        pool.async_reset(5)
        steps = np.zeros(8, int)
        for t in range(40):
            obs, rewards, terminals, truncations, _, _, _ = serial.recv()
            expected = obs.copy(), rewards.copy(), terminals.copy(), truncations.copy()
            serial.send((np.arange(8) + t) % 6)
            for _ in range(2):  # both halves of the same step
                p_obs, p_rewards, p_terminals, p_truncations, _, env_ids, _ = pool.recv()
                assert (steps[env_ids] == t).all()
                assert np.array_equal(p_obs, expected[0][env_ids])
                assert np.array_equal(p_rewards, expected[1][env_ids])
                assert np.array_equal(p_terminals, expected[2][env_ids])
                assert np.array_equal(p_truncations, expected[3][env_ids])
                steps[env_ids] += 1
                pool.send((env_ids + t) % 6)
    finally:
        serial.close()
        pool.close()


def test_a_bad_batch_is_refused_before_any_game_steps_and_stays_held():
    vec = _pool()
    try:
        vec.async_reset(0)
        vec.recv()
        with pytest.raises(ValueError, match="out of range"):
            vec.send(np.array([0, 1, 2, 99]))
        with pytest.raises(ValueError, match="expected 4 integer actions"):
            vec.send(np.zeros(8, np.int32))
        vec.send(np.zeros(4, np.int32))  # the held batch takes good actions afterwards
        assert len(vec.recv()[5]) == 4
    finally:
        vec.close()


@pytest.mark.parametrize("held", [True, False])
def test_a_reset_mid_run_lands_the_games_in_flight_first(held):
    vec = _pool()
    try:
        vec.async_reset(0)
        for _ in range(5):
            vec.recv()
            vec.send(np.ones(4, np.int32))
        if held:
            vec.recv()
        vec.async_reset(7)  # would hang or raise in ale-py with games still in flight
        seen = set()
        for _ in range(2):
            seen |= set(vec.recv()[5].tolist())
            vec.send(np.zeros(4, np.int32))
        assert seen == set(range(8))
    finally:
        vec.close()


def test_drawing_a_game_shows_its_newest_observation():
    vec = _pool()
    try:
        vec.async_reset(0)
        for _ in range(6):
            obs, *_, env_ids, _ = vec.recv()
            vec.send(np.full(4, 2, np.int32))
        image = vec.frame(int(env_ids[0]))
        assert image.shape == (84, 84, 3)
        assert np.array_equal(image[:, :, 0], obs[0][-1])
        with pytest.raises(IndexError):
            vec.frame(8)
    finally:
        vec.close()


def test_a_batch_size_that_does_not_divide_the_games_is_refused():
    with pytest.raises(ValueError, match="must divide num_envs=8"):
        _pool(batch_size=3)


def test_training_pong_on_the_async_pool_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", PONG, "--headless",
         "--runs-dir", str(tmp_path), "--vec.backend", "serial", "--vec.num-envs", "4",
         "--vec.batch-size", "2", "--train.horizon", "16", "--train.minibatch-size", "32",
         "--train.total-timesteps", "128", "--train.hidden-size", "32",
         "--train.cnn-channels", "8"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "finished" in result.stdout + result.stderr
