"""The launcher's runs list: runs as a lineage tree (a branched run indented under the run it
started from, engine/lineage.py), with the runs marked for comparison."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import OptionList

from puffer_tui.engine.lineage import describe_parent, tree_order
from puffer_tui.engine.protocol import LIVE_STATES

MAX_INDENT = 3  # deeper branches are drawn at this depth: names must still fit 30 columns


class RunsList(OptionList):
    """The runs and sweeps; `space` marks runs to compare (ctrl+o opens the comparison)."""

    BINDINGS = [Binding("space", "mark", "Mark", show=False)]

    def action_mark(self) -> None:
        self.screen.toggle_mark()


def runs_as_tree(infos: list) -> list[tuple[object, int]]:
    """(RunInfo, depth) in the listing's order, each branch right under its parent."""
    by_path = {info.path: info for info in infos}
    order = tree_order([i.path for i in infos], {i.path: i.parent for i in infos})
    return [(by_path[path], depth) for path, depth in order]


def run_entry(info, marked: bool, depth: int = 0) -> Text:
    """Two lines: the name (under its parent: indented, after a branch mark), then its state
    and where a branch came from (the parent's name too when it is not listed above)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    pad = "  " * (min(depth, MAX_INDENT) - 1) if depth else ""
    text.append(pad)
    if depth:
        text.append("└ ", "dim")
    if marked:
        text.append("● ", "bold magenta")
    text.append(info.name, "bold" if info.state in LIVE_STATES else "")
    text.append(f"\n{pad}  {info.state}",
                "green" if info.state in LIVE_STATES else "dim")
    if info.global_step:
        text.append(f", {info.global_step:,} steps", "dim")
    if info.parent:
        text.append(f", from {describe_parent(info.parent, with_run=not depth)}", "dim")
    return text
