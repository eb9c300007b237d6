"""Evaluation counts the episodes it was asked for without favouring short ones: the target is
shared out between the envs' rows before anything plays (engine/evaluation/evaluate.py)."""

import numpy as np

from puffer_tui.engine.evaluation.evaluate import Evaluator


def _tally(target: int, rows: int) -> Evaluator:
    """An Evaluator's counting state alone, as restart() leaves it for `rows` agent rows."""
    player = Evaluator.__new__(Evaluator)
    player.target = target
    player.returns = np.zeros(rows)
    player.lengths = np.zeros(rows, dtype=np.int64)
    player.done_returns, player.done_lengths = [], []
    player.quota = np.full(rows, target // rows, dtype=np.int64)
    player.quota[: target % rows] += 1
    player.counted = np.zeros(rows, dtype=np.int64)
    player.score_sum = player.score_n = 0.0
    player.endless = 0
    player.config, player.checkpoint = type("Config", (), {"env_name": "test"})(), None
    return player


def _end(player: Evaluator, row: int, length: int) -> None:
    player.returns[row], player.lengths[row] = float(length), length
    player._count(np.array([row]), [])


def test_short_episodes_ending_first_do_not_fill_the_target():
    """8 rows, 4 episodes asked: rows 4-7 end short episodes first and often, rows 0-3 one long
    one each. The four counted are one of each of rows 0-3 (return 100), not the short ones."""
    player = _tally(target=4, rows=8)
    for _ in range(3):
        for row in range(4, 8):
            _end(player, row, 5)
    assert player.episodes == 0 and not player.finished
    for row in range(4):
        _end(player, row, 100)
    assert player.finished and player.result()["episode_return"] == 100.0


def test_more_episodes_than_rows_are_shared_evenly():
    player = _tally(target=10, rows=4)
    assert player.quota.tolist() == [3, 3, 2, 2]
    for _ in range(5):
        for row in range(4):
            _end(player, row, row + 1)
    assert player.episodes == 10 and player.counted.tolist() == [3, 3, 2, 2]
    assert player.result()["episode_length"] == (3 * 1 + 3 * 2 + 2 * 3 + 2 * 4) / 10
