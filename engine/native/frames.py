"""What an env's `frame(i)` may return, and the bounds a frame is cut to before it travels.

Three kinds of frame, one per way an env can draw itself:
  * tiles: an H x W uint8 grid of tile ids, drawn with the env's palette (native C envs);
  * rgb:   an H x W x 3 uint8 image (Gymnasium's `rgb_array`; also images of observations);
  * text:  a str (Gymnasium's `ansi`), SGR colour codes kept.

`bound_frame` makes any of them small and safe to send at the render rate, so one big frame
never floods a worker's pipe or the control socket: images are area-averaged (over whole k x k
blocks) down to at most MAX_RGB_HEIGHT x MAX_RGB_WIDTH pixels (averaging keeps thin things such
as Pong's ball or CartPole's pole visible as a blend, where nearest-pixel sampling drops them
on some frames and makes them flicker), and text is cut to MAX_TEXT_ROWS x MAX_TEXT_COLS with every control
sequence but newlines and colour codes removed. numpy is imported by the functions that need it.
"""

from __future__ import annotations

import re

TILES, RGB, TEXT = "tiles", "rgb", "text"
FRAME_KINDS = (TILES, RGB, TEXT)
MAX_RGB_HEIGHT, MAX_RGB_WIDTH = 120, 160  # pixels: 57,600 bytes, ~77 kB of base64
MAX_TEXT_ROWS, MAX_TEXT_COLS = 100, 200  # visible characters
MAX_TEXT_CHARS = 64 * 1024  # colour codes included
MIN_IMAGE_SIDE = 3  # an observation array smaller than this on a side is not drawn as an image
DIM_CODES = 32  # a uint8 observation image whose values all lie below this is stretched

_SGR = re.compile(r"\x1b\[[0-9;]*m")  # select graphic rendition: colours, bold...
_ESCAPE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_]?)")
# C0 and C1 controls but newline (tabs become spaces first; ESC starts only the kept codes)
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1a\x1c-\x1f\x7f-\x9f]")


def frame_kind(frame) -> str | None:
    """TILES, RGB or TEXT for what frame() returned; None for anything else."""
    if isinstance(frame, str):
        return TEXT
    shape = getattr(frame, "shape", None)
    if shape is None:
        return None
    if len(shape) == 2:
        return TILES
    if len(shape) == 3 and shape[2] in (3, 4):
        return RGB
    return None


def bound_frame(frame):
    """A copy of `frame` within the bounds (the env may overwrite its own array later); None
    for something that is no frame. Tile grids are left whole: their size is the env's."""
    kind = frame_kind(frame)
    if kind == TEXT:
        return clean_text(frame)
    if kind == TILES:
        return frame.copy()
    if kind == RGB:
        return shrink_to_bounds(to_rgb8(frame))
    return None


