"""Hang detection for the inline block (block.py), which the caller steps in its own thread.

No other process waits on that block, so a watchdog thread does: while the block resets or
steps, it watches the time since its envs' last sign of progress (engine/native/progress.py)
against the same measured limit as the worker processes' (hang_limit.py), and on a hang it
raises InlineHung in the caller's thread (PyThreadState_SetAsyncExc). A signal with a no-op
Python handler wakes a caller blocked in a sleep or a read, so that the exception is raised
there; an env stuck in C code that never returns to Python cannot be interrupted this way.

Tested in: tests/engine/vec/mp/test_block_inline.py, tests/engine/vec/mp/test_hang_limit.py"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading
import time
import traceback

from puffer_tui.engine.native import progress

# Default action "ignore", so a no-op handler changes nothing else; used by nothing of ours.
WAKE_SIGNAL = signal.SIGURG


class InlineHung(BaseException):
    """Raised in the caller's thread by the watchdog; a BaseException, so that an env's own
    `except Exception` cannot swallow it."""


def _raise_in(ident: int, exception) -> None:
    """Make `exception` pending in thread `ident` (None: cancel a pending one)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(ident), ctypes.py_object(exception) if exception is not None else None)


def _can_wake() -> bool:
    """A no-op handler for WAKE_SIGNAL, where one may be set (the main thread) and nobody set
    one: a signal then interrupts a blocking call, as the exception needs."""
    if threading.current_thread() is not threading.main_thread():
        return False
    current = signal.getsignal(WAKE_SIGNAL)
    if current in (signal.SIG_DFL, None):
        signal.signal(WAKE_SIGNAL, _ignore)
        return True
    return current is not signal.SIG_IGN


def _ignore(signum, frame) -> None:
    pass


class InlineWatch:
    """Watches the caller's thread while it works on the inline block (`begin` ... `end`)."""

    def __init__(self, hang_limit, poll_s: float):
        self.hang_limit = hang_limit
        self._ident = threading.get_ident()
        self._wake = _can_wake()
        self._signal = False
        self._lock = threading.Lock()
        self._busy = False
        self._activity = ""
        self._last = 0.0  # the last sign of progress, or the work's start
        self._fired: float | None = None  # the silence at which the block was called hung
        self._stack = ""
        self._previous_hook = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(poll_s,),
                                        name="puffer-vec-inline-watch", daemon=True)
        self._thread.start()

    def begin(self, activity: str) -> None:
        # the thread doing the work now is the one to interrupt (the signal reaches only
        # the main thread's handler)
        self._ident = threading.get_ident()
        self._signal = self._wake and threading.current_thread() is threading.main_thread()
        self._activity, self._last = activity, time.monotonic()
        self._previous_hook = progress.set_hook(self._beat)
        self._busy = True

    def _beat(self) -> None:
        now = time.monotonic()
        self.hang_limit.note(self._activity, now - self._last)
        self._last = now

    def end(self) -> tuple[float, str] | None:
        """The work is over: (the silence it was called hung at, the caller's stack then), or
        None. Safe to call again (the exception may land inside the first call)."""
        with self._lock:
            busy, self._busy = self._busy, False
            fired = self._fired
            if fired is not None:
                _raise_in(self._ident, None)  # still pending: it must not land elsewhere
        progress.set_hook(self._previous_hook)
        if busy and fired is None:
            self.hang_limit.note(self._activity, time.monotonic() - self._last)
        return None if fired is None else (fired, self._stack)

    def _run(self, poll_s: float) -> None:
        while not self._stop.wait(poll_s):
            with self._lock:
                if not self._busy or self._fired is not None:
                    continue
                silent = time.monotonic() - self._last
                if silent < self.hang_limit.seconds():
                    continue
                self._fired = silent
                frame = sys._current_frames().get(self._ident)
                self._stack = "".join(traceback.format_stack(frame)) if frame else ""
                _raise_in(self._ident, InlineHung)
            if self._signal:
                signal.pthread_kill(self._ident, WAKE_SIGNAL)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(5.0)
