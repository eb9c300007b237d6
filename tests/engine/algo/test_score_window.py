"""train.stop_at_score's window (engine/algo/score_window.py): an episode-weighted mean over the
last epochs that ended episodes, kept across a resume."""

from puffer_tui.engine.algo.score_window import ScoreWindow
from puffer_tui.engine.shared.config import STOP_WINDOW


def test_the_mean_is_weighted_by_episodes_and_epochs_without_episodes_are_skipped():
    window = ScoreWindow()
    window.note({"score": 10.0, "episodes": 1})
    window.note({"episode_return": 0.0, "episodes": 3})
    window.note({"score": 99.0, "episodes": 0})  # no episode ended: not a score
    assert window.reached(2.6) == ""
    assert "mean episode score 2.5 over the last 2 epochs" in window.reached(2.5)
    assert window.reached(0) == ""  # 0: off


def test_only_the_last_epochs_count_and_the_window_survives_a_round_trip():
    window = ScoreWindow()
    window.note({"score": -100.0, "episodes": 1})
    for _ in range(STOP_WINDOW):
        window.note({"score": 1.0, "episodes": 1})
    assert window.reached(1.0)  # the old -100 has left the window
    restored = ScoreWindow.from_list(window.as_list())
    assert restored.scores == window.scores
