"""A resume whose config.toml no longer describes its checkpoint is one line, exit 2, and the
run dir untouched: a deleted [train] section fell back to built-in defaults silently (and was
written back), an edited hidden_size crashed the engine and marked the finished run `error`."""

import re

import pytest

from puffer_tui.app.cli import main
from puffer_tui.engine.shared import run_dir as rd

TINY = ["--vec.num-envs", "64", "--train.horizon", "16", "--train.minibatch-size", "256",
        "--train.hidden-size", "32", "--train.torch-threads", "1",
        "--train.total-timesteps", "2048"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    assert main(["train", "squared", "--headless", "--runs-dir", str(root), *TINY]) == 0
    (run,) = rd.list_runs(root)
    return run, (run / rd.CONFIG_FILE).read_text()


def files_of(run):
    return {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file()}


def resume(run, capsys):
    before = files_of(run)
    code = main(["train", "--resume", str(run), "--headless", "--train.total-timesteps", "4096"])
    err = capsys.readouterr().err.strip()
    assert files_of(run) == before, "the refused resume changed the run dir"
    return code, err


def test_a_deleted_train_section_is_refused_naming_what_would_change(finished_run, capsys):
    run, original = finished_run
    try:
        (run / rd.CONFIG_FILE).write_text(re.sub(r"\[train\][^\[]*", "", original))
        code, err = resume(run, capsys)
        assert code == 2 and len(err.splitlines()) == 1, err
        assert "lacks its [train] section" in err and "the checkpoint trained with" in err
    finally:
        (run / rd.CONFIG_FILE).write_text(original)


def test_an_edited_hidden_size_is_refused_before_the_engine_starts(finished_run, capsys):
    run, original = finished_run
    try:
        (run / rd.CONFIG_FILE).write_text(original.replace("hidden_size = 32", "hidden_size = 64"))
        code, err = resume(run, capsys)
        assert code == 2 and len(err.splitlines()) == 1, err
        assert "train.hidden_size = 64" in err and "trained with 32" in err
        assert "--from" in err
        assert rd.read_status(run).get("state") != "error"
    finally:
        (run / rd.CONFIG_FILE).write_text(original)


def test_the_untouched_config_resumes(finished_run, capsys):
    run, _ = finished_run
    assert main(["train", "--resume", str(run), "--headless",
                 "--train.total-timesteps", "4096"]) == 0, capsys.readouterr().err
