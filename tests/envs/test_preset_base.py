"""A gym preset file may name a `base` preset beside it and give only what differs."""

import pytest

from puffer_tui.envs.gym_presets.family import read_preset_file


def write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return path


def test_the_file_goes_over_its_base_section_by_section(tmp_path):
    write(tmp_path, "family.toml", '[vec]\nnum_envs = 16\n\n[train]\nhorizon = 64\n'
                                   'learning_rate = 0.001\n')
    own = write(tmp_path, "Env-v1.toml", 'base = "family.toml"\nenv_name = "gym:Env-v1"\n\n'
                                         '[train]\nhorizon = 16\n\n[eval]\nepisodes = 3\n')
    assert read_preset_file(own) == {
        "vec": {"num_envs": 16},
        "train": {"horizon": 16, "learning_rate": 0.001},
        "eval": {"episodes": 3},
    }


@pytest.mark.parametrize("files, message", [
    ({"A.toml": 'base = "A.toml"\n'}, "leads back to itself"),
    ({"A.toml": 'base = "B.toml"\n', "B.toml": 'base = "A.toml"\n'}, "leads back to itself"),
    ({"A.toml": 'base = "missing.toml"\n'}, "is not a file beside it"),
    ({"A.toml": 'base = "B.toml"\ntrain = 3\n', "B.toml": ""}, "is not a [section]"),
])
def test_a_bad_base_is_named(tmp_path, files, message):
    for name, text in files.items():
        write(tmp_path, name, text)
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        read_preset_file(tmp_path / "A.toml")
