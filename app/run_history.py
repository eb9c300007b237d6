"""A run's past, read from its files: metrics.jsonl rows and events.log entries.

A client that attaches to a run (or reopens it) shows the loss curves and events from before
it connected; the engine only pushes what happens from then on.

Tested in: tests/app/test_app_state.py (missing history, events out of order)
"""

from __future__ import annotations

import calendar
import json
import time
from pathlib import Path

from puffer_tui.app.telemetry_store import Event
from puffer_tui.engine.shared.metrics_file import grouped
from puffer_tui.engine.shared.run_dir import EVENTS_FILE, METRICS_FILE

TAIL_BYTES = 4 * 1024 * 1024  # the last few MiB are plenty for the stores' capacities


def _tail_lines(path: Path, max_bytes: int = TAIL_BYTES) -> list[str]:
    try:
        with path.open("rb") as f:
            size = path.stat().st_size
            f.seek(max(0, size - max_bytes))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    return lines[1:] if size > max_bytes else lines  # the first may be a cut line


def read_metric_rows(run_dir: Path) -> list[dict]:
    """The file's flat rows regrouped as the trainer made them (losses, timing, env...)."""
    rows = []
    for line in _tail_lines(Path(run_dir) / METRICS_FILE):
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a torn last line (a killed engine)
        if isinstance(row, dict):
            rows.append(grouped(row))
    return rows


def read_events(run_dir: Path) -> list[Event]:
    """Entries `2026-11-22T00:14:01Z [level] text`, further lines indented two spaces."""
    events: list[Event] = []
    for line in _tail_lines(Path(run_dir) / EVENTS_FILE):
        if line.startswith("  ") and events:
            events[-1].text += "\n" + line[2:]
            continue
        stamp, _, rest = line.partition(" [")
        level, _, text = rest.partition("] ")
        try:
            when = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
        except ValueError:
            continue
        events.append(Event(float(when), level, text))
    return events
