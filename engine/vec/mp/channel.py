"""The wire between the main process and one worker: a socketpair carrying tiny messages.

The data itself lives in shared memory; the socket only says "step now" / "done". The hot
path is one byte each way (STEP, DONE). Anything else (reset seeds, infos, frames, errors)
is OBJECT: the byte b"m", a 4-byte length and a pickle. The socket doubles as the liveness
signal: when either end's process dies the kernel closes its end and the other side reads
EOF at once.

Waiting spins briefly (non-blocking polls) and then blocks in select(), so a waiting process
gives its core back to the workers within microseconds.
"""

from __future__ import annotations

import pickle
import select
import struct
import time

STEP = b"s"  # main -> worker: step your envs with the actions in shared memory
DONE = b"d"  # worker -> main: stepped, no infos
ALIVE = b"a"  # worker -> main: still busy, and getting on (a heartbeat)
OBJECT = b"m"  # either way: a pickled tuple follows
_LENGTH = struct.Struct("<I")


class ChannelClosed(ConnectionError):
    """The process at the other end has gone."""


def send_object(sock, obj) -> None:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(OBJECT + _LENGTH.pack(len(payload)) + payload)


def _recv_exact(sock, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ChannelClosed("connection closed mid-message")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def receive(sock):
    """The next message: STEP or DONE (bytes), or the unpickled object. Blocks until one."""
    op = sock.recv(1)
    if not op:
        raise ChannelClosed("connection closed")
    if op != OBJECT:
        return op
    (length,) = _LENGTH.unpack(_recv_exact(sock, _LENGTH.size))
    return pickle.loads(_recv_exact(sock, length))


def wait_readable(fds: list, spin_s: float, timeout: float | None) -> list:
    """The fds that are readable: spin up to `spin_s`, then block until `timeout` (None: forever).

    Returns [] on timeout."""
    if spin_s > 0:
        end = time.perf_counter() + spin_s
        while True:
            ready, _, _ = select.select(fds, (), (), 0)
            if ready:
                return ready
            if time.perf_counter() >= end:
                break
    ready, _, _ = select.select(fds, (), (), timeout)
    return ready
