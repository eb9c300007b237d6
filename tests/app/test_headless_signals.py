"""`train --headless` told to end by Ctrl-C through a pipe, SIGTERM or SIGHUP: the engine it
started (in its own session, out of the signals' reach) is stopped with a final checkpoint,
and the command says so. Each test fails on the code before app/stop_signals.py: rich met
the dead pipe with SystemExit before the stop went out, and SIGTERM/SIGHUP killed the command
outright; the engine trained on in all three."""

import os
import signal
import subprocess

import pytest
from engine_harness import wait_until
from stop_harness import (
    CLI,
    FOREVER,
    child_env,
    cleanup,
    engine_gone,
    events,
    read_until,
    the_run,
    train,
    wait_training,
)

from puffer_tui.engine.shared import exit_codes
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import list_checkpoints


def assert_stopped_with_checkpoint(run, signal_name: str) -> str:
    """The engine is gone, the run stopped with a final checkpoint, events.log says why."""
    assert engine_gone(run), rd.read_status(run)
    assert rd.run_state(run) == "stopped"
    (checkpoint,) = list_checkpoints(run)  # no periodic ones: this is the final one
    text = events(run)
    assert f"stop asked by {signal_name} to `puffer-tui train --headless`" in text, text
    assert "stopped at step" in text, text
    return str(checkpoint)


def test_ctrl_c_with_the_pipe_reader_gone_stops_the_engine(tmp_path):
    # `train --headless | tee log`, Ctrl-C: tee dies of the same SIGINT, so the command's
    # first word after it meets a pipe with no reader. It must still stop the engine, and
    # say what happened on stderr (still the terminal).
    runs = tmp_path / "runs"
    cli = train(runs, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = bytearray()
        read_until(cli.stdout.fileno(), "Ctrl-C checkpoints and stops", seen)
        run = the_run(runs)
        wait_training(run)
        cli.stdout.close()  # the reader is gone, as tee is
        cli.send_signal(signal.SIGINT)
        assert cli.wait(120) == exit_codes.STOPPED
        err = cli.stderr.read().decode()
        checkpoint = assert_stopped_with_checkpoint(run, "SIGINT")
        assert "Ctrl-C: asking the engine to checkpoint and stop" in err, err
        assert f"stopped on Ctrl-C: {rd.run_info(run).global_step:,} steps; " \
               f"checkpoint {checkpoint}" in err, err
        assert "Traceback" not in err, err
    finally:
        cleanup(runs, cli)


def test_sigterm_twice_as_timeout_sends_it_stops_the_engine_and_says_where(tmp_path):
    # `timeout` sends SIGTERM to the command and then to its process group: the second
    # must not end the wait for the final checkpoint (held here until the test lets it go)
    runs, gate = tmp_path / "runs", tmp_path / "gate"
    cli = train(runs, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                env=child_env(PUFFER_TEST_CHECKPOINT_GATE=str(gate)))
    try:
        seen = bytearray()
        read_until(cli.stdout.fileno(), "Ctrl-C checkpoints and stops", seen)
        run = the_run(runs)
        wait_training(run)
        cli.send_signal(signal.SIGTERM)
        read_until(cli.stdout.fileno(), "SIGTERM: asking the engine to checkpoint", seen)
        wait_until(lambda: os.path.exists(f"{gate}.waiting"), 120,
                   what="the engine to begin its final checkpoint")
        cli.send_signal(signal.SIGTERM)
        gate.touch()
        out = read_until(cli.stdout.fileno(), "resume with:", seen)
        assert cli.wait(120) == exit_codes.STOPPED, out
        checkpoint = assert_stopped_with_checkpoint(run, "SIGTERM")
        assert f"stopped on SIGTERM: {rd.run_info(run).global_step:,} steps; " \
               f"checkpoint {checkpoint}" in out, out
        assert "not waiting any longer" not in out, out
    finally:
        gate.touch()
        cleanup(runs, cli)


def test_sighup_with_the_terminal_gone_stops_the_engine(tmp_path):
    # an SSH connection that drops: the terminal is gone (writes to it fail with EIO) and
    # the hangup comes twice (the kernel, then the shell); the command neither crashes on
    # its output nor leaves the engine training
    runs = tmp_path / "runs"
    master, slave = os.openpty()
    cli = train(runs, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                start_new_session=True)
    os.close(slave)
    try:
        seen = bytearray()
        read_until(master, "Ctrl-C checkpoints and stops", seen)
        run = the_run(runs)
        wait_training(run)
        os.close(master)  # the terminal hangs up: a display blocked on a full pty gets EIO
        cli.send_signal(signal.SIGHUP)
        cli.send_signal(signal.SIGHUP)
        assert cli.wait(120) == exit_codes.STOPPED
        assert_stopped_with_checkpoint(run, "SIGHUP")
    finally:
        cleanup(runs, cli)


@pytest.mark.slow
def test_a_signal_before_the_display_stops_the_engine_too(tmp_path):
    # SIGTERM while the command still waits for the engine's hello (delayed 8 s): the stop
    # goes over the socket the engine has opened, and the command waits for it
    runs = tmp_path / "runs"
    cli = train(runs, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                env=child_env(PUFFER_TEST_HELLO_DELAY="8"))
    try:
        seen = bytearray()
        read_until(cli.stdout.fileno(), "to answer", seen)
        run = the_run(runs)
        cli.send_signal(signal.SIGTERM)
        out = read_until(cli.stdout.fileno(), "resume with:", seen)
        assert cli.wait(120) == exit_codes.STOPPED, out
        checkpoint = assert_stopped_with_checkpoint(run, "SIGTERM")
        assert "SIGTERM: asking the engine to checkpoint and stop" in out, out
        assert "stopped on SIGTERM: " in out and f"checkpoint {checkpoint}" in out, out
    finally:
        cleanup(runs, cli)


def test_detach_leaves_the_engine_training_and_says_how_to_reach_it(tmp_path):
    runs = tmp_path / "runs"
    cli = train(runs, "--detach", stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        seen = bytearray()
        read_until(cli.stdout.fileno(), "outlives this command (--detach)", seen)
        run = the_run(runs)
        wait_training(run)
        cli.send_signal(signal.SIGTERM)
        out = read_until(cli.stdout.fileno(), "stop it with", seen)
        assert cli.wait(60) == exit_codes.LEFT_RUNNING
        assert "SIGTERM: left training (--detach)" in out, out
        assert f"`puffer-tui attach {run}`" in out and f"`puffer-tui stop {run}`" in out, out
        assert rd.run_state(run) == "running" and not engine_gone(run)
        assert "stop asked" not in events(run)
    finally:
        cleanup(runs, cli)


def test_detach_needs_headless_and_nothing_is_created(tmp_path):
    runs = tmp_path / "runs"
    result = subprocess.run(
        [*CLI, "train", "squared", "--detach", "--runs-dir", str(runs), *FOREVER],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "puffer-tui train: error: --detach is for --headless (in the dashboard, q offers to "
        "detach and leave the engine training)"]
    assert not runs.exists()
