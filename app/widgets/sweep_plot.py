"""The sweep's progress as a plot: best score so far by trial (one objective), or every
finished trial's score against its wall-clock cost with the Pareto front marked (pareto).

Tested in: tests/screens/test_sweep_view.py"""

from __future__ import annotations

import math

from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widget import Widget

from puffer_tui.app.widgets.panel import Drawn


def best_so_far(trials: list[dict], maximize: bool = True) -> tuple[list[int], list[float]]:
    """(trial numbers, best objective value up to each) over completed trials, in trial
    order; the value is the study's (`values[0]`: the score, score per hour, seconds to
    reach...), else the trial's score."""
    xs, ys, best = [], [], None
    for row in sorted(trials, key=lambda r: r.get("number", 0)):
        values = row.get("values") or []
        score = values[0] if values else row.get("score")
        if row.get("state") != "COMPLETE" or not _finite(score):
            continue
        if best is None or (score > best if maximize else score < best):
            best = score
        xs.append(row["number"])
        ys.append(best)
    return xs, ys


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class SweepPlot(Drawn, Widget):
    """`snapshot` is the driver's status (engine/sweep/snapshot.py)."""

    DEFAULT_CLASSES = "panel"
    DRAWN_FROM = ("snapshot",)
    DEFAULT_CSS = "SweepPlot PlotextPlot { height: 1fr; }"

    snapshot: reactive[dict] = reactive(dict)

    def compose(self) -> ComposeResult:
        # lazy: plotext takes a share of the app's start to import, and the launcher plots nothing
        from textual_plotext import PlotextPlot

        yield PlotextPlot()

    def _draw(self) -> None:
        if not self.is_mounted:
            return
        snap = self.snapshot or {}
        plt = self.query_one("PlotextPlot").plt
        plt.clear_data()
        plt.clear_figure()
        trials = snap.get("trials") or []
        maximize = (snap.get("directions") or ["maximize"])[0] == "maximize"
        if snap.get("objective") == "pareto":
            self.border_title = "score vs seconds (Pareto front *)"
            front = set(snap.get("best") or ())
            done = [t for t in trials if t.get("state") == "COMPLETE"
                    and _finite(t.get("score")) and _finite(t.get("seconds"))]
            others = [t for t in done if t["number"] not in front]
            on_front = sorted((t for t in done if t["number"] in front), key=lambda t: t["seconds"])
            if others:
                plt.scatter([t["seconds"] for t in others], [t["score"] for t in others],
                            marker="dot")
            if on_front:
                plt.plot([t["seconds"] for t in on_front], [t["score"] for t in on_front],
                         marker="*", color="green")
            empty = not done
        else:
            objective = snap.get("objective") or "score"
            what = snap.get("metric", "score") if objective == "score" else objective
            self.border_title = f"best {what} so far"
            xs, ys = best_so_far(trials, maximize)
            if xs:
                plt.plot(xs, ys, marker="braille", color="green")
            empty = not xs
        if empty:
            plt.title("no completed trial yet")
        self.query_one("PlotextPlot").refresh()
