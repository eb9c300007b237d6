"""The sweep view and the driver's steering: unit tests of the steering rules, then the app's
sweep screen (Pilot) against a real small bandit sweep driven through the command line."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from sweep_harness import TINY, cli_background, load_study, wait_until

from puffer_tui.app.app import PufferApp
from puffer_tui.app.widgets.sweep_plot import best_so_far
from puffer_tui.app.widgets.trial_table import TrialTable
from puffer_tui.engine.shared import sweep_settings as st
from puffer_tui.engine.sweep.steering import Steering
from puffer_tui.screens.dashboard import DashboardScreen
from puffer_tui.screens.sweep_view import SweepScreen

# -- steering rules (a stand-in driver: the rules, not the processes) ---------------------------


class FakeRun:
    def __init__(self):
        self.stopped = None

    def stop(self, reason):
        self.stopped = reason


def fake_driver(tmp_path: Path, running=(3,)):
    settings = st.SweepSettings(name="s", env_name="bandit", trials=4)
    st.save_settings(settings, tmp_path)
    runs = {n: (None, FakeRun(), 0) for n in running}
    return SimpleNamespace(settings=settings, dir=tmp_path, running=runs)


def applied(steering: Steering, cmd: str, args: dict) -> dict:
    """A request as the server queues it, answered by the 'loop' through its reply."""
    box = {}
    steering.request(cmd, args, box.update)
    assert not box, "answered before the loop took it"
    assert steering.apply_pending() == 1
    return box


def test_pause_and_resume_switch_launching(tmp_path):
    steering = Steering(fake_driver(tmp_path))
    assert applied(steering, "pause", {})["ok"] and not steering.launching
    assert applied(steering, "resume", {})["ok"] and steering.launching


def test_prune_stops_only_a_running_trial_and_says_which_run(tmp_path):
    driver = fake_driver(tmp_path)
    steering = Steering(driver)
    reply = applied(steering, "prune", {"trial": 7})
    assert not reply["ok"] and "trial 7 is not running" in reply["error"] and "[3]" in reply["error"]
    reply = applied(steering, "prune", {"trial": "3"})
    assert not reply["ok"] and "number" in reply["error"]
    assert applied(steering, "prune", {"trial": 3}) == {"ok": True, "trial": 3}
    assert driver.running[3][1].stopped == "pruned"


def test_add_raises_the_target_and_keeps_it_for_a_resume(tmp_path):
    steering = Steering(fake_driver(tmp_path))
    assert applied(steering, "add", {"trials": 2}) == {"ok": True, "target": 6}
    assert st.load_settings(tmp_path).trials == 6
    for bad in (0, -1, True, "2", 10**9):
        reply = applied(steering, "add", {"trials": bad})
        assert not reply["ok"] and "trials must be an integer" in reply["error"], bad
    assert st.load_settings(tmp_path).trials == 6


def test_requests_left_when_the_loop_ends_are_refused_not_hung(tmp_path):
    steering = Steering(fake_driver(tmp_path))
    box = {}
    steering.request("pause", {}, box.update)
    steering.refuse_all("the sweep has ended (finished)")
    assert box == {"ok": False, "error": "pause: the sweep has ended (finished)"}
    assert steering.apply_pending() == 0 and steering.launching


def test_best_so_far_is_a_running_best_over_completed_trials():
    trials = [{"number": 0, "state": "COMPLETE", "score": 0.5},
              {"number": 1, "state": "PRUNED", "score": 0.9},
              {"number": 2, "state": "COMPLETE", "score": 0.4},
              {"number": 3, "state": "COMPLETE", "score": 0.7}]
    assert best_so_far(trials) == ([0, 2, 3], [0.5, 0.5, 0.7])
    assert best_so_far(trials, maximize=False) == ([0, 2, 3], [0.5, 0.4, 0.4])


# -- the screen, against a real sweep -----------------------------------------------------------


async def until(pilot, condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        await pilot.pause(0.1)


@pytest.fixture
def live_sweep(tmp_path):
    """A bandit sweep of 3 one-at-a-time trials. A trial's budget is far more than the test
    lasts: it must still be running when the test prunes it (400k steps could finish first on a
    fast moment of the CI host, and a paused sweep then had nothing left to prune)."""
    runs = tmp_path / "runs"
    budget = [a if a != "12288" else "200000000" for a in TINY]
    watcher = cli_background("sweep", "bandit", "--trials", "3", "--parallel", "1",
                             "--study", "view", "--runs-dir", str(runs), "--headless",
                             "--train.torch-threads", "1", *budget)
    sweep_dir = runs / st.SWEEPS_DIR / "view"
    try:
        wait_until(lambda: (sweep_dir / st.SOCKET_FILE).exists(), 120, "the driver's socket")
        yield sweep_dir
    finally:
        if watcher.poll() is None:
            from puffer_tui.engine.shared.sweep_control import ControlError, request

            try:
                request(sweep_dir / st.SOCKET_FILE, "stop", timeout=5)
            except ControlError:
                pass
            try:
                watcher.wait(90)
            except Exception:
                watcher.kill()
                watcher.wait(10)


async def test_the_sweep_view_shows_trials_and_steers_the_driver(live_sweep):
    app = PufferApp(sweep_dir=live_sweep)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, SweepScreen)
        table = screen.query_one(TrialTable)
        await until(pilot, lambda: any(t.get("state") == "RUNNING" for t in table.trials),
                    "a running trial in the table")
        await until(pilot, lambda: "Prune" in screen_text(app), "the steering keys in the footer")
        assert "Open" in screen_text(app)

        await pilot.press("p")  # no new trial starts; the running one goes on
        await until(pilot, lambda: screen.state == "paused", "the paused state")
        await until(pilot, lambda: "Resume" in screen_text(app), "p Resume in the footer")
        await pilot.press("plus")
        await until(pilot, lambda: screen.snapshot.get("target") == 4, "a fourth trial")
        assert st.load_settings(live_sweep).trials == 4

        # Enter on the running trial opens its dashboard over the sweep; b comes back.
        running = next(t for t in table.trials if t.get("state") == "RUNNING")
        table.move_cursor(row=table.get_row_index(str(running["number"])))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DashboardScreen), "the dashboard")
        await until(pilot, lambda: app.store.telemetry_seen >= 1, "the trial's telemetry")
        assert app.store.hello.get("run") == Path(running["run_dir"]).name
        await until(pilot, lambda: "b Sweep" in screen_text(app), "b Sweep in the footer")
        await pilot.press("b")
        await until(pilot, lambda: app.screen is screen, "the sweep view again")
        assert app.link is None

        # x prunes the running trial; the study records it as pruned.
        table.move_cursor(row=table.get_row_index(str(running["number"])))
        await pilot.press("x")
        await until(pilot, lambda: next(t for t in table.trials if t["number"] == running["number"])
                    .get("state") == "PRUNED", "the pruned trial")
        await pilot.press("s")
        await pilot.press("s")  # "Stop the sweep"
        await until(pilot, lambda: screen.state in ("stopped", "finished", "driver gone"),
                    "the sweep to stop")
    states = {t.number: t.state.name for t in load_study(live_sweep).get_trials()}
    assert states[running["number"]] == "PRUNED"


def screen_text(app) -> str:
    return "\n".join(s.text for s in app.screen._compositor.render_strips())


def test_a_huge_study_lists_its_running_best_and_newest_trials_within_the_limit():
    from puffer_tui.engine.sweep.snapshot import MAX_ROWS, kept_rows

    rows = [{"number": n} for n in range(MAX_ROWS + 500)]
    kept = kept_rows(rows, {3, 7})
    numbers = [r["number"] for r in kept]
    assert len(kept) == MAX_ROWS and numbers == sorted(numbers)
    assert {3, 7} <= set(numbers) and MAX_ROWS + 499 in numbers and 10 not in numbers
    assert kept_rows(rows[:20], set()) == rows[:20]
