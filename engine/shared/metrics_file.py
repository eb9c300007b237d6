"""metrics.jsonl: its columns, and whole lines only (the engine writes it, the app reads it).

The engine's writer (engine/runtime/metrics.py) appends one flattened row per epoch with
`append_whole`; `grouped` turns a line back into the trainer's nested row for the app.

Tested in: tests/engine/runtime/test_metrics.py (the torn tail, whole appends),
tests/engine/runtime/test_process_resume.py (truncate_after),
tests/engine/runtime/test_wandb_tracker.py (scalar_tags), tests/app/test_compare_data.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from puffer_tui.engine.shared.atomic_write import write_atomic
from puffer_tui.engine.shared.protocol import (
    DIAGNOSES,
    ENV,
    EVAL,
    LOSS_KEYS,
    LOSSES,
    METRIC_GROUPS,
    ROW_KEYS,
    TIMING,
    TIMING_PCT,
    WORKERS,
)
from puffer_tui.engine.shared.run_dir import METRICS_FILE


def append_whole(fd: int, data: bytes) -> None:
    """Append `data` completely or not at all (a short or failed write is truncated away)."""
    size = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        try:
            os.ftruncate(fd, size)
        except OSError:
            pass
        raise


def remove_torn_tail(path: Path) -> int:
    """Cut a last line that has no newline (a write torn by a kill); returns bytes removed."""
    try:
        with path.open("rb+") as f:
            end = f.seek(0, os.SEEK_END)
            pos = end
            while pos > 0:
                step = min(4096, pos)
                f.seek(pos - step)
                chunk = f.read(step)
                newline = chunk.rfind(b"\n")
                if newline >= 0:
                    pos = pos - step + newline + 1
                    break
                pos -= step
            if pos != end:
                f.truncate(pos)
            return end - pos
    except FileNotFoundError:
        return 0


# metrics.jsonl columns of the groups: losses bare, timing prefixed; env stats bare unless
# the name is taken by a trainer column, then "env/<name>" (flatten and grouped are inverses)
_FLAT_PREFIX = {LOSSES: "", TIMING: "timing_", TIMING_PCT: "timing_pct_", EVAL: f"{EVAL}/"}


def _env_column(key: str) -> str:
    taken = (key in ROW_KEYS or key in LOSS_KEYS or key.startswith(("timing_", "env/", f"{EVAL}/")))
    return f"{ENV}/{key}" if taken else key


def flatten(row: dict) -> dict:
    """The trainer's nested row as one flat metrics.jsonl line (the file's columns have kept
    their names: policy_loss, timing_env, timing_pct_env, score...)."""
    flat = {}
    for key, value in row.items():
        if key == WORKERS:
            continue  # per-rank SPS: telemetry only (metrics.jsonl keeps the total)
        if key == ENV and isinstance(value, dict):
            flat.update({_env_column(k): v for k, v in value.items()})
        elif key in _FLAT_PREFIX and isinstance(value, dict):
            flat.update({_FLAT_PREFIX[key] + k: v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def grouped(flat: dict) -> dict:
    """flatten undone: a metrics.jsonl row as the trainer's nested row."""
    row: dict = {group: {} for group in METRIC_GROUPS}
    for key, value in flat.items():
        if key in ROW_KEYS or key == DIAGNOSES:  # diagnoses: a list, only when one changed
            row[key] = value
        elif key in LOSS_KEYS:
            row[LOSSES][key] = value
        elif key.startswith("timing_pct_"):
            row[TIMING_PCT][key[len("timing_pct_"):]] = value
        elif key.startswith("timing_"):
            row[TIMING][key[len("timing_"):]] = value
        elif key.startswith(f"{EVAL}/"):
            row.setdefault(EVAL, {})[key[len(EVAL) + 1:]] = value
        else:
            row[ENV][key.removeprefix(f"{ENV}/")] = value
    return row


def read_metrics(run_dir: str | os.PathLike) -> list[dict]:
    """Every row of the run's metrics.jsonl (a torn last line, from a kill, is skipped)."""
    path = Path(run_dir) / METRICS_FILE
    rows = []
    if not path.exists():
        return rows
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return rows


def truncate_after(run_dir: str | os.PathLike, epoch: int) -> int:
    """Drop rows past `epoch` (written after the checkpoint a resume starts from), so the
    resumed run's rows continue the file without duplicates. Returns how many were dropped."""
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        return 0
    rows = read_metrics(run_dir)
    kept = [r for r in rows if not isinstance(r.get("epoch"), int) or r["epoch"] <= epoch]
    with path.open(encoding="utf-8") as f:
        torn = sum(1 for _ in f) - len(rows)
    if len(kept) == len(rows) and not torn:
        return 0
    write_atomic(path, "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in kept))
    return len(rows) - len(kept)


def scalar_tags(row: dict):
    """(tag, number) of every number in the nested row, as TensorBoard and W&B name them:
    "<group>/<name>" for the groups (losses, env, timing, eval...), "train/<name>" for the
    row's own columns. The per-rank "workers" list is telemetry, not a metric."""
    for key, value in row.items():
        if key == WORKERS:
            continue
        items = value.items() if isinstance(value, dict) else [(key, value)]
        prefix = key if isinstance(value, dict) else "train"
        for name, number in items:
            if isinstance(number, (int, float)) and not isinstance(number, bool):
                yield f"{prefix}/{name}", number
