"""What the panels share, so that each panel's file holds only what it draws.

- The frame: the "panel" class, styled once in app/panels.tcss. Titles are Textual's
  BORDER_TITLE / BORDER_SUBTITLE class variables.
- `TextPanel`: a framed panel that `render()`s lines of text. Textual repaints it whenever
  one of its reactives changes, so it needs no watcher.
- `Drawn`: for panels that draw by updating their children (a plot, a sparkline, a Static).
  `_draw()` runs once mounted, on every resize, and whenever one of the reactives named in
  DRAWN_FROM changes: one method, not a `watch_*` per reactive that calls it.
"""

from __future__ import annotations

from typing import ClassVar

from textual.widget import Widget


class TextPanel(Widget):
    """Lines of text in a frame: each line cut with an ellipsis, one column of padding on
    each side, as tall as the layout gives (at least a few lines). A subclass's own
    DEFAULT_CSS overrides these."""

    DEFAULT_CLASSES = "panel"
    DEFAULT_CSS = """
    TextPanel {
        text-wrap: nowrap;
        text-overflow: ellipsis;
        height: 1fr;
        min-height: 5;
        padding: 0 1;
    }
    """


class Drawn:
    """Mixin for a widget drawn by `_draw()` (put it before the Textual base class).

    Textual calls the Mount and Resize handlers of every class in the MRO, so these run
    besides any the widget defines itself."""

    DRAWN_FROM: ClassVar[tuple[str, ...]] = ()  # names of the reactives `_draw` reads

    def _draw(self) -> None:
        raise NotImplementedError

    def on_mount(self) -> None:
        for name in self.DRAWN_FROM:
            self.watch(self, name, self._draw, init=False)
        self._draw()

    def on_resize(self) -> None:
        self._draw()
