"""Frames as terminal cells: RGB images in half blocks, text frames, and fitting them to a space.

Shared by the env panel (app/widgets/env_render.py) and `puffer-tui eval --render ascii`, so
both draw a frame the same way. Tile frames are drawn by env_render.frame_text.

An RGB image is drawn two pixels per cell: the upper half block with the top pixel as its
foreground colour and the bottom pixel as its background, in true colour. Images are shrunk to
the space by area averaging (engine/native/frames.py says why) and grown by whole-number
repeats, so a small observation (a 7 x 7 MiniGrid view) stays crisp instead of blurred.

Tested in: tests/app/test_render_drawing.py
"""

from __future__ import annotations

from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

UPPER_HALF = "\u2580"  # fg = top pixel, bg = bottom pixel
RAMP = " .:-=+*#%@"  # dark to light, for output without colours (a log, a pipe)
MAX_STYLES = 4096  # cached half-block styles; an image has few distinct colour pairs


def image_pixels(frame):
    """The H x W x 3 uint8 pixels of an RGB frame (a view of its bytes)."""
    import numpy as np

    return np.frombuffer(frame.data, np.uint8).reshape(frame.height, frame.width, 3)


def fit_image(pixels, max_cols: int, max_rows: int):
    """`pixels` sized for max_cols x max_rows cells (two pixel rows per cell), aspect kept."""
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.engine.native.frames import area_resize, fit_size

    height, width = pixels.shape[:2]
    max_height, max_width = max(2 * max_rows, 1), max(max_cols, 1)
    scale = min(max_height / height, max_width / width)
    if scale >= 2:
        k = int(scale)
        return pixels.repeat(k, axis=0).repeat(k, axis=1)
    if scale >= 1:
        return pixels
    return area_resize(pixels, *fit_size(height, width, max_height, max_width))


def _packed(pixels):
    """One int per pixel (0xRRGGBB), so runs of equal colours are found with numpy."""
    import numpy as np

    p = pixels.astype(np.int64)
    return (p[:, :, 0] << 16) | (p[:, :, 1] << 8) | p[:, :, 2]


def _colour(packed: int) -> Color:
    return Color.from_rgb(packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF)


def halfblock_lines(pixels, base: Style | None = None,
                    styles: dict | None = None) -> list[list[Segment]]:
    """One list of segments per cell row: UPPER_HALF cells, fg the top pixel, bg the bottom
    one. An odd last pixel row has the `base` background below it. Cells of one colour pair
    next to each other share a segment. `styles` caches Style objects between calls."""
    import numpy as np

    base = base or Style()
    styles = {} if styles is None else styles
    if len(styles) > MAX_STYLES:
        styles.clear()
    packed = _packed(pixels)
    if packed.shape[0] % 2:  # -1: no bottom pixel, the panel's background shows
        packed = np.vstack([packed, np.full((1, packed.shape[1]), -1, np.int64)])
    pairs = (packed[0::2] << 25) | (packed[1::2] & 0x1FFFFFF)  # bit 24 set only by -1
    lines = []
    for row, bottoms in zip(pairs, packed[1::2]):
        starts = np.flatnonzero(np.diff(row)) + 1
        bounds = [0, *starts.tolist(), len(row)]
        segments = []
        for start, end in zip(bounds[:-1], bounds[1:]):
            key = int(row[start])
            style = styles.get(key)
            if style is None:
                bottom = int(bottoms[start])
                style = Style(color=_colour(key >> 25),
                              bgcolor=base.bgcolor if bottom < 0 else _colour(bottom))
                styles[key] = style
            segments.append(Segment(UPPER_HALF * (end - start), style))
        lines.append(segments)
    return lines


def ramp_text(pixels) -> Text:
    """The image in characters of RAMP by brightness, one per cell (two pixel rows)."""
    import numpy as np

    grey = pixels.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    if grey.shape[0] % 2:
        grey = np.vstack([grey, grey[-1:]])
    cells = (grey[0::2] + grey[1::2]) / 2
    index = np.minimum((cells * len(RAMP) / 256).astype(int), len(RAMP) - 1)
    return Text("\n".join("".join(RAMP[i] for i in row) for row in index), no_wrap=True)


def text_lines(frame, max_cols: int, max_rows: int, base: Style | None = None) -> list[Text]:
    """A text frame's lines, colour codes applied, cut to max_rows lines of max_cols cells."""
    text = Text.from_ansi(frame.data, style=base or "", no_wrap=True)
    lines = text.split("\n", allow_blank=True)[:max(max_rows, 1)]
    for line in lines:
        line.truncate(max(max_cols, 1))
    return lines


class FrameImage:
    """A rich renderable of an RGB frame fitted to max_cols x max_rows: half blocks in colour,
    RAMP characters on a console without colours."""

    def __init__(self, frame, max_cols: int, max_rows: int):
        self.pixels = fit_image(image_pixels(frame), max_cols, max_rows)

    def __rich_console__(self, console, options):
        if console.color_system is None:
            yield ramp_text(self.pixels)
            return
        for line in halfblock_lines(self.pixels):
            yield from line
            yield Segment.line()


# -- the saliency overlay: how much each cell drives the policy, as heat over the frame ------

HEAT = (255, 64, 0)  # the colour of the most salient cells
DIM = 0.45  # what is left of a cell's own colour where nothing is salient


def tile_pixels(frame, palette: dict):
    """A tile frame as an H x W x 3 image, one pixel per tile in its palette colour (blank
    glyphs black), so the saliency can be blended into it like into any image."""
    import numpy as np

    colours = {}
    for tile, (glyph, colour) in palette.items():
        rgb = (0, 0, 0)
        if glyph.strip():
            parsed = Style.parse(colour).color
            rgb = (200, 200, 200) if parsed is None or parsed.is_default else \
                tuple(parsed.get_truecolor())
        colours[tile] = rgb
    lookup = np.zeros((256, 3), np.uint8)
    lookup[:] = (255, 0, 0)  # a tile the palette lacks, as env_render draws it: red
    for tile, rgb in colours.items():
        if 0 <= tile < 256:
            lookup[tile] = rgb
    tiles = np.frombuffer(frame.tiles, np.uint8).reshape(frame.height, frame.width)
    return lookup[tiles]


def overlay_saliency(pixels, grid, grid_height: int, grid_width: int):
    """`pixels` (H x W x 3) with the saliency `grid` (values 0-1, grid_height x grid_width,
    stretched to the image) blended in as heat: salient cells glow, the rest is dimmed."""
    import numpy as np

    height, width = pixels.shape[:2]
    cells = np.asarray(grid, np.float32).reshape(grid_height, grid_width)
    rows = np.minimum((np.arange(height) * grid_height) // max(height, 1), grid_height - 1)
    cols = np.minimum((np.arange(width) * grid_width) // max(width, 1), grid_width - 1)
    alpha = (np.clip(cells[rows][:, cols], 0.0, 1.0) ** 0.7 * 0.9)[:, :, None]
    out = pixels.astype(np.float32) * DIM * (1.0 - alpha) + np.array(HEAT, np.float32) * alpha
    return np.clip(out, 0, 255).astype(np.uint8)
