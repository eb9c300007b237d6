"""The launcher's branch form: `b` on a finished run shows the settings its checkpoint trained
with; a change the weights cannot take is refused on the form (no run dir); Branch (ctrl+s)
writes a run that records its parent and opens it as a resume; choosing an env leaves the form."""

from __future__ import annotations

from engine_harness import make_run

from puffer_tui.app.app import PufferApp
from puffer_tui.app.widgets.override_form import OverrideForm, OverrideRow
from puffer_tui.engine.runtime.process import main as engine_main
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.screens.launcher.screen import LauncherScreen
from tests.app.test_app_engine import until

EPOCH = 64 * 16  # agent steps per epoch of engine_harness.TINY


class BranchingApp(PufferApp):
    """Records the runs it is asked to open instead of starting their engines."""

    def __init__(self, runs_root):
        super().__init__(runs_root=runs_root)
        self.opened = []

    def open_run(self, run_dir, attach, resume=False):
        self.opened.append((run_dir, attach, resume))


def screen_text(app) -> str:
    return "\n".join(s.text for s in app.screen._compositor.render_strips())


def set_field(app, key: str, text: str) -> None:
    row = next(r for r in app.screen.query(OverrideRow) if r.spec.key == key)
    row.query_one("Input").value = text


async def test_b_on_a_run_branches_it_from_the_launcher(tmp_path):
    parent = make_run(tmp_path, **{"train.total_timesteps": 2 * EPOCH,
                                   "train.learning_rate": 0.01})
    assert engine_main([str(parent)]) == 0
    app = BranchingApp(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        launcher = app.screen
        assert isinstance(launcher, LauncherScreen)
        await until(pilot, lambda: launcher._run_infos and launcher.query("#form"), "the runs")
        launcher.query_one("#runs").focus()
        await pilot.press("b")
        await until(pilot, lambda: launcher.branch_source is not None, "the branch form")
        assert launcher.branch_source == ckpt.latest_checkpoint(parent)
        form = launcher.query_one("#form", OverrideForm)
        assert form.preset["train.learning_rate"] == 0.01  # the parent's settings
        assert "Branch" in screen_text(app) and "@ 2,048" in screen_text(app)

        set_field(app, "train.hidden_size", "64")  # the weights cannot load into that
        set_field(app, "train.total_timesteps", str(4 * EPOCH))
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "--train.hidden-size 64" in screen_text(app), "the refusal")
        assert app.opened == [] and rd.list_runs(tmp_path) == [parent]

        set_field(app, "train.hidden_size", "32")
        set_field(app, "train.learning_rate", "0.002")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.opened, "the branch to open")
        ((child, attach, resume),) = app.opened
        assert (attach, resume) == (False, True)  # its engine starts from the seed checkpoint
        config = cfg.load(child / rd.CONFIG_FILE)
        assert config.parent == str(ckpt.latest_checkpoint(parent))
        assert (config.train.learning_rate, config.train.total_timesteps) == (0.002, 4 * EPOCH)
        assert launcher.branch_source is None

        launcher.query_one("#runs").focus()
        await pilot.press("b")  # again, then an env chosen: its own preset replaces the form
        await until(pilot, lambda: launcher.branch_source is not None, "the branch form")
        launcher.query_one("#envs").focus()
        await pilot.press("down")
        # the form is replaced by the env's own: between the two there is none to query
        await until(pilot, lambda: launcher.branch_source is None
                    and [f.env_name for f in launcher.query("#form").results(OverrideForm)]
                    == ["cartpole"], "the env's preset")
        assert "Start" in screen_text(app) and "Branch" not in screen_text(app)
