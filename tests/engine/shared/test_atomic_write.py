"""engine/shared/atomic_write.py: whole or nothing, fsynced before the rename, no temps left."""

import errno
import os
import stat

import pytest

from puffer_tui.engine.shared import atomic_write as aw


def test_write_atomic_replaces_the_file_with_mode_0600_and_leaves_no_temp(tmp_path):
    path = tmp_path / "status.json"
    path.write_text("old")
    aw.write_atomic(path, "new ✓")
    assert path.read_text(encoding="utf-8") == "new ✓"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]


def test_the_bytes_are_fsynced_before_the_rename_and_the_folder_after(tmp_path, monkeypatch):
    order = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(aw.os, "fsync", lambda fd: (order.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(aw.os, "replace",
                        lambda a, b: (order.append("rename"), real_replace(a, b))[1])
    aw.write_atomic(tmp_path / "a", b"x")
    assert order == ["fsync", "rename", "fsync"]


def test_a_full_disk_keeps_the_old_files_and_renames_nothing(tmp_path, monkeypatch):
    first, second = tmp_path / "a.sha256", tmp_path / "a"
    first.write_text("old digest")
    second.write_text("old data")
    real_fsync = os.fsync

    def no_space(fd):  # the big file does not fit; the small one would
        if os.fstat(fd).st_size > 100:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(aw.os, "fsync", no_space)
    with pytest.raises(OSError, match="No space left"), aw.StagedFiles() as files:
        files.stage(first, "new digest")
        files.stage(second, b"x" * 1000)
        files.commit()
    assert first.read_text() == "old digest" and second.read_text() == "old data"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "a.sha256"]


def test_staged_files_appear_in_the_order_staged_and_uncommitted_ones_vanish(tmp_path):
    with aw.StagedFiles() as files:
        files.stage(tmp_path / "one", "1")
        files.stage(tmp_path / "two", "2")
        assert not (tmp_path / "one").exists()  # nothing is visible before commit()
        files.commit()
    assert (tmp_path / "one").read_text() == "1" and (tmp_path / "two").read_text() == "2"
    with aw.StagedFiles() as files:
        files.stage(tmp_path / "three", "3")  # left without a commit
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one", "two"]
