"""The worker process: owns `envs_per_worker` envs writing into its rows of shared memory.

Loop: wait for a command on the socket (spin briefly, then block), run it, answer. Any
exception is sent back with its traceback, then the worker exits. The worker also exits by
itself when the main process goes away (EOF on the socket, a changed parent pid, or, under
the forkserver, SIGKILL from the kernel when the forkserver dies), so it can never outlive
the run. Ctrl-C is left to the main process, which shuts the workers down in order.

While busy, the worker sends a heartbeat (ALIVE) whenever its env reports a unit of work done
(engine/native/progress.py) and the last message is HEARTBEAT_S old, and it reports its
longest silence as it grows ("pace"): the main process sets its hang limit from these
(engine/vec/mp/hang_limit.py).

Tested in: tests/engine/vec/mp/test_mp_backend.py, tests/engine/vec/mp/test_mp_backend_crashes.py,
tests/engine/vec/mp/test_hang_limit.py"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback

from puffer_tui.engine.native import progress
from puffer_tui.engine.vec.mp import channel
from puffer_tui.engine.vec.mp.block import block_frame, reset_block
from puffer_tui.engine.vec.mp.hang_limit import GROWTH, MIN_REPORTED_S

PARENT_CHECK_S = 1.0  # how often a blocked worker checks that its parent is alive


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL us when our parent exits (best effort; Linux only)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _release_forkserver() -> None:
    """Close our copy of the forkserver's "alive" pipe.

    CPython hands every forkserver child the write end of that pipe, so the forkserver
    outlives the main process while any worker lives; we close it so that the forkserver
    exits with the main process, and PDEATHSIG then kills us even if an env is stuck in C.
    (Should env code here start processes itself, multiprocessing starts a new forkserver.)"""
    from multiprocessing import forkserver

    server = forkserver._forkserver
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
        server._forkserver_alive_fd = None


class _ParentGone(Exception):
    pass


def _wait_for_command(sock, spin_s: float, parent_pid: int):
    try:
        while True:
            if channel.wait_readable([sock], spin_s, PARENT_CHECK_S):
                return channel.receive(sock)
            spin_s = 0.0
            if os.getppid() != parent_pid:
                raise _ParentGone
    except OSError as exc:  # includes ChannelClosed: the main process is gone
        raise _ParentGone from exc


def _reply(sock, message) -> None:
    """Answer the main process; failing to is _ParentGone, never an env error."""
    try:
        if isinstance(message, bytes):
            sock.sendall(message)
        else:
            channel.send_object(sock, message)
    except OSError as exc:
        raise _ParentGone from exc


class _Pace:
    """The worker's side of hang detection: heartbeats while busy, and its longest silence
    (the time between two of its messages while busy) per activity, sent when it grows."""

    def __init__(self, sock, heartbeat_s: float):
        self.sock, self.heartbeat_s = sock, heartbeat_s
        self.activity = "build"
        self.last = time.monotonic()  # the last message sent, or the command's arrival
        self.reported: dict[str, float] = {}

    def begin(self, activity: str) -> None:
        self.activity, self.last = activity, time.monotonic()

    def beat(self) -> None:
        """The progress hook: a unit of work done; say so when the last message is old."""
        now = time.monotonic()
        if now - self.last >= self.heartbeat_s:
            self._silence(now - self.last)
            _reply(self.sock, channel.ALIVE)
            self.last = now

    def end(self) -> None:
        """Before the answer: the silence it ends."""
        self._silence(time.monotonic() - self.last)

    def _silence(self, seconds: float) -> None:
        if seconds >= MIN_REPORTED_S and \
                seconds > self.reported.get(self.activity, 0.0) * GROWTH:
            self.reported[self.activity] = seconds
            _reply(self.sock, ("pace", self.activity, seconds))


def worker_main(index, env_creator, env_kwargs, memory, layout, rows, num_envs, seed, sock,
                crash_log, spin_s, die_with_parent, heartbeat_s=1.0):
    """Entry point of worker `index` (run by multiprocessing in the child)."""
    pace = _Pace(sock, heartbeat_s)  # the silence measured from the process's start
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    crash_log.enable()
    parent_pid = os.getppid()
    if die_with_parent:
        _release_forkserver()
        _die_with_parent()
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            return
    try:
        mapping = memory.attach()
        buffers = layout.views(mapping, *rows)
        progress.set_hook(pace.beat)
        env = env_creator(num_envs=num_envs, seed=seed, buf=buffers, **env_kwargs)
        pace.end()
        _reply(sock, ("ready", os.getpid()))
        _serve(env, buffers, sock, spin_s, parent_pid, pace)
    except _ParentGone:
        os._exit(0)
    except BaseException as exc:  # report everything, even SystemExit from env code
        message = f"{type(exc).__name__}: {exc}"
        try:
            channel.send_object(sock, ("error", message, traceback.format_exc()))
        except OSError:
            pass
        os._exit(1)


def _serve(env, buffers, sock, spin_s, parent_pid, pace) -> None:
    actions = buffers["actions"]
    while True:
        command = _wait_for_command(sock, spin_s, parent_pid)
        if command == channel.STEP:
            pace.begin("step")
            infos = env.step(actions)[4]
            pace.end()
            _reply(sock, ("done", infos) if infos else channel.DONE)
            continue
        kind = command[0]
        pace.begin(kind)
        if kind == "reset":
            infos = reset_block(env, buffers, command[1])
            pace.end()
            _reply(sock, ("done", infos))
        elif kind == "frame":  # ("frame", env, view): view "obs" draws the observation
            view = command[2] if len(command) > 2 else "env"
            _reply(sock, ("frame", block_frame(env, command[1], view)))
        elif kind == "get_state":
            _reply(sock, ("state", env.get_state()))
        elif kind == "set_state":
            env.set_state(command[1])
            _reply(sock, ("state", None))
        elif kind == "close":
            env.close()
            _reply(sock, ("closed",))
            return
        else:
            raise ValueError(f"worker got an unknown command {command!r}")

