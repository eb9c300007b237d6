"""Learning proof for a Gymnasium id: `puffer-tui train gym:CartPole-v1 --headless` (Python
CartPole, the multiprocessing backend, the preset envs/gym_presets/CartPole-v1.toml) reaches a
mean episode length >= 475 within 80k steps (the preset's budget is 150k; its learning rate then
anneals to 0 by 80k) for at least 2 of seeds 1-3. One seed is not a proof on every CPU: seed 1
solves at 25,088 on the Xeon dev box but not within 80k on a 2-core AMD EPYC, where OpenBLAS
takes another kernel (with OPENBLAS_CORETYPE=Haswell it solves at 45,824); seeds 2 and 3
solve there at 35,072 and 50,432. Marked `learning`: it trains to the threshold."""

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


def solve(runs, seed: int):
    """(step it solved at or None, the episode lengths by epoch) of one seed's run."""
    result = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "gym:CartPole-v1", "--headless",
         "--runs-dir", str(runs), "--train.torch-threads", "1",
         "--train.total-timesteps", "80000", "--train.seed", str(seed)],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    (run,) = rd.list_runs(runs)
    rows = read_metrics(run)
    return solved_at(rows), [round(r["episode_length"]) for r in rows if r.get("episode_length")]


def test_gym_cartpole_is_solved_from_the_command_line(tmp_path):
    solved, failed = [], {}
    for seed in (1, 2, 3):
        step, lengths = solve(tmp_path / f"seed{seed}", seed)
        print(f"\ngym:CartPole-v1 seed {seed} solved at step {step}; last lengths {lengths[-8:]}")
        if step is None:
            failed[seed] = lengths
        else:
            solved.append(seed)
        if len(solved) == 2:
            break
    assert len(solved) >= 2, f"solved: seeds {solved}; episode lengths by epoch of the others: {failed}"
