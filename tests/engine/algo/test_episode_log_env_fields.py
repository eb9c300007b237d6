"""A user's Python env trained from the command line (MODULE:CALLABLE): the numbers of its
episode-end info reach metrics.jsonl, TensorBoard as env/<key>, `runs --compare` and a sweep
objective; a value that is not a number is one warning in the events."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tensorboard_reader import read_scalars

from puffer_tui.app.compare_data import final_figures, load_run
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.metrics_file import read_metrics
from puffer_tui.engine.sweep.objective import final_score

TESTS = Path(__file__).resolve().parents[2]  # slow_env.py lives there


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", *args],
                          capture_output=True, text=True, timeout=300, env=env, cwd=TESTS)


@pytest.mark.e2e
@pytest.mark.slow
def test_an_envs_info_numbers_are_logged_everywhere_a_metric_goes(tmp_path):
    pytest.importorskip("tensorboard", reason="the TensorBoard tags: the tensorboard extra")
    result = _cli("train", "slow_env:make_env", "--headless", "--runs-dir", str(tmp_path),
                  "--train.total-timesteps", "4096", "--env.reset-seconds", "0",
                  "--env.episode-steps", "16", "--env.info-fields", "true")
    assert result.returncode == 0, result.stdout + result.stderr
    (run,) = rd.list_runs(tmp_path)
    rows = [row for row in read_metrics(run) if row.get("episodes")]
    assert rows, "no epoch ended episodes"
    assert all(row["distance"] == 3.5 and row["episode.goal"] == 1.0 for row in rows)
    assert all(0.0 <= row["is_success"] <= 1.0 for row in rows)
    assert "label" not in rows[-1]
    tags = read_scalars(run / "tensorboard")
    assert {"env/is_success", "env/distance", "env/episode.goal"} <= set(tags)
    # a sweep objective by its tracker name
    assert final_score(read_metrics(run), "env/distance") == 3.5
    events = (run / rd.EVENTS_FILE).read_text()
    assert events.count("not numbers, not logged: label (str)") == 1, events
    # runs --compare's final figures
    assert final_figures(load_run(run))["env/distance"] == 3.5
