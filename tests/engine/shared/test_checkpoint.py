"""Checkpoints: atomic writes, retention, weights_only loads, corrupt files and fallback."""

import os

import pytest
import torch

from puffer_tui.engine.shared import checkpoint as ckpt


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
    kept = [ckpt.checkpoint_name(s, s // 10) for s in (50, 60, 70)]
    # each checkpoint with its checksum beside it, and nothing else (no temp files)
    assert names == sorted(kept + [name + ckpt.CHECKSUM_SUFFIX for name in kept])
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
    assert sorted(os.listdir(tmp_path / "checkpoints")) == [
        good.name, good.name + ckpt.CHECKSUM_SUFFIX]


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


# -- checksums, non-finite weights, leftovers of killed writers ------------------------------


def flip_bytes_in_tensor(path, count=16):
    """Flip `count` bytes inside the stored data of the policy tensor (not the zip headers)."""
    data = bytearray(path.read_bytes())
    marker = torch.full((3,), 120.0).numpy().tobytes()  # the raw float32 data of state(120)
    start = data.find(marker)
    assert start > 0, "tensor data not found in the checkpoint"
    # 12 bytes of tensor data are available: flip within them and the bytes right after
    for i in range(count):
        data[start + i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_flipped_bytes_in_a_tensor_are_refused_naming_the_file(tmp_path):
    path = ckpt.save_checkpoint(tmp_path, state(120))
    assert ckpt.checksum_path(path).read_text().split()[1] == path.name
    flip_bytes_in_tensor(path)
    with pytest.raises(ckpt.CheckpointError, match=str(path)) as e:
        ckpt.load_checkpoint(path)
    assert "sha256" in str(e.value) and "does not match" in str(e.value)


def test_damaged_newest_checkpoint_falls_back_only_when_asked(tmp_path):
    older = ckpt.save_checkpoint(tmp_path, state(110))
    newest = ckpt.save_checkpoint(tmp_path, state(120))
    flip_bytes_in_tensor(newest)
    with pytest.raises(ckpt.CheckpointError, match="fallback-checkpoint"):
        ckpt.load_latest(tmp_path)
    skipped = []
    path, loaded = ckpt.load_latest(tmp_path, fallback=True,
                                    on_skip=lambda p, e: skipped.append(p))
    assert path == older and loaded["global_step"] == 110 and skipped == [newest]


def test_a_checkpoint_without_checksum_still_loads(tmp_path):
    # written before checksums existed
    path = ckpt.save_checkpoint(tmp_path, state(30))
    ckpt.checksum_path(path).unlink()
    assert ckpt.load_checkpoint(path)["global_step"] == 30


def test_non_finite_weights_are_never_saved_and_good_ones_never_rotated_out(tmp_path):
    good = [ckpt.save_checkpoint(tmp_path, state(s), keep=3) for s in (10, 20, 30)]
    for step in (40, 50, 60):
        bad = state(step)
        bad["policy"]["w"][1] = float("nan") if step != 50 else float("inf")
        with pytest.raises(ckpt.CheckpointError, match="non-finite values in policy.w"):
            ckpt.save_checkpoint(tmp_path, bad, keep=3)
    assert ckpt.list_checkpoints(tmp_path) == good
    nan_moment = state(70)
    nan_moment["optimizer"] = {"state": {0: {"exp_avg": torch.tensor([float("nan")])}}}
    with pytest.raises(ckpt.CheckpointError, match="optimizer.state.0.exp_avg"):
        ckpt.save_checkpoint(tmp_path, nan_moment)


def test_temp_files_of_killed_writes_are_removed_by_the_next_save(tmp_path):
    ckpt.save_checkpoint(tmp_path, state(10))
    directory = tmp_path / "checkpoints"
    leftovers = [directory / ".step-000000000020-epoch-00000002.pt.k1ll3d.tmp",
                 directory / ".step-000000000020-epoch-00000002.pt.sha256.x9.tmp",
                 directory / "step-000000000020-epoch-00000002.pt.sha256"]  # no .pt arrived
    for path in leftovers:
        path.write_bytes(b"x" * 1000)
    foreign = directory / "notes.txt"
    foreign.write_text("mine")
    ckpt.save_checkpoint(tmp_path, state(30))
    assert not any(path.exists() for path in leftovers)
    assert foreign.exists()


def test_load_policy_refuses_a_damaged_checkpoint_too(tmp_path):
    from puffer_tui.engine.algo.policy import load_policy, make_policy
    from puffer_tui.engine.shared.config import load_config
    from puffer_tui.envs import env_class

    config = load_config("squared", {"train.hidden_size": 8})
    cls = env_class("squared")
    layout = cls.layout(cls.resolve(dict(config.env)))
    policy = make_policy(layout.observation_space, layout.action_space, config.train)
    weights = policy.state_dict()
    path = ckpt.save_checkpoint(tmp_path, {"global_step": 1, "epoch": 1, "policy": weights,
                                           "config": config.as_dict()})
    assert load_policy(path)[1].env_name == "squared"
    data = bytearray(path.read_bytes())
    start = data.find(weights["critic.weight"].numpy().tobytes())
    assert start > 0
    data[start:start + 16] = bytes(b ^ 0xFF for b in data[start:start + 16])
    path.write_bytes(bytes(data))
    with pytest.raises(ckpt.CheckpointError, match=f"{path} is corrupt"):
        load_policy(path)


def test_a_full_disk_while_resaving_a_step_leaves_the_old_checkpoint_loadable(tmp_path,
                                                                             monkeypatch):
    import errno

    path = ckpt.save_checkpoint(tmp_path, state(10))
    real_fsync = os.fsync

    def no_space(fd):  # the checkpoint's bytes do not fit; its small checksum would
        if os.fstat(fd).st_size > 200:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(ckpt.os, "fsync", no_space)
    changed = state(10)
    changed["policy"]["w"] += 1.0
    with pytest.raises(OSError, match="No space left"):
        ckpt.save_checkpoint(tmp_path, changed)
    monkeypatch.setattr(ckpt.os, "fsync", real_fsync)
    assert torch.equal(ckpt.load_checkpoint(path)["policy"]["w"], torch.full((3,), 10.0))
    assert sorted(p.name for p in path.parent.iterdir()) == [
        path.name, path.name + ckpt.CHECKSUM_SUFFIX]
