"""The sweep driver's socket: the engine's server with the driver's commands. A subscribed
client is pushed each new snapshot (others are not), steering is answered by the driver's
loop or, when the loop does not take it, by the server; and a real driver (its trials
scripted, no engines) pushes a trial's report, its end and a pause as they happen."""

from __future__ import annotations

import stat
import time

import pytest

from puffer_tui.app.engine_client import EngineClient
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import sweep_settings as st
from puffer_tui.engine.shared.protocol import MessageType, RunState
from puffer_tui.engine.sweep import driver as driver_module
from puffer_tui.engine.sweep import server as server_module
from puffer_tui.engine.sweep.driver import Driver
from puffer_tui.engine.sweep.server import SweepServer
from puffer_tui.engine.sweep.space import build_space, space_to_json
from puffer_tui.engine.sweep.study import open_study


class FakeDriver:
    """What the server calls: a snapshot the test sets, steering answered when told."""

    def __init__(self):
        self.snapshot = {"sweep": "s", "state": "running", "trials": [], "counts": {}}
        self.stopped = False
        self.steered = []  # (cmd, args, reply) waiting for the "loop"

    def server(self, path) -> SweepServer:
        return SweepServer(path, lambda: {"sweep": "s"}, lambda: self.snapshot,
                           lambda: setattr(self, "stopped", True),
                           lambda cmd, args, reply: self.steered.append((cmd, args, reply)))


@pytest.fixture
def fake(tmp_path):
    driver = FakeDriver()
    server = driver.server(tmp_path / st.SOCKET_FILE)
    server.start()
    yield driver, server
    server.stop()


def next_push(client: EngineClient, timeout: float = 5.0) -> dict:
    for push in client.pushes(timeout=timeout):
        return push
    raise AssertionError(f"no push within {timeout:g} s")


def test_a_subscriber_gets_each_new_snapshot_and_a_plain_client_none(fake):
    driver, server = fake
    assert stat.S_IMODE(server.path.stat().st_mode) == 0o600
    with EngineClient.connect(server.path) as watcher, \
            EngineClient.connect(server.path) as plain:
        assert watcher.hello["kind"] == "sweep" and watcher.hello["sweep"] == "s"
        reply = watcher.call("subscribe")
        assert reply["state"] == "running" and reply["trials"] == []
        changed = dict(driver.snapshot, trials=[{"number": 0, "state": "RUNNING"}])
        server.push_snapshot(changed)
        push = next_push(watcher)
        assert push["type"] == MessageType.SWEEP
        assert push["trials"] == [{"number": 0, "state": "RUNNING"}]
        assert plain.call("status")["trials"] == []  # the driver's own snapshot, unchanged
        assert list(plain.pushes(timeout=0.3)) == []


def test_the_engines_commands_are_refused_with_advice_and_stop_ends_the_sweep(fake):
    driver, server = fake
    with EngineClient.connect(server.path) as client:
        refused = client.request("checkpoint")
        assert not refused["ok"] and "a sweep driver takes hello, status, stop" in refused["error"]
        assert "own run's socket" in refused["error"]
        unknown = client.request("frobnicate")
        assert not unknown["ok"] and "unknown command" in unknown["error"]
        assert client.call("stop")["state"] == RunState.STOPPING
    assert driver.stopped


def test_steering_is_answered_by_the_loop_and_by_the_server_when_the_loop_is_late(
        fake, monkeypatch):
    driver, server = fake
    with EngineClient.connect(server.path) as client:
        _, waiter = client.send("add", trials=2)
        deadline = time.monotonic() + 5
        while not driver.steered:
            assert time.monotonic() < deadline, "the request never reached the driver"
            time.sleep(0.01)
        cmd, args, reply = driver.steered.pop()
        assert (cmd, args) == ("add", {"trials": 2}) and not waiter[0].is_set()
        reply({"ok": True, "target": 6})  # from the driver's loop, another thread
        assert waiter[0].wait(5) and waiter[1] == {"id": 2, "ok": True, "target": 6}

        monkeypatch.setattr(server_module, "ANSWER_WITHIN_S", 0.2)
        late = client.request("pause", timeout=5)
        assert not late["ok"] and "did not take it within 0.2 s" in late["error"]
        driver.steered.pop()[2]({"ok": True})  # the loop's answer, too late: not sent twice
        assert client.call("status")["id"] == 4


# -- a real driver, its one trial scripted ----------------------------------------------------


class ScriptedRun:
    """A trial's run as the driver sees it: rows when the test gives them, an end when told."""

    def __init__(self, run_dir):
        self.run_dir, self.rows, self.seconds, self.started = run_dir, [], 3.0, time.time()
        self.stop_reason, self.ended, self._pending = None, False, []

    def report(self, *scores):
        start = len(self.rows) + len(self._pending)
        self._pending += [{"epoch": start + i + 1, "global_step": 4096 * (start + i + 1),
                           "score": s} for i, s in enumerate(scores)]

    def poll(self):
        rows, self._pending = self._pending, []
        self.rows += rows
        return rows

    def stop(self, reason):
        self.stop_reason = self.stop_reason or reason

    def exited(self):
        return self.ended

    def settle_status(self):
        pass

    def fault(self):
        return None

    def state(self):
        return "finished"


def one_trial_driver(tmp_path) -> Driver:
    base = cfg.load_config("bandit", {"train.total_timesteps": 20000})
    settings = st.SweepSettings(name="push", env_name="bandit", trials=1, pruner="none",
                                base=base.as_dict(),
                                space=space_to_json(build_space(base, {}, {}, include_cost=False)),
                                seed=0)
    directory = tmp_path / "sweeps" / "push"
    directory.mkdir(parents=True)
    st.save_settings(settings, directory)
    driver = Driver(directory)
    driver.study = open_study(driver.settings, directory)
    driver.state = RunState.RUNNING
    driver._next_orphans = float("inf")  # its trial is the test's, not an orphan
    return driver


def test_the_driver_pushes_a_report_a_pause_and_the_end_without_being_asked(tmp_path,
                                                                            monkeypatch):
    monkeypatch.setattr(driver_module, "SNAPSHOT_EVERY", 3600.0)  # only a change makes one
    driver = one_trial_driver(tmp_path)
    trial = driver.study.ask(fixed_distributions=driver.distributions)
    run = ScriptedRun(tmp_path / "trial-0")
    driver.running[trial.number] = (trial, run, 0)
    server = driver.serve()
    try:
        with EngineClient.connect(server.path) as client:
            first = client.call("subscribe")
            assert first["counts"] == {"RUNNING": 1} and first["trials"][0]["epoch"] is None

            run.report(0.25, 0.5)
            _, paused = client.send("pause")
            deadline = time.monotonic() + 5
            while driver.steering._requests.empty():
                assert time.monotonic() < deadline, "the pause never reached the loop"
                time.sleep(0.01)
            driver.loop_once()
            push = next_push(client)
            assert push["type"] == MessageType.SWEEP and push["state"] == RunState.PAUSED
            row = push["trials"][0]
            assert (row["state"], row["epoch"], row["score"]) == ("RUNNING", 2, 0.5)
            assert paused[0].wait(5) and paused[1]["ok"] and paused[1]["launching"] is False

            run.ended = True
            with pytest.raises(driver_module._Done):  # its one trial is done: so is the sweep
                driver.loop_once()
            push = next_push(client)
            assert push["counts"] == {"COMPLETE": 1} and push["best"] == [trial.number]
            row = push["trials"][0]
            assert row["state"] == "COMPLETE" and row["values"] == [row["score"]]
    finally:
        server.stop()
    assert not server.path.exists()
