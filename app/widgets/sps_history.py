"""Steps per second over the last few minutes: a summary line over a multi-row bar chart."""

from __future__ import annotations

import math

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from puffer_tui.app.telemetry_store import downsample
from puffer_tui.app.widgets.format import human

EIGHTHS = " ▁▂▃▄▅▆▇█"


def bar_rows(values: list[float], width: int, height: int) -> list[str]:
    """Columns of block characters, `height` rows tall, scaled from 0 to the maximum.

    Starting at 0 (not at the minimum) keeps a 2% wobble from looking like a crash.
    """
    values = downsample(values, width)
    top = max(values, default=0.0)
    if not values or top <= 0 or height <= 0:
        return [""] * max(height, 0)
    levels = [round(v / top * height * 8) for v in values]
    rows = []
    for row in range(height - 1, -1, -1):
        rows.append("".join(EIGHTHS[min(max(level - row * 8, 0), 8)] for level in levels))
    return rows


class SpsHistory(Widget):
    DEFAULT_CSS = """
    SpsHistory {
        text-wrap: nowrap;
        text-overflow: ellipsis;
        height: 1fr;
        min-height: 5;
        border: round $primary 50%;
        border-title-color: $text-accent;
        padding: 0 1;
    }
    """

    samples: reactive[list[float]] = reactive(list)
    state: reactive[str] = reactive("running")  # "now" is 0 unless the engine is running

    def on_mount(self) -> None:
        self.border_title = "steps / second"

    def render(self) -> Text:
        samples = [s for s in self.samples if math.isfinite(s)]
        if not samples:
            return Text("waiting for telemetry", style="dim")
        summary = Text(no_wrap=True, overflow="ellipsis")
        summary.append("now ", "dim")
        if self.state == "running":
            summary.append(human(samples[-1]), "bold")
        else:
            summary.append(f"0 ({self.state})", "bold yellow")
        summary.append(" avg ", "dim")
        summary.append(human(sum(samples) / len(samples)))
        summary.append(" max ", "dim")
        summary.append(human(max(samples)))
        rows = bar_rows(samples, self.size.width, self.size.height - 1)
        return Text("\n").join([summary, *(Text(r, "green") for r in rows)])
