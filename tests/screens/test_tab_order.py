"""Keys typed right behind a Tab go where the Tab sent the focus. Textual resolves a Tab (a
screen binding, not a priority one) only once its event has bubbled from the focused widget
back up to the app; keys that arrived with it (one terminal read, or a served page's next
websocket message while the app is busy) were already handed to the widget that had the
focus. In `puffer-tui serve` this read as "a lone Tab takes effect only with the next key":
the launcher's env list ate the first characters meant for the spec field. The launcher's
lists now run their bindings where the key arrives (app/widgets/ordered_keys.py)."""

from __future__ import annotations

from puffer_tui.app.app import PufferApp
from puffer_tui.screens.launcher.screen import LauncherScreen
from tests.app.test_app_engine import until
from tests.screens.test_editor_typing import burst


async def test_characters_typed_behind_a_tab_land_in_the_field_it_focused(tmp_path):
    app = PufferApp(runs_root=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, LauncherScreen)
                    and app.screen.query("#form") and app.focused is not None, "the launcher")
        envs, spec = app.screen.query_one("#envs"), app.screen.query_one("#spec")
        envs.focus()
        await pilot.pause()
        burst(app, "tab", *"gym:CartPole-v1")  # one read: the Tab, then what it was for
        await until(pilot, lambda: spec.value == "gym:CartPole-v1", "the spec typed",
                    timeout=10)
        assert app.focused is spec


async def test_shift_tab_behind_typing_goes_back_before_the_next_keys(tmp_path):
    app = PufferApp(runs_root=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, LauncherScreen)
                    and app.screen.query("#form") and app.focused is not None, "the launcher")
        spec = app.screen.query_one("#spec")
        app.screen.query_one("#runs").focus()
        await pilot.pause()
        burst(app, "shift+tab", *"abc")
        await until(pilot, lambda: spec.value == "abc", "the text typed", timeout=10)
        assert app.focused is spec
