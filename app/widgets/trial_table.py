"""The sweep's trials as a table: number, state, score, cost (agent steps), duration and
the sampled parameters; sorted by any column, keeping the cursor on the same trial.

Tested in: tests/screens/test_sweep_view.py"""

from __future__ import annotations

import math

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from puffer_tui.app.widgets.format import duration, human, metric

SORTS = ("number", "score", "state", "seconds", "global_step")
SORT_LABELS = {"number": "#", "score": "score", "state": "state", "seconds": "duration",
               "global_step": "cost"}
STATE_STYLES = {"RUNNING": "bold green", "COMPLETE": "", "PRUNED": "yellow", "FAIL": "red",
                "WAITING": "dim"}
COLUMNS = ("#", "state", "score", "cost", "duration", "parameters")


def short_param(name: str) -> str:
    """train.learning_rate -> learning_rate (the section adds nothing in a narrow table)."""
    return name.rsplit(".", 1)[-1]


def param_text(params: dict) -> str:
    return "  ".join(f"{short_param(k)}={metric(v) if isinstance(v, float) else v}"
                     for k, v in sorted(params.items()))


class TrialTable(DataTable):
    """`show(trials, best)` with the snapshot's trial rows; `cycle_sort()` changes the order."""

    DEFAULT_CLASSES = "panel"
    BINDINGS = [Binding("enter", "select_cursor", "Open")]  # the screen opens it

    def __init__(self, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.sort_key = "number"
        self.descending = False
        self.trials: list[dict] = []
        self.best_numbers: set[int] = set()

    def on_mount(self) -> None:
        self.border_title = "trials"
        for label in COLUMNS:
            self.add_column(label, key=label)
        self._update_subtitle()

    def cycle_sort(self) -> None:
        """number -> score (best first) -> state -> duration -> cost -> number."""
        i = SORTS.index(self.sort_key)
        self.sort_key = SORTS[(i + 1) % len(SORTS)]
        self.descending = self.sort_key in ("score", "seconds", "global_step")
        self._update_subtitle()
        self.show(self.trials, self.best_numbers)

    def _update_subtitle(self) -> None:
        arrow = "v" if self.descending else "^"
        self.border_subtitle = f"o: sort ({SORT_LABELS[self.sort_key]} {arrow})"

    def selected_trial(self) -> dict | None:
        if not self.trials or self.cursor_row < 0 or self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key((self.cursor_row, 0)).row_key.value
        return next((r for r in self.trials if str(r.get("number")) == key), None)

    def show(self, trials: list[dict], best: set[int] | None = None) -> None:
        selected = self.selected_trial()
        self.trials, self.best_numbers = list(trials), set(best or ())
        self.clear()
        for row in sorted(self.trials, key=self._order, reverse=self.descending):
            self.add_row(*self._cells(row), key=str(row.get("number")))
        if selected is not None:  # the cursor stays on the trial it was on
            try:
                self.move_cursor(row=self.get_row_index(str(selected.get("number"))))
            except Exception:
                pass

    def _order(self, row: dict):
        value = row.get(self.sort_key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (1, value if math.isfinite(value) else -math.inf)
        if isinstance(value, str):
            return (1, value)
        return (0, 0)  # missing values last (first when ascending)

    def _cells(self, row: dict) -> tuple:
        number = row.get("number")
        mark = "*" if number in self.best_numbers else " "
        state = row.get("state") or "?"
        score = row.get("score")
        steps = row.get("global_step")
        seconds = row.get("seconds")
        return (
            Text(f"{mark}{number}", style="bold" if number in self.best_numbers else ""),
            Text(state.lower(), style=STATE_STYLES.get(state, "")),
            metric(score) if isinstance(score, (int, float)) else "-",
            human(steps) if isinstance(steps, (int, float)) else "-",
            duration(seconds) if isinstance(seconds, (int, float)) else "-",
            param_text(row.get("params") or {}),
        )
