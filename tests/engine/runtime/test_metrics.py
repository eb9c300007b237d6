"""metrics.jsonl rows, and the optional TensorBoard copy."""

import errno
import json
import os

import pytest
from tensorboard_reader import read_scalars

from puffer_tui.engine.runtime import metrics
from puffer_tui.engine.shared.run_dir import METRICS_FILE


def test_rows_are_json_lines_with_non_finite_as_null(tmp_path):
    import numpy as np

    writer = metrics.MetricsWriter(tmp_path, tensorboard=False)
    writer.write({"epoch": 1, "global_step": 64, "sps": np.float32(2.5), "loss": float("inf")})
    writer.write({"epoch": 2, "global_step": 128, "sps": 3.0, "loss": 0.5})
    writer.close()
    lines = (tmp_path / METRICS_FILE).read_text().splitlines()
    assert json.loads(lines[0]) == {"epoch": 1, "global_step": 64, "sps": 2.5, "loss": None}
    assert [r["epoch"] for r in metrics.read_metrics(tmp_path)] == [1, 2]


def test_tensorboard_gets_every_number_under_a_grouped_tag(tmp_path):
    """Read back from the event file: every number of each row under its tag at the row's
    step (a row's numbers go out as one event; TensorBoard reads them per tag)."""
    pytest.importorskip("tensorboard", reason='pip install "puffer-tui[tensorboard]"')
    writer = metrics.MetricsWriter(tmp_path, tensorboard=True)
    writer.write({"epoch": 3, "global_step": 300, "learning_rate": 0.01,
                  "losses": {"policy_loss": 0.1}, "timing": {"env": 0.2},
                  "timing_pct": {"env": 40.0}, "env": {"score": 0.5, "note": "x"}})
    writer.write({"epoch": 4, "global_step": 400, "learning_rate": 0.005,
                  "losses": {"policy_loss": 0.25}, "env": {"score": 0.75}})
    writer.close()
    tags = {tag: [(step, pytest.approx(value)) for step, value in scalars]
            for tag, scalars in read_scalars(tmp_path / metrics.TENSORBOARD_DIR).items()}
    assert tags["losses/policy_loss"] == [(300, 0.1), (400, 0.25)]
    assert tags["timing/env"] == [(300, 0.2)] and tags["timing_pct/env"] == [(300, 40.0)]
    assert tags["env/score"] == [(300, 0.5), (400, 0.75)]
    assert tags["train/learning_rate"] == [(300, 0.01), (400, 0.005)]
    assert tags["train/epoch"] == [(300, 3), (400, 4)]
    assert "env/note" not in tags


def test_an_env_stat_named_like_a_trainer_number_cannot_overwrite_it(tmp_path):
    """The trainer's row is grouped; the one flattener keeps the file's column names and
    gives a clashing env stat its own column, and reading the file regroups it exactly."""
    row = {"epoch": 1, "global_step": 64, "sps": 1000.0, "uptime": 2.0, "learning_rate": 0.01,
           "losses": {"policy_loss": 0.1, "entropy": 1.2},
           "timing": {"env": 0.5}, "timing_pct": {"env": 25.0},
           "env": {"score": 0.5, "sps": 7.0, "entropy": 9.0, "timing_env": 3.0, "episodes": 4}}
    writer = metrics.MetricsWriter(tmp_path, tensorboard=False)
    writer.write(row)
    writer.close()
    (flat,) = metrics.read_metrics(tmp_path)
    assert flat["sps"] == 1000.0 and flat["entropy"] == 1.2 and flat["timing_env"] == 0.5
    assert flat["score"] == 0.5 and flat["episodes"] == 4  # the columns readers know
    assert (flat["env/sps"], flat["env/entropy"], flat["env/timing_env"]) == (7.0, 9.0, 3.0)
    assert metrics.grouped(flat) == row
    assert metrics.flatten(flat) == flat  # a row read from the file is already flat


def test_tensorboard_is_used_only_when_installed(monkeypatch):
    monkeypatch.setattr(metrics.importlib.util, "find_spec", lambda name: None)
    assert metrics.tensorboard_available() is False


def test_metrics_torn_tail_is_cut_on_open_and_a_failed_append_leaves_no_half_line(
        tmp_path, monkeypatch):
    path = tmp_path / METRICS_FILE
    path.write_bytes(b'{"epoch":1}\n{"epoch":2,"global_st')  # a kill mid-write
    writer = metrics.MetricsWriter(tmp_path, tensorboard=False)
    real_write = os.write

    def full(fd, data):
        real_write(fd, bytes(data[:5]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(metrics.os, "write", full)
    with pytest.raises(OSError, match="No space left"):
        writer.write({"epoch": 2})
    assert path.read_bytes() == b'{"epoch":1}\n'
    monkeypatch.setattr(metrics.os, "write", real_write)
    writer.write({"epoch": 3})  # the held-back row goes first
    writer.close()
    assert [r["epoch"] for r in metrics.read_metrics(tmp_path)] == [1, 2, 3]


def test_tensorboard_losing_its_folder_mid_run_is_dropped_with_one_line(tmp_path, capfd):
    """The run folder removed (or the disk full) under TensorBoard's writer thread: the rows
    go on into metrics.jsonl, TensorBoard is dropped with one warning, and neither its
    thread nor close() prints a traceback (the engine's "run directory was removed" stop
    must read as that, not as a crash)."""
    pytest.importorskip("tensorboard", reason='pip install "puffer-tui[tensorboard]"')
    import shutil
    import threading
    import time

    warnings = []
    writer = metrics.MetricsWriter(tmp_path, tensorboard=True, warn=warnings.append)
    writer.write({"global_step": 1, "sps": 1.0})
    writer._tb.flush()  # the event file exists
    shutil.rmtree(tmp_path / metrics.TENSORBOARD_DIR)
    deadline = time.monotonic() + 20
    step = 2
    while writer._tb is not None and time.monotonic() < deadline:  # the thread finds it gone
        writer.write({"global_step": step, "sps": float(step)})
        step += 1
        time.sleep(0.05)
    writer.write({"global_step": step, "sps": 0.5})
    writer.close()
    assert writer._tb is None, "TensorBoard was never dropped"
    assert len(warnings) == 1 and warnings[0].startswith("TensorBoard stopped logging (")
    assert "metrics.jsonl goes on" in warnings[0]
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["global_step"] for r in rows] == list(range(1, step + 1))
    assert getattr(threading.excepthook, "quiets_tensorboard", False)
    out, err = capfd.readouterr()
    assert "Traceback" not in err + out, err


def test_close_says_nothing_of_tensorboard_when_the_whole_run_folder_is_gone(tmp_path):
    """The engine reports a removed run folder itself ("run directory was removed"); a
    TensorBoard that fails to finish its file in that folder is no news, as mid-run."""
    pytest.importorskip("tensorboard", reason='pip install "puffer-tui[tensorboard]"')
    import shutil

    run = tmp_path / "run"
    run.mkdir()
    warnings = []
    writer = metrics.MetricsWriter(run, tensorboard=True, warn=warnings.append)
    writer.write({"global_step": 1, "sps": 1.0})
    writer._tb.flush()
    shutil.rmtree(run)
    writer.write({"global_step": 2, "sps": 2.0})  # queued for TensorBoard's writer thread
    writer.close()
    assert writer.tensorboard_error is not None, "TensorBoard should have failed to finish"
    assert warnings == []
