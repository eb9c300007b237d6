"""Run directories: naming, the runs root, finding runs, and telling their state."""

import json
import os
import subprocess
import sys
import time

import pytest

from puffer_tui.engine.shared import run_dir as rd


def make_run(root, env="squared", now=None):
    path = rd.create_run_dir(env, root, now=now)
    (path / rd.CONFIG_FILE).write_text(f'env_name = "{env}"\n')
    return path


def test_name_is_env_and_local_timestamp(tmp_path):
    when = time.mktime((2026, 11, 22, 0, 14, 1, 0, 0, -1))
    path = rd.create_run_dir("squared", tmp_path, now=when)
    assert path.name == "squared-20261122-001401"
    assert (path / rd.CHECKPOINT_DIR).is_dir()


def test_same_second_gets_a_suffix(tmp_path):
    first = rd.create_run_dir("squared", tmp_path, now=1e9)
    second = rd.create_run_dir("squared", tmp_path, now=1e9)
    assert second.name == first.name + "-2"


def test_runs_root_precedence(tmp_path, monkeypatch):
    monkeypatch.delenv(rd.RUNS_ENV_VAR, raising=False)
    assert rd.runs_root() == rd.Path("runs")
    monkeypatch.setenv(rd.RUNS_ENV_VAR, str(tmp_path / "env"))
    assert rd.runs_root() == tmp_path / "env"
    assert rd.runs_root(tmp_path / "flag") == tmp_path / "flag"


def test_find_run_by_name_path_and_latest(tmp_path):
    old = make_run(tmp_path, now=1e9)
    new = make_run(tmp_path, "cartpole", now=2e9)
    os.utime(old / rd.CONFIG_FILE, (1, 1))
    assert rd.find_run(old.name, tmp_path) == old
    assert rd.find_run(str(new), tmp_path) == new
    assert rd.find_run("latest", tmp_path) == new


def test_find_run_errors_name_the_problem(tmp_path):
    with pytest.raises(rd.RunDirError, match="no run 'nope'"):
        rd.find_run("nope", tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(rd.RunDirError, match="not a run directory"):
        rd.find_run("empty", tmp_path)
    with pytest.raises(rd.RunDirError, match="no runs"):
        rd.find_run("latest", tmp_path / "missing")


def test_state_from_status(tmp_path):
    run = make_run(tmp_path)
    assert rd.run_state(run) == "new"
    status = {"state": "running", "pid": os.getpid()}
    rd.write_json_atomic(run / rd.STATUS_FILE, status)
    assert rd.run_state(run) == "running"
    rd.write_json_atomic(run / rd.STATUS_FILE, {**status, "state": "finished"})
    assert rd.run_state(run) == "finished"


def test_live_state_of_a_dead_process_is_error(tmp_path):
    run = make_run(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    rd.write_json_atomic(run / rd.STATUS_FILE, {"state": "running", "pid": child.pid})
    assert rd.run_state(run) == "error"
    assert "died" in rd.run_info(run).detail


def test_run_info_reads_metrics_and_checkpoints(tmp_path):
    run = make_run(tmp_path)
    rows = [{"epoch": 1, "global_step": 100, "score": 0.25},
            {"epoch": 2, "global_step": 200, "score": 0.75},
            {"epoch": 3, "global_step": 300, "score": 0.5}]
    text = "".join(json.dumps(r) + "\n" for r in rows) + '{"epoch": 4, "glob'  # torn last line
    (run / rd.METRICS_FILE).write_text(text)
    (run / rd.CHECKPOINT_DIR / "step-000000000300-epoch-00000003.pt").write_bytes(b"x")
    info = rd.run_info(run)
    assert (info.env, info.state, info.global_step, info.best_score) == ("squared", "new", 300, 0.75)
    assert info.last_checkpoint.name.startswith("step-000000000300")


def test_list_runs_skips_non_runs(tmp_path):
    make_run(tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "file.txt").write_text("x")
    assert [p.name for p in rd.list_runs(tmp_path)] == [p.name for p in tmp_path.glob("squared-*")]


# -- what the run dir reveals to other users, and what killed engines leave behind -----------


def test_run_dir_is_private_whatever_the_umask(tmp_path):
    import stat

    old = os.umask(0o022)
    try:
        run = rd.create_run_dir("squared", tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(run.stat().st_mode) == 0o700
    assert stat.S_IMODE((run / rd.CHECKPOINT_DIR).stat().st_mode) == 0o700


def test_an_older_run_dir_is_made_private_and_its_files_unreadable_to_others(tmp_path):
    import stat

    run = tmp_path / "squared-20260101-000000"
    (run / rd.CHECKPOINT_DIR).mkdir(parents=True)
    os.chmod(run, 0o755)
    for name in (rd.EVENTS_FILE, rd.METRICS_FILE, rd.ENGINE_OUT_FILE):
        (run / name).write_text("x")
        os.chmod(run / name, 0o644)
    rd.restrict_permissions(run)
    assert stat.S_IMODE(run.stat().st_mode) == 0o700
    for name in (rd.EVENTS_FILE, rd.METRICS_FILE, rd.ENGINE_OUT_FILE):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o600, name


def test_engine_files_are_created_owner_only(tmp_path):
    import stat

    from puffer_tui.engine.runtime.metrics import MetricsWriter
    from puffer_tui.engine.shared.events import EventLog

    old = os.umask(0o022)
    try:
        EventLog(tmp_path).info("hello")
        writer = MetricsWriter(tmp_path, tensorboard=False)
        writer.write({"epoch": 1})
        writer.close()
        rd.write_json_atomic(tmp_path / rd.STATUS_FILE, {"state": "running"})
    finally:
        os.umask(old)
    for name in (rd.EVENTS_FILE, rd.METRICS_FILE, rd.STATUS_FILE):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name


def test_forkserver_dirs_of_killed_engines_are_removed_and_live_ones_kept(tmp_path):
    import socket

    from puffer_tui.engine.vec.mp.worker_exit import STALE_AFTER_S, remove_stale_forkserver_dirs

    def listener(name):
        directory = tmp_path / name
        directory.mkdir()
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(directory / "listener-abc123"))
        sock.listen(1)
        return directory, sock

    dead, sock = listener("pymp-dead0001")
    sock.close()  # its process was SIGKILLed: the file stays, nobody listens
    live, live_sock = listener("pymp-live0001")
    other = tmp_path / "pymp-other001"  # not a forkserver's: something else in it
    other.mkdir()
    (other / "data").write_text("x")
    young, young_sock = listener("pymp-young001")
    young_sock.close()
    old = time.time() - STALE_AFTER_S - 5
    for directory in (dead, live, other):
        os.utime(directory, (old, old))
    try:
        assert remove_stale_forkserver_dirs(str(tmp_path)) == 1
        assert not dead.exists()
        assert live.exists() and other.exists()
        assert young.exists()  # may be a forkserver starting right now
    finally:
        live_sock.close()
