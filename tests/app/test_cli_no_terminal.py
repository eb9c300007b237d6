"""Where there is no terminal (`> log`, a batch job): `puffer-tui train ENV` without --headless
starts no dashboard writing escape codes into the file, but the headless run (progress lines,
signals checkpoint and stop), with a one-line note saying so; the launcher and `attach`,
which have nothing to show without one, refuse in one line."""

import psutil
import pytest

from puffer_tui.app import headless_run
from puffer_tui.app.cli import main
from puffer_tui.engine.shared import run_dir as rd


@pytest.fixture
def started(monkeypatch):
    runs = []

    def fake_run_headless(run_dir, resume, fallback, console=None, detach=False, **views):
        runs.append((run_dir, views))
        return 0

    monkeypatch.setattr(headless_run, "run_headless", fake_run_headless)
    # lazy in train.py: a dashboard started here would be the failure
    from puffer_tui.app import app as textual_app
    monkeypatch.setattr(textual_app, "run_app", lambda **kw: pytest.fail("dashboard started"))
    return runs


def test_no_terminal_trains_headless_with_a_note(tmp_path, capsys, started):
    # pytest's captured stdout is not a terminal, as `> log` is not
    assert main(["train", "squared", "--runs-dir", str(tmp_path),
                 "--log-every", "30"]) == 0
    ((run, views),) = started
    assert views == {"progress": "auto", "log_every": 30.0}
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["puffer-tui train: stdout is not a terminal: no dashboard; training as with "
                   "--headless (Ctrl-C, SIGTERM and SIGHUP checkpoint and stop; add "
                   "--headless to skip this note)"]


def test_log_every_must_be_positive(tmp_path, capsys, started):
    assert main(["train", "squared", "--headless", "--runs-dir", str(tmp_path),
                 "--log-every", "0"]) == 2
    assert "--log-every 0: give the seconds between lines" in capsys.readouterr().err
    assert not started


def training_run(root):
    """A run whose status names this test's process as its live engine."""
    me = psutil.Process()
    run = rd.create_run_dir("squared", root)
    (run / rd.CONFIG_FILE).write_text('env_name = "squared"\n')
    rd.write_json_atomic(run / rd.STATUS_FILE, {"state": "running", "pid": me.pid,
                                                "pid_create_time": me.create_time()})
    return run


@pytest.mark.parametrize("argv, who", [([], "the launcher"), (["attach"], "the dashboard")])
def test_the_apps_without_a_terminal_are_refused_in_one_line(argv, who, capsys, monkeypatch,
                                                             started, tmp_path):
    monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
    if argv:  # a run that trains: attach would open its dashboard
        argv = [*argv, training_run(tmp_path).name, "--runs-dir", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"stdout is not a terminal: {who} needs one" in err[0], err
