"""Shown when the engine dies or hangs up: its traceback, and the way back (resume).

Tested in: tests/app/test_app_engine.py (a real engine's crash), tests/app/test_app_store.py
(last_error_text), tests/screens/test_app_snapshots.py"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, TextArea


def last_error_text(run_dir: Path | None, max_bytes: int = 256 * 1024) -> str:
    """The last `[error]` entry of RUN_DIR/events.log, with its indented traceback lines."""
    if run_dir is None:
        return ""
    path = Path(run_dir) / "events.log"
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - max_bytes))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    entry: list[str] = []
    for i, line in enumerate(lines):
        if " [error] " in line and not line.startswith("  "):
            entry = [line.split(" [error] ", 1)[1]]
            for more in lines[i + 1:]:
                if not more.startswith("  "):
                    break
                entry.append(more[2:])
    return "\n".join(entry)


class CrashScreen(ModalScreen[str | None]):
    """Dismisses with "resume", "quit" or None (stay and look at the dashboard)."""


    BINDINGS = [Binding("escape", "dismiss_none", "Close")]

    def __init__(self, run_dir: Path, traceback: str):
        super().__init__()
        self.run_dir = run_dir
        self.traceback = traceback

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"The engine of {self.run_dir.name} stopped unexpectedly",
                        id="crash-title")
            yield TextArea(self.traceback, read_only=True, soft_wrap=False)
            with Horizontal():
                yield Button("Resume from last checkpoint", id="resume", variant="primary")
                yield Button("Look at the dashboard", id="stay")
                yield Button("Quit", id="quit", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None if event.button.id == "stay" else event.button.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
