"""Learning proof for multi-process learners: `puffer-tui train squared --train.nproc 2
--headless` (torchrun, 2 CPU ranks, DDP) solves squared (score >= 0.9) within a small budget.
Marked `learning` like tests/learning/test_learning.py. Each rank steps 512 envs, so the two ranks
together collect the preset's 1024 envs' worth per epoch."""

import json
import subprocess
import sys

import pytest

from puffer_tui.benchmarks.time_to_solve import SOLVED
from puffer_tui.engine.shared import run_dir as rd

pytestmark = pytest.mark.learning

BUDGET = 2_000_000  # all ranks' steps; one process solves squared in about 0.9M
MIN_EPISODES = 64


def test_two_ranks_solve_squared(tmp_path):
    metric, threshold = SOLVED["squared"]
    done = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "squared", "--headless",
         "--runs-dir", str(tmp_path), "--train.nproc", "2", "--vec.num-envs", "512",
         "--train.torch-threads", "1", "--train.total-timesteps", str(BUDGET),
         "--train.stop-at-score", str(threshold)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = [p for p in tmp_path.iterdir() if rd.is_run_dir(p)]
    rows = [json.loads(line) for line in (run / rd.METRICS_FILE).read_text().splitlines()]
    scores = [r[metric] for r in rows if r.get("episodes", 0) >= MIN_EPISODES and metric in r]
    print(f"\nsquared, 2 ranks: best {metric} {max(scores, default=None)}, "
          f"last {scores[-3:]}, median SPS {sorted(r['sps'] for r in rows)[len(rows) // 2]:,.0f}")
    assert scores and max(scores) >= threshold, scores
    assert rd.read_status(run)["ranks"] == 2
