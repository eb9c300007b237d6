"""Per-epoch metrics: one JSON line per epoch in RUN_DIR/metrics.jsonl, TensorBoard, W&B.

TensorBoard is an optional extra (`pip install puffer-tui[tensorboard]`); when the
`tensorboard` package is importable the same rows also go to RUN_DIR/tensorboard/.
Weights & Biases (`pip install puffer-tui[wandb]`) gets them too when the run's config says
`train.wandb`, with the run config, live hyperparameter changes and recordings attached
(engine/runtime/wandb_tracker.py); this writer is the one place all three are fed from.

metrics.jsonl is only ever whole lines: each row is appended with one write, a write that
fails part-way (disk full) is cut back off, and a torn last line (a kill mid-write) is
removed when the file is opened again. A row that could not be written stays pending and
goes out first with the next write, so a full disk loses no rows.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from pathlib import Path

from puffer_tui.engine.runtime.wandb_tracker import WandbTracker
from puffer_tui.engine.shared.metrics_file import (  # noqa: F401 (re-exported)
    append_whole,
    flatten,
    grouped,
    read_metrics,
    remove_torn_tail,
    scalar_tags,
    truncate_after,
)
from puffer_tui.engine.shared.protocol import (
    json_safe,
)
from puffer_tui.engine.shared.run_dir import METRICS_FILE

TENSORBOARD_DIR = "tensorboard"


def tensorboard_available() -> bool:
    return importlib.util.find_spec("tensorboard") is not None


def _quiet_tensorboard_thread(previous):
    """A threading.excepthook that leaves TensorBoard's writer thread to MetricsWriter: the
    thread keeps its error and raises it again in the next add_summary(), which drops
    TensorBoard with a one-line warning; printing the thread's traceback too would make a
    handled failure (the run folder removed, the disk full) look like a crash. Every other
    thread's exception goes to `previous`."""
    def hook(args):
        if type(args.thread).__name__ == "_AsyncWriterThread" and \
                type(args.thread).__module__.startswith("tensorboard."):
            return
        previous(args)
    hook.quiets_tensorboard = True
    return hook


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
                from tensorboard.compat.proto.summary_pb2 import Summary
                from torch.utils.tensorboard.writer import FileWriter

                # SummaryWriter's own file writer, fed one event a row (see _tensorboard_row)
                self._tb = FileWriter(str(self.run_dir / TENSORBOARD_DIR))
                self._summary = Summary
                if not getattr(threading.excepthook, "quiets_tensorboard", False):
                    threading.excepthook = _quiet_tensorboard_thread(threading.excepthook)
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
            try:
                self._tensorboard_row(row)
            except Exception as e:  # its folder gone, its disk full: metrics.jsonl goes on
                self._drop_tensorboard(e)
        if self.tracker is not None:
            try:
                self.tracker.log_row(row)
            except Exception as e:  # a logger that broke must not stop training
                self._drop_tracker(e)

    def _tensorboard_row(self, row: dict) -> None:
        """Every scalar of the row in one TensorBoard event: one Summary of many values (as
        tf.summary's merged summaries), read back per tag like SummaryWriter.add_scalar's
        one event per scalar, whose cost per scalar added up to a real share of a short
        epoch (the figures: docs/architecture.md, "Figures that shaped the code")."""
        value = self._summary.Value
        summary = self._summary(value=[value(tag=tag, simple_value=float(number))
                                       for tag, number in scalar_tags(row)])
        self._tb.add_summary(summary, row.get("global_step", 0))

    def flush_pending(self) -> None:
        while self._pending:
            append_whole(self._fd, self._pending[0])
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
            tb, self._tb = self._tb, None
            try:
                _finish(tb)
            except Exception as e:
                self.tensorboard_error = f"{type(e).__name__}: {e}"
                if self.run_dir.is_dir():  # as in _drop_tensorboard
                    self._warn(f"TensorBoard failed to finish its file: "
                               f"{self.tensorboard_error}")
        if self.tracker is not None:
            tracker, self.tracker = self.tracker, None
            try:
                tracker.close(exit_code)
            except Exception as e:
                self.tracker_error = f"{type(e).__name__}: {e}"
                self._warn(f"Weights & Biases failed to finish the run: {self.tracker_error}")

    def _drop_tensorboard(self, error: Exception) -> None:
        self.tensorboard_error = f"{type(error).__name__}: {error}"
        if self.run_dir.is_dir():  # with the whole run folder gone, the engine says that
            self._warn(f"TensorBoard stopped logging ({self.tensorboard_error}); "
                       f"metrics.jsonl goes on")
        tb, self._tb = self._tb, None
        try:
            _finish(tb)
        except Exception:
            pass  # already broken: what it said is in tensorboard_error

    def _drop_tracker(self, error: Exception) -> None:
        self.tracker_error = f"{type(error).__name__}: {error}"
        self._warn(f"Weights & Biases stopped logging ({self.tracker_error}); metrics.jsonl "
                   f"and TensorBoard go on")
        tracker, self.tracker = self.tracker, None
        try:
            tracker.close(1)
        except Exception:
            pass  # already broken: what it said is in tracker_error


def _finish(tb) -> None:
    """Close a TensorBoard file writer as SummaryWriter.close does: flushed first (where a
    folder that is gone shows), then closed in any case (its thread ends)."""
    try:
        tb.flush()
    finally:
        tb.close()
