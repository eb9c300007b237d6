"""Checkpoints: atomic writes, retention, weights_only loads, corrupt files and fallback."""

import os

import pytest
import torch

from puffer_tui.engine import checkpoint as ckpt


def state(step, epoch=None):
    return {"global_step": step, "epoch": epoch if epoch is not None else step // 10,
            "policy": {"w": torch.full((3,), float(step))}, "config": {"env_name": "squared"},
            "rng": {"python": (3, tuple(range(5)), None)}}


def test_save_and_load_roundtrip(tmp_path):
    path = ckpt.save_checkpoint(tmp_path, state(120))
    assert path.parent == tmp_path / "checkpoints"
    assert path.name == "step-000000000120-epoch-00000012.pt"
    loaded = ckpt.load_checkpoint(path)
    assert loaded["global_step"] == 120
    assert torch.equal(loaded["policy"]["w"], torch.full((3,), 120.0))
    # what the engine writes must load with the safe loader
    torch.load(path, weights_only=True)


def test_keeps_only_the_last_few_and_no_temp_files(tmp_path):
    for step in range(10, 80, 10):
        ckpt.save_checkpoint(tmp_path, state(step), keep=3)
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == [ckpt.checkpoint_name(s, s // 10) for s in (50, 60, 70)]
    assert ckpt.latest_checkpoint(tmp_path).name == ckpt.checkpoint_name(70, 7)


def test_order_is_numeric_not_lexical(tmp_path):
    ckpt.save_checkpoint(tmp_path, state(9_999_999, 5))
    ckpt.save_checkpoint(tmp_path, state(10_000_000, 6))
    assert ckpt.latest_checkpoint(tmp_path).name.startswith("step-000010000000")


def test_failed_write_leaves_previous_intact(tmp_path, monkeypatch):
    good = ckpt.save_checkpoint(tmp_path, state(10))

    def broken_save(obj, f):
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        ckpt.save_checkpoint(tmp_path, state(20))
    assert ckpt.list_checkpoints(tmp_path) == [good]
    assert os.listdir(tmp_path / "checkpoints") == [good.name]


def test_truncated_checkpoint_error_names_the_file(tmp_path):
    path = ckpt.save_checkpoint(tmp_path, state(10))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ckpt.CheckpointError, match=str(path)) as e:
        ckpt.load_checkpoint(path)
    assert "corrupt or truncated" in str(e.value)


def test_garbage_and_missing_files(tmp_path):
    bad = tmp_path / "junk.pt"
    bad.write_bytes(b"\x00not a zip file at all")
    with pytest.raises(ckpt.CheckpointError, match="junk.pt is corrupt"):
        ckpt.load_checkpoint(bad)
    with pytest.raises(ckpt.CheckpointError, match="does not exist"):
        ckpt.load_checkpoint(tmp_path / "nope.pt")


def test_pickled_objects_are_refused(tmp_path):
    from fractions import Fraction  # any class outside weights_only's allow-list

    path = tmp_path / "evil.pt"
    torch.save({"global_step": 1, "epoch": 0, "obj": Fraction(1, 3)}, path)
    with pytest.raises(ckpt.CheckpointError, match="evil.pt"):
        ckpt.load_checkpoint(path)


def test_latest_corrupt_fails_unless_fallback_is_asked(tmp_path):
    ckpt.save_checkpoint(tmp_path, state(10))
    newest = ckpt.save_checkpoint(tmp_path, state(20))
    newest.write_bytes(newest.read_bytes()[:100])
    with pytest.raises(ckpt.CheckpointError, match=newest.name) as e:
        ckpt.load_latest(tmp_path)
    assert "--fallback-checkpoint" in str(e.value)
    skipped = []
    path, loaded = ckpt.load_latest(tmp_path, fallback=True,
                                    on_skip=lambda p, err: skipped.append(p))
    assert loaded["global_step"] == 10
    assert skipped == [newest]


def test_no_loadable_checkpoint(tmp_path):
    with pytest.raises(ckpt.CheckpointError, match="no checkpoints"):
        ckpt.load_latest(tmp_path)
    only = ckpt.save_checkpoint(tmp_path, state(10))
    only.write_bytes(b"")
    with pytest.raises(ckpt.CheckpointError, match="no checkpoint could be loaded"):
        ckpt.load_latest(tmp_path, fallback=True, on_skip=lambda p, e: None)


def test_resolve_checkpoint(tmp_path):
    path = ckpt.save_checkpoint(tmp_path, state(10))
    assert ckpt.resolve_checkpoint(tmp_path) == path
    assert ckpt.resolve_checkpoint(path) == path
    with pytest.raises(ckpt.CheckpointError, match="no checkpoints"):
        ckpt.resolve_checkpoint(tmp_path / "checkpoints")
