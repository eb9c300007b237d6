"""The sweep view follows its driver by push: it subscribes once and shows each snapshot the
driver pushes, never asking for `status` (the requests the driver's server sees are counted);
when the driver goes it says so, and it subscribes again to the driver that comes back."""

from __future__ import annotations

import time

import pytest

from puffer_tui.app.app import PufferApp
from puffer_tui.app.widgets.trial_table import TrialTable
from puffer_tui.engine.shared import sweep_settings as st
from puffer_tui.engine.sweep.server import SweepServer
from puffer_tui.screens.sweep_view import SweepScreen


class CountingServer(SweepServer):
    """A sweep driver's server that remembers every command it was sent."""

    def __init__(self, path, snapshot: dict):
        self.snapshot, self.seen = snapshot, []
        super().__init__(path, lambda: {"sweep": "pushed"}, lambda: self.snapshot,
                         lambda: None, lambda cmd, args, reply: reply({"ok": True}))

    def answer(self, client, request_id, cmd, args):
        self.seen.append(cmd)
        super().answer(client, request_id, cmd, args)

    def change(self, **fields) -> None:
        """The driver's snapshot changes, and it is pushed (as the driver's refresh does)."""
        self.snapshot = {**self.snapshot, **fields}
        self.push_snapshot(self.snapshot)


def trial(number: int, state: str, score=None, epoch=None) -> dict:
    return {"number": number, "state": state, "params": {"train.learning_rate": 0.001},
            "values": None, "score": score, "seconds": 1.0, "epoch": epoch,
            "global_step": None, "run_dir": None, "driver": "d", "error": ""}


def snapshot(*trials: dict, state: str = "running") -> dict:
    counts: dict[str, int] = {}
    for t in trials:
        counts[t["state"]] = counts.get(t["state"], 0) + 1
    return {"sweep": "pushed", "env": "bandit", "objective": "score", "metric": "score",
            "directions": ["maximize"], "target": 3, "counts": counts, "best": [],
            "trials": list(trials), "trials_total": len(trials), "state": state,
            "uptime": 5.0, "importance": {}, "importance_note": ""}


async def until(pilot, condition, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        await pilot.pause(0.05)


@pytest.fixture
def sweep_dir(tmp_path):
    directory = tmp_path / "sweeps" / "pushed"
    directory.mkdir(parents=True)
    return directory


def state_of(table: TrialTable, number: int) -> str | None:
    return next((t["state"] for t in table.trials if t["number"] == number), None)


async def test_the_view_shows_pushed_changes_without_asking_for_status(sweep_dir):
    server = CountingServer(sweep_dir / st.SOCKET_FILE, snapshot(trial(0, "RUNNING", epoch=1)))
    server.start()
    try:
        app = PufferApp(sweep_dir=sweep_dir)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.screen
            assert isinstance(screen, SweepScreen)
            table = screen.query_one(TrialTable)
            await until(pilot, lambda: state_of(table, 0) == "RUNNING", "the subscribed snapshot")
            assert screen.live and screen.state == "running"

            server.change(**snapshot(trial(0, "RUNNING", score=0.5, epoch=2)))
            await until(pilot, lambda: table.trials[0].get("epoch") == 2, "trial 0's report")
            server.change(**snapshot(trial(0, "COMPLETE", score=0.75, epoch=3),
                                     trial(1, "RUNNING")))
            await until(pilot, lambda: state_of(table, 1) == "RUNNING", "trial 1's start")
            assert state_of(table, 0) == "COMPLETE"
            server.change(state="paused")
            await until(pilot, lambda: screen.state == "paused", "the paused state")

            await pilot.pause(2.5)  # a view polling once a second would have asked twice
            assert server.seen.count("subscribe") == 1, server.seen
            assert "status" not in server.seen, server.seen

            await pilot.press("p")  # resume: over the view's one connection
            await until(pilot, lambda: "resume" in server.seen, "the resume request")
    finally:
        server.stop()


async def test_the_view_says_the_driver_is_gone_and_subscribes_to_the_next_one(sweep_dir):
    sock = sweep_dir / st.SOCKET_FILE
    first = CountingServer(sock, snapshot(trial(0, "RUNNING")))
    first.start()
    second = None
    try:
        app = PufferApp(sweep_dir=sweep_dir)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = app.screen
            table = screen.query_one(TrialTable)
            await until(pilot, lambda: screen.live, "the first driver's snapshot")
            first.stop()
            await until(pilot, lambda: screen.state == "driver gone", "the driver gone")
            assert not screen.live and state_of(table, 0) == "RUNNING"  # its last word kept

            second = CountingServer(sock, snapshot(trial(0, "COMPLETE"), trial(1, "RUNNING")))
            second.start()  # a `sweep --resume` from elsewhere
            await until(pilot, lambda: screen.live and state_of(table, 1) == "RUNNING",
                        "the second driver's snapshot")
            second.change(**snapshot(trial(0, "COMPLETE"), trial(1, "PRUNED")))
            await until(pilot, lambda: state_of(table, 1) == "PRUNED", "a push of the second")
            assert second.seen.count("subscribe") == 1 and "status" not in second.seen
    finally:
        first.stop()
        if second is not None:
            second.stop()
