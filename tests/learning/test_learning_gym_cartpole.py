"""Learning proof for a Gymnasium id: `puffer-tui train gym:CartPole-v1 --headless` (Python
CartPole, the multiprocessing backend, the preset envs/gym_presets/CartPole-v1.toml) reaches a
mean episode length >= 475 within 80k steps (the preset's budget is 150k; its learning rate then anneals
to 0 by 80k, and the default seed solves at 25,088, 2026-11-27). Marked `learning`: about 30 s on 2 CPU cores."""

import subprocess
import sys

import pytest

from puffer_tui.engine.runtime.metrics import read_metrics
from puffer_tui.engine.shared import run_dir as rd

pytestmark = pytest.mark.learning


def solved_at(rows, metric="episode_length", threshold=475.0, min_episodes=20):
    """The first step at which the mean `metric` of the newest `min_episodes` or more finished
    episodes (whole epochs, counted back) is at the threshold (None if never). The preset's
    epochs are 256 steps, so one epoch rarely holds a whole 500-step episode per env: a mean
    over epochs, as `bench learn` and `bench train --peer sb3` count."""
    window = []  # (episodes, mean) of the newest epochs with episodes
    for row in rows:
        if row.get(metric) is None or not row.get("episodes"):
            continue
        window.append((row["episodes"], row[metric]))
        while sum(n for n, _ in window[1:]) >= min_episodes:
            window.pop(0)
        count = sum(n for n, _ in window)
        if count >= min_episodes and sum(n * m for n, m in window) / count >= threshold:
            return row["global_step"]
    return None


def test_gym_cartpole_is_solved_from_the_command_line(tmp_path):
    runs = tmp_path / "runs"
    result = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "gym:CartPole-v1", "--headless",
         "--runs-dir", str(runs), "--train.torch-threads", "1",
         "--train.total-timesteps", "80000"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    (run,) = rd.list_runs(runs)
    rows = read_metrics(run)
    step = solved_at(rows)
    lengths = [round(r["episode_length"]) for r in rows if r.get("episode_length")]
    print(f"\ngym:CartPole-v1 solved at step {step}; last lengths {lengths[-8:]}")
    assert step is not None, f"not solved; episode lengths by epoch: {lengths}"
