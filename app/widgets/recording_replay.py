"""A run's last recording, replayed in the dashboard's env panel (no Textual here).

    watch = LatestRecording()
    if watch.check(run_dir):          # cheap: one stat of recordings/ unless it changed
        ...watch.path...              # the newest .gif/.mp4, or None
    replay = load_replay(path)        # frames as RGB Frames, shrunk for the panel; its fps
    replay.frame_at(seconds)          # the frame to show that long after the start (None: over)

Files are decoded by engine/evaluation/recording.py (imageio), in a worker thread of the dashboard.

Tested in: tests/app/test_app_eval_replay.py
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from puffer_tui.engine.shared.protocol import Frame, FrameKind
from puffer_tui.engine.shared.recordings import (
    RecordingError,
    iter_recording,
    latest_recording,
    recording_fps,
    recordings_dir,
)

MAX_WIDTH = 160  # pixels kept per frame: the panel draws two pixel rows a cell, ~26 cells wide
MAX_FRAMES = 3000  # a replay holds at most this many frames (minutes at GIF rates)


@dataclass(frozen=True)
class Replay:
    path: Path
    frames: list
    fps: float

    def frame_at(self, seconds: float) -> Frame | None:
        index = int(seconds * self.fps)
        return self.frames[index] if 0 <= index < len(self.frames) else None

    def position(self, seconds: float) -> int:
        """The 1-based number of the frame shown `seconds` after the start."""
        return min(int(seconds * self.fps), len(self.frames) - 1) + 1


def load_replay(path: str | os.PathLike) -> Replay:
    """Every frame of the recording as an RGB Frame at most MAX_WIDTH pixels wide;
    RecordingError (engine/evaluation/recording.py) when it cannot be read."""
    path = Path(path)
    frames = []
    for image in iter_recording(path):
        stride = max(1, math.ceil(image.shape[1] / MAX_WIDTH))
        image = image[::stride, ::stride].copy()  # nearest pixels: a tile stays one colour
        height, width = image.shape[:2]
        frames.append(Frame(0, height, width, image.tobytes(), FrameKind.RGB))
        if len(frames) >= MAX_FRAMES:
            break
    if not frames:
        raise RecordingError(f"{path.name} holds no frames")
    return Replay(path, frames, recording_fps(path))


class LatestRecording:
    """The newest recording of a run, looked up again only when its folder changed."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._seen: tuple | None = None

    def check(self, run_dir: str | os.PathLike | None) -> bool:
        """Look at `run_dir`'s recordings; True when `path` changed."""
        if run_dir is None:
            seen = None
        else:
            try:
                stat = os.stat(recordings_dir(run_dir))
                seen = (str(run_dir), stat.st_mtime_ns, stat.st_ino)
            except OSError:
                seen = (str(run_dir), None, None)
        if seen == self._seen:
            return False
        self._seen = seen
        path = latest_recording(run_dir) if seen and seen[1] is not None else None
        changed, self.path = path != self.path, path
        return changed
