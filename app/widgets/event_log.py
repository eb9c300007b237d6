"""The run's event log: checkpoints, value changes, warnings and errors, newest last.

Tested in: tests/app/test_app_state.py (events out of order, old wrapping)"""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import RichLog

from puffer_tui.app.telemetry_store import Event

LEVEL_STYLES = {"info": "cyan", "warning": "bold yellow", "error": "bold red", "app": "magenta"}
# three letters: at 80 columns the text, not the level, should get the width
LEVEL_TAGS = {"info": "inf", "warning": "WRN", "error": "ERR", "app": "app"}


class EventLog(RichLog):
    DEFAULT_CLASSES = "panel"  # the frame comes from app/panels.tcss
    BORDER_TITLE = "events"
    DEFAULT_CSS = """
    EventLog {
        height: 1fr;
        min-height: 4;
        padding: 0 1;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, **kwargs):
        super().__init__(wrap=True, markup=False, max_lines=1000, min_width=1, **kwargs)
        self.shown = 0  # events already written, counted over the store's lifetime
        self.reordered = 0  # the store's reorder count when the log was last drawn whole
        self.events: list[Event] = []  # what is shown, to draw again at a new width
        self._drawn_width = 0

    def show(self, events: list[Event], total_seen: int, reordered: int = 0) -> None:
        """Append the events not shown yet; `total_seen` counts every event ever stored.
        When the store reordered its events (an older one arrived late), draw them all again."""
        new = total_seen - self.shown
        if new <= 0 and reordered == self.reordered:
            return
        self.events = list(events)
        if reordered != self.reordered or new > len(events):
            self.reordered = reordered
            self._redraw()
        else:
            for event in events[-new:]:
                self._write(event)
        self.shown = total_seen

    def _redraw(self) -> None:
        self.clear()
        self._drawn_width = self.scrollable_content_region.width
        for event in self.events:
            self._write(event)

    def _write(self, event: Event) -> None:
        # Wrap at the log's own width (RichLog's measure can use a stale terminal width).
        width = self.scrollable_content_region.width
        self.write(self.line(event), width=width if self._size_known and width > 0 else None)

    def on_resize(self) -> None:
        # Lines were wrapped at the old width when written: wrap them again at the new one.
        if self.events and self.scrollable_content_region.width != self._drawn_width:
            self.call_after_refresh(self._redraw)

    @staticmethod
    def line(event: Event) -> Text:
        text = Text()
        text.append(time.strftime("%H:%M:%S ", time.localtime(event.time)), "dim")
        text.append(f"{LEVEL_TAGS.get(event.level, event.level[:3])} ",
                    LEVEL_STYLES.get(event.level, ""))
        text.append(event.text)
        return text
