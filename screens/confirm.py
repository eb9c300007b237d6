"""A modal question with a few labelled answers (stop? detach or stop?).

Tested in: tests/screens/test_quit_finished_run.py, tests/screens/test_launcher_open_run.py,
tests/app/test_app_state.py (a stop question left open)"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label


class ChoiceDialog(ModalScreen[str | None]):
    """Dismisses with the chosen key, or None on Escape."""


    BINDINGS = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, question: str, choices: list[tuple[str, str, str]],
                 live_run_only: bool = False, withdrawn_note: str = "nothing left to stop",
                 focus: str | None = None):
        """`choices`: (key, button label, button variant) in display order. A `live_run_only`
        question (stop the run? detach or stop?) is withdrawn by the app when the run ends
        under it, with "the run is STATE: `withdrawn_note`". `focus`: the key whose button
        Enter presses at first (default the first): the safe answer to a costly question."""
        super().__init__()
        self.live_run_only = live_run_only
        self.withdrawn_note = withdrawn_note
        self.question = question
        self.choices = choices
        self.focus_key = focus

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            with Horizontal():
                for key, label, variant in self.choices:
                    yield Button(f"[u]{label[0]}[/u]{label[1:]}", id=f"choice-{key}",
                                 variant=variant)

    def on_mount(self) -> None:
        if self.focus_key is not None:
            self.query_one(f"#choice-{self.focus_key}", Button).focus()

    def on_key(self, event) -> None:
        # The first letter of each answer picks it (d: detach, s: stop, c: cancel).
        for key, label, _ in self.choices:
            if event.character and event.character.lower() == label[0].lower():
                event.stop()
                self.dismiss(None if key == "cancel" else key)
                return

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        key = event.button.id.removeprefix("choice-")
        self.dismiss(None if key == "cancel" else key)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
