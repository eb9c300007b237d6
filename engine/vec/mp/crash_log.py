"""Where a worker's Python traceback goes when it dies of a signal (segfault, abort, ...)
or hangs.

Each worker turns on `faulthandler` writing into its own nameless temp file; if the worker
dies without a word, the main process reads that file and puts it in the WorkerError. A
worker that stops answering is first sent DUMP_SIGNAL, on which faulthandler writes every
thread's stack into the same file (from the signal handler itself, so even an env stuck in
C code gets its Python stack dumped), then it is killed.

Tested in: tests/engine/vec/mp/test_mp_backend_crashes.py"""

from __future__ import annotations

import faulthandler
import os
import signal
import tempfile
import time
from multiprocessing import reduction

MAX_BYTES = 64 * 1024
DUMP_SIGNAL = signal.SIGUSR1
DUMP_WAIT_S = 1.0  # how long the main process waits for a hung worker's stack


class CrashLog:
    def __init__(self, fd: int | None = None):
        if fd is None:
            fd, path = tempfile.mkstemp(prefix="puffer_tui_crash_")
            os.unlink(path)  # nameless from the start: nothing to clean up
        self.fd = fd

    def enable(self) -> None:
        """In the worker: dump the traceback here on SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL."""
        faulthandler.enable(file=self.fd, all_threads=False)
        faulthandler.register(DUMP_SIGNAL, file=self.fd, all_threads=True, chain=False)

    def dump_stack(self, pid: int) -> str:
        """In the main process: ask hung worker `pid` for its stacks; what it wrote, or ""."""
        before = os.fstat(self.fd).st_size
        try:
            os.kill(pid, DUMP_SIGNAL)
        except OSError:
            return self.read()
        deadline = time.monotonic() + DUMP_WAIT_S
        size = before
        while time.monotonic() < deadline:
            time.sleep(0.02)
            now = os.fstat(self.fd).st_size
            if now > before and now == size:
                break  # written, and no longer growing
            size = now
        return self.read()

    def read(self) -> str:
        if self.fd < 0:
            return ""
        return os.pread(self.fd, MAX_BYTES, 0).decode("utf-8", errors="replace").strip()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __reduce__(self):
        return _rebuild, (reduction.DupFd(self.fd),)


def _rebuild(dup_fd):
    return CrashLog(dup_fd.detach())
