"""Anonymous shared memory for the vec buffers, with nothing to clean up, ever.

The buffers live in one memory file that has no name: `memfd_create` on Linux, elsewhere a
temporary file unlinked the moment it is created. Workers receive the file descriptor when
they start (multiprocessing passes it like a pipe) and map it; once every process holding
a mapping is gone the kernel frees the memory. So neither close(), Ctrl-C, a SIGKILL of the
main process nor a crashed worker can leave a segment behind in /dev/shm.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from multiprocessing import reduction

import numpy as np

from puffer_tui.engine.native.buffers import buffer_layout

ALIGN = 64  # cache line: rows written by different workers never share one across buffers


def _round_up(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class SharedLayout:
    """Byte offsets of the six buffers (rows grouped by worker) inside one memory file."""

    def __init__(self, observation_space, action_space, num_agents: int):
        self.num_agents = num_agents
        self.fields: dict[str, tuple[int, tuple[int, ...], np.dtype]] = {}
        offset = 0
        for name, (shape, dtype) in buffer_layout(
            observation_space, action_space, num_agents
        ).items():
            self.fields[name] = (offset, shape, dtype)
            offset += _round_up(int(np.prod(shape)) * dtype.itemsize)
        self.nbytes = max(offset, ALIGN)

    def views(self, buffer, start: int = 0, stop: int | None = None) -> dict[str, np.ndarray]:
        """name -> array over agent rows [start, stop) of `buffer` (an mmap), no copies."""
        stop = self.num_agents if stop is None else stop
        out = {}
        for name, (offset, shape, dtype) in self.fields.items():
            full = np.ndarray(shape, dtype=dtype, buffer=buffer, offset=offset)
            out[name] = full[start:stop]
        return out


def _create_fd(nbytes: int) -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("puffer_tui_vec", os.MFD_CLOEXEC)
    else:  # no memfd: an ordinary temp file, unlinked before anyone can leak it
        shm_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix="puffer_tui_vec_", dir=shm_dir)
        os.unlink(path)
    os.ftruncate(fd, nbytes)
    return fd


class SharedMemoryFile:
    """A nameless shared memory file mapped into this process; picklable into a worker.

    Pickling (only while multiprocessing starts a process) sends a duplicate of the file
    descriptor; the worker calls `attach()` to map it and drop the descriptor.
    """

    def __init__(self, nbytes: int, fd: int | None = None):
        self.nbytes = nbytes
        self.fd = _create_fd(nbytes) if fd is None else fd
        self.mmap: mmap.mmap | None = None

    def attach(self, keep_fd: bool = False) -> mmap.mmap:
        """Map the file (once). Unless `keep_fd` (the parent, until its workers have started),
        close the descriptor: the mapping alone keeps the memory alive."""
        if self.mmap is None:
            self.mmap = mmap.mmap(self.fd, self.nbytes)
        if not keep_fd:
            self.close_fd()
        return self.mmap

    def close_fd(self) -> None:
        if self.fd is not None and self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

    def __reduce__(self):
        if self.fd is None or self.fd < 0:
            raise RuntimeError("shared memory can only be passed to a worker before attach()")
        return _rebuild, (self.nbytes, reduction.DupFd(self.fd))


def _rebuild(nbytes, dup_fd):
    return SharedMemoryFile(nbytes, fd=dup_fd.detach())
