"""Recordings: the frames an env draws, written to a GIF or an MP4 file (through imageio).

    check_recording_path(path)                     # before playing: extension, folder, libraries
    record_episodes(frames, path, fps, scale, palette) -> Recording
    read_recording(path) -> list of H x W x 3 uint8 images (the dashboard's replay)

`frames` is any iterable of what an env's `frame(i)` returns (engine/native/frames.py):
tile grids are drawn through the env's palette, each tile a `scale` x `scale` block of its
colour; rgb images are scaled up by whole pixels. Text frames (Gymnasium's "ansi") have no
picture to record and are refused. `Evaluator.recording_frames()` (engine/evaluation/evaluate.py) yields
a policy's episodes in this form.

Frames are streamed to the encoder as they come, never gathered in a list here. An MP4 is
encoded by ffmpeg as it goes; a GIF is written by Pillow when it is closed, so Pillow holds
every frame until then (one byte a pixel, after each frame is reduced to its palette): a GIF
stops taking frames at GIF_MAX_BYTES, and says so in `Recording.cut_short`.

The file appears whole or not at all: it is encoded into a temp file beside it, which is
renamed over the final name once complete (see engine/shared/atomic_write.py for the policy).

Runs keep their recordings in `RUN/recordings/` (`recordings_dir`), periodic ones named
`eval-<step>.gif` (`periodic_recording_path`). A policy is recorded so (on separate envs; the
Evaluator samples from its own torch stream, leaving the process's generators alone):

    player = Evaluator(policy, config, checkpoint, 1, seed, True, episodes)
    try:
        record_episodes(player.recording_frames(), periodic_recording_path(run_dir, step),
                        fps, None, player.envs[0].palette)
    finally:
        player.close()

During training, engine/evaluation/periodic_eval.py records env 0's first episode of an evaluation.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from puffer_tui.engine.native import frames as frame_kinds
from puffer_tui.engine.shared.atomic_write import fsync_dir
from puffer_tui.engine.shared.recordings import (  # noqa: F401 (re-exported for eval)
    INSTALL_HINT,
    RECORDINGS,
    SUFFIXES,
    RecordingError,
    encoder,
    iter_recording,
    latest_recording,
    read_recording,
    recording_fps,
    recordings_dir,
)
from puffer_tui.engine.shared.run_dir import CHECKPOINT_DIR

TARGET_WIDTH = 400  # pixels: the default scale makes a recording about this wide
MAX_SCALE = 64
GIF_MAX_FPS = 50  # GIF delays are in hundredths of a second; browsers slow shorter ones down
GIF_MAX_BYTES = 256 * 1024 * 1024  # palette pixels Pillow may hold before it writes a GIF
# The window renderer's colours (app/render_window.py), so a recording looks like the window.
BACKGROUND, UNKNOWN_TILE = frame_kinds.BACKGROUND, frame_kinds.UNKNOWN_TILE  # frames.py's


@dataclass(frozen=True)
class Recording:
    path: Path
    frames: int
    width: int
    height: int
    cut_short: bool = False  # a GIF that reached GIF_MAX_BYTES before its frames ended


# -- where recordings go, and whether they can go there -------------------------------------

def periodic_recording_path(run_dir: str | os.PathLike, step: int, suffix: str = ".gif") -> Path:
    """Where a recording made during training at global step `step` goes."""
    return recordings_dir(run_dir) / f"eval-{int(step)}{suffix}"


def run_dir_of(checkpoint: str | os.PathLike) -> Path | None:
    """The run directory a checkpoint file lies in (RUN/checkpoints/step-...pt), else None."""
    checkpoint = Path(checkpoint)
    return checkpoint.parent.parent if checkpoint.parent.name == CHECKPOINT_DIR else None


def recording_path(name: str, checkpoint: str | os.PathLike) -> Path:
    """Where `eval --record NAME` writes: a bare file name (no "/") goes into the run's
    recordings/ folder, anything else is a path as given."""
    if "/" in name or name in ("", ".", ".."):
        return Path(name)
    run_dir = run_dir_of(checkpoint)
    if run_dir is None:
        raise RecordingError(f"{checkpoint} is not in a run's checkpoints/ folder, so a bare "
                             f"name has no run to go into: give a path, e.g. ./{name}")
    return recordings_dir(run_dir) / name


def check_recording_options(path: str | os.PathLike, fps: float, scale: int | None) -> Path:
    """check_recording_path, and the frame rate and scale for its format."""
    path = check_recording_path(path)
    if not 0 < fps <= (GIF_MAX_FPS if path.suffix.lower() == ".gif" else 1000):
        limit = f"at most {GIF_MAX_FPS} for a GIF (or record an .mp4)" \
            if path.suffix.lower() == ".gif" else "in (0, 1000]"
        raise RecordingError(f"fps must be {limit}, got {fps:g}")
    if scale is not None and not 1 <= scale <= MAX_SCALE:
        raise RecordingError(f"scale must be in [1, {MAX_SCALE}], got {scale}")
    return path


def check_recording_path(path: str | os.PathLike) -> Path:
    """`path` if a recording can be written there: a .gif or .mp4 name in an existing,
    writable folder (or a run's recordings/ folder, made when it is written), with the
    encoder installed; RecordingError naming the fix otherwise."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise RecordingError(f"cannot record to {path}: the name must end in .gif or .mp4")
    if path.is_dir():
        raise RecordingError(f"cannot record to {path}: it is a directory; add a file name "
                             f"ending in {suffix}")
    folder = path.parent
    if folder.name == RECORDINGS and not folder.exists() and folder.parent.is_dir():
        folder = folder.parent  # recordings/ is made in the run dir when the file is written
    if not folder.is_dir():
        raise RecordingError(f"cannot record to {path}: the folder {folder} does not exist; "
                             "create it or choose another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise RecordingError(f"cannot record to {path}: the folder {folder} is not writable; "
                             "choose another path")
    encoder(suffix)
    return path


# -- frames to pixels -----------------------------------------------------------------------

def colour_table(palette: dict | None) -> np.ndarray:
    """frames.colour_table, a bad palette refused as a RecordingError."""
    try:
        return frame_kinds.colour_table(palette)
    except ValueError as e:
        raise RecordingError(str(e)) from None


def default_scale(width: int) -> int:
    """Pixels per tile (or per image pixel) that make a frame about TARGET_WIDTH wide."""
    return max(1, min(MAX_SCALE, round(TARGET_WIDTH / max(width, 1))))


def frame_pixels(frame, table: np.ndarray, scale: int) -> np.ndarray:
    """One frame as an H*scale x W*scale x 3 uint8 image; RecordingError for text frames."""
    kind = frame_kinds.frame_kind(frame)
    if kind == frame_kinds.TILES:
        image = table[np.asarray(frame, np.uint8)]
    elif kind == frame_kinds.RGB:
        image = frame_kinds.to_rgb8(frame)
    elif kind == frame_kinds.TEXT:
        raise RecordingError("this env draws text frames, which have no picture to record")
    else:
        raise RecordingError(f"not a frame: {type(frame).__name__} "
                             f"{getattr(frame, 'shape', '')}")
    return _scaled(image, scale)


def _scaled(image: np.ndarray, scale: int) -> np.ndarray:
    if scale > 1:
        image = np.repeat(np.repeat(image, scale, axis=0), scale, axis=1)
    return np.ascontiguousarray(image)


# -- writing and reading ----------------------------------------------------------------------

def record_episodes(frames: Iterable, path: str | os.PathLike, fps: float = 10.0,
                    scale: int | None = None, palette: dict | None = None) -> Recording:
    """Encode every frame of `frames` into `path` (.gif or .mp4), each tile or pixel a
    `scale` x `scale` block (None: about TARGET_WIDTH pixels wide), `fps` frames a second.

    The file appears complete or not at all. A KeyboardInterrupt while `frames` plays
    finishes the file with the frames so far, then propagates. RecordingError for a bad
    path, fps or scale, a text frame, a frame that changes size, or no frame at all."""
    path = check_recording_options(path, fps, scale)
    suffix = path.suffix.lower()
    table = colour_table(palette)
    if path.parent.name == RECORDINGS and not path.parent.exists():
        recordings_dir(path.parent.parent, create=True)
    temp = _new_temp(path)
    # GIF: tiles are written as indices into the table's distinct colours (no quantizing;
    # repeated palette colours would cost Pillow a quadratic remap on every frame)
    colours, index_of_tile = np.unique(table, axis=0, return_inverse=True)
    index_of_tile = index_of_tile.reshape(-1).astype(np.uint8)
    writer = _Writer(temp, suffix, fps, colours)
    interrupted = None
    try:
        try:
            for frame in frames:
                if scale is None:
                    scale = default_scale(np.shape(frame)[1] if not isinstance(frame, str) else 1)
                if suffix == ".gif" and frame_kinds.frame_kind(frame) == frame_kinds.TILES:
                    image = _scaled(index_of_tile[np.asarray(frame, np.uint8)], scale)
                else:
                    image = frame_pixels(frame, table, scale)
                if not writer.add(image):
                    break  # a GIF at its memory limit
        except KeyboardInterrupt as stop:
            interrupted = stop  # keep what was played
        if writer.count == 0:
            raise interrupted or RecordingError("no frame to record")
        writer.close()
        with open(temp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(temp, path)
        fsync_dir(path.parent)
    except BaseException:
        writer.abort()
        temp.unlink(missing_ok=True)
        raise
    if interrupted is not None:
        raise interrupted
    return Recording(path, writer.count, writer.width, writer.height, writer.cut_short)


def _new_temp(path: Path) -> Path:
    """An empty temp file beside `path`, ending in its suffix (imageio picks the format from
    it); created like any new file (the umask decides its mode), not private like mkstemp's."""
    while True:
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp{path.suffix.lower()}")
        try:
            os.close(os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            return temp
        except FileExistsError:
            continue


class _Writer:
    """imageio's writer for one file, opened on the first frame (its size is known then).

    GIF frames come as indices into `colours` (H x W, the tiles: their colours exactly,
    without quantizing) or images (reduced to 256 colours each); MP4 frames are images,
    padded to even sides with the background (H.264's 4:2:0 needs them)."""

    def __init__(self, temp: Path, suffix: str, fps: float, colours: np.ndarray):
        self.temp, self.suffix, self.fps = temp, suffix, fps
        self.palette = np.ascontiguousarray(colours, np.uint8).tobytes()
        self.writer = None
        self.count = 0
        self.width = self.height = 0
        self.held = 0  # bytes a GIF's frames take in Pillow until it is written
        self.cut_short = False

    def add(self, image: np.ndarray) -> bool:
        """Encode one frame; False when a GIF cannot hold another."""
        if self.suffix == ".mp4":
            image = _pad_even(image)
        height, width = image.shape[:2]
        if self.writer is None:
            self.width, self.height = width, height
            self.writer = self._open()
        elif (height, width) != (self.height, self.width):
            raise RecordingError(f"the frames changed size, from {self.width} x {self.height} "
                                 f"to {width} x {height}: a recording keeps one size")
        if self.suffix == ".gif":
            if self.held + width * height > GIF_MAX_BYTES:
                self.cut_short = True
                return False
            self.held += width * height
            # a byte a pixel in Pillow until the GIF is written, not three
            delay = gif_delay_ms(self.fps)
            if image.ndim == 2:
                self.writer.write(image, mode="P", palette=self.palette, duration=delay, loop=0)
            else:
                self.writer.write(image, bits=8, duration=delay, loop=0)
        else:
            self.writer.append_data(image)
        self.count += 1
        return True

    def _open(self):
        imageio_v2, imageio_v3 = encoder(self.suffix)
        if self.suffix == ".gif":
            return imageio_v3.imopen(self.temp, "w", plugin="pillow", extension=".gif")
        return imageio_v2.get_writer(self.temp, format="FFMPEG", mode="I", fps=self.fps,
                                     codec="libx264", pixelformat="yuv420p", quality=8,
                                     macro_block_size=1, ffmpeg_log_level="error")

    def close(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.close()

    def abort(self) -> None:
        """Close the encoder without caring whether it finishes (its file is removed)."""
        try:
            self.close()
        except Exception:  # noqa: BLE001 - the first error is the one raised
            pass


def gif_delay_ms(fps: float) -> int:
    """A GIF frame's delay: whole hundredths of a second (what the format stores), so frames
    that Pillow merges (identical in a row) sum to a whole multiple of it."""
    return 10 * max(2, round(100 / fps))


def _pad_even(image: np.ndarray) -> np.ndarray:
    height, width = image.shape[:2]
    if height % 2 == 0 and width % 2 == 0:
        return image
    padded = np.empty((height + height % 2, width + width % 2, 3), np.uint8)
    padded[:] = BACKGROUND
    padded[:height, :width] = image
    return padded
