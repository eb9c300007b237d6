"""Refused input is one line on stderr, exit status 2, with the closest choice when there is
one: a misspelled command or choice, a flag without its value, a huge number, a bad runs
folder, a preset key that is no field."""

import pytest

from puffer_tui.app.cli import main
from puffer_tui.engine.shared import exit_codes


def refusal(capsys, argv) -> str:
    with pytest.raises(SystemExit) as e:
        code = main(argv)
        raise SystemExit(code)
    assert e.value.code == exit_codes.USAGE
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "\n" not in err and "usage:" not in err, err
    return err


def test_a_misspelled_command_suggests_the_right_one(capsys):
    err = refusal(capsys, ["trian", "squared"])
    assert "unknown command 'trian'; did you mean train?" in err


def test_a_misspelled_choice_suggests_the_right_one(capsys):
    err = refusal(capsys, ["eval", "some-run", "--render", "ascci"])
    assert "--render 'ascci' is not a choice; did you mean ascii?" in err


def test_a_flag_without_its_value_is_one_line(capsys):
    err = refusal(capsys, ["train", "squared", "--headless", "--train.total-timesteps"])
    assert "--train.total-timesteps needs a value" in err


def test_a_huge_number_is_shown_compactly(capsys, tmp_path):
    err = refusal(capsys, ["train", "squared", "--headless", "--runs-dir", str(tmp_path),
                           "--train.total-timesteps", "1e99"])
    assert "1e+99 is out of bounds" in err and "0000000000000000" not in err.split("[")[0]


@pytest.mark.parametrize("verb", [["train", "squared", "--headless"],
                                  ["sweep", "squared", "--trials", "2", "--headless"]])
def test_a_file_as_the_runs_folder(capsys, tmp_path, verb):
    file = tmp_path / "runs"
    file.write_text("")
    err = refusal(capsys, verb + ["--runs-dir", str(file)])
    assert f"the runs folder {file} is a file" in err and "Traceback" not in err


def test_a_preset_key_that_is_no_field_names_the_file_and_the_closest(capsys, tmp_path):
    preset = tmp_path / "p.toml"
    preset.write_text("[train]\nlearnig_rate = 0.01\n")
    err = refusal(capsys, ["train", "squared", "--headless", "--runs-dir", str(tmp_path),
                           "--preset", str(preset)])
    assert str(preset) in err and "did you mean learning_rate?" in err
    assert "adam_beta1" not in err  # not the whole list of fields


def test_help_lists_the_exit_codes(capsys):
    for argv in (["--help"], ["train", "--help"], ["eval", "--help"], ["sweep", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        out = capsys.readouterr().out
        assert "exit status:" in out, argv
        assert f"{exit_codes.STOPPED}    stopped before the end" in out, argv


def test_a_preset_env_key_that_is_no_setting_names_the_file_and_the_closest(capsys, tmp_path):
    preset = tmp_path / "p.toml"
    preset.write_text("[env]\nsizee = 9\n")
    err = refusal(capsys, ["train", "squared", "--headless", "--runs-dir", str(tmp_path),
                           "--preset", str(preset)])
    assert str(preset) in err and "'sizee'; did you mean size?" in err
