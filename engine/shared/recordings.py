"""Recordings as files: where a run keeps them and how they are read back (GIF or MP4).

The engine writes them (engine/evaluation/recording.py); the app's replay and `eval` read them
with what is here, which needs imageio but nothing of the engine.

Tested in: tests/engine/evaluation/test_recording.py, tests/engine/evaluation/test_periodic_eval.py,
tests/screens/test_dashboard_replay.py
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

SUFFIXES = (".gif", ".mp4")
INSTALL_HINT = 'pip install "puffer-tui[record]"'
RECORDINGS = "recordings"


class RecordingError(ValueError):
    """A recording that cannot be made; the message names the problem and the fix."""


def recordings_dir(run_dir: str | os.PathLike, create: bool = False) -> Path:
    """RUN/recordings, made (private, like the run dir) when `create`."""
    directory = Path(run_dir) / RECORDINGS
    if create:
        directory.mkdir(mode=0o700, exist_ok=True)
    return directory


def encoder(suffix: str):
    """imageio's modules for `suffix`, or RecordingError with the install command."""
    try:
        import imageio.v2 as imageio_v2
        import imageio.v3 as imageio_v3
    except ImportError:
        raise RecordingError(f"recording needs imageio: {INSTALL_HINT}") from None
    if suffix == ".mp4":
        try:
            import imageio_ffmpeg

            imageio_ffmpeg.get_ffmpeg_exe()
        except (ImportError, RuntimeError):
            raise RecordingError(f"recording an .mp4 needs imageio-ffmpeg: {INSTALL_HINT}") \
                from None
    return imageio_v2, imageio_v3


def iter_recording(path: str | os.PathLike):
    """The frames of a recording one by one, each H x W x 3 uint8, at its frame rate: a GIF
    frame shown for several frame times (identical frames in a row are stored once) is
    repeated that many times."""
    path = Path(path)
    _, imageio_v3 = encoder(path.suffix.lower())
    if not path.is_file():
        raise RecordingError(f"no recording at {path}")
    repeats = _gif_repeats(path) if path.suffix.lower() == ".gif" else None
    for index, image in enumerate(imageio_v3.imiter(path)):
        image = np.asarray(image)
        image = image[:, :, :3] if image.ndim == 3 else np.repeat(image[:, :, None], 3, axis=2)
        for _ in range(repeats[index] if repeats and index < len(repeats) else 1):
            yield image


def _gif_timing(path: Path) -> tuple[list[int], int]:
    """(each frame's delay in ms, their greatest common divisor: the frame time; 0 if none)."""
    import math

    from PIL import Image

    with Image.open(path) as image:
        delays = []
        for index in range(getattr(image, "n_frames", 1)):
            image.seek(index)
            delays.append(int(image.info.get("duration", 0)))
    return delays, (math.gcd(*delays) if any(delays) else 0)


def _gif_repeats(path: Path) -> list[int]:
    """How many frame times each GIF frame lasts: its delay over the shortest common one."""
    delays, base = _gif_timing(path)
    return [max(1, d // base) if base else 1 for d in delays]


def read_recording(path: str | os.PathLike) -> list[np.ndarray]:
    """Every frame of a recording (.gif or .mp4) as H x W x 3 uint8 images, in order."""
    return list(iter_recording(path))


def recording_fps(path: str | os.PathLike) -> float:
    """The frame rate `iter_recording` plays `path` at: a GIF's shortest common frame delay,
    an MP4's own rate (10 when the file names none)."""
    path = Path(path)
    if path.suffix.lower() == ".gif":
        _, base = _gif_timing(path)
        return 1000.0 / base if base else 10.0
    _, imageio_v3 = encoder(path.suffix.lower())
    try:
        fps = imageio_v3.immeta(path).get("fps")
    except Exception:  # noqa: BLE001 - a file without the metadata plays at the default
        fps = None
    return float(fps) if isinstance(fps, (int, float)) and fps > 0 else 10.0


def latest_recording(run_dir: str | os.PathLike) -> Path | None:
    """The run's newest recording (recordings/*.gif|*.mp4, by modification time), or None."""
    directory = recordings_dir(run_dir)
    try:
        found = [(entry.stat().st_mtime_ns, entry.name) for entry in os.scandir(directory)
                 if not entry.name.startswith(".") and Path(entry.name).suffix.lower()
                 in SUFFIXES and entry.is_file()]
    except OSError:
        return None
    return directory / max(found)[1] if found else None
