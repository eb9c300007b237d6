"""One metric of several runs overlaid: a colour per run, a legend, and the live
hyperparameter changes as vertical lines in the colour of their run.

Tested in: tests/screens/test_compare_screen.py, tests/app/test_compare_data.py (thinned)"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widget import Widget

from puffer_tui.app.compare_data import COMPARE_METRICS, X_AXES, RunSeries
from puffer_tui.app.widgets.panel import Drawn

# names both plotext and Rich know, so a run has one colour in the plot and the tables
RUN_COLOURS = ("cyan", "magenta", "green", "yellow", "red", "blue", "white")


def run_colour(index: int) -> str:
    return RUN_COLOURS[index % len(RUN_COLOURS)]


MAX_POINTS = 2000  # per curve: more than the braille cells of a wide terminal


def thinned(xs: list[float], ys: list[float]) -> tuple[list[float], list[float]]:
    """Every n-th point (the last kept), so a 100k-epoch run draws as fast as a short one."""
    if len(xs) <= MAX_POINTS:
        return xs, ys
    step = -(-len(xs) // MAX_POINTS)
    keep = list(range(len(xs) - 1, -1, -step))[::-1]
    return [xs[i] for i in keep], [ys[i] for i in keep]


def short_label(name: str, width: int = 24) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1):]


class ComparePlot(Drawn, Widget):
    """`runs` are the runs' series; `metric` and `x_axis` index COMPARE_METRICS and X_AXES."""

    DEFAULT_CLASSES = "panel"
    DRAWN_FROM = ("runs", "metric", "x_axis")
    DEFAULT_CSS = "ComparePlot PlotextPlot { height: 1fr; }"

    runs: reactive[tuple] = reactive(tuple, always_update=True)
    metric: reactive[int] = reactive(0)
    x_axis: reactive[int] = reactive(0)

    def compose(self) -> ComposeResult:
        # lazy: plotext takes a share of the app's start to import, and the launcher plots nothing
        from textual_plotext import PlotextPlot

        yield PlotextPlot()

    def drawn_series(self) -> list[tuple[str, list[float], list[float]]]:
        """(run name, xs, ys) as plotted now: what the tests check."""
        metric, x_key = COMPARE_METRICS[self.metric][0], X_AXES[self.x_axis][0]
        return [(run.name, *run.series(metric, x_key)) for run in self.runs]

    def marker_positions(self) -> list[tuple[str, float]]:
        """(run name, x) of each live change drawn as a vertical line."""
        x_key = X_AXES[self.x_axis][0]
        found = []
        for run in self.runs:
            for event in run.events:
                x = event.step if x_key == "global_step" else event.uptime
                if x is not None:
                    found.append((run.name, float(x)))
        return found

    def _draw(self) -> None:
        if not self.is_mounted:
            return
        plt = self.query_one("PlotextPlot").plt
        plt.clear_data()
        plt.clear_figure()
        label = COMPARE_METRICS[self.metric][1]
        self.border_title = f"{label} by {X_AXES[self.x_axis][1]}"
        self.border_subtitle = "m: metric  x: axis  | change"
        runs: list[RunSeries] = list(self.runs)
        drawn = False
        for i, (name, xs, ys) in enumerate(self.drawn_series()):
            if xs:
                plt.plot(*thinned(xs, ys), marker="braille", color=run_colour(i), label=short_label(name))
                drawn = True
        names = [run.name for run in runs]
        for name, x in self.marker_positions():
            plt.vline(x, color=run_colour(names.index(name)))
        if not drawn:
            plt.title(f"no {label} in these runs' metrics")
        plt.xlabel(X_AXES[self.x_axis][1])
        self.query_one("PlotextPlot").refresh()
