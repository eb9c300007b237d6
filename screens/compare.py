"""Runs side by side: one metric overlaid for each run (by step or by time trained), their
config differences, and the hyperparameters changed live, marked on the curves and listed.

Everything is read from the runs' files; a worker thread reads them again every
REFRESH_S seconds (only the ones that changed) and posts a CompareSnapshot, so live runs
keep updating without an engine connection.
"""

from __future__ import annotations

import threading
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from puffer_tui.app import navigation as nav
from puffer_tui.app.compare_data import (
    COMPARE_METRICS,
    X_AXES,
    CompareError,
    MetricColumns,
    RunSeries,
    config_differences,
    flat_config,
    load_run,
)
from puffer_tui.app.widgets.compare_plot import ComparePlot, run_colour, short_label

REFRESH_S = 2.0


class CompareSnapshot(Message, bubble=False):
    """The runs as last read; a newer one holds everything an older one does."""

    def __init__(self, runs: tuple[RunSeries, ...]) -> None:
        super().__init__()
        self.runs = runs

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CompareSnapshot)


def read_run(path: Path, metrics: MetricColumns) -> RunSeries:
    """A run as it is now (its metrics read on from `metrics`, a copy of them kept: the worker
    reads on while the screen draws); one with no metrics yet shows with no curve."""
    try:
        run = load_run(path, metrics)
    except CompareError:
        try:
            config = flat_config(path)
        except (OSError, ValueError):
            config = {}
        run = RunSeries(path, path.name, config, metrics)
    run.metrics = metrics.copy()
    return run


def _file_stamp(path: Path) -> tuple:
    stamps = []
    for name in ("metrics.jsonl", "events.log", "config.toml"):
        try:
            st = (path / name).stat()
            stamps.append((st.st_size, st.st_mtime_ns))
        except OSError:
            stamps.append(None)
    return tuple(stamps)


def changes_text(runs: tuple[RunSeries, ...]) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for i, run in enumerate(runs):
        for e in run.events:
            if text:
                text.append("\n")
            # two short lines a change: the panel is ~30 columns wide at 80x24
            text.append("| ", run_colour(i))
            text.append(f"step {e.step:,}" if e.step is not None else "step ?", "bold")
            text.append(f" {e.key.removeprefix('train.')}\n  {e.old} → {e.new}")
    return text or Text("no live hyperparameter changes", style="dim")


class CompareScreen(Screen):
    # 80x24 first: the plot takes what the two tables below it leave.

    BINDINGS = [
        Binding("m", "cycle_metric", "Metric"),
        Binding("x", "toggle_axis", "Step/time"),
        Binding("escape", "back", "Back", show=False),
        Binding("b", "back", "Back"),
        Binding("question_mark", "help", "Help"),
    ]

    def __init__(self, run_dirs: list[Path]):
        super().__init__()
        self.run_dirs = [Path(p) for p in run_dirs]
        self.runs: tuple[RunSeries, ...] = ()
        self._stop = threading.Event()
        self._differences = None

    def compose(self) -> ComposeResult:
        yield Static(id="compare-title")
        yield ComparePlot()
        with Horizontal(id="compare-bottom"):
            yield DataTable(id="compare-diff", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="compare-changes-box"):
                yield Static(id="compare-changes")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#compare-diff").border_title = "config differences"
        self.query_one("#compare-changes-box").border_title = "changed live"
        self._show_title()
        self._watch_files()

    def on_unmount(self) -> None:
        self._stop.set()

    @work(thread=True, exclusive=True, group="compare")
    def _watch_files(self) -> None:
        stamps: dict[Path, tuple] = {}
        runs: dict[Path, RunSeries] = {}
        columns = {path: MetricColumns() for path in self.run_dirs}
        while not self._stop.is_set():
            changed = False
            for path in self.run_dirs:
                stamp = _file_stamp(path)
                if stamps.get(path) != stamp:
                    stamps[path], runs[path] = stamp, read_run(path, columns[path])
                    changed = True
            if changed:
                self.post_message(CompareSnapshot(tuple(runs[p] for p in self.run_dirs)))
            self._stop.wait(REFRESH_S)

    def on_compare_snapshot(self, message: CompareSnapshot) -> None:
        self.runs = message.runs
        self.query_one(ComparePlot).runs = self.runs
        self.query_one("#compare-changes", Static).update(changes_text(self.runs))
        differences = config_differences(list(self.runs))
        if differences != self._differences:
            self._differences = differences
            self._fill_differences(differences)

    def _fill_differences(self, differences) -> None:
        table = self.query_one("#compare-diff", DataTable)
        table.clear(columns=True)
        # widths given: measured from the cells, they come out cut when filled at mount
        # one run (Enter on a finished run in the launcher): nothing to differ from
        none = ("one run: its settings are in its config.toml" if len(self.runs) == 1
                else "none: the runs share every setting")
        table.add_column("field", width=max(len(key) for key, _ in differences)
                         if differences else len(none))
        for i, run in enumerate(self.runs):
            label = short_label(run.name, 16)
            width = max([len(label), *(len(values[i]) for _, values in differences)])
            table.add_column(Text(label, style=run_colour(i)), width=width)
        for key, values in differences:
            table.add_row(key, *values)
        if not differences:
            table.add_row(Text(none, style="dim"),
                          *([""] * len(self.runs)))

    def _show_title(self) -> None:
        plot = self.query_one(ComparePlot)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{COMPARE_METRICS[plot.metric][1]} ", "bold")
        for i, path in enumerate(self.run_dirs):
            text.append("  ■ ", run_colour(i))
            text.append(path.name)
        self.query_one("#compare-title", Static).update(text)

    def action_cycle_metric(self) -> None:
        plot = self.query_one(ComparePlot)
        plot.metric = (plot.metric + 1) % len(COMPARE_METRICS)
        self._show_title()

    def action_toggle_axis(self) -> None:
        plot = self.query_one(ComparePlot)
        plot.x_axis = (plot.x_axis + 1) % len(X_AXES)

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_help(self) -> None:
        self.post_message(nav.OpenHelp())
