"""`puffer-tui stop RUN | --all`: from any shell, stop running engines with a final checkpoint
and say where it is; and flags taken only as spelled out (no argparse abbreviations)."""

import os
import signal
import subprocess

import pytest
from engine_harness import make_run, wait_until
from stop_harness import (
    CLI,
    child_env,
    cleanup,
    engine_gone,
    events,
    read_until,
    the_run,
    train,
    wait_training,
)

from puffer_tui.app import headless_run
from puffer_tui.app.cli import main
from puffer_tui.app.engine_launcher import launch_engine
from puffer_tui.engine.shared import exit_codes
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import list_checkpoints


def stop(runs, *argv, env=None):
    return subprocess.run([*CLI, "stop", *argv, "--runs-dir", str(runs)], capture_output=True,
                          text=True, timeout=180, env=env or child_env())


def start_engine(runs, env=None):
    """An engine training a run under `runs` that no command watches."""
    if env:
        os.environ.update(env)
    try:
        run = make_run(runs, **{"train.total_timesteps": 10**9})
        handle = launch_engine(run)
    finally:
        for key in env or {}:
            os.environ.pop(key)
    wait_training(run)
    return run, handle


def assert_stopped_line(line: str, run) -> None:
    (checkpoint,) = list_checkpoints(run)  # no periodic ones: the final one
    steps = rd.run_info(run).global_step
    assert line == f"{run.name} stopped: {steps:,} steps; checkpoint {checkpoint}", line
    assert engine_gone(run) and rd.run_state(run) == "stopped"
    assert "stop asked by `puffer-tui stop`" in events(run)


def test_a_detached_run_is_stopped_by_name(tmp_path):
    runs = tmp_path / "runs"
    cli = train(runs, "--detach", stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        read_until(cli.stdout.fileno(), "outlives this command", bytearray())
        run = the_run(runs)
        wait_training(run)
        cli.send_signal(signal.SIGINT)
        assert cli.wait(60) == exit_codes.LEFT_RUNNING
        assert not engine_gone(run), "--detach left the engine training"
        result = stop(runs, run.name)
        assert result.returncode == 0, result.stdout + result.stderr
        assert_stopped_line(result.stdout.strip().splitlines()[-1], run)
        # once more: nothing to stop, one line, bad input
        again = stop(runs, run.name)
        assert again.returncode == 2
        assert again.stderr.strip().splitlines() == [
            f"puffer-tui stop: error: {run.name} is not training "
            f"(stopped: {rd.run_info(run).global_step:,} steps; checkpoint "
            f"{list_checkpoints(run)[0]})"]
        latest = stop(runs, "latest")  # the newest run that trains: there is none
        assert latest.returncode == 2
        assert latest.stderr.startswith(f"puffer-tui stop: error: no run in {runs} is "
                                        f"training; the latest is {run.name} (stopped)")
    finally:
        cleanup(runs, cli)


@pytest.mark.slow
def test_stop_all_stops_every_running_engine_and_only_those(tmp_path):
    runs = tmp_path / "runs"
    handles = []
    try:
        finished = make_run(runs, **{"train.total_timesteps": 4096})
        done = launch_engine(finished)
        for _ in range(2):  # the three engines start side by side, not one after another
            run = make_run(runs, **{"train.total_timesteps": 10**9})
            handles.append((run, launch_engine(run)))
        assert done.wait(120) == 0
        for run, _ in handles:
            wait_training(run)
        result = stop(runs, "--all")
        assert result.returncode == 0, result.stdout + result.stderr
        lines = [ln for ln in result.stdout.splitlines() if not ln.startswith("waiting")]
        assert len(lines) == 2, result.stdout
        for run, handle in handles:
            assert handle.wait(30) == 0
            (line,) = [ln for ln in lines if ln.startswith(run.name)]
            assert_stopped_line(line, run)
        assert "stop asked" not in events(finished)
        nothing = stop(runs, "--all")
        assert nothing.returncode == 0
        assert nothing.stdout.strip() == f"no engine is running under {runs.resolve()}"
    finally:
        cleanup(runs)
        for _, handle in handles:
            handle.wait(30)


def test_the_wait_is_bounded_and_says_the_engine_goes_on_stopping(tmp_path):
    # the engine is held inside its final checkpoint (tests/engine_patches) longer than the
    # 1 s the command may wait: it says so and ends; the engine then finishes on its own
    runs, gate = tmp_path / "runs", tmp_path / "gate"
    handle = None
    try:
        run, handle = start_engine(runs, env={"PYTHONPATH": child_env()["PYTHONPATH"],
                                              "PUFFER_TEST_CHECKPOINT_GATE": str(gate)})
        result = stop(runs, run.name, "--timeout", "1")
        assert result.returncode == 1, result.stdout + result.stderr
        pid = rd.read_status(run)["pid"]
        assert result.stdout.strip().splitlines()[-1] == (
            f"{run.name}: still stopping after 1 s (engine pid {pid}); it checkpoints and "
            f"exits on its own, `puffer-tui runs` shows when")
        assert os.path.exists(f"{gate}.waiting")
        gate.touch()
        assert handle.wait(60) == 0
        wait_until(lambda: engine_gone(run), 30, what="the engine to stop")
        assert list_checkpoints(run)
    finally:
        gate.touch()
        cleanup(runs)
        if handle is not None:
            handle.wait(30)


@pytest.mark.parametrize("argv, message", [
    ([], "name the RUN to stop (a run name or path, or latest), or give --all; "
         "`puffer-tui runs` lists them"),
    (["x", "--all"], "give a RUN or --all, not both"),
    (["nope"], "no run 'nope': not a directory, and not a run in {runs}"),
    (["latest"], "no runs in {runs}; start one with `puffer-tui train ENV`"),
    (["x", "--timeout", "-1"], "--timeout -1: give the seconds to wait, 0 or more"),
    (["--al"], "unrecognized argument '--al'; did you mean --all?"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    runs = tmp_path / "runs"
    assert main(["stop", *argv, "--runs-dir", str(runs)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"puffer-tui stop: error: {message.format(runs=runs)}"]
    assert not runs.exists()


@pytest.fixture
def started(monkeypatch):
    """Stands in for the engine: records each headless run the command would start."""
    runs = []
    monkeypatch.setattr(headless_run, "run_headless",
                        lambda run_dir, *args, **kwargs: runs.append(run_dir) or 0)
    return runs


@pytest.mark.parametrize("argv, message", [
    (["train", "squared", "--headles"],
     "puffer-tui train: error: unrecognized argument '--headles'; did you mean --headless?"),
    (["train", "squared", "--headless", "--train.learning-r", "0.1"],
     "puffer-tui train: error: unrecognized argument '--train.learning-r'; "
     "did you mean --train.learning-rate?"),
    (["train", "squared", "--headless", "--det"],
     "puffer-tui train: error: unrecognized argument '--det'; did you mean --detach?"),
    (["eval", "latest", "--episode", "3"],
     "puffer-tui eval: error: unrecognized argument '--episode'; did you mean --episodes?"),
    (["bench", "train", "--budg", "3"],
     "puffer-tui bench: error: unrecognized argument '--budg'; did you mean --budget?"),
    (["--vers"], "puffer-tui: error: unrecognized argument '--vers'; did you mean --version?"),
])
def test_abbreviated_flags_are_refused_with_the_flag_meant(tmp_path, capsys, started, argv,
                                                           message):
    runs = tmp_path / "runs"
    assert main([*argv, "--runs-dir", str(runs)] if argv[0] != "--vers" else argv) == 2
    assert capsys.readouterr().err.splitlines()[-1] == message
    assert not started and not runs.exists()
