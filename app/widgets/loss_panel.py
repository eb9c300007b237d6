"""Loss curves: every loss with its latest value and a sparkline, one plotted in full.

Plotext redraws are the most expensive thing on the dashboard, so the screen hands data in
at most about once a second and the plot is rebuilt only when that data changed.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from puffer_tui.app.telemetry_store import downsample_xy
from puffer_tui.app.widgets.format import metric, spark
from puffer_tui.app.widgets.panel import Drawn
from puffer_tui.engine.shared.protocol import LOSS_KEYS

LABELS = {
    "policy_loss": "policy",
    "value_loss": "value",
    "entropy": "entropy",
    "approx_kl": "kl",
    "clipfrac": "clipfrac",
    "explained_variance": "expl_var",
}
# a narrow panel (80 columns): a label of 3 and a space, the value in what is left of its cell
# (the plot's title names the selected curve in full)
SHORT_LABELS = {
    "policy_loss": "pol",
    "value_loss": "val",
    "entropy": "ent",
    "approx_kl": "kl",
    "clipfrac": "clp",
    "explained_variance": "ev",
}
FULL_CELL = 17  # a label of 8, a value of 9


def short_metric(x: float | None, room: int = 7) -> str:
    """`x` in at most `room` columns: 3 significant digits, fewer, then a bare exponent."""
    if x is None or not isinstance(x, (int, float)) or x != x or abs(x) == float("inf"):
        return "-"
    for text in (f"{x:.3g}", f"{x:.2g}", f"{x:.0e}"):
        if len(text) <= room:
            return text
    return text


class LossPanel(Drawn, Widget):
    """`curves` is {loss name: list of values per epoch}; `steps` the matching global steps;
    `learning_rate` the rate the last update used (schedule and adaptive scale applied), shown
    in the frame's subtitle."""

    DEFAULT_CLASSES = "panel"  # the frame comes from app/panels.tcss
    BORDER_TITLE = "losses"
    BORDER_SUBTITLE = "l: next curve"
    DRAWN_FROM = ("curves", "selected")
    DEFAULT_CSS = """
    LossPanel {
        text-wrap: nowrap;
        text-overflow: ellipsis;
        height: 1fr;
    }
    LossPanel #loss-table { height: 3; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    LossPanel PlotextPlot { height: 1fr; }
    """

    curves: reactive[dict] = reactive(dict)
    steps: reactive[list] = reactive(list)
    selected: reactive[str] = reactive("policy_loss")
    learning_rate: reactive[float | None] = reactive(None)

    def watch_learning_rate(self, rate: float | None) -> None:
        self.border_subtitle = self.BORDER_SUBTITLE if rate is None else \
            f"lr {rate:.3g} · {self.BORDER_SUBTITLE}"

    def compose(self) -> ComposeResult:
        # lazy: plotext takes a share of the app's start to import, and the launcher plots nothing
        from textual_plotext import PlotextPlot

        yield PlotextPlot()
        yield Static(id="loss-table")

    def cycle(self) -> None:
        i = LOSS_KEYS.index(self.selected)
        self.selected = LOSS_KEYS[(i + 1) % len(LOSS_KEYS)]

    def _draw(self) -> None:
        if not self.is_mounted:
            return
        self.query_one("#loss-table", Static).update(self._table())
        plot = self.query_one("PlotextPlot")
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        values = self.curves.get(self.selected, [])
        width = max(plot.size.width - 10, 8)  # leave room for the y axis labels
        xs, ys = downsample_xy(self.steps or range(len(values)), values, width)
        plt.title(self.selected.replace("_", " "))
        if ys:
            plt.plot(xs, ys, marker="braille", color="cyan")
        plt.xlabel("step")
        plot.refresh()

    def _table(self) -> Text:
        # Two columns of three when narrow, three of two when there is room.
        width = self.size.width - 4
        columns = 3 if width >= 96 else 2
        compact = width // columns < FULL_CELL  # short labels and values, nothing cut
        cell = max(width // columns, FULL_CELL)
        spark_w = 0 if compact else max(cell - 20, 0)
        # the table's own width (its padding is 1 a side): two cells and the space between
        value_w = max((self.size.width - 2 - (columns - 1)) // columns - 4, 5)
        rows = -(-len(LOSS_KEYS) // columns)
        text = Text(no_wrap=True, overflow="ellipsis")
        for row in range(rows):
            for col in range(columns):
                i = col * rows + row
                if i >= len(LOSS_KEYS):
                    continue
                key = LOSS_KEYS[i]
                values = self.curves.get(key, [])
                style = "bold reverse" if key == self.selected else "dim"
                if compact:
                    text.append(f"{SHORT_LABELS[key]:<4}", style)
                    value = short_metric(values[-1], value_w) if values else "-"
                    text.append(f"{value:>{value_w}}")
                else:
                    text.append(f"{LABELS[key]:<8}", style)
                    text.append(f"{metric(values[-1]) if values else '-':>9}")
                if spark_w:
                    text.append(" " + spark(list(values), spark_w).ljust(spark_w), "cyan")
                if col < columns - 1:
                    text.append(" ")
            if row < rows - 1:
                text.append("\n")
        return text
