"""Fault injection against the real engine process: each fault ends in a clear outcome (an
error event naming the cause, a paused or refused run) and nothing is lost (every
checkpoint loads and is finite, metrics.jsonl holds whole lines, no epoch twice).

Faults come from tests/fault_patches (a sitecustomize on the engine's PYTHONPATH) or from
the system (a small tmpfs that really fills up, when this process may mount one).
"""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from engine_harness import first_push, kill_engine, make_run, wait_until
from tree_paths import TESTS_DIR

from puffer_tui.app.engine_client import EngineClient
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd

PATCHES = TESTS_DIR / "fault_patches"
STEPS_PER_EPOCH = 64 * 16  # engine_harness.TINY: 64 envs, horizon 16
RECVS_PER_EPOCH = 16


def start_engine(run, *args, **fault_env):
    path = os.pathsep.join(filter(None, [str(PATCHES), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **fault_env}
    with (run / rd.ENGINE_OUT_FILE).open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "puffer_tui.engine", str(run), *args],
                                stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def connect(run, proc):
    wait_until(lambda: rd.socket_path(run).exists() or proc.poll() is not None,
               timeout=60, what="the engine's socket")
    assert proc.poll() is None, (run / rd.ENGINE_OUT_FILE).read_text()
    return EngineClient.connect(run, timeout=30)


def events(run) -> str:
    path = run / rd.EVENTS_FILE
    return path.read_text() if path.exists() else ""


def wait_for_event(run, text, proc, timeout=90.0) -> str:
    def seen():
        if proc.poll() is not None:
            raise AssertionError(f"engine exited ({proc.returncode}) before {text!r}:\n"
                                 f"{events(run)}")
        return text in events(run)
    wait_until(seen, timeout=timeout, what=repr(text))
    return events(run)


def metric_rows(run) -> list[dict]:
    data = (run / rd.METRICS_FILE).read_bytes()
    assert data == b"" or data.endswith(b"\n"), "metrics.jsonl ends in a torn line"
    return [json.loads(line) for line in data.decode().splitlines()]  # every line whole


def assert_nothing_lost(run):
    """Every checkpoint loads (checksum verified) with finite weights; epochs appear once
    each, in order, and none is missing."""
    for path in ckpt.list_checkpoints(run):
        state = ckpt.load_checkpoint(path)
        assert ckpt.non_finite_tensors(state) == [], path
    epochs = [row["epoch"] for row in metric_rows(run)]
    assert epochs == list(range(1, len(epochs) + 1)), epochs


def stop(run, proc, client, checkpoint=True) -> int:
    client.call("stop", checkpoint=checkpoint, timeout=60)
    client.close()
    return proc.wait(120)


@pytest.fixture
def cleanup():
    started = []
    yield started
    for run, proc in started:
        if proc.poll() is None:
            kill_engine(run)
            proc.kill()
            proc.wait(10)


def test_nan_env_pauses_naming_the_rows_and_keeps_the_checkpoints(tmp_path, cleanup):
    # agent row 5 returns NaN rewards from the 4th epoch on; a checkpoint every epoch
    run = make_run(tmp_path, **{"train.total_timesteps": 100 * STEPS_PER_EPOCH,
                                "train.checkpoint_interval": 1})
    proc = start_engine(run, PUFFER_TEST_NAN_REWARD=f"{3 * RECVS_PER_EPOCH + 2}:5")
    cleanup.append((run, proc))
    client = connect(run, proc)
    log = wait_for_event(run, "training paused", proc)
    line = next(ln for ln in log.splitlines() if "training paused" in ln)
    assert "[error]" in line and "non-finite rewards" in line and "agent rows 5" in line, line
    assert "discarded" in line
    assert client.call("status")["state"] == "paused"
    before = ckpt.list_checkpoints(run)
    assert [ckpt.parse_name(p.name)[1] for p in before] == [1, 2, 3]  # the good ones stay
    assert stop(run, proc, client) == 0
    assert_nothing_lost(run)
    assert len(metric_rows(run)) == 3  # the bad epoch taught nothing and wrote no row


def test_nan_loss_pauses_and_resume_goes_back_to_the_last_good_checkpoint(tmp_path, cleanup):
    # one minibatch of the 3rd epoch gets a NaN value loss: the weights turn NaN
    run = make_run(tmp_path, **{"train.total_timesteps": 5 * STEPS_PER_EPOCH,
                                "train.checkpoint_interval": 1})
    proc = start_engine(run, PUFFER_TEST_NAN_LOSS=str(2 * 4 + 2))  # 4 minibatches an epoch
    cleanup.append((run, proc))
    client = connect(run, proc)
    log = wait_for_event(run, "training paused", proc)
    line = next(ln for ln in log.splitlines() if "training paused" in ln)
    assert "non-finite loss term(s):" in line and "value_loss" in line, line
    assert "the weights are not finite" in line
    assert "resume reloads the last good checkpoint step-000000002048-epoch-00000002" in line
    client.call("resume")
    wait_for_event(run, "reloaded step-000000002048-epoch-00000002.pt", proc)
    assert proc.wait(120) == 0
    assert "training finished" in events(run)
    assert rd.read_status(run)["state"] == "finished"
    assert_nothing_lost(run)
    assert len(metric_rows(run)) == 5


def flip_tensor_bytes(path: Path, count: int = 16) -> None:
    """Flip `count` bytes in the middle of the largest tensor stored in a checkpoint."""
    with zipfile.ZipFile(path) as archive:
        info = max((i for i in archive.infolist() if "/data/" in i.filename),
                   key=lambda i: i.file_size)
    data = bytearray(path.read_bytes())
    header = info.header_offset
    name_len = int.from_bytes(data[header + 26:header + 28], "little")
    extra_len = int.from_bytes(data[header + 28:header + 30], "little")
    start = header + 30 + name_len + extra_len + info.file_size // 2
    for i in range(count):
        data[start + i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_damaged_checkpoint_is_refused_by_name_and_fallback_resumes(tmp_path, cleanup):
    run = make_run(tmp_path, **{"train.total_timesteps": 3 * STEPS_PER_EPOCH,
                                "train.checkpoint_interval": 1})
    proc = start_engine(run)
    cleanup.append((run, proc))
    assert proc.wait(120) == 0
    newest = ckpt.latest_checkpoint(run)
    flip_tensor_bytes(newest)
    proc = start_engine(run, "--resume")
    cleanup.append((run, proc))
    assert proc.wait(120) == 1
    assert rd.read_status(run)["state"] == "error"
    error = rd.read_status(run)["error"]
    assert str(newest) in error and "sha256" in error and "--fallback-checkpoint" in error
    assert newest.exists()  # evidence kept
    # what engines SIGKILLed mid-save leave behind: a temp file, a checksum without its file
    directory = run / rd.CHECKPOINT_DIR
    leftovers = [directory / ".step-000000009999-epoch-00000009.pt.dead01.tmp",
                 directory / "step-000000009999-epoch-00000009.pt.sha256"]
    for path in leftovers:
        path.write_bytes(b"\0" * (1 << 20))
    proc = start_engine(run, "--resume", "--fallback-checkpoint")
    cleanup.append((run, proc))
    assert proc.wait(120) == 0  # it trains the last epoch again and finishes
    assert not any(path.exists() for path in leftovers)  # removed when the engine started
    log = events(run)
    assert f"{newest} is corrupt" in log and "falling back to the previous checkpoint" in log
    assert "resumed from step-000000002048-epoch-00000002.pt" in log
    assert rd.read_status(run)["state"] == "finished"
    newest.unlink()  # the damaged one was kept as evidence; the rest is whole
    ckpt.checksum_path(newest).unlink()
    assert_nothing_lost(run)


def test_disk_full_pauses_keeps_files_whole_and_resumes(tmp_path, cleanup):
    # the fault layer: while the flag exists, metrics appends tear and fail, fsyncs fail
    flag = tmp_path / "disk-is-full"
    run = make_run(tmp_path / "runs", **{"train.total_timesteps": 10**9,
                                         "train.checkpoint_interval": 1})
    proc = start_engine(run, PUFFER_TEST_DISK_FULL=str(flag))
    cleanup.append((run, proc))
    client = connect(run, proc)
    wait_for_event(run, "checkpoint saved: step-000000002048", proc)
    flag.touch()
    log = wait_for_event(run, "disk full writing", proc)
    line = next(ln for ln in log.splitlines() if "disk full writing" in ln)
    assert "[error]" in line and "free space and resume" in line, line
    assert wait_until(lambda: client.call("status")["state"] == "paused", timeout=10)
    assert_nothing_lost(run)  # whole lines only, every checkpoint loads
    saved = len(ckpt.list_checkpoints(run))
    assert not [p for p in (run / rd.CHECKPOINT_DIR).iterdir() if p.name.endswith(".tmp")]
    flag.unlink()
    client.call("resume")
    rows = len(metric_rows(run))
    wait_until(lambda: len(metric_rows(run)) >= rows + 2, timeout=60, what="training again")
    assert stop(run, proc, client) == 0
    assert_nothing_lost(run)  # the row held back while the disk was full is in its place
    assert len(ckpt.list_checkpoints(run)) >= min(saved + 1, ckpt.DEFAULT_KEEP)


def test_a_failing_periodic_checkpoint_does_not_end_the_run(tmp_path, cleanup):
    flag = tmp_path / "broken-disk"
    run = make_run(tmp_path / "runs", **{"train.total_timesteps": 10**9,
                                         "train.checkpoint_interval": 1})
    proc = start_engine(run, PUFFER_TEST_DISK_FULL=str(flag))
    cleanup.append((run, proc))
    client = connect(run, proc)
    wait_for_event(run, "checkpoint saved: step-000000001024", proc)
    flag.write_text("eio")  # an I/O error, not a full disk: reported, training goes on
    log = wait_for_event(run, "periodic checkpoint failed, training goes on", proc)
    assert "Input/output error" in log
    rows = len(metric_rows(run))
    wait_until(lambda: len(metric_rows(run)) >= rows + 2, timeout=60, what="training on")
    assert client.call("status")["state"] == "running"
    flag.unlink()
    checkpoints = log.count("checkpoint saved")
    wait_until(lambda: events(run).count("checkpoint saved") > checkpoints, timeout=60,
               what="checkpoints again")
    assert stop(run, proc, client) == 0
    assert_nothing_lost(run)


@pytest.fixture
def small_tmpfs(tmp_path):
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if not shutil.which("mount") or os.geteuid() != 0:
        pytest.skip("a real full disk needs a tmpfs mount: run as root (CAP_SYS_ADMIN)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); the ENOSPC path is "
                    "covered by test_disk_full_pauses_keeps_files_whole_and_resumes")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path) -> Path:
    """Take every free byte of the filesystem under `directory`; returns the filler file."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 512, 1):  # big chunks, then the last bytes
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def test_a_real_full_tmpfs_pauses_and_resumes_once_space_is_freed(small_tmpfs, cleanup):
    run = make_run(small_tmpfs, **{"train.total_timesteps": 10**9,
                                   "train.checkpoint_interval": 1})
    proc = start_engine(run)
    cleanup.append((run, proc))
    client = connect(run, proc)
    wait_for_event(run, "checkpoint saved: step-000000002048", proc)
    filler = fill(small_tmpfs)
    event = first_push(client, "event", timeout=90, where=lambda e: "disk full" in e["text"])
    assert event is not None and event["level"] == "error", event
    assert "free space and resume" in event["text"], event
    wait_until(lambda: client.call("status")["state"] == "paused", timeout=30,
               what="the pause on a full disk")
    assert proc.poll() is None  # the run survived the full disk
    assert_nothing_lost(run)
    filler.unlink()
    client.call("resume")
    rows = len(metric_rows(run))
    wait_until(lambda: len(metric_rows(run)) >= rows + 2, timeout=60, what="training again")
    assert stop(run, proc, client) == 0
    assert_nothing_lost(run)


def test_oversize_config_is_refused_before_the_run_dir_exists(tmp_path):
    runs = tmp_path / "runs"
    result = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "squared", "--headless",
         "--runs-dir", str(runs), "--vec.num-envs", "1000000", "--train.horizon", "1024",
         "--train.total-timesteps", str(10**12)],  # a budget of many epochs: memory decides
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1, error
    assert "need about" in error and "GB of memory" in error and "is available" in error
    assert "vec.num_envs" in error
    assert not runs.exists() or not any(runs.iterdir())


def test_oversize_config_is_refused_by_the_engine_too(tmp_path):
    # a run dir prepared by hand (or by an older CLI): the engine checks before allocating
    run = make_run(tmp_path, **{"vec.num_envs": 1_000_000, "train.horizon": 1024,
                                "train.minibatch_size": 8192})
    proc = start_engine(run)
    assert proc.wait(120) == 2
    status = rd.read_status(run)
    assert status["state"] == "error" and "GB of memory" in status["error"]
    assert "GB of memory" in events(run)


def test_a_run_that_ends_before_its_engine_answers_is_reported_not_left_hanging(tmp_path):
    # the hello comes 60 s late, long after this tiny run has finished: the engine's stop ends
    # the connection, and the engine then takes 1 s more to exit (tests/engine_patches), the
    # window in which the command used to say "goes on training" and exit 1
    patches = TESTS_DIR / "engine_patches"
    path = os.pathsep.join(filter(None, [str(patches), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "PUFFER_TEST_HELLO_DELAY": "60",
           "PUFFER_TEST_EXIT_DELAY": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "squared", "--headless",
         "--runs-dir", str(tmp_path), "--vec.num-envs", "64", "--train.horizon", "16",
         "--train.minibatch-size", "256", "--train.hidden-size", "32",
         "--train.torch-threads", "1", "--train.total-timesteps", str(2 * STEPS_PER_EPOCH)],
        capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "finished: 2,048 steps" in result.stdout, result.stdout
    assert "goes on training" not in result.stdout, result.stdout
    (run,) = rd.list_runs(tmp_path)
    assert rd.run_state(run) == "finished"


def test_a_hung_env_is_reported_with_the_workers_stack(tmp_path):
    import numpy as np
    from crashy_env import HANG, CrashyEnv

    from puffer_tui.engine.vec import WorkerError, make

    vec = make(CrashyEnv, num_envs=2, backend="multiprocessing", num_workers=2, timeout=1.0)
    try:
        vec.reset()
        pids = vec.worker_pids
        vec.send(np.array([0, HANG], np.int32))
        with pytest.raises(WorkerError) as caught:
            vec.recv()
    finally:
        vec.close()
    error = caught.value
    assert error.worker == 1 and "no answer within 1 s" in error.message
    # the stack faulthandler dumped before the worker was killed: where it hangs
    assert "crashy_env.py" in error.traceback and "in step" in error.traceback, error.traceback
    for pid in pids:
        wait_until(lambda pid=pid: not _alive(pid), timeout=10, what=f"worker {pid} gone")


def test_the_hung_worker_timeout_is_a_config_field_with_a_short_default():
    from puffer_tui.engine.algo.trainer import make_vecenv
    from puffer_tui.engine.shared.config import load_config

    assert load_config("squared").vec.worker_timeout == 15.0
    config = load_config("squared", {"vec.num_envs": 4, "vec.backend": "multiprocessing",
                                     "vec.num_workers": 2, "vec.worker_timeout": 2.5})
    vec = make_vecenv(config)
    try:
        assert vec.timeout == 2.5
    finally:
        vec.close()


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
