"""The launcher never shows one env's settings under another env's name: while the next
env's form is being built (it waits for the cursor to rest), the previous env's form is
hidden at once (it stayed for about half a second)."""

from __future__ import annotations

from puffer_tui.app.widgets.override_form import OverrideForm
from tests.app.test_app_engine import until
from tests.screens.test_app_launcher import LauncherApp


def _shown_form(app) -> str | None:
    holder = app.screen.query_one("#form-holder")
    forms = app.screen.query(OverrideForm)
    return forms.first().env_name if forms and holder.display else None


async def test_moving_to_another_env_hides_the_previous_form_at_once(tmp_path, monkeypatch):
    import puffer_tui.screens.launcher.screen as launcher

    # the cursor rests a while before the form is built: long enough to look at the screen
    # in between however slow this machine is
    monkeypatch.setattr(launcher, "FORM_DELAY_S", 2.0)
    app = LauncherApp(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        envs = app.screen.query_one("#envs")
        # squared's form can show before the env list (filled by a worker thread) has an entry
        await until(pilot, lambda: _shown_form(app) == "squared" and envs.highlighted is not None,
                    "squared's form and the env list")
        first = envs.get_option_at_index(envs.highlighted).id
        await pilot.press("down")  # processed; the new form waits for the cursor to rest
        chosen = app.screen.env_name
        assert chosen != first
        shown = _shown_form(app)
        assert shown in (None, chosen), shown  # never the previous env's form
        if shown is None:  # the new form's timer is still waiting, as it is but on a box so
            # loaded that the press took longer than FORM_DELAY_S (seen under pytest -n 2)
            assert f"{chosen}'s preset" in str(app.screen.query_one("#field").render())
        await until(pilot, lambda: _shown_form(app) == chosen, "the new env's form")
        await pilot.press("down", "up")  # back to the same env before its timer fires
        await until(pilot, lambda: _shown_form(app) == app.screen.env_name, "a form again")
