"""The doctor benchmark's summary: the autopilot column (its score and its count of changes,
read from the run's event log) beside the score left alone and the score a person's fix got."""

from __future__ import annotations

from puffer_tui.benchmarks.doctor import autopilot_changes, summarise, table
from puffer_tui.engine.shared import run_dir as rd


def run(score: float, changes: list[str] | None = None) -> dict:
    return {"seed": 1, "run": "r", "fired": {"kl_blowup": 1}, "applied": None, "score": score,
            "autopilot": changes or [], "diagnosis_seconds": 0.01, "uptime": 10.0}


def test_the_autopilot_column_sits_beside_the_persons_fix():
    result = {"case": "kl_blowup", "rule": "kl_blowup", "env": "gym:CartPole-v1",
              "setting": "--train.learning-rate 0.15", "without": [run(9.0)],
              "with": [run(60.0)], "autopilot": [run(70.0, ["autopilot applied ..."])]}
    row = summarise(result)
    assert (row["score_without"], row["score_with"], row["score_autopilot"]) == (9.0, 60.0, 70.0)
    assert row["autopilot_changes"] == 1
    header, line = table([row]).splitlines()
    assert "auto" in header and "changes" in header
    assert "70.000" in line


def test_the_changes_are_read_from_the_event_log(tmp_path):
    (tmp_path / rd.EVENTS_FILE).write_text(
        "09:00 info  autopilot applied kl_blowup's fix at epoch 1: train.learning_rate 0.15 "
        "-> 0.015\n09:01 info  train.learning_rate changed from 0.15 to 0.015\n")
    assert len(autopilot_changes(tmp_path)) == 1
    assert autopilot_changes(tmp_path / "missing") == []
