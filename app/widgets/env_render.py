"""One environment drawn live from the engine's tile frames, in the env's palette."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from puffer_tui.app.telemetry_store import Frame


def frame_text(frame: Frame, palette: dict, max_width: int, max_height: int) -> Text:
    """The frame as styled text; tiles doubled in width when there is room (square cells).

    A frame larger than the space is cropped around its centre rather than squashed, so
    each tile keeps its meaning.
    """
    cell = 2 if frame.width * 2 <= max_width else 1
    cols = min(frame.width, max(max_width // cell, 1))
    rows = min(frame.height, max(max_height, 1))
    top, left = (frame.height - rows) // 2, (frame.width - cols) // 2
    text = Text(no_wrap=True)
    for r in range(top, top + rows):
        row = frame.tiles[r * frame.width:(r + 1) * frame.width]
        for c in range(left, left + cols):
            glyph, colour = palette.get(row[c], ("?", "red"))
            text.append(glyph.ljust(cell) if cell > 1 else glyph, colour)
        if r < top + rows - 1:
            text.append("\n")
    return text


class EnvRender(Widget):
    """`frame` is the latest Frame; `palette` maps tile id -> (glyph, colour)."""

    DEFAULT_CSS = """
    EnvRender {
        height: 1fr;
        border: round $primary 50%;
        border-title-color: $text-accent;
        border-subtitle-color: $text-muted;
        content-align: center middle;
    }
    """

    frame: reactive[Frame | None] = reactive(None)
    palette: reactive[dict] = reactive(dict)
    env_index: reactive[int] = reactive(0)
    num_envs: reactive[int] = reactive(0)
    enabled: reactive[bool] = reactive(True)

    def on_mount(self) -> None:
        self._titles()

    def watch_env_index(self) -> None:
        self._titles()

    def watch_num_envs(self) -> None:
        self._titles()

    def _titles(self) -> None:
        total = f"/{self.num_envs}" if self.num_envs else ""
        self.border_title = f"env {self.env_index}{total}"
        self.border_subtitle = "[ ] env  r full screen"

    def render(self) -> Text:
        if not self.enabled:
            return Text("render off", style="dim")
        if self.frame is None:
            return Text("waiting for frames...", style="dim")
        return frame_text(self.frame, self.palette, self.size.width, self.size.height)
