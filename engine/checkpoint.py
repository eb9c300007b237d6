"""Checkpoints in `RUN_DIR/checkpoints/`: atomic writes, the last few kept, safe loads.

    path = save_checkpoint(run_dir, trainer.state_dict(), keep=3)
    path, state = load_latest(run_dir)                  # CheckpointError if the newest is bad
    path, state = load_latest(run_dir, fallback=True)   # ...or the newest one that loads

A checkpoint is whatever `Trainer.state_dict()` returns, saved with `torch.save`; it must load
with `torch.load(weights_only=True)` (tensors, numbers, strings, lists, dicts: no pickled
objects). Files are named `step-<global_step>-epoch-<epoch>.pt`, zero-padded so that name
order is age order. A write goes to a temp file in the same directory, is fsynced, then
renamed over the final name, so a crash mid-write never leaves a truncated checkpoint.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from pathlib import Path

from puffer_tui.engine.run_dir import CHECKPOINT_DIR

DEFAULT_KEEP = 3
_NAME = re.compile(r"^step-(\d+)-epoch-(\d+)\.pt$")

log = logging.getLogger(__name__)


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, truncated, corrupt or unsafe to load; names the file."""


def checkpoint_dir(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR


def checkpoint_name(global_step: int, epoch: int) -> str:
    return f"step-{int(global_step):012d}-epoch-{int(epoch):08d}.pt"


def parse_name(name: str) -> tuple[int, int]:
    """(global_step, epoch) from a checkpoint file name; ValueError for other names."""
    m = _NAME.match(name)
    if not m:
        raise ValueError(f"{name} is not a checkpoint name (step-<step>-epoch-<epoch>.pt)")
    return int(m.group(1)), int(m.group(2))


def list_checkpoints(run_dir: str | os.PathLike) -> list[Path]:
    """The run's checkpoints, oldest first (temp files and foreign files ignored)."""
    directory = checkpoint_dir(run_dir)
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        m = _NAME.match(path.name)
        if m:
            found.append(((int(m.group(1)), int(m.group(2))), path))
    return [path for _, path in sorted(found)]


def latest_checkpoint(run_dir: str | os.PathLike) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def save_checkpoint(run_dir: str | os.PathLike, state: dict, keep: int = DEFAULT_KEEP) -> Path:
    """Write `state` atomically as the newest checkpoint, then delete all but the last `keep`."""
    import torch

    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    for key in ("global_step", "epoch"):
        if not isinstance(state.get(key), int):
            raise ValueError(f"checkpoint state needs an integer {key!r}, got {state.get(key)!r}")
    directory = checkpoint_dir(run_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / checkpoint_name(state["global_step"], state["epoch"])
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(directory)
    for old in list_checkpoints(run_dir)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def _fsync_dir(directory: Path) -> None:
    # Make the rename itself durable; some filesystems refuse fsync on a directory.
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load_checkpoint(path: str | os.PathLike) -> dict:
    """The state saved in `path`, loaded with weights_only=True; CheckpointError naming the file."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises RuntimeError, EOFError, UnpicklingError, zipfile errors...
        raise CheckpointError(
            f"checkpoint {path} is corrupt or truncated and cannot be loaded "
            f"({type(e).__name__}: {_first_line(e)})"
        ) from e
    if not isinstance(state, dict) or not isinstance(state.get("global_step"), int):
        raise CheckpointError(
            f"checkpoint {path} is not a puffer-tui checkpoint (expected a dict with global_step)"
        )
    return state


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else "no details"


def load_latest(
    run_dir: str | os.PathLike, fallback: bool = False, on_skip=None
) -> tuple[Path, dict]:
    """The newest checkpoint of the run and its state.

    With `fallback`, a checkpoint that fails to load is skipped (reported through
    `on_skip(path, error)`) and the next older one is tried; without it the error is raised.
    """
    found = list_checkpoints(run_dir)
    if not found:
        raise CheckpointError(f"no checkpoints in {checkpoint_dir(run_dir)}")
    errors = []
    for path in reversed(found):
        try:
            return path, load_checkpoint(path)
        except CheckpointError as e:
            if not fallback:
                raise CheckpointError(
                    f"{e}; pass --fallback-checkpoint to resume from the previous checkpoint"
                    if len(found) > 1 else str(e)
                ) from e
            errors.append(str(e))
            if on_skip is not None:
                on_skip(path, e)
            else:
                log.warning("%s; trying the previous checkpoint", e)
    raise CheckpointError("no checkpoint could be loaded: " + "; ".join(errors))


def resolve_checkpoint(target: str | os.PathLike) -> Path:
    """A checkpoint file, or the latest checkpoint of a run directory."""
    path = Path(target)
    if path.is_file():
        return path
    if path.is_dir():
        latest = latest_checkpoint(path)
        if latest is None:
            raise CheckpointError(f"no checkpoints in {checkpoint_dir(path)}")
        return latest
    raise CheckpointError(f"no checkpoint or run directory at {path}")
