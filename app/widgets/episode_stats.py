"""Episode statistics (score, return, length, env-specific fields) with trend arrows."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive

from puffer_tui.app.widgets.format import metric, spark
from puffer_tui.app.widgets.panel import TextPanel

# The fields every env reports come first, in this order; env-specific ones follow (a C
# env's log fields, a Python env's episode-end info numbers), then the episodes' count:
# on a small screen the env's own fields are the ones worth the rows.
FIRST = ("score", "eval/score", "episode_return", "episode_length")
LAST = ("episodes",)
# Fields where going up is not "better", so the arrow stays neutral in colour.
NEUTRAL = {"episode_length"}
# Short names for the common fields: the panel is titled "episodes" already, and
# "episode_return" / "episode_length" cut to one width would both read "episode".
LABELS = {"episode_return": "return", "episode_length": "length", "eval/score": "eval"}


def label(key: str, width: int) -> str:
    """A field's name in `width` characters, cut with an ellipsis when it does not fit."""
    name = LABELS.get(key, key).replace("_", " ")
    return name if len(name) <= width else name[:max(width - 1, 0)] + "…"


class EpisodeStats(TextPanel):
    """`history` is {field: values per epoch}; `trends` is {field: +1 / 0 / -1}."""

    BORDER_TITLE = "episodes"

    history: reactive[dict] = reactive(dict)
    trends: reactive[dict] = reactive(dict)

    def render(self) -> Text:
        if not self.history:
            return Text("no finished episodes yet", style="dim")
        keys = [k for k in FIRST if k in self.history]
        keys += sorted(k for k in self.history if k not in FIRST and k not in LAST)
        keys += [k for k in LAST if k in self.history]
        key_w = max(min(16, self.size.width - 13), 6)  # names give way before numbers do
        key_w = min(key_w, max(len(label(k, 99)) for k in keys))
        spark_w = max(self.size.width - 30, 0)
        lines = []
        for key in keys:
            values = list(self.history[key])
            trend = self.trends.get(key, 0)
            arrow, style = {1: ("↑", "green"), -1: ("↓", "red"), 0: ("→", "dim")}[trend]
            if key in NEUTRAL and trend:
                style = "cyan"
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(f"{label(key, key_w):<{key_w}}", "dim")
            line.append(f"{metric(values[-1] if values else None):>10} ")
            line.append(arrow, style)
            if spark_w >= 4:
                line.append(" " + spark(values, spark_w), "cyan")
            lines.append(line)
        return Text("\n").join(lines)
