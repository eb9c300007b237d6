"""Atari lives while training, on both paths (ale-py's C++ vector env and the Gymnasium
wrappers): a lost life ends the learner's episode but not the game, a game starts with FIRE,
and the logged episodes are whole games, as EnvPool, SB3 and CleanRL count them."""

import importlib.util

import numpy as np
import pytest

pytest.importorskip("ale_py", reason="ale-py not installed (pip install 'puffer-tui[atari]')")

from puffer_tui.envs import env_class  # noqa: E402

BREAKOUT = "gym:ALE/Breakout-v5"
LIVES = 5  # Breakout's


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


PATHS = [
    pytest.param(True, id="ale-vector", marks=pytest.mark.skipif(
        not _has("ale_py.vector_env"), reason="needs ale-py >= 0.11")),
    pytest.param(False, id="gymnasium", marks=pytest.mark.skipif(
        not _has("cv2"), reason="AtariPreprocessing needs opencv")),
]


def _block(ale_vector: bool, evaluation: bool = False, num_envs: int = 1):
    creator = env_class(BREAKOUT).make_creator({"ale_vector": ale_vector}, evaluation)
    return creator(num_envs=num_envs, seed=3, log_interval=1)


def _play_one_game(block, rng, limit=5000):
    """Random actions until a game is logged: (terminals seen, rewards summed, steps, log)."""
    block.reset(3)
    terminals, total, steps = 0, 0.0, 0
    for steps in range(1, limit + 1):  # noqa: B007 (read after the loop)
        _, rewards, ends, cuts, infos = block.step(
            rng.integers(0, block.single_action_space.n, block.num_envs).astype(np.int32))
        assert not cuts.any()
        terminals += int(ends.sum())
        total += float(rewards.sum())
        if infos:
            return terminals, total, steps, infos[-1]
    pytest.fail(f"no game logged in {limit} steps")


@pytest.mark.parametrize("ale_vector", PATHS)
def test_a_lost_life_ends_the_training_episode_and_the_log_counts_whole_games(ale_vector):
    block = _block(ale_vector)
    try:
        terminals, total, steps, log = _play_one_game(block, np.random.default_rng(0))
        # one terminal per life: the game went on after each of the first four
        assert terminals == LIVES
        assert log["n"] == 1 and log["episode_length"] == steps
        assert log["episode_return"] == total  # the game's score, all five lives
    finally:
        block.close()


@pytest.mark.parametrize("ale_vector", PATHS)
def test_evaluation_ends_an_episode_only_with_the_game(ale_vector):
    block = _block(ale_vector, evaluation=True)
    try:
        terminals, _, _, log = _play_one_game(block, np.random.default_rng(0))
        assert terminals == 1 and log["n"] == 1
    finally:
        block.close()


@pytest.mark.parametrize("ale_vector", PATHS)
def test_a_game_starts_with_fire(ale_vector):
    # Breakout serves the ball only on FIRE: with no-ops alone a life is lost only if the
    # game was started for the agent
    block = _block(ale_vector)
    try:
        block.reset(0)
        for _ in range(200):
            _, _, ends, _, _ = block.step(np.zeros(1, np.int32))
            if ends.any():
                break
        else:
            pytest.fail("no life was lost in 200 no-op steps: the ball was never served")
    finally:
        block.close()
