"""Help text is shown as written: square brackets in it (`pip install puffer-tui[ray]`) are
text, not Rich markup that eats them."""

from __future__ import annotations

from puffer_tui.app.widgets.field_input import FieldInput
from tests.app.test_app_engine import until
from tests.screens.test_app_launcher import LauncherApp, form_ready, screen_text


async def test_the_ray_extra_shows_in_the_backend_fields_help(tmp_path):
    app = LauncherApp(tmp_path)
    async with app.run_test(size=(200, 50)) as pilot:
        await until(pilot, lambda: form_ready(app), "the preset form")
        (row,) = [r for r in app.screen.query(FieldInput) if r.spec.key == "vec.backend"]
        assert "[ray]" in row.spec.help  # the schema's help has it
        about = row.query_one(".about")
        assert "puffer-tui[ray]" in str(about.render()), about.render()
        row.query_one("Input").focus()
        await pilot.pause(0.3)
        assert "puffer-tui[ray]" in screen_text(app)


async def test_an_error_with_brackets_shows_them_in_its_notification(tmp_path, monkeypatch):
    from textual.content import Content

    import puffer_tui.screens.launcher.screen as launcher
    from puffer_tui.engine.shared.config import ConfigError

    def refuse(*args, **kwargs):
        raise ConfigError('the ray vec backend needs Ray: pip install "puffer-tui[ray]"')

    app = LauncherApp(tmp_path)
    async with app.run_test(size=(200, 50)) as pilot:
        await until(pilot, lambda: form_ready(app), "the preset form")
        monkeypatch.setattr(launcher, "load_config", refuse)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: list(app._notifications), "the notification")
        (note,) = app._notifications
        # what the toast shows: the message read as markup unless the notification says not
        shown = str(Content.from_markup(note.message)) if note.markup else note.message
        assert 'pip install "puffer-tui[ray]"' in shown, shown
