"""Where a worker's Python traceback goes when it dies of a signal (segfault, abort, ...).

Each worker turns on `faulthandler` writing into its own nameless temp file; if the worker
dies without a word, the main process reads that file and puts it in the WorkerError.
"""

from __future__ import annotations

import faulthandler
import os
import tempfile
from multiprocessing import reduction

MAX_BYTES = 64 * 1024


class CrashLog:
    def __init__(self, fd: int | None = None):
        if fd is None:
            fd, path = tempfile.mkstemp(prefix="puffer_tui_crash_")
            os.unlink(path)  # nameless from the start: nothing to clean up
        self.fd = fd

    def enable(self) -> None:
        """In the worker: dump the traceback here on SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL."""
        faulthandler.enable(file=self.fd, all_threads=False)

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
