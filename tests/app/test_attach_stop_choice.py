"""Which run `attach` and `stop` pick: `latest` is the newest run that trains (an older run
resumed is found, a newer stopped one passed over), and a run whose engine is only starting
(launched, no status yet) is waited for instead of being called "not training (state: new)".
No engine runs here: status.json names this test's own process as the live engine."""

import os
import threading
import time
from types import SimpleNamespace

import psutil
import pytest

from puffer_tui.app.commands import attach, stop
from puffer_tui.engine.shared import run_dir as rd


def make_run(root, state: str | None, live: bool = False):
    run = rd.create_run_dir("squared", root)
    (run / rd.CONFIG_FILE).write_text('env_name = "squared"\n')
    if state is not None:
        write_status(run, state, live)
    time.sleep(0.01)  # config.toml's mtime orders the runs
    return run


def write_status(run, state: str, live: bool = True) -> None:
    me = psutil.Process()
    rd.write_json_atomic(run / rd.STATUS_FILE, {
        "state": state, "global_step": 128, "pid": me.pid if live else 1 << 22,
        "pid_create_time": me.create_time()})


@pytest.fixture
def runs(tmp_path):
    older = make_run(tmp_path, "running", live=True)  # resumed: it trains
    newer = make_run(tmp_path, "stopped")
    return tmp_path, older, newer


def test_attach_latest_is_the_newest_run_that_trains(runs):
    root, older, _ = runs
    assert attach.choose_run("latest", str(root)) == older.resolve()
    assert attach.choose_run(None, str(root)) == older.resolve()


def test_stop_latest_is_the_newest_run_that_trains(runs, monkeypatch):
    root, older, _ = runs
    # lazy in stop.py; here the engine counts as running when its status says so
    from puffer_tui.app import engine_launcher
    monkeypatch.setattr(engine_launcher, "engine_running",
                        lambda path: rd.run_state(path) in ("running", "paused"))
    args = SimpleNamespace(all=False, run_name="latest", runs_dir=str(root))
    assert stop.choose_runs(args) == [older.resolve()]


def test_a_run_whose_engine_is_starting_is_waited_for(tmp_path):
    run = make_run(tmp_path, None)
    (run / rd.ENGINE_OUT_FILE).write_text("")  # launched: its engine has not said a word yet
    said = []
    announced = threading.Event()

    def engine_announces():
        announced.wait(60)  # once the command has said it waits
        write_status(run, "starting")

    writer = threading.Thread(target=engine_announces)
    writer.start()
    try:
        path = attach.choose_run(run.name, str(tmp_path),
                                 say=lambda text: (said.append(text), announced.set()))
    finally:
        announced.set()
        writer.join()
    assert path == run.resolve()
    assert said == [f"{run.name} is starting: waiting for its engine to be ready..."]


def test_a_run_never_launched_is_not_waited_for(tmp_path):
    run = make_run(tmp_path, None)  # prepared, no engine.out: nothing was started
    with pytest.raises(rd.RunDirError, match=r"is not training \(state: new\)"):
        attach.choose_run(run.name, str(tmp_path), say=lambda text: pytest.fail(text))
    assert not os.path.exists(run / rd.STATUS_FILE)
