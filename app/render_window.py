"""The window renderer: env frames in a raylib window, through the PyPI `raylib` package
(`pyray`), so no C env links raylib itself.

It draws what the dashboard's env panel draws (app/widgets/env_render.py): `Frame`s decoded
from the protocol's `frame` messages and the palette decoded from its wire form; the frames
come from the engine (`eval --render window` plays them from engine/evaluation/evaluate.py).

A tile frame becomes an RGBA image through a colour lookup table (one flat colour per tile,
taken from the palette's rich colour), an RGB frame (Gymnasium's rgb_array) is its pixels;
either is uploaded to a W x H texture and drawn scaled up to `cell` pixels per tile or pixel,
so the cost per frame does not grow with Python calls per tile. A text frame (ansi) is drawn
character by character on a grid, in its colours.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

# one palette-to-colour rule for the window and recordings (engine/native/frames.py)
from puffer_tui.engine.native import frames
from puffer_tui.engine.native.frames import (  # noqa: F401 (tile_rgb, UNKNOWN_TILE: for tests)
    BACKGROUND,
    FOREGROUND,
    UNKNOWN_TILE,
    tile_rgb,
)
from puffer_tui.engine.shared.protocol import Frame, FrameKind

MAX_CELL = 32
MAX_WINDOW = (1280, 800)


class WindowUnavailableError(RuntimeError):
    """No display to open a window on."""


NO_DISPLAY_HINT = (
    "use `--render ascii` to draw in the terminal, or run under a virtual display, "
    "e.g. `xvfb-run -a puffer-tui eval RUN --render window --screenshot out.png`"
)


def colour_table(palette: dict[int, tuple[str, str]]) -> np.ndarray:
    """A (256, 4) uint8 RGBA lookup table indexed by tile id (frames.colour_table, opaque)."""
    rgb = frames.colour_table(palette)
    return np.concatenate([rgb, np.full((256, 1), 255, np.uint8)], axis=1)


def cell_size(frame_shape: tuple[int, int], max_window=MAX_WINDOW) -> int:
    """Pixels per tile so that the window fits `max_window` (at least 1, at most MAX_CELL)."""
    rows, cols = frame_shape
    return max(1, min(MAX_CELL, max_window[0] // cols, max_window[1] // rows))


def _kind(frame) -> FrameKind:
    """The frame's kind; frames are the Frame objects of the protocol (or of the app's store,
    which decodes tile frames only)."""
    if not all(hasattr(frame, name) for name in ("env", "height", "width", "tiles")):
        raise ValueError(f"frames must be Frame objects (engine/shared/protocol.py decode_frame), "
                         f"got {type(frame).__name__}")
    return getattr(frame, "kind", FrameKind.TILES)


def _tiles(frame) -> np.ndarray:
    """The frame's tile ids as an H x W uint8 grid (a view of its bytes)."""
    _kind(frame)
    if frame.height < 1 or frame.width < 1 or len(frame.tiles) != frame.height * frame.width:
        raise ValueError(
            f"frames must hold height x width tile ids, got {frame.height} x {frame.width} "
            f"with {len(frame.tiles)} tiles"
        )
    return np.frombuffer(frame.tiles, np.uint8).reshape(frame.height, frame.width)


def frame_rgba(frame, table: np.ndarray) -> np.ndarray:
    """An H x W x 4 uint8 image of a tile frame (through the palette's `table`) or an RGB one."""
    if _kind(frame) == FrameKind.RGB:
        if frame.height < 1 or frame.width < 1 or len(frame.data) != frame.height * frame.width * 3:
            raise ValueError(f"an rgb frame must hold height x width x 3 bytes, got "
                             f"{frame.height} x {frame.width} with {len(frame.data)}")
        pixels = np.frombuffer(frame.data, np.uint8).reshape(frame.height, frame.width, 3)
        rgba = np.empty((frame.height, frame.width, 4), np.uint8)
        rgba[:, :, :3] = pixels
        rgba[:, :, 3] = 255
        return rgba
    return table[_tiles(frame)]


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class _Canvas:
    """A raylib texture the size of the frame, redrawn scaled to the window."""

    def __init__(self, rl, shape: tuple[int, int], cell: int):
        self.rl, self.shape, self.cell = rl, shape, cell
        image = rl.gen_image_color(shape[1], shape[0], rl.BLACK)
        self.texture = rl.load_texture_from_image(image)
        rl.unload_image(image)
        rl.set_window_size(shape[1] * cell, shape[0] * cell)

    def draw(self, rgba: np.ndarray) -> None:
        rl = self.rl
        pixels = rl.ffi.from_buffer(rgba)  # a view, alive until the call returns
        rl.update_texture(self.texture, rl.ffi.cast("void *", pixels))
        rl.begin_drawing()
        rl.clear_background(rl.Color(*BACKGROUND, 255))
        rl.draw_texture_ex(self.texture, rl.Vector2(0, 0), 0.0, float(self.cell), rl.WHITE)
        rl.end_drawing()

    def close(self) -> None:
        self.rl.unload_texture(self.texture)


TEXT_FONT = 20  # pixels: raylib's default font at twice its size
TEXT_CELL = (12, 22)  # pixels per character cell (w, h): a grid, so columns line up


