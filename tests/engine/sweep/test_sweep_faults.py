"""Sweeps under faults: a study database locked by another process is reported within
seconds and the finished trial is still recorded when the lock goes; a trial whose driver
was SIGKILLed is adopted by `sweep --resume` (its engine trains on, its result is kept)
instead of being stopped and discarded; a SIGKILLed trial's status.json is made final."""

from __future__ import annotations

import os
import signal
import sqlite3
import time

import pytest
from sweep_harness import (
    ONE_THREAD,
    by_state,
    cli,
    cli_background,
    engine_starts,
    kill_everything,
    load_study,
    no_live_engine,
    wait_until,
)

from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared import sweep_settings as st

# bandit trials long enough to be caught running
LONGER = ["--train.total-timesteps", "400000", "--vec.num-envs", "64",
          "--train.minibatch-size", "1024", "--train.checkpoint-interval", "0",
          "--sweep.train.hidden-size", "16,64,log", *ONE_THREAD]


@pytest.fixture
def root(tmp_path):
    yield tmp_path
    kill_everything(tmp_path)


def running_trial(sweep_dir):
    if not (sweep_dir / st.SOCKET_FILE).exists():  # the driver is not up yet
        return None
    running = by_state(load_study(sweep_dir)).get("RUNNING", [])
    started = [t for t in running if "run_dir" in t.user_attrs
               and rd.read_status(rd.Path(t.user_attrs["run_dir"])).get("state") == "running"]
    return started[0] if started else None


def driver_out(sweep_dir) -> str:
    try:
        return (sweep_dir / st.DRIVER_OUT_FILE).read_text()
    except OSError:
        return ""


@pytest.mark.slow
def test_a_locked_database_is_reported_within_seconds_and_the_result_kept(root):
    watcher = cli_background("sweep", "bandit", "--trials", "1", "--parallel", "1",
                             "--headless", "--study", "lk", "--runs-dir", str(root), *LONGER)
    sweep_dir = root / "sweeps" / "lk"
    trial = wait_until(lambda: running_trial(sweep_dir), 180, "a running trial")
    run_dir = rd.Path(trial.user_attrs["run_dir"])
    lock = sqlite3.connect(sweep_dir / "study.db", timeout=30, isolation_level=None)
    try:
        lock.execute("BEGIN EXCLUSIVE")  # another process holds the study (a backup, a viewer)
        locked_at = time.monotonic()
        wait_until(lambda: "locked" in driver_out(sweep_dir), 20, "the driver to say so")
        assert time.monotonic() - locked_at < 20
        # the trial ends while the database is locked: its result must wait, not vanish
        wait_until(lambda: rd.read_status(run_dir).get("state") in ("finished", "stopped"),
                   240, "the trial's engine to end")
        time.sleep(3)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    output, _ = watcher.communicate(timeout=120)
    assert watcher.returncode == 0, output + driver_out(sweep_dir)
    study = load_study(sweep_dir)
    assert [t.state.name for t in study.trials] == ["COMPLETE"], driver_out(sweep_dir)
    assert "free again" in driver_out(sweep_dir)


def test_a_trial_of_a_killed_driver_is_adopted_by_resume_and_its_result_kept(root):
    watcher = cli_background("sweep", "bandit", "--trials", "1", "--parallel", "1",
                             "--headless", "--study", "ad", "--runs-dir", str(root), *LONGER)
    sweep_dir = root / "sweeps" / "ad"
    trial = wait_until(lambda: running_trial(sweep_dir), 180, "a running trial")
    os.kill(int((sweep_dir / st.PID_FILE).read_text()), signal.SIGKILL)
    watcher.communicate(timeout=60)
    run_dir = rd.Path(trial.user_attrs["run_dir"])
    assert rd.engine_alive(rd.read_status(run_dir)), "the orphan should still be training"

    resumed = cli("sweep", "--resume", "ad", "--headless", "--runs-dir", str(root))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    study = load_study(sweep_dir)
    assert [t.state.name for t in study.trials] == ["COMPLETE"], driver_out(sweep_dir)
    assert study.trials[0].number == trial.number and study.trials[0].values
    assert "adopted" in driver_out(sweep_dir)
    assert engine_starts(run_dir) == 1  # followed to its end, not rerun
    assert rd.read_status(run_dir)["state"] == "finished"
    assert no_live_engine(root)


@pytest.mark.slow
def test_a_sigkilled_trial_gets_a_final_status(root):
    watcher = cli_background("sweep", "bandit", "--trials", "1", "--parallel", "1",
                             "--headless", "--study", "kt", "--runs-dir", str(root), *LONGER)
    sweep_dir = root / "sweeps" / "kt"
    trial = wait_until(lambda: running_trial(sweep_dir), 180, "a running trial")
    run_dir = rd.Path(trial.user_attrs["run_dir"])
    os.killpg(rd.read_status(run_dir)["pid"], signal.SIGKILL)
    output, _ = watcher.communicate(timeout=120)
    status = rd.read_status(run_dir)
    assert status["state"] == "error", status
    assert "SIGKILL" in status["error"]
    assert by_state(load_study(sweep_dir))["FAIL"][0].number == trial.number
