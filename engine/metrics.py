"""Per-epoch metrics: one JSON line per epoch in RUN_DIR/metrics.jsonl, TensorBoard, W&B.

TensorBoard is an optional extra (`pip install puffer-tui[tensorboard]`); when the
`tensorboard` package is importable the same rows also go to RUN_DIR/tensorboard/.
Weights & Biases (`pip install puffer-tui[wandb]`) gets them too when the run's config says
`train.wandb`, with the run config, live hyperparameter changes and recordings attached
(engine/wandb_tracker.py); this writer is the one place all three are fed from.

metrics.jsonl is only ever whole lines: each row is appended with one write, a write that
fails part-way (disk full) is cut back off, and a torn last line (a kill mid-write) is
removed when the file is opened again. A row that could not be written stays pending and
goes out first with the next write, so a full disk loses no rows.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

from puffer_tui.engine.atomic_write import write_atomic
from puffer_tui.engine.protocol import (
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
    json_safe,
)
from puffer_tui.engine.run_dir import METRICS_FILE

TENSORBOARD_DIR = "tensorboard"


def tensorboard_available() -> bool:
    return importlib.util.find_spec("tensorboard") is not None


class MetricsWriter:
    """Appends metric rows; `tensorboard=None` means "when installed". `config`, the
    trainer's own Config object, turns on W&B when its train.wandb is set (changes made to
    it live are seen at the next row). `warn(text)` hears of W&B failing mid-run: it is
    dropped then (training and metrics.jsonl go on), and `tracker_error` says why."""

    def __init__(self, run_dir: str | os.PathLike, tensorboard: bool | None = None,
                 config=None, warn=None):
        self.run_dir = Path(run_dir)
        self.tracker = None
        self.tracker_error: str | None = None
        self._warn = warn or (lambda text: None)
        if config is not None and config.train.wandb:  # first: a tracker that fails leaves no fd
            from puffer_tui.engine.wandb_tracker import WandbTracker

            self.tracker = WandbTracker(self.run_dir, config, self._warn)
        self.path = self.run_dir / METRICS_FILE
        self.torn_bytes = remove_torn_tail(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._pending: list[bytes] = []  # rows not written yet (the disk was full)
        self._tb = None
        self.tensorboard_error: str | None = None  # why "when installed" did not work out
        asked = tensorboard is True
        if tensorboard is None:
            tensorboard = tensorboard_available()
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(self.run_dir / TENSORBOARD_DIR))
            except Exception as e:  # a broken optional install must not stop training
                if asked:
                    raise
                self.tensorboard_error = f"{type(e).__name__}: {e}"

    def write(self, row: dict) -> None:
        """Append the trainer's nested `row` (flattened, see `flatten`); on OSError (disk full)
        it stays pending and the error is raised."""
        row = json_safe(row)
        line = json.dumps(flatten(row), separators=(",", ":")) + "\n"
        self._pending.append(line.encode("utf-8"))
        self.flush_pending()
        if self._tb is not None:
            step = row.get("global_step", 0)
            for tag, value in scalar_tags(row):
                self._tb.add_scalar(tag, value, step)
        if self.tracker is not None:
            try:
                self.tracker.log_row(row)
            except Exception as e:  # a logger that broke must not stop training
                self._drop_tracker(e)

    def flush_pending(self) -> None:
        while self._pending:
            _append_whole(self._fd, self._pending[0])
            self._pending.pop(0)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def close(self, exit_code: int = 0) -> None:
        """`exit_code` is the engine's (W&B marks a run that crashed as failed)."""
        try:
            self.flush_pending()
        except OSError:
            pass  # still no room: the rows are lost with the process, the file stays whole
        os.close(self._fd)
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        if self.tracker is not None:
            tracker, self.tracker = self.tracker, None
            try:
                tracker.close(exit_code)
            except Exception as e:
                self.tracker_error = f"{type(e).__name__}: {e}"
                self._warn(f"Weights & Biases failed to finish the run: {self.tracker_error}")

    def _drop_tracker(self, error: Exception) -> None:
        self.tracker_error = f"{type(error).__name__}: {error}"
        self._warn(f"Weights & Biases stopped logging ({self.tracker_error}); metrics.jsonl "
                   f"and TensorBoard go on")
        tracker, self.tracker = self.tracker, None
        try:
            tracker.close(1)
        except Exception:
            pass  # already broken: what it said is in tracker_error


def _append_whole(fd: int, data: bytes) -> None:
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
