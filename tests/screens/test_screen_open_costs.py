"""What `h`, `?` and the launcher's start cost is counted, not timed: the help is one widget
(Textual's Markdown made ~200 of its text), the editor's fixed fields one widget and a live
field's verdict line made only when there is a verdict, the dashboard does not redraw under
a full screen, the app's long-lived objects are frozen out of the collector's full passes
(a pause that landed on keys), and the launcher shows its lists before building the preset
form."""

from __future__ import annotations

import gc

from textual.widgets import Input

from puffer_tui.app.widgets.override_form import OverrideForm
from puffer_tui.engine.shared.config import schema
from puffer_tui.engine.shared.protocol import schema_to_wire
from puffer_tui.screens.help import HelpScreen
from puffer_tui.screens.hyperparameters import FieldRow, HyperparameterScreen
from puffer_tui.screens.launcher.screen import LauncherScreen
from tests.app.test_app_engine import until
from tests.screens.test_app_launcher import form_ready
from tests.screens.test_app_snapshots import FixedDataApp, screen_text


async def test_help_is_a_handful_of_widgets():
    app = FixedDataApp("dashboard")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen)
        assert len(app.screen.query("*")) < 15, len(app.screen.query("*"))
        assert "puffer-tui keys" in screen_text(app)


async def test_the_editor_is_a_few_widgets_a_live_field_and_the_dashboard_rests_under_it():
    app = FixedDataApp("dashboard")
    specs = schema("cartpole")
    app.store.hello["schema"] = schema_to_wire(specs)
    live = sum(s.live for s in specs)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        assert gc.get_freeze_count() > 0  # the dashboard froze what lives as long as the app
        dashboard = app.screen
        await pilot.press("h")
        await pilot.pause(0.3)
        assert isinstance(app.screen, HyperparameterScreen)
        widgets = len(app.screen.query("*"))
        assert widgets <= 5 * live + 12, (widgets, live)  # 45 fixed fields: one widget
        assert not app.screen.query(".verdict")
        redraws = dashboard.redraws
        for _ in range(3):  # the engine's news keeps coming while the editor is up
            app._run_changed("numbers", "frame")
            await pilot.pause(0.2)
        assert dashboard.redraws == redraws
        field = app.focused
        assert isinstance(field, Input) and field.value  # its value, given once mounted
        field.value = "-5"  # refused: a verdict line appears under it
        await pilot.pause(0.1)
        assert len(app.screen.query(FieldRow).first().query(".verdict")) == 1
        await pilot.press("escape")
        await pilot.pause(0.3)
        assert dashboard.redraws > redraws  # what changed meanwhile is drawn on its return


async def test_the_launcher_shows_before_its_form_is_built(tmp_path):
    built = []

    class Watching(LauncherScreen):
        async def on_mount(self) -> None:
            await super().on_mount()
            built.append(bool(self.query(OverrideForm)))

    app = FixedDataApp("launcher", runs_root=tmp_path)
    app.show_first_screen = lambda: app.push_screen(Watching(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: form_ready(app), "the preset form")
        await pilot.pause(0.3)
        assert built == [False]  # mounted (and painted) without it; it came after
        row = app.screen.query("OverrideRow Input").first()
        assert row.value and "-invalid" not in row.classes  # its value given once mounted
