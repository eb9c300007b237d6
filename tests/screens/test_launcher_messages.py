"""The launcher's branch form and autotune, driven by the messages their workers post
(screens/launcher/branch_form.py, screens/launcher/launcher_autotune.py) and handled by
LauncherScreen: the checks run off the UI thread, and what arrives late does not undo what the
person did meanwhile. No engine runs here: the checkpoint reading and the run dir writing are
stood in for (tests/screens/test_branch_form.py branches a real run)."""

from __future__ import annotations

import threading

from engine_harness import make_run

from puffer_tui.app.app import PufferApp
from puffer_tui.app.widgets.override_form import OverrideForm
from puffer_tui.engine.shared import config as cfg
from puffer_tui.screens.launcher import branch_form
from puffer_tui.screens.launcher.launcher_autotune import AutotuneFailed, AutotuneFinished
from puffer_tui.screens.launcher.screen import LauncherScreen
from tests.app.test_app_engine import until

OUTCOME = {"env": "squared", "best_by": "training",
           "best": {"label": "mp 4x256", "backend": "multiprocessing", "num_envs": 1024,
                    "num_workers": 4, "batch_size": 256, "zero_copy": False, "inline": False,
                    "train_sps": 123456.0, "vec_sps": 234567.0}}


class RecordingApp(PufferApp):
    """Records the runs it is asked to start or open instead of starting their engines."""

    def __init__(self, runs_root):
        super().__init__(runs_root=runs_root)
        self.opened, self.started = [], []

    def open_run(self, run_dir, attach, resume=False):
        self.opened.append((run_dir, attach, resume))

    def start_run(self, env_name, overrides):
        self.started.append(env_name)


def notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def ready(pilot, app, runs: bool = True) -> LauncherScreen:
    launcher = app.screen
    assert isinstance(launcher, LauncherScreen)
    await until(pilot, lambda: (launcher._run_infos or not runs) and launcher.query("#form")
                and launcher._infos, "the lists and the form")
    return launcher


def stand_in_base(monkeypatch, tmp_path, gate: threading.Event | None = None):
    """branch_base answers with squared's preset and a checkpoint path (after `gate`)."""
    checkpoint = tmp_path / "step-000000002048-epoch-000002.pt"

    def base(run_dir):
        if gate is not None:
            assert gate.wait(30)
        return checkpoint, cfg.load_config("squared")

    monkeypatch.setattr(branch_form, "branch_base", base)
    return checkpoint


async def test_b_on_a_run_without_a_checkpoint_says_why_and_keeps_the_form(tmp_path):
    run = make_run(tmp_path)
    app = RecordingApp(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        launcher = await ready(pilot, app)
        launcher.query_one("#runs").focus()
        await pilot.press("b")
        await until(pilot, lambda: any(n.startswith(f"cannot branch {run.name}: ")
                                       for n in notes(app)), "the refusal")
        assert launcher.branch_source is None and app.opened == []
        assert launcher.query_one("#form", OverrideForm).env_name == "squared"
        assert str(launcher.query_one("#start").label) == "Start"


async def test_an_env_chosen_while_the_checkpoint_is_read_wins(tmp_path, monkeypatch):
    make_run(tmp_path)
    gate = threading.Event()
    stand_in_base(monkeypatch, tmp_path, gate)
    app = RecordingApp(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        launcher = await ready(pilot, app)
        launcher.query_one("#runs").focus()
        await pilot.press("b")
        await until(pilot, lambda: launcher._branch_reading is not None, "the reading")
        launcher.query_one("#envs").focus()
        await pilot.press("down")  # cartpole, before the checkpoint's settings arrive
        gate.set()
        await app.workers.wait_for_complete()
        await until(pilot, lambda: launcher.query_one("#form", OverrideForm).env_name
                    == "cartpole", "cartpole's preset")
        await pilot.pause(0.3)
        assert launcher.branch_source is None
        assert launcher.query_one("#form", OverrideForm).env_name == "cartpole"


async def test_a_second_ctrl_s_while_the_branch_is_written_starts_nothing(
        tmp_path, monkeypatch):
    make_run(tmp_path)
    checkpoint = stand_in_base(monkeypatch, tmp_path)
    gate, calls = threading.Event(), []

    def prepare(source, overrides, runs_root):
        calls.append((source, overrides))
        assert gate.wait(30)
        return tmp_path / "the-branch"

    monkeypatch.setattr(branch_form, "prepare_branch", prepare)
    app = RecordingApp(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        launcher = await ready(pilot, app)
        launcher.query_one("#runs").focus()
        await pilot.press("b")
        await until(pilot, lambda: launcher.branch_source == checkpoint, "the branch form")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: calls, "the branch's checks")
        await pilot.press("ctrl+s")  # still writing the first: nothing more
        gate.set()
        await until(pilot, lambda: app.opened, "the branch to open")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(calls) == 1 and app.started == []
        assert app.opened == [(tmp_path / "the-branch", False, True)]
        assert launcher.branch_source is None


async def test_a_refused_branch_shows_why_on_its_form(tmp_path, monkeypatch):
    make_run(tmp_path)
    checkpoint = stand_in_base(monkeypatch, tmp_path)

    def refuse(source, overrides, runs_root):
        raise branch_form.RunRefused("train.hidden_size differs: [train] cannot change")

    monkeypatch.setattr(branch_form, "prepare_branch", refuse)
    app = RecordingApp(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        launcher = await ready(pilot, app)
        launcher.query_one("#runs").focus()
        await pilot.press("b")
        await until(pilot, lambda: launcher.branch_source == checkpoint, "the branch form")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: notes(app), "the refusal")
        assert notes(app) == ["cannot branch: train.hidden_size differs: [train] cannot change"]
        assert "[train] cannot change" in str(launcher.query_one("#field").render())
        assert launcher.branch_source == checkpoint and app.opened == []  # still the form
        await pilot.press("ctrl+s")  # and it can be tried again
        await until(pilot, lambda: len(notes(app)) == 2, "the second refusal")


async def test_an_autotune_outcome_fills_the_form_it_was_for_only(tmp_path):
    app = RecordingApp(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        launcher = await ready(pilot, app, runs=False)
        form = launcher.query_one("#form", OverrideForm)
        launcher.post_message(AutotuneFinished("cartpole", {**OUTCOME, "env": "cartpole"}))
        await until(pilot, lambda: notes(app), "the outcome")
        assert notes(app)[-1].startswith("autotune of cartpole done, but another env is "
                                         "chosen now: cartpole: best mp 4x256")
        assert form.overrides() == {}
        launcher.post_message(AutotuneFinished("squared", OUTCOME))
        await until(pilot, lambda: len(notes(app)) == 2, "the outcome")
        assert notes(app)[-1] == ("squared: best mp 4x256, 123,456 agent-steps/s (training); "
                                  "its [vec] values are in the form")
        overrides = form.overrides()
        assert overrides["vec.backend"] == "multiprocessing"
        assert (overrides["vec.num_workers"], overrides["vec.batch_size"]) == ("4", "256")


async def test_a_failed_autotune_is_told_as_written(tmp_path):
    app = RecordingApp(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        launcher = await ready(pilot, app, runs=False)
        launcher.post_message(AutotuneFailed("squared", "no [vec] layout fits [/x] here"))
        await until(pilot, lambda: notes(app), "the failure")
        (note,) = app._notifications
        # brackets in an error are its text, not markup (which would drop or refuse them)
        assert (note.message, note.title, note.markup) == (
            "no [vec] layout fits [/x] here", "Autotune failed", False)
        await pilot.pause(0.1)  # drawn without a markup error
