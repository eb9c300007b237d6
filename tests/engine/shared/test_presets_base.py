"""A `--preset` file may name a base, as the built-in presets do: a copy of
envs/gym_presets/Pendulum-v1.toml (`base = "continuous-control.toml"`) was refused with
"unknown table or key 'base'"."""

import shutil

import pytest

from puffer_tui.engine.shared.config import ConfigError
from puffer_tui.engine.shared.presets import read_preset
from puffer_tui.envs.gym_presets.family import PRESETS, read_preset_file


def test_a_copied_builtin_preset_reads_as_the_builtin_one(tmp_path):
    copy = tmp_path / "mine.toml"
    shutil.copy(PRESETS / "Pendulum-v1.toml", copy)  # its base is not beside the copy
    data = read_preset(copy)
    assert "base" not in data
    assert data["train"] == read_preset_file(PRESETS / "Pendulum-v1.toml")["train"]


def test_a_base_beside_the_file_comes_first_and_the_file_goes_over_it(tmp_path):
    (tmp_path / "mine-base.toml").write_text("[train]\nlearning_rate = 0.1\ngamma = 0.9\n")
    (tmp_path / "mine.toml").write_text('env_name = "squared"\nbase = "mine-base.toml"\n'
                                        "[train]\ngamma = 0.95\n")
    data = read_preset(tmp_path / "mine.toml")
    assert data["env_name"] == "squared"
    assert data["train"] == {"learning_rate": 0.1, "gamma": 0.95}


def test_a_base_that_is_nowhere_is_named(tmp_path):
    (tmp_path / "mine.toml").write_text('base = "nope.toml"\n')
    with pytest.raises(ConfigError, match=r"base = 'nope.toml' is neither a file beside it nor "
                                          r"a built-in preset"):
        read_preset(tmp_path / "mine.toml")
