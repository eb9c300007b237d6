"""Enter on a run in the launcher opens it: a running run's dashboard, a stopped run resumed,
and a finished one (nothing to resume) in the compare view, its curves and final figures,
with how to train it on, instead of a resume error."""

from __future__ import annotations

from compare_runs import make_compare_run

from puffer_tui.screens.compare import CompareScreen
from puffer_tui.screens.confirm import ChoiceDialog
from puffer_tui.screens.launcher.screen import LauncherScreen
from tests.app.test_app_engine import until
from tests.screens.test_app_launcher import LauncherApp, screen_text


async def _enter_on_the_run(app, pilot):
    await until(pilot, lambda: isinstance(app.screen, LauncherScreen)
                and app.screen.query_one("#runs").option_count > 0
                and app.screen.query_one("#runs").get_option_at_index(0).id != "none",
                "the runs list")
    runs = app.screen.query_one("#runs")
    runs.focus()
    runs.highlighted = 0
    await pilot.pause(0.1)
    await pilot.press("enter")
    await pilot.pause(0.5)


async def test_enter_on_a_finished_run_opens_its_curves(tmp_path):
    run = make_compare_run(tmp_path, state="finished")
    app = LauncherApp(tmp_path)
    opened = []
    app.open_run = lambda *a, **kw: opened.append((a, kw))  # an engine start would land here
    async with app.run_test(size=(80, 24)) as pilot:
        await _enter_on_the_run(app, pilot)
        assert isinstance(app.screen, CompareScreen), app.screen
        assert app.screen.run_dirs == [run]
        notes = " ".join(str(n.message) for n in app._notifications)
        assert "cannot resume" not in notes
        assert run.name in notes, notes  # the reason it cannot resume (here: no checkpoint)
        assert not any(n.severity == "error" for n in app._notifications)
        await until(pilot, lambda: "one run: its settings are in its config.toml"
                    in screen_text(app), "the settings line of one run")
    assert opened == []


async def test_enter_on_a_stopped_run_asks_before_resuming_it(tmp_path, monkeypatch):
    import puffer_tui.screens.launcher.screen as launcher

    run = make_compare_run(tmp_path, state="stopped")
    monkeypatch.setattr(launcher, "check_resume", lambda path: None, raising=False)  # resumable
    app = LauncherApp(tmp_path)
    resumed = []
    app.resume_run = resumed.append  # the app's resume: its checks, then the engine
    async with app.run_test(size=(80, 24)) as pilot:
        await _enter_on_the_run(app, pilot)
        assert isinstance(app.screen, ChoiceDialog), app.screen  # asked, not resumed
        text = screen_text(app)
        assert f"Resume {run.name[:20]}" in text and "24,576" in text, text  # name, steps
        assert "starts its engine" in text  # what will happen
        await pilot.press("enter")  # Enter on the dialog: the safe answer, Cancel
        await pilot.pause(0.2)
        assert isinstance(app.screen, LauncherScreen) and resumed == []
        await _enter_on_the_run(app, pilot)
        await pilot.press("r")
        await pilot.pause(0.2)
    assert resumed == [run]
