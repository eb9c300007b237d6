"""Where the last epoch's time went: env, forward, copy, learn, misc, as bars with percents."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive

from puffer_tui.app.widgets.format import bar
from puffer_tui.app.widgets.panel import TextPanel
from puffer_tui.engine.shared.protocol import TIMING_KEYS

COLOURS = {"env": "green", "forward": "cyan", "copy": "magenta", "learn": "yellow", "misc": "grey50"}


class TimingBars(TextPanel):
    BORDER_TITLE = "time per epoch"
    DEFAULT_CSS = "TimingBars { height: 7; }"  # a row per timing key, and the frame

    seconds: reactive[dict] = reactive(dict)
    percent: reactive[dict] = reactive(dict)

    def render(self) -> Text:
        if not self.seconds and not self.percent:
            return Text("waiting for the first epoch", style="dim")
        show_secs = self.size.width >= 34  # drop the seconds column before the bars get tiny
        # the bar gets what the key (8), the percent (6) and the seconds (9) leave
        width = max(self.size.width - (23 if show_secs else 14), 3)
        total = sum(v for v in self.seconds.values() if isinstance(v, (int, float))) or 0.0
        lines = []
        for key in TIMING_KEYS:
            pct = self.percent.get(key)
            secs = self.seconds.get(key)
            if pct is None and total and isinstance(secs, (int, float)):
                pct = 100 * secs / total
            pct = pct if isinstance(pct, (int, float)) else 0.0
            line = Text(no_wrap=True)
            line.append(f"{key:<8}", "dim")
            line.append(bar(pct / 100, width), COLOURS[key])
            line.append(f"{pct:5.1f}%")
            if show_secs:
                line.append(f" {secs:7.3f}s" if isinstance(secs, (int, float)) else "        -",
                            "dim")
            lines.append(line)
        return Text("\n").join(lines)
