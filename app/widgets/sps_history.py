"""Steps per second over the last few minutes: a summary line over Textual's Sparkline.

Tested in: tests/app/test_app_state.py, tests/engine/shared/test_telemetry_snapshot.py"""

from __future__ import annotations

import math

from rich.text import Text
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.widgets import Sparkline, Static

from puffer_tui.app.telemetry_store import downsample
from puffer_tui.app.widgets.format import human
from puffer_tui.app.widgets.panel import Drawn
from puffer_tui.engine.shared.protocol import RunState


def chart_points(samples: list[float], width: int) -> list[float]:
    """What the chart plots in `width` columns: 0, then the samples averaged down to fit.

    Sparkline scales from its data's minimum to its maximum; the leading 0 (drawn as the
    first column's floor) pins the scale at zero, so a 2% wobble does not look like a crash.
    """
    if width < 2 or not samples:
        return []
    return [0.0, *downsample(samples, width - 1)]


class SpsHistory(Drawn, Vertical):
    DEFAULT_CLASSES = "panel"  # the frame comes from app/panels.tcss
    BORDER_TITLE = "steps / second"
    DRAWN_FROM = ("samples", "now", "state")
    DEFAULT_CSS = """
    SpsHistory {
        height: 1fr;
        min-height: 5;
        padding: 0 1;
    }
    SpsHistory > Static {
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    SpsHistory > Sparkline {
        height: 1fr;
    }
    """

    samples: reactive[list[float]] = reactive(list)
    now: reactive[float] = reactive(0.0)  # the engine's SPS now, shown as it is
    state: reactive[str] = reactive(RunState.RUNNING)  # named beside "now" unless running

    def compose(self):
        yield Static(id="sps-summary")
        yield Sparkline([], min_color="green", max_color="green", id="sps-chart")

    def _finite(self) -> list[float]:
        return [s for s in self.samples if math.isfinite(s)]

    def summary(self) -> Text:
        """The line above the chart: now, average and maximum."""
        samples = self._finite()
        if not samples:
            return Text("waiting for telemetry", style="dim")
        summary = Text(no_wrap=True, overflow="ellipsis")
        summary.append("now ", "dim")
        if self.state == RunState.RUNNING:
            summary.append(human(self.now), "bold")
        else:  # the engine's SPS (0: nothing steps), and why
            summary.append(f"{human(self.now)} ({self.state})", "bold yellow")
        summary.append(" avg ", "dim")
        summary.append(human(sum(samples) / len(samples)))
        summary.append(" max ", "dim")
        summary.append(human(max(samples)))
        return summary

    def _draw(self) -> None:
        try:
            summary = self.query_one("#sps-summary", Static)
            chart = self.query_one("#sps-chart", Sparkline)
        except NoMatches:  # a reactive set before compose ran
            return
        summary.update(self.summary())
        points = chart_points(self._finite(), self.content_region.width)
        chart.display = bool(points)
        chart.styles.width = len(points) or 1  # one column per point, left-aligned as before
        chart.data = points
