"""What a load says about a file that is not a checkpoint, or one that holds Python objects:
one line naming the file, never torch's advice to load it with weights_only=False."""

import pytest

from puffer_tui.engine.shared import checkpoint as ckpt


def test_a_toml_file_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('env_name = "squared"\n[train]\nlearning_rate = 0.01\n')
    with pytest.raises(ckpt.CheckpointError) as e:
        ckpt.load_checkpoint(path)
    text = str(e.value)
    assert "bad.toml is not a checkpoint" in text and "\n" not in text


def test_pickled_objects_are_refused_without_the_unsafe_advice(tmp_path):
    from fractions import Fraction  # any class outside weights_only's allow-list

    import torch

    path = tmp_path / "evil.pt"
    torch.save({"global_step": 1, "epoch": 0, "obj": Fraction(1, 3)}, path)
    with pytest.raises(ckpt.CheckpointError) as e:
        ckpt.load_checkpoint(path)
    text = str(e.value)
    assert "evil.pt" in text and "Python objects" in text
    assert "weights_only" not in text and "\x1b" not in text and "\n" not in text
