"""Ending worker processes: politely, then firmly, always reaped (no zombies).

Tested in: tests/engine/vec/mp/test_mp_backend_crashes.py, tests/engine/shared/test_run_dir.py
(stale forkserver dirs)"""

from __future__ import annotations

import signal
import time

from puffer_tui.engine.vec.mp import channel

GRACE_S = 1.0  # a worker finishing a step gets this long to read "close" and exit


def describe_death(proc) -> str:
    code = proc.exitcode
    if code is None:
        return f"process {proc.pid} stopped answering (its connection closed)"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"process {proc.pid} died from {name}"
    return f"process {proc.pid} exited with code {code}"


def shutdown_workers(procs, socks, crash_logs, driver_env=None, local_blocks=()) -> None:
    """Ask every worker to close, then SIGTERM and SIGKILL stragglers, and reap them all;
    close the blocks stepped in this process (None entries: an inline worker's place).

    Used by close(), by garbage collection and at interpreter exit (weakref.finalize); it
    must work from any state, including half-started vecs and workers stuck in a step."""
    procs = [p for p in procs if p is not None]
    socks = [s for s in socks if s is not None]
    crash_logs = [log for log in crash_logs if log is not None]
    for sock in socks:
        try:
            channel.send_object(sock, ("close",))
        except OSError:
            pass
    deadline = time.monotonic() + GRACE_S
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.exitcode is None:
            proc.terminate()
    for proc in procs:
        proc.join(0.5)
        if proc.exitcode is None:
            proc.kill()
            proc.join(2.0)
    for sock in socks:
        sock.close()
    for log in crash_logs:
        log.close()
    for block in local_blocks:
        block.close()
    if driver_env is not None:
        driver_env.close()


STALE_AFTER_S = 10.0  # a forkserver's directory younger than this may still be starting up


def remove_stale_forkserver_dirs(tempdir: str | None = None) -> int:
    """Remove `pymp-*` directories whose forkserver listener socket nobody listens on any more
    (its engine was SIGKILLed, so multiprocessing's exit hook never ran). Linux only: a socket
    that is still open appears in /proc/net/unix. Only our own directories holding nothing
    but dead `listener-*` sockets are touched. Returns how many were removed."""
    import os
    import shutil
    import stat
    import tempfile
    from pathlib import Path

    try:
        live = {line.split()[-1] for line in Path("/proc/net/unix").read_text().splitlines()[1:]
                if len(line.split()) >= 8}
    except OSError:
        return 0
    removed = 0
    now = time.time()
    for directory in Path(tempdir or tempfile.gettempdir()).glob("pymp-*"):
        try:
            info = directory.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or \
                    now - info.st_mtime < STALE_AFTER_S:
                continue
            entries = list(directory.iterdir())
            if not entries or not all(
                    e.name.startswith("listener-") and stat.S_ISSOCK(e.lstat().st_mode)
                    and str(e) not in live for e in entries):
                continue
            shutil.rmtree(directory)
            removed += 1
        except OSError:
            continue  # gone meanwhile, or not ours to remove
    return removed
