"""The diagnoses in full: each one's text, evidence (the numbers and the epochs they were
seen in), suggested change and hint. Opened from the dashboard (`d`); `a` applies the
selected one's suggestion through the ordinary live `set`, `x` dismisses it (silenced for the
run), `n` selects the next, `escape` goes back. The actions are DiagnosisLine's, so the
dashboard's line and this screen agree on what was applied or dismissed.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from puffer_tui.app.widgets.diagnosis_line import (
    MARKS,
    SEVERITY_STYLES,
    DiagnosisLine,
    live_suggestion,
    suggestion_label,
)


def describe(diagnosis: dict, selected: bool, applied: bool, cause: str | None = None) -> Text:
    """One diagnosis as the screen shows it (`cause`: the root it follows from, if any)."""
    severity = diagnosis.get("severity", "warning")
    text = Text()
    text.append("▶ " if selected else "  ", "bold")
    text.append(f"{MARKS.get(severity, '●')} {diagnosis.get('rule')}",
                SEVERITY_STYLES.get(severity, ""))
    if cause:
        text.append(f"  follows from {cause}", "italic")
    text.append(f"  epoch {diagnosis.get('epoch')}, step {diagnosis.get('global_step') or 0:,}\n",
                "dim")
    text.append(f"  {diagnosis.get('text', '')}\n")
    evidence = dict(diagnosis.get("evidence") or {})
    epochs = evidence.pop("epochs", None)
    for name, value in evidence.items():
        shown = format(value, ".4g") if isinstance(value, float) else str(value)
        text.append(f"    {name:<18}", "dim")
        text.append(f"{shown}\n")
    if epochs:
        text.append(f"    {'seen at epochs':<18}", "dim")
        text.append(", ".join(str(e) for e in epochs) + "\n")
    fix = suggestion_label(diagnosis)
    if fix:
        label = "applied" if applied else ("suggested (a)" if live_suggestion(diagnosis)
                                           else "suggested")
        text.append(f"  {label}: ", "bold green" if applied else "bold")
        text.append(f"{fix}\n")
    if diagnosis.get("hint") and diagnosis.get("suggestion"):
        text.append(f"  {diagnosis['hint']}\n", "dim")
    return text


class DiagnosisScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("a", "apply", "Apply fix"),
        Binding("x", "dismiss_one", "Dismiss"),
        Binding("n", "next", "Next"),
        Binding("escape,d", "close", "Back"),
    ]

    def __init__(self, line: DiagnosisLine, can_steer: Callable[[], bool]):
        super().__init__()
        self.line = line
        self.can_steer = can_steer
        self.index = 0

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "diagnosis"
            yield Static(id="diagnoses")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.draw()
        self.set_interval(1.0, self.draw)  # cleared or new ones show while it is open

    @property
    def selected(self) -> dict | None:
        shown = self.line.ordered
        if not shown:
            return None
        self.index %= len(shown)
        return shown[self.index]

    def draw(self) -> None:
        groups = self.line.groups
        body = Text()
        if not groups:
            body.append("No diagnosis in force: every rule is quiet.", "dim")
        selected = self.selected
        for root, rest in groups:  # each cause, then what follows from it (indented)
            for diagnosis in (root, *rest):
                part = describe(diagnosis, diagnosis is selected,
                                diagnosis.get("rule") in self.line.applied,
                                None if diagnosis is root else root.get("rule"))
                if diagnosis is not root:
                    part = Text("\n").join(Text("    ") + ln for ln in part.split("\n"))
                body.append_text(part)
                body.append("\n")
        self.query_one("#diagnoses", Static).update(body)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "apply":
            return self.can_steer() and live_suggestion(self.selected) is not None
        if action in ("dismiss_one", "next"):
            return self.selected is not None
        return True

    def action_apply(self) -> None:
        self.line.apply(self, self.can_steer(), self.selected)
        self.draw()

    def action_dismiss_one(self) -> None:
        self.line.dismiss(self, self.can_steer(), self.selected)
        self.draw()

    def action_next(self) -> None:
        self.index += 1
        self.draw()

    def action_close(self) -> None:
        self.dismiss(None)
