"""The launcher's runs list: the newest sweeps, then the runs as a lineage tree (a branched run
indented under the run it started from, engine/shared/lineage.py), with the runs marked for
comparison."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList

from puffer_tui.app.widgets.format import human
from puffer_tui.app.widgets.ordered_keys import OrderedKeys
from puffer_tui.engine.shared import sweep_settings as st
from puffer_tui.engine.shared.lineage import branch_step, tree_order
from puffer_tui.engine.shared.protocol import LIVE_STATES
from puffer_tui.engine.shared.run_dir import socket_answers

SWEEP_OPTION = "sweep:"  # a sweep's entry in the runs list: this, then its directory
MAX_SWEEPS = 5


def recent_sweeps(runs_root) -> list[dict]:
    """The newest sweeps under the runs root: name, path, state, trials done and target;
    `live` when the driver answers on its socket."""
    import json

    root = st.sweeps_root(runs_root)
    found = [d for d in root.iterdir() if (d / st.SETTINGS_FILE).is_file()] if root.is_dir() else []
    found.sort(key=lambda d: (d / st.SETTINGS_FILE).stat().st_mtime, reverse=True)
    sweeps = []
    for path in found[:MAX_SWEEPS]:
        try:
            status = json.loads((path / st.STATUS_FILE).read_text())
        except (OSError, ValueError):
            status = {}
        counts = status.get("counts") or {}
        live = socket_answers(path / st.SOCKET_FILE)
        state = status.get("state") or "not started"
        sweeps.append({"name": path.name, "path": path, "live": live,
                       "state": state if live or state not in ("running", "paused") else "driver gone",
                       "done": sum(counts.get(k, 0) for k in ("COMPLETE", "PRUNED", "FAIL")),
                       "target": status.get("target", "?")})
    return sweeps


def sweep_entry(sweep: dict) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"sweep {sweep['name']}", "bold" if sweep["live"] else "")
    text.append(f"\n  {sweep['state']}", "green" if sweep["live"] else "dim")
    text.append(f", {sweep['done']}/{sweep['target']} trials", "dim")
    return text


MAX_INDENT = 3  # deeper branches are drawn at this depth
ENTRY_WIDTH = 24  # the launcher's 30-column runs list, less its border, padding and scrollbar
ENTRY_GUTTER = 6  # the list's border, padding and scrollbar: its width less the entries' room


class RunsList(OrderedKeys, OptionList):
    """The runs and sweeps; `space` asks to mark a run to compare (MarkRequested; ctrl+o opens
    the comparison), `b` asks for the branch form of a run (BranchRequested); the launcher
    handles both."""

    BINDINGS = [Binding("space", "mark", "Mark", show=False),
                Binding("b", "branch", "Branch from this run")]

    @dataclass(eq=False)
    class EntryRequest(Message):
        """A request about the highlighted entry, by its option id (a run's path; None when
        nothing is highlighted)."""

        option_id: str | None

    class MarkRequested(EntryRequest):
        """`space`: mark or unmark the highlighted entry."""

    class BranchRequested(EntryRequest):
        """`b`: the branch form of the highlighted entry."""

    def action_mark(self) -> None:
        self.post_message(self.MarkRequested(self._highlighted_id()))

    def action_branch(self) -> None:
        self.post_message(self.BranchRequested(self._highlighted_id()))

    def _highlighted_id(self) -> str | None:
        if self.highlighted is None:
            return None
        return self.get_option_at_index(self.highlighted).id


def runs_as_tree(infos: list) -> list[tuple[object, int]]:
    """(RunInfo, depth) in the listing's order, each branch right under its parent."""
    by_path = {info.path: info for info in infos}
    order = tree_order([i.path for i in infos], {i.path: i.parent for i in infos})
    return [(by_path[path], depth) for path, depth in order]


def short_name(name: str, room: int) -> str:
    """`name` in `room` columns: a run's name is its env, then its start time; both say which
    run it is, so the middle goes (the env's end, the time's start), never a whole end."""
    if len(name) <= room:
        return name
    stamp = re.search(r"-\d{8}-\d{6}(-\d+)?$", name)  # create_run_dir's "-YYYYMMDD-HHMMSS"
    env = stamp.start() if stamp else len(name) // 2
    # the env whole when the time of day (7+ columns) still fits beside it, else halves
    head = env if env <= room - 1 - 7 else max((room - 1) // 2, 1)
    return name[:head] + "…" + name[len(name) - (room - 1 - head):]


def run_entry(info, marked: bool, depth: int = 0, width: int = ENTRY_WIDTH) -> Text:
    """Two lines of at most `width` columns (the list wraps longer ones): the name (under its
    parent: indented after a branch mark, its middle cut rather than its env or its end), then
    its state and steps; a branch's from where it started: "finished, 2.05k→8.19k"."""
    text = Text()
    pad = "  " * (min(depth, MAX_INDENT) - 1) if depth else ""
    lead = (pad + "└─" if depth else "") + ("●" if marked else "")
    text.append(pad + "└─" if depth else "", "dim")
    if marked:
        text.append("●", "bold magenta")
    name = short_name(info.name, width - len(lead))
    text.append(name, "bold" if info.state in LIVE_STATES else "")
    start = branch_step(info.parent)
    if start is not None:
        steps = f", {human(start)}→{human(info.global_step or start)}"
    else:
        steps = f", {info.global_step:,} steps" if info.global_step else ""
    state = f"{pad}  {info.state}{steps}"
    if len(state) > width:  # the steps first, the indent second
        state = f"  {info.state}{steps}"
    if len(state) > width:
        state = state[:width - 1] + "…"
    text.append("\n" + state, "green" if info.state in LIVE_STATES else "dim")
    return text
