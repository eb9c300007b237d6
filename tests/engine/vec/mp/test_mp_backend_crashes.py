"""Crash safety of the multiprocessing vec: every failure is a WorkerError, nothing is left over.

The bounds on elapsed time below are far under the vec's timeout (30 s): they check that a
crash is *noticed* (EOF, process sentinel) rather than waited out, not how fast anything is.
"""

import multiprocessing.forkserver
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import psutil
import pytest
import tree_paths
from crashy_env import EXIT, HANG, NORMAL, SEGFAULT, SIGKILL, CrashyEnv

from puffer_tui.engine.vec import WorkerError, make

TESTS_DIR = str(tree_paths.TESTS_DIR)
NOTICED_S = 5.0  # far below the 30 s timeout: the failure was detected, not timed out


def mp(creator=CrashyEnv, num_envs=4, num_workers=2, **kwargs):
    kwargs.setdefault("timeout", 30.0)
    return make(creator, num_envs=num_envs, backend="multiprocessing", num_workers=num_workers,
                **kwargs)


def gone(pid: int, reaped: bool) -> bool:
    try:
        status = psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return True
    # A zombie has exited; unless `reaped` is asked, reaping it is its parent's (or init's) job.
    return not reaped and status == psutil.STATUS_ZOMBIE


def wait_gone(pids, seconds=5.0, reaped=True) -> list[int]:
    """The pids still there (alive, or zombies when `reaped`) after waiting up to `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if not gone(pid, reaped)]
        if not alive:
            return []
        time.sleep(0.05)
    return alive


def forkserver_children() -> list:
    pid = multiprocessing.forkserver._forkserver._forkserver_pid
    return psutil.Process(pid).children() if pid and psutil.pid_exists(pid) else []


def crash(vec, command, env=3):
    actions = np.full(vec.num_envs, NORMAL, np.int32)
    actions[env] = command
    start = time.monotonic()
    vec.send(actions)
    with pytest.raises(WorkerError) as info:
        vec.recv()
    return info.value, time.monotonic() - start


@pytest.mark.parametrize(
    "command, said",
    [(SIGKILL, "died from SIGKILL"), (SEGFAULT, "died from SIGSEGV"), (EXIT, "exited with code 3")],
)
def test_a_worker_that_dies_is_reported(command, said):
    vec = mp()
    vec.reset()
    pids = vec.worker_pids
    error, elapsed = crash(vec, command, env=0)
    assert elapsed < NOTICED_S
    assert error.worker == 0 and said in error.message
    if command == SEGFAULT:  # faulthandler's dump, read back from the worker's crash log
        assert "Segmentation fault" in error.traceback and "crashy_env.py" in error.traceback
    assert wait_gone(pids) == []


def test_a_hung_worker_times_out():
    vec = mp(timeout=1.0)
    vec.reset()
    pids = vec.worker_pids
    error, elapsed = crash(vec, HANG, env=2)
    assert error.worker == 1 and "no answer within 1 s" in error.message
    assert wait_gone(pids) == []


def test_a_dead_worker_is_noticed_while_frame_waits():
    vec = mp()
    vec.reset()
    os.kill(vec.worker_pids[1], signal.SIGKILL)
    with pytest.raises(WorkerError, match="worker 1: .*SIGKILL"):
        vec.frame(2)


def test_an_env_that_cannot_be_built_fails_the_constructor_cleanly():
    from functools import partial

    # The probe in this process would fail first; make only the workers' copies fail.
    with pytest.raises(WorkerError, match="cannot build this env on purpose"):
        mp(partial(_fail_in_worker, parent=os.getpid()))
    assert wait_gone([p.pid for p in forkserver_children()]) == []


def _fail_in_worker(parent, **kwargs):
    return CrashyEnv(fail_on_init=os.getpid() != parent, **kwargs)


PARENT_SCRIPT = textwrap.dedent("""
    import sys, time
    import numpy as np
    from crashy_env import CrashyEnv, HANG
    from puffer_tui.engine.vec import make

    if __name__ == "__main__":
        vec = make(CrashyEnv, num_envs=2, backend="multiprocessing", num_workers=2)
        vec.reset()
        print(*vec.worker_pids, flush=True)
        if sys.argv[1] == "hang":  # block in recv() on a worker stuck in its env
            vec.send(np.array([0, HANG], np.int32))
            vec.recv()
        time.sleep(60)
""")


def start_parent(mode):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([TESTS_DIR, *sys.path]))
    proc = subprocess.Popen(
        [sys.executable, "-c", PARENT_SCRIPT, mode], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )
    line = proc.stdout.readline()
    assert line, proc.stderr.read()
    time.sleep(0.2)  # let "hang" reach recv()
    return proc, [int(pid) for pid in line.split()]


@pytest.mark.parametrize("mode", ["idle", "hang"])
def test_ctrl_c_in_the_main_process_ends_every_worker(mode):
    proc, pids = start_parent(mode)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: the whole process group
    _, stderr = proc.communicate(timeout=15)
    assert "KeyboardInterrupt" in stderr
    assert wait_gone(pids) == []


@pytest.mark.parametrize("mode", ["idle", "hang"])
def test_workers_exit_when_the_main_process_is_killed(mode):
    proc, pids = start_parent(mode)
    proc.kill()
    proc.wait(timeout=5)
    # Orphans now belong to init, which reaps them in its own time: exited is what we ask.
    assert wait_gone(pids, reaped=False) == [], "workers outlived a SIGKILLed main process"
