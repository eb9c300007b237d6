"""`train --headless` against an engine that is slow to answer, and a double Ctrl-C while the
engine writes its final checkpoint (the engine is slowed through tests/engine_patches)."""

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tree_paths import TESTS_DIR

from puffer_tui.engine.shared import exit_codes
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import list_checkpoints, parse_name
from tests.engine.runtime.test_recovery_faults import assert_nothing_lost

PATCHES = TESTS_DIR / "engine_patches"
TINY = ["--vec.num-envs", "64", "--train.horizon", "16", "--train.minibatch-size", "256",
        "--train.hidden-size", "32", "--train.torch-threads", "1"]


def patched_env(**values) -> dict:
    path = os.pathsep.join(filter(None, [str(PATCHES), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **values}


def wait_for(predicate, what: str, limit: float = 120.0):
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def test_headless_waits_for_an_engine_slow_to_answer(tmp_path):
    # The hello comes 6 s late (more than the 5 s a client waits by default): the command
    # waits, says so, and follows the run to its end; its checkpoint and metrics are complete.
    result = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "squared", "--headless",
         "--runs-dir", str(tmp_path), *TINY, "--train.total-timesteps", "2048"],
        capture_output=True, text=True, timeout=180, env=patched_env(PUFFER_TEST_HELLO_DELAY="6"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "waiting for the engine" in result.stdout and "to answer" in result.stdout
    assert "finished: 2,048 steps" in result.stdout
    (run,) = rd.list_runs(tmp_path)
    assert rd.run_state(run) == "finished"
    assert_nothing_lost(run)
    assert [parse_name(p.name)[0] for p in list_checkpoints(run)] == [2048]


def test_second_ctrl_c_says_the_final_checkpoint_is_being_saved(tmp_path):
    gate = tmp_path / "let-the-checkpoint-through"
    runs = tmp_path / "runs"
    cli = subprocess.Popen(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "squared", "--headless",
         "--runs-dir", str(runs), *TINY, "--train.total-timesteps", str(10**9),
         "--train.checkpoint-interval", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=patched_env(PUFFER_TEST_CHECKPOINT_GATE=str(gate)))
    lines: queue.Queue = queue.Queue()
    seen: list[str] = []
    threading.Thread(target=lambda: [lines.put(x) for x in cli.stdout], daemon=True).start()

    def printed(text):
        while not lines.empty():
            seen.append(lines.get())
        return any(text in line for line in seen)

    try:
        wait_for(lambda: printed("Ctrl-C checkpoints and stops"), "the display to start")
        wait_for(lambda: rd.list_runs(runs) and rd.run_state(rd.list_runs(runs)[0]) == "running",
                 "the run to start")
        (run,) = rd.list_runs(runs)
        cli.send_signal(signal.SIGINT)
        wait_for(lambda: printed("asking the engine to checkpoint"), "the first Ctrl-C")
        wait_for(Path(f"{gate}.waiting").exists, "the engine to begin its final checkpoint")
        cli.send_signal(signal.SIGINT)  # the engine is held inside that checkpoint save
        assert cli.wait(60) == exit_codes.STOPPED  # the engine goes on to its checkpoint
        printed("")
        output = "".join(seen)
        assert "last checkpoint none" not in output, output
        assert "saving its final checkpoint" in output and "--resume" in output, output
        assert not list_checkpoints(run)
        gate.touch()
        wait_for(lambda: rd.run_state(run) == "stopped", "the engine to stop")
        assert list_checkpoints(run), "the engine saved the checkpoint it was saving"
    finally:
        gate.touch()
        if cli.poll() is None:
            cli.kill()
            cli.wait()
