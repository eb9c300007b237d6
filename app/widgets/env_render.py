"""One environment drawn live from the engine's frames: tile grids in the env's palette, RGB
images in half blocks (app/widgets/frame_drawing.py), text frames with their colours.

Every renderer (this panel, `eval --render ascii`, the raylib window) draws the same inputs:
a `Frame` decoded from the protocol's `frame` message and a palette decoded from its wire form
(engine/shared/protocol.py), so none of them touches an env.

Tested in: tests/app/test_render_drawing.py, tests/screens/test_render_fit.py
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from puffer_tui.app.widgets.frame_drawing import (
    UPPER_HALF,
    fit_image,
    halfblock_lines,
    image_pixels,
    overlay_saliency,
    text_lines,
    tile_pixels,
)
from puffer_tui.app.widgets.policy_strip import MIN_BESIDE, STRIP_WIDTH, strip_lines
from puffer_tui.engine.shared.protocol import Frame, FrameKind, decode_frame

LOWER_HALF = "\u2584"  # fg = the bottom tile's colour, over an empty top tile


def frame_from_message(message: dict) -> Frame | None:
    """The Frame of a protocol `frame` message (tiles, rgb or text); None for a malformed one."""
    return decode_frame(message)


def frame_kind(frame) -> FrameKind:
    """The kind of a frame (a tile-only Frame of an older decoder has none: tiles)."""
    return getattr(frame, "kind", FrameKind.TILES)


def frame_text(frame: Frame, palette: dict, max_width: int, max_height: int) -> Text:
    """The frame as styled text; tiles doubled in width when there is room (square cells).

    A frame taller than the space is drawn two tile rows a line in half blocks, in the tiles'
    colours (Breakout's 23 rows in 12 lines: at 80 x 24 the paddle stays in sight). What
    still does not fit is cropped around its centre rather than squashed, so each tile keeps
    its meaning.
    """
    if frame.height > max_height:
        return _half_block_tiles(frame, palette, max_width, max_height)
    cell = 2 if frame.width * 2 <= max_width else 1
    cols = min(frame.width, max(max_width // cell, 1))
    rows = min(frame.height, max(max_height, 1))
    top, left = (frame.height - rows) // 2, (frame.width - cols) // 2
    text = Text(no_wrap=True)
    for r in range(top, top + rows):
        row = frame.tiles[r * frame.width:(r + 1) * frame.width]
        # One span per run of same-coloured tiles, not one per tile: the terminal render
        # of a frame is the dashboard's most frequent redraw, and spans are what it costs.
        run_colour, run = None, []
        for c in range(left, left + cols):
            glyph, colour = palette.get(row[c], ("?", "red"))
            if colour != run_colour and run:
                text.append("".join(run), run_colour)
                run = []
            run_colour = colour
            run.append(glyph.ljust(cell) if cell > 1 else glyph)
        if run:
            text.append("".join(run), run_colour)
        if r < top + rows - 1:
            text.append("\n")
    return text


def _tile_colour(entry) -> str | None:
    """The colour a tile is seen as in a half block: None for a blank glyph (the background)."""
    glyph, colour = entry
    if not glyph.strip():
        return None
    name = Style.parse(colour).color
    return "white" if name is None or name.is_default else name.name


def _half_block_tiles(frame: Frame, palette: dict, max_width: int, max_height: int) -> Text:
    """Two tile rows a line: an upper half block in the top tile's colour over the bottom
    tile's (a lower one under a blank top tile); cropped around the centre if still too big."""
    colours = {tile: _tile_colour(entry) for tile, entry in palette.items()}
    cols = min(frame.width, max(max_width, 1))
    lines = min((frame.height + 1) // 2, max(max_height, 1))
    top, left = (frame.height - 2 * lines) // 2, (frame.width - cols) // 2
    top = max(top, 0)
    text = Text(no_wrap=True)
    for line in range(lines):
        upper_row = top + 2 * line
        lower_row = upper_row + 1
        run_style, run = None, []
        for c in range(left, left + cols):
            upper = colours.get(frame.tiles[upper_row * frame.width + c], "red")
            lower = (colours.get(frame.tiles[lower_row * frame.width + c], "red")
                     if lower_row < frame.height else None)
            if upper is None and lower is None:
                glyph, style = " ", ""
            elif upper is None:
                glyph, style = LOWER_HALF, lower
            else:
                glyph, style = UPPER_HALF, upper + (f" on {lower}" if lower else "")
            if style != run_style and run:
                text.append("".join(run), run_style or None)
                run = []
            run_style = style
            run.append(glyph)
        if run:
            text.append("".join(run), run_style or None)
        if line < lines - 1:
            text.append("\n")
    return text


class EnvRender(Widget):
    """`frame` is the latest Frame; `palette` maps tile id -> (glyph, colour).

    With `show_policy` the policy's view the frame carries (`frame.policy`) is drawn beside
    the frame when the panel is wide enough for both, else under it
    (app/widgets/policy_strip.py), and a saliency grid it carries as heat over the frame."""

    DEFAULT_CLASSES = "panel"  # the frame comes from app/panels.tcss
    DEFAULT_CSS = """
    EnvRender {
        height: 1fr;
    }
    """

    frame: reactive[Frame | None] = reactive(None)
    palette: reactive[dict] = reactive(dict)
    env_index: reactive[int] = reactive(0)
    num_envs: reactive[int] = reactive(0)
    enabled: reactive[bool] = reactive(True)
    view: reactive[str] = reactive("env")  # "obs": the frames show the observation
    show_policy: reactive[bool] = reactive(False)  # the policy strip beside (or under) it
    saliency: reactive[str | None] = reactive(None)  # the overlay asked for: "action", "value"
    # set while the panel replays a recording ("replay eval-4096.gif 12/89"): the title
    # says so instead of the env
    caption: reactive[str] = reactive("")

    def on_mount(self) -> None:
        self._titles()

    def watch_env_index(self) -> None:
        self._titles()

    def watch_num_envs(self) -> None:
        self._titles()

    def watch_view(self) -> None:
        self._titles()

    def watch_caption(self) -> None:
        self._titles()

    def watch_saliency(self) -> None:
        self._titles()
        self._strips = None

    def watch_show_policy(self) -> None:
        self._strips = None

    def _titles(self) -> None:
        if self.caption:
            self.border_title, self.border_subtitle = self.caption, "any key stops"
            return
        total = f"/{self.num_envs}" if self.num_envs else ""
        observation = " observation" if self.view == "obs" else ""
        # the saliency shown: the gradient of log pi(a|s) (∇π) or of V(s) (∇V)
        salient = f" ∇{'π' if self.saliency == 'action' else 'V'}" if self.saliency else ""
        self.border_title = f"env {self.env_index}{total}{observation}{salient}"
        self.border_subtitle = "[ ] env  r full  g saliency"

    # -- the Line API: whole rows of pre-styled segments, rebuilt only when the frame changes --

    def watch_frame(self) -> None:
        self._strips = None

    def watch_palette(self) -> None:
        self._strips = None
        self._styles = {}

    def on_resize(self) -> None:
        self._strips = None

    def _style(self, colour: str) -> Style:
        styles = self.__dict__.setdefault("_styles", {})
        if colour not in styles:
            styles[colour] = self.rich_style + Style.parse(colour)
        return styles[colour]

    def _build(self) -> list[Strip]:
        width, height = self.size.width, self.size.height
        base = self.rich_style
        if not self.enabled or self.frame is None:
            message = "render off" if not self.enabled else "waiting for frames..."
            text = Text(message.center(width)[:width], style=base + Style(dim=True))
            lines = [Strip(list(text.render(self.app.console)), width)]
        elif self.show_policy and getattr(self.frame, "policy", None) is not None \
                and self.view == "env" and not self.caption:
            return self._with_strip(width, height, base)
        else:
            lines = [_centred(segments, width, base)
                     for segments in self._frame_rows(width, height)]
        top = max((height - len(lines)) // 2, 0)
        blank = Strip.blank(width, base)
        return [blank] * top + lines + [blank] * max(height - top - len(lines), 0)

    def _with_strip(self, width: int, height: int, base: Style) -> list[Strip]:
        """The frame and the policy strip: beside it when both fit, else the strip under it
        (the frame keeps what it needs, at least half the panel; the strip the rest)."""
        frame, view = self.frame, self.frame.policy
        blank = Strip.blank(width, base)
        strip_width = min(STRIP_WIDTH, max(MIN_BESIDE, width // 3))
        frame_width = width - strip_width - 1
        if frame_width >= min(_natural_width(frame, height), 2 * MIN_BESIDE) \
                and strip_width >= MIN_BESIDE:
            rows = self._frame_rows(frame_width, height)
            top = max((height - len(rows)) // 2, 0)
            strip = strip_lines(view, strip_width, height)
            at = min(top, max(height - len(strip), 0))  # level with the frame's top
            lines = []
            for y in range(height):
                segments = rows[y - top] if 0 <= y - top < len(rows) else []
                left = _centred(segments, frame_width, base)
                line = strip[y - at] if 0 <= y - at < len(strip) else None
                right = self._strip_row(line, strip_width + 1)
                lines.append(Strip([*left, *right]).adjust_cell_length(width, base))
            return lines
        need = _natural_height(frame)
        # a third of a tall panel at least (an image shrinks well); three lines at 80x24
        floor = height // 3 if height >= 12 else min(3, height)
        strip_height = min(max(height - need, floor), max(height - 3, 1))
        frame_height = max(height - strip_height, 0)
        rows = self._frame_rows(width, frame_height) if frame_height else []
        top = max((frame_height - len(rows)) // 2, 0)
        lines = [blank] * top + [_centred(r, width, base) for r in rows]
        lines += [blank] * max(frame_height - len(lines), 0)
        for text in strip_lines(view, max(width - 1, 1), strip_height):
            lines.append(self._strip_row(text, width))
        return (lines + [blank] * height)[:height]

    def _strip_row(self, text: Text | None, width: int) -> Strip:
        """One line of the strip, after a space, padded to `width` cells."""
        base = self.rich_style
        if text is None:
            return Strip.blank(width, base)
        segments = [Segment(" ", base)] + [
            Segment(seg.text, base + seg.style if seg.style else base)
            for seg in text.render(self.app.console)]
        return Strip(segments).adjust_cell_length(width, base)

    def _salient_grid(self):
        """The saliency the frame carries as a grid to draw, when the overlay is on."""
        view = getattr(self.frame, "policy", None)
        salient = view.saliency if view is not None else None
        if not self.saliency or salient is None or not salient.grid:
            return None
        return salient

    def _frame_rows(self, width: int | None = None, height: int | None = None
                    ) -> list[list[Segment]]:
        """The frame as rows of segments that fit `width` x `height` (default: the widget)."""
        frame, base = self.frame, self.rich_style
        width = self.size.width if width is None else width
        height = self.size.height if height is None else height
        kind = frame_kind(frame)
        salient = self._salient_grid()
        if salient is not None and kind in (FrameKind.RGB, FrameKind.TILES):
            # the heat drawn over the frame's colours, as an image in half blocks
            styles = self.__dict__.setdefault("_pixel_styles", {})
            pixels = image_pixels(frame) if kind == FrameKind.RGB else \
                tile_pixels(frame, self.palette)
            if kind == FrameKind.TILES:  # square cells: two pixel columns a tile
                pixels = pixels.repeat(2, axis=1).repeat(2, axis=0) \
                    if frame.width * 2 <= width and frame.height <= height else pixels
            pixels = overlay_saliency(pixels, salient.grid, salient.height, salient.width)
            return halfblock_lines(fit_image(pixels, width, height), base, styles)
        if kind == FrameKind.RGB:
            styles = self.__dict__.setdefault("_pixel_styles", {})
            pixels = fit_image(image_pixels(frame), width, height)
            return halfblock_lines(pixels, base, styles)
        if kind == FrameKind.TEXT:
            return [list(line.render(self.app.console)) for line in
                    text_lines(frame, width, height, base)]
        rows = []
        for line in frame_text(frame, self.palette, width, height).split("\n"):
            rows.append([Segment(span_text, self._style(style) if style else base)
                         for span_text, style in _runs(line)])
        return rows

    def render_line(self, y: int) -> Strip:
        if getattr(self, "_strips", None) is None:
            self._strips = self._build()
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.size.width, self.rich_style)


def _natural_width(frame, height: int) -> int:
    """The cells a frame is drawn in at its own size (tiles doubled, an image at its aspect
    in `height` lines)."""
    kind = frame_kind(frame)
    if kind == FrameKind.TILES:
        return frame.width * 2 if frame.height <= height else frame.width
    if kind == FrameKind.RGB:
        return max(int(frame.width * 2 * height / max(frame.height, 1)), 1)
    return frame.width


def _natural_height(frame) -> int:
    """The lines a frame wants: a tile row each, two pixel rows each, a text line each."""
    kind = frame_kind(frame)
    if kind == FrameKind.RGB:
        return (frame.height + 1) // 2
    return frame.height


def _centred(segments: list[Segment], width: int, base: Style) -> Strip:
    """One row centred in `width` cells (cut at the right when wider)."""
    pad = max((width - Segment.get_line_length(segments)) // 2, 0)
    return Strip([Segment(" " * pad, base), *segments]).adjust_cell_length(width, base)


def _runs(line: Text):
    """(text, style) runs of one line of frame_text (spans there never overlap)."""
    plain = line.plain
    position = 0
    for span in line.spans:
        if span.start > position:
            yield plain[position:span.start], None
        yield plain[span.start:span.end], str(span.style)
        position = span.end
    if position < len(plain):
        yield plain[position:], None