class _TextCanvas:
    """A text frame drawn one character per grid cell, with its colours (FrozenLake's agent is
    a coloured background)."""

    shape = None  # never equal to a texture canvas's shape

    def __init__(self, rl, frame):
        self.rl = rl
        self.rows, self.cols = max(frame.height, 1), max(frame.width, 8)
        rl.set_window_size(self.cols * TEXT_CELL[0] + 16, self.rows * TEXT_CELL[1] + 16)

    def fits(self, frame) -> bool:
        return frame.height <= self.rows and frame.width <= self.cols

    def draw(self, frame) -> None:
        from rich.console import Console

        # lazy: pulls rich, which this module does not load
        from puffer_tui.app.widgets.frame_drawing import text_lines

        rl = self.rl
        console = Console(color_system="truecolor", width=max(frame.width, 1))
        rl.begin_drawing()
        rl.clear_background(rl.Color(*BACKGROUND, 255))
        for row, line in enumerate(text_lines(frame, frame.width, frame.height)):
            col = 0
            for segment in line.render(console):
                style = segment.style
                fg = _rgb(style.color if style else None, FOREGROUND)
                bg = _rgb(style.bgcolor if style else None, None)
                for char in segment.text:
                    x, y = 8 + col * TEXT_CELL[0], 8 + row * TEXT_CELL[1]
                    if bg is not None:
                        rl.draw_rectangle(x, y, TEXT_CELL[0], TEXT_CELL[1], rl.Color(*bg, 255))
                    rl.draw_text(char, x + 1, y + 1, TEXT_FONT, rl.Color(*fg, 255))
                    col += 1
        rl.end_drawing()

    def close(self) -> None:
        pass


def _rgb(colour, default):
    if colour is None or colour.is_default:
        return default
    return tuple(colour.get_truecolor())


def _save_screen(rl, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image = rl.load_image_from_screen()
    try:
        if not rl.export_image(image, str(path)):
            raise OSError(f"could not write the screenshot to {path}")
    finally:
        rl.unload_image(image)


def _pass_keys(rl, on_key: Callable[[str], str | None]) -> None:
    """Each key pressed since the last frame, as its character, to `on_key`."""
    while key := rl.get_key_pressed():
        if 32 <= key < 127:
            title = on_key(chr(key).lower())
            if title:
                rl.set_window_title(title)


def run_window(
    next_frame: Callable[[], Frame | None],
    palette: dict[int, tuple[str, str]],
    title: str = "puffer-tui",
    fps: int = 30,
    screenshot: Path | str | None = None,
    screenshot_after: int = 10,
    on_key: Callable[[str], str | None] | None = None,
) -> int:
    """Show frames from `next_frame()` until it returns None or the window is closed.

    `fps` caps the frame rate (0: uncapped). With `screenshot`, the window is saved as a PNG
    after `screenshot_after` frames and the function returns. `on_key(char)` is told each
    printable key pressed in the window (lower case) and may return a new window title.
    Returns the frames drawn. Raises WindowUnavailableError when no window can be opened (no
    display).
    """
    if fps < 0:
        raise ValueError(f"fps must be >= 0 (0: uncapped), got {fps}")
    if screenshot_after < 1:
        raise ValueError(f"screenshot_after must be >= 1, got {screenshot_after}")
    table = colour_table(palette)
    frame = next_frame()
    if frame is None:
        return 0
    first = (frame.height, frame.width) if _kind(frame) == FrameKind.TEXT else \
        frame_rgba(frame, table).shape[:2]
    if not _has_display():
        raise WindowUnavailableError(f"no display (DISPLAY is not set): {NO_DISPLAY_HINT}")
    import pyray as rl  # imported late: it prints a banner and needs nothing until now

    rl.set_trace_log_level(rl.LOG_WARNING)
    cell = cell_size(first)
    rl.init_window(first[1] * cell, first[0] * cell, title)
    if not rl.is_window_ready():
        raise WindowUnavailableError(
            f"could not open a window on display {os.environ.get('DISPLAY') or os.environ.get('WAYLAND_DISPLAY')!r}: "
            f"{NO_DISPLAY_HINT}"
        )
    canvas = None
    drawn = 0
    try:
        rl.set_target_fps(fps)
        while frame is not None and not rl.window_should_close():
            if _kind(frame) == FrameKind.TEXT:
                if not isinstance(canvas, _TextCanvas) or not canvas.fits(frame):
                    if canvas is not None:
                        canvas.close()
                    canvas = _TextCanvas(rl, frame)
                picture = frame
            else:
                picture = frame_rgba(frame, table)
                shape = picture.shape[:2]
                if canvas is None or canvas.shape != shape:
                    if canvas is not None:
                        canvas.close()
                    canvas = _Canvas(rl, shape, cell_size(shape))
            canvas.draw(picture)
            drawn += 1
            if screenshot is not None and drawn >= screenshot_after:
                canvas.draw(picture)  # both buffers now hold this frame, whichever one is read
                _save_screen(rl, Path(screenshot))
                break
            if on_key is not None:
                _pass_keys(rl, on_key)
            frame = next_frame()
    finally:
        if canvas is not None:
            canvas.close()
        rl.close_window()
    return drawn
