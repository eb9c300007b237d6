"""Which parameters matter: Optuna's importances (computed by the sweep driver) as bars.

Tested in: tests/engine/sweep/test_importance_note.py"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from puffer_tui.app.widgets.format import bar
from puffer_tui.app.widgets.panel import Drawn
from puffer_tui.app.widgets.trial_table import short_param


class ImportanceBars(Drawn, Static):
    DEFAULT_CLASSES = "panel"
    BORDER_TITLE = "parameter importance"
    DRAWN_FROM = ("importance", "note")

    importance: reactive[dict] = reactive(dict)
    note: reactive[str] = reactive("")  # the sweep's word on why there are none (yet)

    def _draw(self) -> None:
        if not self.is_mounted:
            return
        items = sorted(self.importance.items(), key=lambda kv: -kv[1])
        if not items:
            self.update(Text(self.note or "computed once a few trials complete", style="dim"))
            return
        width = max(self.content_size.width, 20)
        name_width = min(max(len(short_param(k)) for k, _ in items), width // 2)
        bar_width = max(width - name_width - 7, 4)
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, (name, value) in enumerate(items):
            if i:
                text.append("\n")
            text.append(f"{short_param(name):<{name_width}.{name_width}} ")
            text.append(bar(value, bar_width), style="green")
            text.append(f" {value:4.0%}")
        self.update(text)
