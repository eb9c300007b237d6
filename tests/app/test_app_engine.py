"""Pilot tests of the app against a REAL small engine (squared, 64 envs).

One engine serves most tests (attach mode); the crash test has its own engine, launched by
the app itself, with a crash injected into the trainer through a sitecustomize on the
engine's PYTHONPATH. Waits have generous deadlines: they bound a hang, they time nothing.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from puffer_tui.app.app import PufferApp
from puffer_tui.app.engine_client import EngineClient, EngineClientError
from puffer_tui.app.engine_launcher import launch_engine
from puffer_tui.app.widgets.cpu_panel import CpuPanel
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.screens.crash import CrashScreen
from puffer_tui.screens.dashboard import DashboardScreen
from puffer_tui.screens.hyperparameters import HyperparameterScreen

TINY = {"vec.num_envs": 64, "train.minibatch_size": 1024, "train.torch_threads": 1,
        "train.hidden_size": 32}
SIZE = (120, 40)


def prepare(root: Path, **extra) -> Path:
    config = cfg.load_config("squared", {**TINY, **extra})
    run_dir = rd.create_run_dir("squared", root)
    cfg.save(config, run_dir / rd.CONFIG_FILE)
    return run_dir


def shut_down(run_dir: Path, handle=None) -> None:
    try:
        with EngineClient.connect(run_dir, timeout=5) as client:
            client.request("stop", timeout=10, checkpoint=False)
    except (EngineClientError, OSError):
        pass
    status = rd.read_status(run_dir)
    if handle is not None:
        try:
            handle.wait(30)
        except Exception:
            handle.process.kill()
            handle.wait(10)
    elif rd.engine_alive(status):
        os.kill(status["pid"], signal.SIGKILL)


@pytest.fixture(scope="module")
def engine_run(tmp_path_factory):
    run_dir = prepare(tmp_path_factory.mktemp("runs"), **{"train.total_timesteps": 10**9,
                                                          "train.checkpoint_interval": 0})
    handle = launch_engine(run_dir)
    yield run_dir
    shut_down(run_dir, handle)


async def until(pilot, condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await pilot.pause(0.05)


def screen_text(app) -> str:
    return "\n".join(s.text for s in app.screen._compositor.render_strips())


class RecordingApp(PufferApp):
    """The real app, remembering every request it sends to the engine."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[str, dict | None]] = []

    def engine_request(self, cmd, args=None, **kwargs):
        self.sent.append((cmd, args))
        super().engine_request(cmd, args, **kwargs)


async def test_dashboard_fills_with_live_numbers(engine_run):
    app = RecordingApp(run_dir=engine_run, attach=True)
    async with app.run_test(size=SIZE) as pilot:
        store = app.store
        await until(pilot, lambda: len(store.steps) >= 2 and store.frame is not None,
                    "two epochs of telemetry and a frame")
        await until(pilot, lambda: app.screen.query_one(CpuPanel).sample is not None,
                    "a CPU sample")
        first = store.latest.global_step
        await until(pilot, lambda: store.latest.global_step > first, "the step to advance")
        await pilot.pause(1.1)  # one plot refresh
        text = screen_text(app)
        assert engine_run.name in text and "running" in text
        assert "waiting for" not in text  # every panel has data
        assert "engine" in text  # the engine's own CPU line, from telemetry's process list
        assert ("render", {"env": 0, "fps": 4, "policy": True}) in app.sent


async def test_pause_stops_the_step_counter_and_resume_restarts_it(engine_run):
    app = PufferApp(run_dir=engine_run, attach=True)
    async with app.run_test(size=SIZE) as pilot:
        store = app.store
        await until(pilot, lambda: store.telemetry_seen >= 2, "telemetry")
        await pilot.press("p")
        await until(pilot, lambda: store.latest.state == "paused", "the paused state")
        seen = store.telemetry_seen
        await until(pilot, lambda: store.telemetry_seen >= seen + 2, "pushes while paused")
        step = store.latest.global_step
        seen = store.telemetry_seen
        await until(pilot, lambda: store.telemetry_seen >= seen + 4, "more pushes while paused")
        assert store.latest.global_step == step
        await until(pilot, lambda: "Resume" in screen_text(app), "the footer to say Resume")
        await pilot.press("p")
        await until(pilot, lambda: store.latest.global_step > step, "steps after resume")
        await until(pilot, lambda: "Pause" in screen_text(app), "the footer to say Pause")


