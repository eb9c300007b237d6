"""A researcher's slow env through MODULE:CALLABLE with the default sizes (two workers of 16
envs, one stepped inline): its slow resets train; a real hang ends in a clear error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from puffer_tui.engine.shared import run_dir as rd

TESTS = Path(__file__).resolve().parents[3]  # slow_env.py lives there


def _train(runs: Path, *flags: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "slow_env:make_env", "--headless",
         "--runs-dir", str(runs), "--vec.num-envs", "32", "--train.total-timesteps", "2048",
         *flags], capture_output=True, text=True, timeout=400, env=env, cwd=TESTS)


@pytest.mark.e2e
@pytest.mark.slow
def test_an_env_whose_resets_take_seconds_trains_with_the_default_hang_limit(tmp_path):
    # 16 envs a worker, 2 s a reset: 32 s per block, twice the 15 s floor
    result = _train(tmp_path, "--env.reset-seconds", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "finished: 2,048 steps" in result.stdout, result.stdout
    assert "is the env hung" not in result.stdout + result.stderr


@pytest.mark.e2e
@pytest.mark.slow
def test_a_hung_env_ends_the_run_with_an_error_naming_the_measured_times(tmp_path):
    result = _train(tmp_path, "--env.reset-seconds", "0.2", "--env.hang-at-step", "3")
    assert result.returncode not in (0, 2), result.stdout + result.stderr
    (run,) = rd.list_runs(tmp_path)
    status = rd.read_status(run)
    assert status["state"] == "error", status
    error = status["error"]
    # the floor: a 200 ms reset (1 s between heartbeats at most) is far below it
    assert "no answer within 15 s" in error and "(is the env hung?)" in error, error
    assert "measured between a worker's signs of progress (resets " in error, error
    assert "--vec.worker-timeout" in error, error
    assert "slow_env.py" in error and "time.sleep(1e9)" in error, error  # where it hangs
