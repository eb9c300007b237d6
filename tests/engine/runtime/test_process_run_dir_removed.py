"""An engine whose run directory is removed under it (`rm -rf runs/`, a test's tmp dir cleaned
up) stops by itself: one line on stderr, no traceback, no worker or shared memory left, exit 1.

Before the watchdog in engine/runtime/process.py a paused engine waited forever (unreachable:
its socket lived in the directory) and a running one crashed on its next status.json write.
Each test starts its own engine with stdout and stderr outside the run directory, so what it
says after the removal can still be read.
"""

import os
import shutil
import signal
import subprocess
import sys
import time

import psutil
from engine_harness import make_run, wait_until

from puffer_tui.app.engine_client import EngineClient

REMOVED = "was removed: nothing can reach this engine or keep what it trains; " \
          "stopping without a checkpoint"
EXIT_WAIT = 90.0  # a hang guard, generous for a loaded box; the engine checks every 2 s


def _start(run, logs, launcher=()):
    out = open(logs / "stdout", "wb")
    err = open(logs / "stderr", "wb")
    try:
        process = subprocess.Popen([sys.executable, *launcher, "-m", "puffer_tui.engine", str(run)],
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   start_new_session=True)
    finally:
        out.close()
        err.close()
    client = wait_until(lambda: _connect(run, process), 120, what="the engine's socket")
    return process, client


def _connect(run, process):
    if process.poll() is not None:
        raise AssertionError(f"the engine exited with {process.returncode} before serving")
    try:
        return EngineClient.connect(run, timeout=10)
    except Exception:
        return None


def _training(client):
    wait_until(lambda: client.call("status", timeout=30)["global_step"] > 0, 120,
               interval=0.2, what="the first steps")


def _remove(run):
    # the engine may write into it while rmtree walks it: again until it is gone
    wait_until(lambda: (shutil.rmtree(run, ignore_errors=True), not run.exists())[1], 30,
               what=f"{run} to be removed")


def _stopped(process, logs):
    try:
        code = process.wait(EXIT_WAIT)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the engine still runs {EXIT_WAIT:g} s after its run directory "
                             f"was removed; stderr:\n{(logs / 'stderr').read_text()}") from None
    out, err = (logs / "stdout").read_text(), (logs / "stderr").read_text()
    return code, out, err


def _check_exit(code, out, err, run):
    lines = [line for line in err.splitlines() if REMOVED in line]
    assert len(lines) == 1 and str(run) in lines[0], f"stderr:\n{err}\nstdout:\n{out}"
    assert "Traceback" not in err and "Traceback" not in out, f"stderr:\n{err}\nstdout:\n{out}"
    assert "not written to" not in out  # no event tried to reach the missing events.log
    assert "without a checkpoint" in out
    assert code == 1, f"exit status {code}; stderr:\n{err}"


def _describe(pids):
    described = []
    for pid in pids:
        try:
            described.append(f"{pid} {' '.join(psutil.Process(pid).cmdline())[:120]}")
        except psutil.Error:
            described.append(f"{pid} (gone)")
    return described


def _kill(process, pids=()):
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(30)
    for pid in pids:
        try:
            psutil.Process(pid).kill()
        except psutil.NoSuchProcess:
            pass


def test_a_running_engine_stops_when_its_run_directory_is_removed(tmp_path):
    run = make_run(tmp_path / "runs", **{"train.total_timesteps": 10**9})
    (tmp_path / "logs").mkdir()
    process, client = _start(run, tmp_path / "logs")
    try:
        _training(client)
        _remove(run)
        code, out, err = _stopped(process, tmp_path / "logs")
        _check_exit(code, out, err, run)
    finally:
        client.close()
        _kill(process)


def test_a_paused_engine_stops_and_tells_its_clients(tmp_path):
    run = make_run(tmp_path / "runs", **{"train.total_timesteps": 10**9})
    (tmp_path / "logs").mkdir()
    process, client = _start(run, tmp_path / "logs")
    try:
        _training(client)
        assert client.call("pause", timeout=30)["state"] == "paused"
        _remove(run)
        code, out, err = _stopped(process, tmp_path / "logs")
        _check_exit(code, out, err, run)
        # a client connected before the removal still hears why its engine went away
        said = [p for p in client.pushes(timeout=10)
                if p.get("type") == "event" and p.get("level") == "error"]
        assert any(REMOVED in p["text"] for p in said), said
    finally:
        client.close()
        _kill(process)


def _our_shm():
    try:
        return {name for name in os.listdir("/dev/shm") if "puffer" in name}
    except FileNotFoundError:
        return set()


def test_multiprocessing_workers_and_shared_memory_go_with_the_engine(tmp_path):
    shm_before = _our_shm()
    run = make_run(tmp_path / "runs", **{"train.total_timesteps": 10**9,
                                         "vec.backend": "multiprocessing", "vec.num_workers": 2})
    (tmp_path / "logs").mkdir()
    process, client = _start(run, tmp_path / "logs")
    workers = []
    try:
        _training(client)
        workers = [p.pid for p in psutil.Process(process.pid).children(recursive=True)]
        assert len(workers) >= 2, workers
        assert client.call("pause", timeout=30)["state"] == "paused"
        _remove(run)
        code, out, err = _stopped(process, tmp_path / "logs")
        _check_exit(code, out, err, run)

        def gone(pid):
            try:
                return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                return True

        # a zombie has exited: only its exit status is left, for init to reap. The children
        # include multiprocessing's helpers (its resource tracker), which leave once they
        # read the end of the engine's pipe, a moment after it exited: a leak is a child still
        # there seconds later, not one on its way out
        deadline = time.monotonic() + 10
        while [pid for pid in workers if not gone(pid)] and time.monotonic() < deadline:
            time.sleep(0.1)
        alive = [pid for pid in workers if not gone(pid)]
        assert not alive, f"children outlived the engine: {_describe(alive)}"
        assert _our_shm() <= shm_before, _our_shm() - shm_before
    finally:
        client.close()
        _kill(process, workers)


def test_two_ddp_ranks_stop_together_through_the_stop_command(tmp_path):
    """Rank 0 alone watches; the stop it queues reaches rank 1 through the usual broadcast,
    so rank 1 stops too instead of losing its peer (its errors would be named "rank 1").
    torchrun's agent then reports rank 0's exit status 1 in its own words, with a traceback
    of torchrun's own."""
    run = make_run(tmp_path / "runs", **{"train.nproc": 2, "vec.num_envs": 32,
                                         "train.total_timesteps": 10**9})
    (tmp_path / "logs").mkdir()
    torchrun = ("-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2")
    process, client = _start(run, tmp_path / "logs", torchrun)
    ranks = []
    try:
        _training(client)
        ranks = [p.pid for p in psutil.Process(process.pid).children()]
        assert len(ranks) == 2, ranks
        assert client.call("pause", timeout=30)["state"] == "paused"
        _remove(run)
        code, out, err = _stopped(process, tmp_path / "logs")
        assert code != 0, f"stderr:\n{err}"
        assert sum(REMOVED in line for line in err.splitlines()) == 1, err
        assert "stopped at step" in out and "without a checkpoint" in out, out
        # rank 1 stopped by the command, not by a lost peer: no error of its own
        assert "rank 1" not in out + err and "engine crashed" not in out + err, out + err
    finally:
        client.close()
        _kill(process, ranks)
