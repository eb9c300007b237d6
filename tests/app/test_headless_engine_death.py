"""`train --headless` whose engine dies without a word (SIGKILL of it or of its process group,
the OOM killer): the command says the engine died, of which signal, the last checkpoint and
the command that resumes it, and exits 1. Before, it printed the run's state as if the engine
had reported it ("error: ...; the engine failed") with neither the signal nor a way on."""

import json
import os
import signal
import subprocess

import pytest
from engine_harness import wait_until
from stop_harness import cleanup, read_until, the_run, train, wait_training

from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import list_checkpoints


def kill_and_read(runs, kill, *flags) -> tuple[int, str, object]:
    cli = train(runs, *flags, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        seen = bytearray()
        read_until(cli.stdout.fileno(), "Ctrl-C checkpoints and stops", seen)
        run = the_run(runs)
        wait_training(run)
        if "--train.checkpoint-interval" in flags:
            wait_until(lambda: list_checkpoints(run), 120, what="a periodic checkpoint")
        kill(json.loads((run / rd.STATUS_FILE).read_text())["pid"])
        code = cli.wait(120)
        seen += cli.stdout.read()
        return code, seen.decode(errors="replace"), run
    finally:
        cleanup(runs, cli)


@pytest.mark.parametrize("kill", [
    pytest.param(lambda pid: os.killpg(pid, signal.SIGKILL), id="process-group"),
    pytest.param(lambda pid: os.kill(pid, signal.SIGKILL), id="engine"),
])
def test_an_engine_killed_mid_run_is_reported_dead_with_the_way_to_resume(tmp_path, kill):
    code, out, run = kill_and_read(tmp_path / "runs", kill, "--train.checkpoint-interval", "1")
    assert code == 1, out
    tail = out[out.rindex("the engine (pid "):]  # the report, after the progress lines
    assert "killed by SIGKILL" in tail and "the engine (pid " in tail, tail
    last = rd.run_info(run).last_checkpoint
    assert f"last checkpoint {last}" in tail, tail
    assert f"resume with: puffer-tui train --resume {run} --headless" in tail, tail
    assert "goes on training" not in out and "Traceback" not in out, out


def test_an_engine_killed_before_any_checkpoint_says_there_is_nothing_to_resume(tmp_path):
    code, out, run = kill_and_read(tmp_path / "runs", lambda pid: os.killpg(pid, signal.SIGKILL))
    assert code == 1, out
    tail = out[out.rindex("the engine (pid "):]
    assert "killed by SIGKILL" in tail and "last checkpoint none" in tail, tail
    assert "nothing to resume from" in tail and "resume with" not in tail, tail
    assert list_checkpoints(run) == []
