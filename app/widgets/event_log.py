"""The run's event log: checkpoints, value changes, warnings and errors, newest last."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import RichLog

from puffer_tui.app.telemetry_store import Event

LEVEL_STYLES = {"info": "cyan", "warning": "bold yellow", "error": "bold red", "app": "magenta"}


class EventLog(RichLog):
    DEFAULT_CSS = """
    EventLog {
        height: 1fr;
        min-height: 4;
        border: round $primary 50%;
        border-title-color: $text-accent;
        padding: 0 1;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, **kwargs):
        super().__init__(wrap=True, markup=False, max_lines=1000, min_width=1, **kwargs)
        self.shown = 0  # events already written, counted over the store's lifetime

    def on_mount(self) -> None:
        self.border_title = "events"

    def show(self, events: list[Event], total_seen: int) -> None:
        """Append the events not shown yet; `total_seen` counts every event ever stored."""
        new = total_seen - self.shown
        if new <= 0:
            return
        for event in events[-new:] if new <= len(events) else events:
            self.write(self.line(event))
        self.shown = total_seen

    @staticmethod
    def line(event: Event) -> Text:
        text = Text()
        text.append(time.strftime("%H:%M:%S ", time.localtime(event.time)), "dim")
        text.append(f"{event.level:<7} ", LEVEL_STYLES.get(event.level, ""))
        text.append(event.text)
        return text
