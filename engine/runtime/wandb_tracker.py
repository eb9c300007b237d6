"""Weights & Biases: the metrics writer's copy of a run in W&B, when `train.wandb` is on.

    check_wandb(config)                       # before a run starts: the package is there
    tracker = WandbTracker(run_dir, config)    # wandb.init, the run's config attached
    tracker.log_row(row)                       # every epoch (engine/runtime/metrics.py calls it)
    tracker.close()

Fed by engine/runtime/metrics.py's MetricsWriter, the one writer that also fills metrics.jsonl and
TensorBoard, so the three never disagree. Each epoch row is logged flattened under the same
tags TensorBoard gets (`losses/policy_loss`, `env/score`, `eval/score`, `train/sps`...) with
`global_step` as every chart's x axis. Before each row the tracker also attaches:

- live hyperparameter changes: the run config (the very object the trainer changes in place)
  is compared with what W&B last saw; a change updates W&B's config and logs an
  `events/live_change` text at the step the change was made (the previous row's step);
- recordings: GIF/MP4 files that appeared in RUN_DIR/recordings/ (the periodic `eval-<step>`
  ones, or `puffer-tui eval RUN --record`), logged as wandb.Video under `recordings/<name>`.

W&B's files live in RUN_DIR/wandb/ (`offline-run-...` with WANDB_MODE=offline, which needs no
account or network; `wandb sync RUN_DIR/wandb/offline-run-*` uploads them later). The W&B run
id is kept in RUN_DIR/wandb/puffer-tui-run-id, so a resumed run continues the same W&B run.
"""

from __future__ import annotations

import copy
import os
import re
import secrets
from pathlib import Path

from puffer_tui.engine.shared.config import Config, ConfigError
from puffer_tui.engine.shared.metrics_file import scalar_tags
from puffer_tui.engine.shared.recordings import RECORDINGS, SUFFIXES
from puffer_tui.engine.startup.wandb_check import INSTALL_HINT

WANDB_DIR = "wandb"  # wandb.init(dir=RUN_DIR) keeps its files here
RUN_ID_FILE = "puffer-tui-run-id"  # in WANDB_DIR: the W&B run a resume continues
LIVE_CHANGE_KEY = "events/live_change"
STEP_KEY = "global_step"


class TrackerError(RuntimeError):
    """W&B could not start; the message names the problem and the fix."""


def flat_config(data: dict, prefix: str = "") -> dict:
    """{"train.learning_rate": 0.01, ...}: a nested config as dotted keys."""
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(flat_config(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def recording_series(path: Path) -> str:
    """The W&B media key of a recording: periodic `eval-1234.gif` files form one series
    (`recordings/eval`, a slider over steps); any other file keeps its own name."""
    series = re.sub(r"-\d+$", "", path.stem) or path.stem
    return f"recordings/{series}"


class WandbTracker:
    def __init__(self, run_dir: str | os.PathLike, config: Config, warn=None):
        self.run_dir = Path(run_dir)
        self.config = config  # the trainer's own: live changes show up here
        self._warn = warn or (lambda text: None)
        try:
            import wandb
        except ImportError as e:
            raise ConfigError(f"train.wandb is on but wandb cannot be imported ({e}): "
                              f"{INSTALL_HINT} (or --train.wandb false)") from None
        self._wandb = wandb
        id_file = self.run_dir / WANDB_DIR / RUN_ID_FILE
        resumed = id_file.exists()
        run_id = id_file.read_text().strip() if resumed else secrets.token_hex(4)
        seen = config.as_dict()
        try:
            self.run = wandb.init(
                project=config.train.wandb_project, name=self.run_dir.name, id=run_id,
                resume="allow", dir=str(self.run_dir), config=seen, job_type="train",
                # the engine's stdout is engine.out: W&B neither wraps it nor writes to it
                settings=wandb.Settings(console="off", silent=True))
        except Exception as e:
            raise TrackerError(
                f"Weights & Biases could not start ({type(e).__name__}: {e}); log in with "
                f"`wandb login`, or set WANDB_MODE=offline to log without an account") from None
        id_file.parent.mkdir(parents=True, exist_ok=True)
        id_file.write_text(run_id + "\n")
        self.run.define_metric(STEP_KEY)
        self.run.define_metric("*", step_metric=STEP_KEY)
        self._seen_config = flat_config(copy.deepcopy(seen))
        self._last_step: int | None = None
        # a resumed run logged the recordings it had before; a new one logs what it finds
        self._seen_recordings: set[str] = set(self._recording_files()) if resumed else set()
        self.resumed = resumed

    # -- what each epoch brings ----------------------------------------------------------------

    def log_row(self, row: dict) -> None:
        """Log one epoch row (nested, JSON-safe), after the changes and recordings before it."""
        step = int(row.get(STEP_KEY) or 0)
        self.log_live_changes(self._last_step if self._last_step is not None else step)
        self.log_new_recordings(step)
        data = dict(scalar_tags(row))
        data[STEP_KEY] = step
        self.run.log(data)
        self._last_step = step

    def log_live_changes(self, step: int) -> list[str]:
        """Hyperparameters changed since W&B last saw the config: W&B's config is updated
        (each changed section whole) and one `events/live_change` text names them."""
        now = flat_config(self.config.as_dict())
        changed = sorted(key for key in now.keys() | self._seen_config.keys()
                         if now.get(key) != self._seen_config.get(key))
        if not changed:
            return []
        current = self.config.as_dict()
        sections = {key.split(".", 1)[0] for key in changed}
        self.run.config.update({s: current.get(s) for s in sections}, allow_val_change=True)
        texts = [f"{key} changed from {self._seen_config.get(key)} to {now.get(key)}"
                 for key in changed]
        self.run.log({STEP_KEY: step, LIVE_CHANGE_KEY: "; ".join(texts)})
        self._seen_config = now
        return texts

    def log_new_recordings(self, step: int) -> list[Path]:
        """Recordings that appeared in RUN_DIR/recordings/ since the last look, as videos."""
        new = sorted(((path, key) for key, path in self._recording_files().items()
                      if key not in self._seen_recordings), key=lambda item: _written_ns(item[1]))
        for path, key in new:
            self._seen_recordings.add(key)  # tried once: a file W&B refuses is not retried
            try:
                video = self._wandb.Video(str(path), format=path.suffix[1:].lower(),
                                          caption=path.name)
            except Exception as e:
                self._warn(f"Weights & Biases did not take recording {path.name}: {e}")
                continue
            self.run.log({STEP_KEY: step, recording_series(path): video})
        return [path for path, _ in new]

    def _recording_files(self) -> dict[str, Path]:
        # whole files only: a recording is encoded into a hidden temp file, then renamed
        folder = self.run_dir / RECORDINGS
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            return {}
        files = {}
        for entry in entries:
            path = Path(entry.path)
            if entry.is_file() and not entry.name.startswith(".") \
                    and path.suffix.lower() in SUFFIXES:
                files[_recording_key(entry)] = path
        return files

    def close(self, exit_code: int = 0) -> None:
        """Attach what came after the last row (a change, the last recording) and finish."""
        if self.run is None:
            return
        step = self._last_step or 0
        try:
            self.log_live_changes(step)
            self.log_new_recordings(step)
        finally:
            self.run.finish(exit_code=exit_code)
            self.run = None


def _written_ns(key: str) -> int:
    return int(key.rsplit(":", 1)[1])


def _recording_key(entry: os.DirEntry | Path) -> str:
    """A file once seen is not logged again, unless it is written anew (size, time)."""
    stat = entry.stat()
    return f"{entry.name}:{stat.st_size}:{stat.st_mtime_ns}"
