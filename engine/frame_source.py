"""Frames for renderers: which envs clients want, and the latest captured frame of each.

The control server's thread says what is wanted (`want`) and reads `frames`; the main
thread captures (`capture`, from the command queue's safe point) through `grab(env)`,
the trainer's frame of one env. A frame is replaced whole, so a reader never sees half.
"""

from __future__ import annotations

import time
from collections.abc import Callable

FRAME_INTERVAL = 1 / 15  # most frames per second captured for renderers


class FrameSource:
    def __init__(self, grab: Callable[[int], object | None]):
        self._grab = grab
        self.wanted: frozenset[int] = frozenset()
        self.frames: dict[int, tuple[int, object]] = {}  # env -> (sequence number, tiles)
        self._seq = 0
        self._next = 0.0

    def want(self, envs: frozenset[int]) -> None:
        """Server thread: capture these envs from now on, the first frame at once."""
        self.wanted = frozenset(envs)
        self._next = 0.0

    def due(self) -> bool:
        return bool(self.wanted) and time.monotonic() >= self._next

    def capture(self) -> None:
        """Main thread: grab a frame of every wanted env."""
        self._next = time.monotonic() + FRAME_INTERVAL
        for env in self.wanted:
            try:
                tiles = self._grab(env)
            except Exception:  # a bad index or a renderless env: nothing to show
                tiles = None
            if tiles is not None:
                self._seq += 1
                self.frames[env] = (self._seq, tiles.copy())