def shrink_to_bounds(pixels):
    """An H x W x 3 uint8 image at most MAX_RGB_HEIGHT x MAX_RGB_WIDTH: averaged over k x k
    blocks, k the smallest whole factor that fits (the last < k rows and columns are cut), so
    the cost is one pass of additions over strided views (CartPole's 400 x 600: k = 4)."""
    import math

    import numpy as np

    height, width = pixels.shape[:2]
    k = max(1, math.ceil(max(height / MAX_RGB_HEIGHT, width / MAX_RGB_WIDTH)))
    if k == 1:
        return pixels.copy()
    rows, cols = height // k * k, width // k * k
    if rows == 0 or cols == 0:  # a sliver (1 x 10000): averaged to the bounds' shape instead
        return area_resize(pixels, *fit_size(height, width, MAX_RGB_HEIGHT, MAX_RGB_WIDTH))
    total = np.zeros((rows // k, cols // k, pixels.shape[2]), np.uint16 if k <= 16 else np.uint32)
    for dy in range(k):
        for dx in range(k):
            total += pixels[dy:rows:k, dx:cols:k]
    return ((total + k * k // 2) // (k * k)).astype(np.uint8)


def fit_size(height: int, width: int, max_height: int, max_width: int) -> tuple[int, int]:
    """The largest size with the image's aspect that fits the box, never larger than it is."""
    scale = min(1.0, max_height / height, max_width / width)
    return max(1, round(height * scale)), max(1, round(width * scale))


def to_rgb8(image):
    """An H x W x 3 uint8 image from RGB or RGBA of any dtype (floats in [0, 1] are scaled)."""
    import numpy as np

    image = np.asarray(image)[:, :, :3]
    if image.dtype == np.uint8:
        return image
    if image.dtype == np.bool_:
        return image.astype(np.uint8) * 255
    if np.issubdtype(image.dtype, np.floating):
        finite = np.nan_to_num(image, nan=0.0, posinf=1.0, neginf=0.0)
        top = 1.0 if finite.size and finite.max() <= 1.0 else 255.0
        return np.clip(finite * (255.0 / top), 0, 255).astype(np.uint8)
    return np.clip(image, 0, 255).astype(np.uint8)


def area_resize(pixels, height: int, width: int):
    """`pixels` (H x W [x C]) resized to height x width: each axis that shrinks is averaged
    over the source pixels each target pixel covers, each that grows repeats pixels (nearest).
    Returns a new array of the input's dtype (uint8 rounds to nearest)."""
    import numpy as np

    if pixels.shape[:2] == (height, width):
        return pixels.copy()
    # Sum both axes first (integers stay integers: no float copy of a big frame), divide once.
    sums = pixels.astype(np.float64) if pixels.dtype.kind == "f" else pixels
    counts = np.ones((1, 1), np.int64)
    for axis, size in ((0, height), (1, width)):
        n = sums.shape[axis]
        starts = np.arange(size) * n // size
        if size <= n:
            sums = np.add.reduceat(sums, starts, axis=axis,
                                   dtype=np.float64 if sums.dtype.kind == "f" else np.int64)
            spans = np.diff(np.append(starts, n))
        else:
            sums = np.take(sums, starts, axis=axis)
            spans = np.ones(size, np.int64)
        counts = counts * (spans[:, None] if axis == 0 else spans[None, :])
    if sums.ndim == 3:
        counts = counts[:, :, None]
    if pixels.dtype.kind in "iub":
        return ((sums + counts // 2) // counts).astype(pixels.dtype)
    return (sums / counts).astype(pixels.dtype)


def clean_text(text: str) -> str:
    """Text safe to draw in a terminal: colour codes kept, other escapes and control
    characters removed, cut to MAX_TEXT_ROWS lines of MAX_TEXT_COLS visible characters."""
    text = _ESCAPE.sub(lambda m: m.group(0) if _SGR.fullmatch(m.group(0)) else "", text)
    text = _CONTROL.sub("", text.replace("\t", "    "))
    lines = []
    for line in text.split("\n")[:MAX_TEXT_ROWS]:
        lines.append(_cut_visible(line, MAX_TEXT_COLS))
    return "\n".join(lines)[:MAX_TEXT_CHARS]


def strip_colour(text: str) -> str:
    """The text without its colour codes (what a terminal shows of it)."""
    return _SGR.sub("", text)


def _cut_visible(line: str, width: int) -> str:
    """The first `width` visible characters of a line, its colour codes kept (and a reset
    added if a cut could leave a colour on)."""
    out, visible, position = [], 0, 0
    for match in _SGR.finditer(line):
        plain = line[position:match.start()]
        if visible + len(plain) > width:
            out.append(plain[:width - visible])
            return "".join(out) + "\x1b[0m"
        out.append(plain)
        visible += len(plain)
        out.append(match.group(0))
        position = match.end()
    plain = line[position:]
    if visible + len(plain) > width:
        return "".join(out) + plain[:width - visible] + ("\x1b[0m" if position else "")
    return "".join(out) + plain


# -- images of observations: what the policy sees, drawn as an rgb frame ---------------------

def observation_image(array, low=None, high=None):
    """An H x W x 3 uint8 picture of an observation array, or None if it is no image.

    2-D arrays are grey images; 3-D ones have their channels on the shorter end axis (the last
    on a tie): 3 channels are RGB, 1 is grey, any other count (a frame stack, 4 x 84 x 84) is
    drawn as that many grey images side by side; 4-D arrays (N x H x W x 3) are N images.
    uint8 and bool values are drawn as they are (uint8 images whose values all lie below
    DIM_CODES hold codes rather than intensities, such as MiniGrid's object ids, and are
    stretched to be seen); other dtypes are scaled from the space's [low, high] when both are
    one finite number, else stretched from the image's min..max.
    """
    import numpy as np

    array = np.asarray(array)
    if array.ndim == 2:
        frames = [array]
    elif array.ndim == 3:
        channels_last = array.shape[2] <= array.shape[0]
        hwc = array if channels_last else np.moveaxis(array, 0, -1)
        frames = [hwc] if hwc.shape[2] == 3 else [hwc[:, :, c] for c in range(hwc.shape[2])]
    elif array.ndim == 4 and array.shape[-1] in (1, 3):
        frames = [f if f.shape[-1] == 3 else f[:, :, 0] for f in array]
    else:
        return None
    if min(frames[0].shape[:2]) < MIN_IMAGE_SIDE:
        return None
    scaled = [_scaled(f, low, high) for f in frames]
    rgb = [f if f.ndim == 3 else np.repeat(f[:, :, None], 3, axis=2) for f in scaled]
    return _tile(rgb)


def _scaled(image, low, high):
    import numpy as np

    if image.dtype == np.uint8:
        top = int(image.max()) if image.size else 0
        if 0 < top < DIM_CODES:  # codes, not intensities (MiniGrid's object ids): stretched
            return (image.astype(np.uint16) * 255 // top).astype(np.uint8)
        return image
    if image.dtype == np.bool_:
        return image.astype(np.uint8) * 255
    image = np.nan_to_num(image.astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    lo, hi = _finite_scalar(low), _finite_scalar(high)
    if lo is None or hi is None or hi <= lo:
        lo, hi = float(image.min()), float(image.max())
    if hi <= lo:
        return np.zeros(image.shape, np.uint8)
    return np.clip((image - lo) * (255.0 / (hi - lo)), 0, 255).astype(np.uint8)


def _finite_scalar(value):
    import numpy as np

    if value is None:
        return None
    value = np.asarray(value, dtype=np.float64)
    if value.size == 0 or not np.all(np.isfinite(value)) or np.ptp(value) != 0:
        return None
    return float(value.flat[0])


GAP_COLOUR = (40, 90, 160)  # between tiled observation frames: no grey image has it


def _tile(images, gap: int = 1):
    """Equal-size H x W x 3 images in a near-square grid, `gap` pixels of GAP_COLOUR between."""
    import math

    import numpy as np

    n = len(images)
    if n == 1:
        return np.ascontiguousarray(images[0])
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    height, width = images[0].shape[:2]
    canvas = np.empty((rows * (height + gap) - gap, cols * (width + gap) - gap, 3), np.uint8)
    canvas[:] = GAP_COLOUR
    for k, image in enumerate(images):
        r, c = divmod(k, cols)
        top, left = r * (height + gap), c * (width + gap)
        canvas[top:top + height, left:left + width] = image
    return canvas


def observation_frame(env, env_index: int):
    """The `obs` view of env `env_index` of a PufferEnv: its own `observation_frame(i)` when it
    has one, else its first agent's observation row drawn as an image when the observation
    space is 2-D or more, else a text frame saying why there is no picture."""
    own = getattr(env, "observation_frame", None)
    if own is not None:
        return own(env_index)
    space = env.single_observation_space
    if len(space.shape) >= 2:
        row = env.observations[env_index * env.agents_per_env]
        image = observation_image(row, getattr(space, "low", None), getattr(space, "high", None))
        if image is not None:
            return bound_frame(image)
    return no_image_text(space)


def no_image_text(space) -> str:
    shape = getattr(space, "shape", None)
    described = type(space).__name__ + (f" of shape {shape}" if shape else "")
    return (f"no image in this env's observations\n({described}):\nthe obs view draws "
            "observations that are images\n(H x W, H x W x C or C x H x W)")


# -- tiles as colours: the raylib window and recordings draw palette entries the same way --

BACKGROUND = (12, 12, 18)  # blank glyphs and padding
FOREGROUND = (220, 220, 220)  # palette entries without a colour, or "default"
UNKNOWN_TILE = (255, 0, 255)  # tile ids missing from the palette stand out


def tile_rgb(glyph: str, colour: str) -> tuple[int, int, int]:
    """RGB of one palette entry (a rich colour, as the terminal draws it): blank glyphs are
    background; "bold" brightens the eight standard colours, as terminals do. ValueError for
    a colour rich cannot read."""
    from rich.color import Color, ColorType
    from rich.errors import StyleSyntaxError
    from rich.style import Style

    if not glyph.strip():
        return BACKGROUND
    try:
        style = Style.parse(colour)
    except StyleSyntaxError as error:
        raise ValueError(f"palette colour {colour!r} is not a rich colour: {error}") from None
    parsed = style.color
    if parsed is None or parsed.is_default:
        return FOREGROUND
    if style.bold and parsed.type == ColorType.STANDARD and parsed.number < 8:
        parsed = Color.from_ansi(parsed.number + 8)
    return tuple(parsed.get_truecolor())


def colour_table(palette: dict | None):
    """A (256, 3) uint8 table from tile id to RGB; `palette` maps id -> (glyph, colour)."""
    import numpy as np

    table = np.empty((256, 3), np.uint8)
    table[:] = UNKNOWN_TILE
    for tile, (glyph, colour) in (palette or {}).items():
        if not 0 <= int(tile) <= 255:
            raise ValueError(f"palette tile id {tile} is outside [0, 255]")
        table[int(tile)] = tile_rgb(glyph, colour)
    return table

