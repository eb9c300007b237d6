"""q offers only what fits the run's state: a run that has finished (or stopped) has no
training to keep, so there is no "Detach (keep training)" and no "training goes on"."""

from __future__ import annotations

from app_fakes import telemetry

from puffer_tui.screens.confirm import ChoiceDialog
from puffer_tui.screens.dashboard import DashboardScreen
from tests.screens.test_app_keys import OfflineApp
from tests.screens.test_app_snapshots import FakeLink


def _finish(app, state: str = "finished") -> None:
    app.store.ingest({**telemetry(41), "state": state}, now=2.0)


async def test_q_on_a_finished_run_quits_without_offering_detach():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        app.link = FakeLink()  # the engine's link is still open as the run finishes
        _finish(app)
        await pilot.press("q")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, ChoiceDialog)
    assert "training goes on" not in app.exit_message
    assert "finished" in app.exit_message


async def test_the_quit_question_is_withdrawn_when_the_run_finishes_under_it():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        app.link = object()
        await pilot.press("q")
        assert isinstance(app.screen, ChoiceDialog)
        _finish(app)
        app._withdraw_live_questions()  # what a final telemetry push does
        await pilot.pause(0.1)
        assert isinstance(app.screen, DashboardScreen)
        app.link = None


async def test_detach_chosen_as_the_run_ends_does_not_say_training_goes_on():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        _finish(app, "stopped")
        app.detach()
        await pilot.pause(0.1)
    assert "training goes on" not in app.exit_message and "stopped" in app.exit_message


async def test_the_palette_offers_detach_only_while_the_run_trains():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)):
        app.link = object()
        assert "Detach" in {c.title for c in app.get_system_commands(app.screen)}
        _finish(app)
        assert "Detach" not in {c.title for c in app.get_system_commands(app.screen)}
        app.link = None
