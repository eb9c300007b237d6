"""Whole-or-nothing file writes: the one helper every file the engine and the app replace uses.

    write_atomic(path, text_or_bytes)           # one file
    with StagedFiles() as files:                # several files that must appear together
        files.stage(checksum, digest)
        files.stage(checkpoint, data)
        files.commit()                          # renamed in the order staged

The one fsync policy: a file's bytes are written to a temp file in the same directory (mode
0600, `.<name>.<random>.tmp`) and fsynced before it is renamed over the final name, so after
a crash or power loss a reader finds the old file or the new one, never a short or empty one;
after the renames the directory is fsynced too, so the new name itself survives a power loss
(filesystems that refuse fsync on a directory are let be). A failed write (ENOSPC included)
removes its temps and raises the original error; nothing is renamed until every staged file
is written in full.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_CHUNK = 1 << 20  # big payloads are written in pieces, never copied whole


class StagedFiles:
    """Files written in full to fsynced temps first, renamed into place together by
    `commit()`; leaving the block without a commit (or on an error) removes the temps."""

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []  # (temp, final path)

    def __enter__(self) -> StagedFiles:
        return self

    def __exit__(self, *exc) -> None:
        for tmp, _ in self._staged:
            tmp.unlink(missing_ok=True)
        self._staged.clear()

    def stage(self, path: str | os.PathLike, data: bytes | bytearray | memoryview | str) -> None:
        """Write `data` (str as UTF-8) to a fsynced temp file beside `path`."""
        path = Path(path)
        if isinstance(data, str):
            data = data.encode("utf-8")
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                view = memoryview(data)
                for start in range(0, len(view), _CHUNK):
                    f.write(view[start:start + _CHUNK])
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._staged.append((Path(tmp), path))

    def commit(self) -> None:
        """Rename every staged temp over its path, in the order staged, then fsync the
        directories the names live in."""
        directories = []
        while self._staged:
            tmp, path = self._staged[0]
            os.replace(tmp, path)
            self._staged.pop(0)
            if path.parent not in directories:
                directories.append(path.parent)
        for directory in directories:
            fsync_dir(directory)


def write_atomic(path: str | os.PathLike, data: bytes | bytearray | memoryview | str) -> None:
    """Replace `path` by `data` (str as UTF-8) whole or not at all (see the module's policy)."""
    with StagedFiles() as files:
        files.stage(path, data)
        files.commit()


def fsync_dir(directory: str | os.PathLike) -> None:
    """Make renames in `directory` durable; some filesystems refuse fsync on a directory."""
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
