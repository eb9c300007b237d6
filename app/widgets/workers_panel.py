"""Where the work runs: one row per learner rank (torchrun) and per Ray actor, with its node
and steps per second, and a last line with the Ray cluster's CPUs. Fed from telemetry's
"workers" and "cluster" (engine/runtime/telemetry.py, docs/many-machines.md).

    panel.worker_rows = snapshot.get("workers") or []
    panel.cluster = snapshot.get("cluster")
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from puffer_tui.app.widgets.format import bar, human, load_colour


class WorkersPanel(Widget):
    """A compact table: `rank 0` / `actor 3`, node, SPS with a bar relative to the fastest
    (a worker at less than half the fastest one's pace is drawn in yellow: a straggler)."""

    DEFAULT_CLASSES = "panel"  # the frame comes from app/panels.tcss
    BORDER_TITLE = "workers"
    DEFAULT_CSS = """
    WorkersPanel {
        height: auto;
        max-height: 12;
        min-height: 3;
        padding: 0 1;
    }
    """

    # not `workers`: Textual's Widget.workers is its worker manager
    worker_rows: reactive[list] = reactive(list, always_update=True, layout=True)
    cluster: reactive[dict | None] = reactive(None, layout=True)

    def render(self) -> Table | Text:
        workers = [w for w in self.worker_rows or () if isinstance(w, dict)]
        if not workers:
            return Text("one process, no Ray actors", style="dim")
        fastest = max((float(w.get("sps") or 0.0) for w in workers), default=0.0)
        bar_width = max(4, min(12, self.size.width - 34))
        table = Table.grid(padding=(0, 1))
        table.add_column("who", no_wrap=True)
        table.add_column("node", no_wrap=True, overflow="ellipsis", max_width=18, style="dim")
        table.add_column("sps", justify="right", no_wrap=True)
        table.add_column("bar", no_wrap=True)
        for worker in workers:
            sps = float(worker.get("sps") or 0.0)
            share = sps / fastest if fastest > 0 else 0.0
            table.add_row(_who(worker), str(worker.get("node") or "?"), human(sps),
                          Text(bar(share, bar_width), style=_pace(share)))
        cluster = self.cluster
        if cluster and cluster.get("cpus"):
            cpus, used = float(cluster["cpus"]), float(cluster.get("cpus_reserved") or 0.0)
            table.add_row("cluster", "Ray CPUs", f"{used:g}/{cpus:g}",
                          Text(bar(used / cpus, bar_width), style=load_colour(100 * used / cpus)))
        return table


def _who(worker: dict) -> str:
    if "rank" in worker:
        return f"rank {worker['rank']}"
    if "actor" in worker:
        return f"actor {worker['actor']}"
    return "worker"


def _pace(share: float) -> str:
    return "cyan" if share >= 0.5 else "yellow"
