"""How an engine process ends: everything Python does at exit, and no interpreter
finalization after it (freeing torch's modules cost a noticeable CPU time after the engine's
last word, while the app, `train --headless`, `stop` and the tests waited for the process)."""

import os
import subprocess
import sys

from engine_harness import make_run
from tree_paths import TESTS_DIR

from puffer_tui.engine.shared import run_dir as rd

PATCHES = TESTS_DIR / "engine_patches"


def marked_env(prefix) -> dict:
    path = os.pathsep.join(filter(None, [str(PATCHES), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "PUFFER_TEST_EXIT_MARKS": str(prefix)}


def test_the_marks_see_an_ordinary_exit(tmp_path):
    # the check below can fail: a plain Python process leaves both marks
    prefix = tmp_path / "plain"
    subprocess.run([sys.executable, "-c", "import torch"], env=marked_env(prefix), check=True,
                   timeout=120)
    assert os.path.exists(f"{prefix}.atexit") and os.path.exists(f"{prefix}.finalized")


def test_a_finished_engine_runs_its_exit_handlers_and_skips_finalization(tmp_path):
    run = make_run(tmp_path / "runs", **{"train.total_timesteps": 1024})
    prefix = tmp_path / "engine"
    result = subprocess.run([sys.executable, "-m", "puffer_tui.engine", str(run)],
                            env=marked_env(prefix), capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert rd.run_state(run) == "finished"
    assert "training finished at step 1024" in result.stdout, result.stdout  # flushed
    assert os.path.exists(f"{prefix}.atexit"), "the engine's atexit handlers did not run"
    assert not os.path.exists(f"{prefix}.finalized"), "the engine finalized its interpreter"
