"""Checkpoints in `RUN_DIR/checkpoints/`: atomic writes, the last few kept, safe loads.

    path = save_checkpoint(run_dir, trainer.state_dict(), keep=3)
    path, state = load_latest(run_dir)                  # CheckpointError if the newest is bad
    path, state = load_latest(run_dir, fallback=True)   # ...or the newest one that loads

A checkpoint is whatever `Trainer.state_dict()` returns, saved with `torch.save`; it must load
with `torch.load(weights_only=True)` (tensors, numbers, strings, lists, dicts: no pickled
objects). Files are named `step-<global_step>-epoch-<epoch>.pt`, zero-padded so that name
order is age order. Writes follow engine/shared/atomic_write.py (a fsynced temp file renamed over
the final name), so a crash mid-write never leaves a truncated checkpoint; temp files a
killed writer left behind are removed by the next save.

Beside each checkpoint, `<name>.pt.sha256` (the `sha256sum` format) holds its digest, written
before the checkpoint is renamed into place; a load verifies it, so flipped bytes are refused
with an error naming the file. A state whose weights are not finite is never saved, so
retention can only rotate out finite checkpoints.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import pickle
import re
from pathlib import Path

from puffer_tui.engine.shared.atomic_write import StagedFiles
from puffer_tui.engine.shared.health import all_finite
from puffer_tui.engine.shared.run_dir import CHECKPOINT_DIR

DEFAULT_KEEP = 3
# the first bytes of what torch.save writes: a zip archive (torch >= 1.6), or a bare pickle
TORCH_MAGIC = (b"PK\x03\x04", b"\x80\x02")
_ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NAME = re.compile(r"^step-(\d+)-epoch-(\d+)\.pt$")
CHECKSUM_SUFFIX = ".sha256"

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
    """Write `state` atomically as the newest checkpoint (with its checksum beside it), then
    delete all but the last `keep`. Refuses a state whose weights are not finite."""

    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    for key in ("global_step", "epoch"):
        if not isinstance(state.get(key), int):
            raise ValueError(f"checkpoint state needs an integer {key!r}, got {state.get(key)!r}")
    bad = non_finite_tensors(state)
    if bad:
        raise CheckpointError(f"not saving a checkpoint at step {state['global_step']}: "
                              f"non-finite values in {', '.join(bad[:5])}")
    directory = checkpoint_dir(run_dir)
    directory.mkdir(parents=True, exist_ok=True)
    remove_stale_temp_files(directory)
    path = directory / checkpoint_name(state["global_step"], state["epoch"])
    data, digest = serialized(state, path)
    # Both files are written in full before either is renamed into place, so a full disk
    # never leaves a checkpoint beside a checksum of other bytes (e.g. when re-saving a step);
    # the checksum is renamed first, so a checkpoint never appears without it.
    try:
        with StagedFiles() as files:
            files.stage(checksum_path(path), digest)
            files.stage(path, data)
            files.commit()
    finally:
        del data
    for old in list_checkpoints(run_dir)[:-keep]:
        old.unlink(missing_ok=True)
        checksum_path(old).unlink(missing_ok=True)
    return path


def checksum_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.with_name(path.name + CHECKSUM_SUFFIX)


def non_finite_tensors(state: dict, prefix: str = "") -> list[str]:
    """Names of the floating-point tensors in `state` (nested dicts and lists) holding NaN or
    infinity; the checks run where the tensors live, without copies."""
    import torch

    found = []
    items = state.items() if isinstance(state, dict) else enumerate(state)
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, torch.Tensor):
            if not all_finite(value):
                found.append(name)
        elif isinstance(value, (dict, list, tuple)):
            found.extend(non_finite_tensors(value, name + "."))
    return found


def remove_stale_temp_files(directory: Path) -> int:
    """Delete temp files of checkpoint writes that were interrupted (a killed engine), and
    checksums whose checkpoint never arrived; returns how many. Only one engine writes a
    run's checkpoints, so none of them is in progress."""
    removed = 0
    for path in directory.iterdir():
        stale_temp = path.name.startswith(".step-") and path.name.endswith(".tmp")
        orphan = path.name.endswith(CHECKSUM_SUFFIX) and \
            not path.with_name(path.name[:-len(CHECKSUM_SUFFIX)]).exists()
        if stale_temp or orphan:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def load_checkpoint(path: str | os.PathLike) -> dict:
    """The state saved in `path`, loaded with weights_only=True after its checksum is verified;
    CheckpointError naming the file."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    data = open_verified(path)
    try:
        state = torch.load(data, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        # torch's text here advises weights_only=False, i.e. running the file's code: never
        # pass that on for a file that may come from anyone
        raise CheckpointError(
            f"checkpoint {path} holds Python objects besides tensors and numbers, so it is "
            f"not loaded (that would run code from the file); a puffer-tui checkpoint holds "
            f"none") from None
    except Exception as e:  # torch raises RuntimeError, EOFError, zipfile errors...
        raise CheckpointError(
            f"checkpoint {path} is corrupt or truncated and cannot be loaded "
            f"({type(e).__name__}: {_first_line(e)})"
        ) from None
    if not isinstance(state, dict) or not isinstance(state.get("global_step"), int):
        raise CheckpointError(
            f"checkpoint {path} is not a puffer-tui checkpoint (expected a dict with global_step)"
        )
    return state


def serialized(state: dict, path: Path) -> tuple[memoryview, bytes]:
    """`state` as torch.save writes it, and the checksum line of those bytes saved as `path`."""
    import torch

    buffer = io.BytesIO()
    torch.save(state, buffer)
    data = buffer.getbuffer()
    return data, f"{hashlib.sha256(data).hexdigest()}  {path.name}\n".encode("ascii")


def open_verified(path: str | os.PathLike) -> io.BytesIO:
    """The bytes of checkpoint `path`, its checksum verified, as a file for torch.load."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise CheckpointError(f"checkpoint {path} cannot be read ({e})") from e
    if not data.startswith(TORCH_MAGIC):
        if path.suffix in (".pt", ".pth"):
            raise CheckpointError(f"checkpoint {path} is corrupt: its first bytes are not "
                                  f"those torch.save writes")
        raise CheckpointError(f"{path} is not a checkpoint: not a file torch.save wrote (give "
                              f"a run, or a .pt file in its {CHECKPOINT_DIR}/)")
    verify_checksum(path, data)
    return io.BytesIO(data)


def verify_checksum(path: Path, data: bytes) -> None:
    """Compare `data` (the bytes of `path`) with the digest beside it; checkpoints written
    before checksums existed have none and load unverified."""
    sidecar = checksum_path(path)
    try:
        text = sidecar.read_text(encoding="ascii")
    except FileNotFoundError:
        log.warning("checkpoint %s has no checksum file; loading it unverified", path)
        return
    except (OSError, ValueError) as e:
        raise CheckpointError(f"checksum file {sidecar} cannot be read ({e})") from e
    expected = text.split()[0].lower() if text.split() else ""
    if len(expected) != 64:
        raise CheckpointError(f"checksum file {sidecar} is damaged (no sha256 digest in it)")
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise CheckpointError(
            f"checkpoint {path} is corrupt or truncated: its sha256 {actual[:16]}... does not match "
            f"{expected[:16]}... recorded in {sidecar.name} (damaged on disk or edited)")


def _first_line(e: BaseException) -> str:
    """The error's first line, without terminal escapes (torch's texts carry bold)."""
    text = _ESCAPES.sub("", str(e)).strip().splitlines()
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