async def test_invalid_hyperparameter_is_refused_and_a_valid_one_reaches_the_engine(engine_run):
    app = RecordingApp(run_dir=engine_run, attach=True)
    async with app.run_test(size=SIZE) as pilot:
        store = app.store
        await until(pilot, lambda: store.telemetry_seen >= 1 and store.hello, "hello and telemetry")
        await pilot.press("h")
        await until(pilot, lambda: isinstance(app.screen, HyperparameterScreen), "the editor")
        field = app.screen.query_one("#input-train-learning_rate")
        field.focus()
        field.value = "2.5"  # above the bound of 1
        await pilot.press("enter")
        await pilot.pause(0.2)
        verdict = app.screen.query_one("#row-train-learning_rate .verdict").render()
        assert "not sent" in str(verdict) and "out of bounds" in str(verdict)
        assert not [s for s in app.sent if s[0] == "set"]  # nothing was sent
        field.value = "0.0123"
        await pilot.press("enter")
        await until(pilot, lambda: store.latest.hyperparameters
                    .get("train.learning_rate") == 0.0123, "the new value in telemetry")
        assert ("set", {"key": "train.learning_rate", "value": "0.0123"}) in app.sent
        # The reply reaches the editor as a message of its own: it may come after telemetry.
        await until(pilot, lambda: any("learning_rate" in e.text and e.level == "info"
                                       for e in store.events), "the change in the event log")
        await until(pilot, lambda: "engine:" in str(
            app.screen.query_one("#row-train-learning_rate .verdict").render()),
            "the engine's answer in the editor")


async def test_engine_that_stops_answering_is_reported(engine_run):
    pid = rd.read_status(engine_run)["pid"]
    app = PufferApp(run_dir=engine_run, attach=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.store.telemetry_seen >= 2, "telemetry")
        os.kill(pid, signal.SIGSTOP)
        try:
            await until(pilot, lambda: app.link_state == "not responding", "not responding",
                        timeout=10)
            await pilot.pause(0.3)
            assert "not responding" in screen_text(app)
        finally:
            os.kill(pid, signal.SIGCONT)
        await until(pilot, lambda: app.link_state is None, "the engine to answer again")


async def test_detach_leaves_the_engine_running_and_attach_reconnects(engine_run):
    from puffer_tui.app.commands.attach import choose_run

    app = PufferApp(run_dir=engine_run, attach=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.store.telemetry_seen >= 1, "telemetry")
        step = app.store.latest.global_step
        await pilot.press("q")
        await pilot.press("d")  # "Detach (keep training)"
        await pilot.pause(0.2)
    assert "puffer-tui attach" in app.exit_message
    assert rd.run_state(engine_run) == "running"
    assert choose_run(None, engine_run.parent) == engine_run  # what `puffer-tui attach` picks

    again = PufferApp(run_dir=engine_run, attach=True)
    async with again.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: again.store.telemetry_seen
                    and again.store.latest.global_step > step,
                    "telemetry after reattaching")
        assert isinstance(again.screen, DashboardScreen)


async def test_stop_asks_then_stops_the_engine(engine_run):
    app = PufferApp(run_dir=engine_run, attach=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.store.telemetry_seen >= 1, "telemetry")
        await pilot.press("s")
        await pilot.press("escape")  # changed my mind: nothing happens
        await pilot.pause(0.5)
        assert app.store.state == "running"
        await pilot.press("s")
        await pilot.press("s")  # "Stop the run"
        await until(pilot, lambda: app.link is None, "the engine to close the link")
        assert app.store.state == "stopped"
        assert app.link_state is None and not isinstance(app.screen, CrashScreen)
    assert rd.run_state(engine_run) == "stopped"


CRASH_HOOK = '''
import os
from pathlib import Path
marker = Path(os.environ["PUFFER_TUI_TEST_CRASH_MARKER"])
from puffer_tui.engine.algo import trainer as _trainer
_run_epoch = _trainer.Trainer.run_epoch
def run_epoch(self):
    if self.epoch >= 3 and not marker.exists():
        marker.touch()  # crash once; the resumed engine trains on
        raise RuntimeError("injected crash for the app's crash test")
    return _run_epoch(self)
_trainer.Trainer.run_epoch = run_epoch
'''


async def test_engine_crash_is_shown_and_resume_continues(tmp_path, monkeypatch):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(CRASH_HOOK)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(hook), *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.setenv("PUFFER_TUI_TEST_CRASH_MARKER", str(tmp_path / "crashed"))
    run_dir = prepare(tmp_path / "runs", **{"train.total_timesteps": 10**9,
                                            "train.checkpoint_interval": 2})
    app = PufferApp(run_dir=run_dir, attach=False)  # the app launches this engine itself
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, CrashScreen), "the crash screen",
                        timeout=60)
            # the screen is pushed before it has composed its TextArea: wait for it
            await until(pilot, lambda: len(app.screen.query("TextArea")) == 1, "the traceback")
            traceback = app.screen.query_one("TextArea").text
            assert "injected crash" in traceback and "Traceback" in traceback
            await until(pilot, lambda: "Resume from last checkpoint" in screen_text(app),
                        "the resume offer on screen")
            await pilot.click("#resume")
            await until(pilot, lambda: any("resumed from" in e.text for e in app.store.events),
                        "the resumed engine's event", timeout=60)
            await until(pilot, lambda: app.store.telemetry_seen
                        and app.store.latest.state == "running"
                        and app.store.latest.epoch > 3, "training after the resume")
    finally:
        shut_down(run_dir, app.engine_handle)
