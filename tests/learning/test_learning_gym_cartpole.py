"""Learning proof for a Gymnasium id: `puffer-tui train gym:CartPole-v1 --headless` (Python
CartPole, the multiprocessing backend, the preset envs/gym_presets/CartPole-v1.toml) reaches a
mean episode length >= 475. Marked `learning`: about a minute on 2 CPU cores."""

import subprocess
import sys

import pytest

from puffer_tui.engine.runtime.metrics import read_metrics
from puffer_tui.engine.shared import run_dir as rd

pytestmark = pytest.mark.learning


def solved_at(rows, metric="episode_length", threshold=475.0, min_episodes=8):
    """The step of the first of two consecutive epochs at the threshold (None if never), as
    benchmarks/time_to_solve.py counts a solve."""
    streak = []
    for row in rows:
        if row.get(metric) is None or row.get("episodes", 0) < min_episodes:
            continue
        streak = streak + [row] if row[metric] >= threshold else []
        if len(streak) == 2:
            return streak[0]["global_step"]
    return None


def test_gym_cartpole_is_solved_from_the_command_line(tmp_path):
    runs = tmp_path / "runs"
    result = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "gym:CartPole-v1", "--headless",
         "--runs-dir", str(runs), "--train.torch-threads", "1"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    (run,) = rd.list_runs(runs)
    rows = read_metrics(run)
    step = solved_at(rows)
    lengths = [round(r["episode_length"]) for r in rows if r.get("episode_length")]
    print(f"\ngym:CartPole-v1 solved at step {step}; last lengths {lengths[-8:]}")
    assert step is not None, f"not solved; episode lengths by epoch: {lengths}"
