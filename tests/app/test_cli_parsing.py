"""The command line as typed: `--env.X V` anywhere, spelling suggestions, --version, help."""

import re

import pytest

from puffer_tui.app import headless_run
from puffer_tui.app.cli import main
from puffer_tui.engine.shared import run_dir as rd


@pytest.fixture
def started(monkeypatch):
    """Stands in for the engine: records the run dir each train command would start."""
    runs = []

    def fake_run_headless(run_dir, resume, fallback, console=None, detach=False, **views):
        runs.append((run_dir, resume))
        return 0

    monkeypatch.setattr(headless_run, "run_headless", fake_run_headless)
    return runs


@pytest.mark.parametrize("argv", [
    ["train", "--env.size", "9", "squared"],
    ["train", "squared", "--env.size", "9"],
    ["train", "--env.size=9", "--headless", "squared"],
])
def test_env_settings_parse_wherever_they_stand(tmp_path, started, argv):
    assert main([*argv, "--headless", "--runs-dir", str(tmp_path)]) == 0
    ((run, resume),) = started
    assert not resume and run.name.startswith("squared-")
    assert "size = 9" in (run / rd.CONFIG_FILE).read_text()


def test_env_setting_after_resume_is_read_as_a_setting(tmp_path, capsys):
    run = rd.create_run_dir("squared", tmp_path)
    (run / rd.CONFIG_FILE).write_text('env_name = "squared"\n')
    assert main(["train", "--resume", str(run), "--env.size", "9", "--headless"]) == 2
    err = capsys.readouterr().err
    assert "env.size cannot change when resuming" in err, err


@pytest.mark.parametrize("typed, meant", [
    (["--train.learnig-rate", "0.1"], "--train.learning-rate"),
    (["--train.learning_rate", "0.1"], "--train.learning-rate"),
    (["--headlss"], "--headless"),
    (["--env.sze", "9"], "--env.size"),
    (["--env.num-target", "2"], "--env.num-targets"),
])
def test_misspelled_flags_suggest_the_closest_flag(tmp_path, capsys, typed, meant):
    assert main(["train", "squared", "--headless", "--runs-dir", str(tmp_path), *typed]) == 2
    err = capsys.readouterr().err
    assert re.search(rf"did you mean {re.escape(meant)}\?", err), err
    assert len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_env_settings_belong_to_train_only(capsys):
    assert main(["runs", "--env.size", "9"]) == 2
    assert "--env.size is not an option of `puffer-tui runs`" in capsys.readouterr().err


def test_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"puffer-tui {version('puffer-tui')}"


def test_train_help_has_one_env_settings_heading(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    assert len(re.findall(r"^env settings", text, flags=re.M)) == 1, text
    assert text.index("env settings") < text.index("--env.size")


def test_nproc_is_short_for_train_nproc(tmp_path, started):
    assert main(["train", "squared", "--nproc", "2", "--headless", "--runs-dir", str(tmp_path)]) == 0
    ((run, _resume),) = started
    assert "nproc = 2" in (run / rd.CONFIG_FILE).read_text()
