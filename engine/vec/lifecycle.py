"""Ending worker processes: politely, then firmly, always reaped (no zombies)."""

from __future__ import annotations

import signal
import time

from puffer_tui.engine.vec import channel

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


def shutdown_workers(procs, socks, crash_logs, driver_env=None) -> None:
    """Ask every worker to close, then SIGTERM and SIGKILL stragglers, and reap them all.

    Used by close(), by garbage collection and at interpreter exit (weakref.finalize); it
    must work from any state, including half-started vecs and workers stuck in a step."""
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
    if driver_env is not None:
        driver_env.close()
