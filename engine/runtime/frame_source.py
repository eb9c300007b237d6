"""Frames for renderers: which envs clients want, and the latest captured frame of each.

The control server's thread says what is wanted (`want`) and reads `frames`; the main
thread captures (`capture`, from the command queue's safe point) through `grab(env)`,
the trainer's frame of one env. A frame is replaced whole, so a reader never sees half.

Nothing is drawn while nobody watches: `capture` runs only for wanted envs, at most
1/FRAME_INTERVAL times a second. A frame is a tile grid, an RGB image or text (see
engine/native/frames.py); images are cut to the frame bounds here, so whatever an env's
render() returns, what is kept and sent stays small.

A wish is an env index (the env's own drawing) or `(env, view)` with a view of
protocol.VIEWS; `frame_key(env, view)` gives the key for both `want` and `frames`. Other
views than the env's are grabbed with `grab(env, view)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from puffer_tui.engine.native.frames import bound_frame

FRAME_INTERVAL = 1 / 15  # most frames per second captured for renderers
ENV_VIEW = "env"


def frame_key(env: int, view: str = ENV_VIEW):
    """What `want` takes and `frames` is keyed by: the bare env index for the env's view."""
    return env if view == ENV_VIEW else (env, view)


class FrameSource:
    def __init__(self, grab: Callable[..., object | None]):
        self._grab = grab
        self.wanted: frozenset = frozenset()
        self.frames: dict = {}  # frame_key -> (sequence number, frame)
        self._seq = 0
        self._next = 0.0

    def want(self, keys: frozenset) -> None:
        """Server thread: capture these (frame_key) from now on, the first frame at once."""
        self.wanted = frozenset(keys)
        self._next = 0.0

    def due(self) -> bool:
        return bool(self.wanted) and time.monotonic() >= self._next

    def capture(self) -> None:
        """Main thread: grab a frame of every wanted env and view."""
        self._next = time.monotonic() + FRAME_INTERVAL
        for key in self.wanted:
            env, view = key if isinstance(key, tuple) else (key, ENV_VIEW)
            try:
                frame = self._grab(env) if view == ENV_VIEW else self._grab(env, view)
                frame = None if frame is None else bound_frame(frame)
            except Exception:  # a bad index or a renderless env: nothing to show
                frame = None
            if frame is not None:
                self._seq += 1
                self.frames[key] = (self._seq, frame)
