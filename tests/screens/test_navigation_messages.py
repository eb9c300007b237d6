"""The screens reach the App by messages, never by its method names.

The rule: no module under screens/ or app/widgets/ calls a method that PufferApp defines itself
(open_run, start_run, back_to_sweep, ...) on `self.app` or `app`; a screen posts one of
app/navigation.py's messages instead, which the App handles. Textual's own App API (push_screen,
pop_screen, exit, notify, bell, run_action, call_from_thread, ...) stays allowed: it is the
framework's, not a hidden dependency on our App. An import checker cannot see a call by name,
so this scan is what keeps the screens from depending on the App's internals.
"""

from __future__ import annotations

import ast
from pathlib import Path

from textual.app import App

from puffer_tui.app import navigation as nav
from puffer_tui.app.app import PufferApp
from puffer_tui.screens.launcher.screen import LauncherScreen
from tests.app.test_app_engine import until

ROOT = Path(__file__).resolve().parents[2]
SCANNED = [ROOT / "screens", ROOT / "app" / "widgets"]


def own_app_methods() -> set[str]:
    """The callables PufferApp adds to Textual's App (overrides of Textual's own are not ours)."""
    return {name for name, value in vars(PufferApp).items()
            if callable(value) and not name.startswith("__") and not hasattr(App, name)}


def calls_on_the_app(source: str) -> list[tuple[int, str]]:
    """(line, method) for each `self.app.NAME(...)` or `app.NAME(...)` call in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        on_app = (isinstance(receiver, ast.Attribute) and receiver.attr == "app") or \
                 (isinstance(receiver, ast.Name) and receiver.id == "app")
        if on_app:
            found.append((node.lineno, node.func.attr))
    return found


def test_the_scan_finds_a_call_by_name():
    calls = calls_on_the_app("def f(self):\n    self.app.open_run(x, attach=True)\n")
    assert calls == [(2, "open_run")]
    assert "open_run" in own_app_methods() and "push_screen" not in own_app_methods()


def test_no_screen_or_widget_calls_the_apps_own_methods():
    own = own_app_methods()
    offending = [f"{path.relative_to(ROOT)}:{line}: app.{name}()"
                 for folder in SCANNED for path in sorted(folder.rglob("*.py"))
                 for line, name in calls_on_the_app(path.read_text()) if name in own]
    assert offending == [], "post a message from app/navigation.py instead:\n" + \
        "\n".join(offending)


async def test_a_posted_message_reaches_the_app(tmp_path):
    """OpenHelp posted by the launcher bubbles to the App, which opens the help screen."""
    app = PufferApp(runs_root=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, LauncherScreen), "the launcher")
        app.screen.post_message(nav.OpenHelp())
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "the help screen")
