"""The dashboard's diagnosis line: what the engine's diagnosis rules say is going wrong.

One line under the run header, shown only while a diagnosis is in force (telemetry's
`diagnoses`, docs/protocol.md): the most severe one's text, its suggested change and how
many more there are. The dashboard's keys act on that one (`a` applies its suggestion with
the ordinary live `set`, `x` dismisses it: silenced for the run, `d` opens the evidence);
this module holds what those keys do, so the screen only binds them.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from puffer_tui.app import link_messages as lm
from puffer_tui.engine.shared.protocol import DIAGNOSES, FIRED

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
SEVERITY_STYLES = {"error": "bold red", "warning": "bold yellow", "info": "cyan"}
MARKS = {"error": "✖", "warning": "▲", "info": "●"}


def in_force(telemetry: dict, dismissed: set[str]) -> list[dict]:
    """The run's diagnoses in force, most severe first, without those dismissed here."""
    found = [d for d in telemetry.get(DIAGNOSES) or [] if isinstance(d, dict)
             and d.get("rule") and d.get("rule") not in dismissed]
    return sorted(found, key=lambda d: (SEVERITY_ORDER.get(d.get("severity"), 3),
                                        d.get("epoch") or 0))


def merge_diagnosis(telemetry: dict, push: dict) -> list[dict]:
    """Telemetry's `diagnoses` after a `diagnosis` push: a fired one added (or replacing its
    rule's), a cleared one removed."""
    rule = push.get("rule")
    kept = [d for d in telemetry.get(DIAGNOSES) or [] if d.get("rule") != rule]
    return kept + [push] if push.get("status") == FIRED else kept


def suggestion_label(diagnosis: dict) -> str:
    """`train.learning_rate 0.9 -> 0.09`, `restart with --train.x V`, or the hint."""
    s = diagnosis.get("suggestion")
    if not isinstance(s, dict):
        return diagnosis.get("hint") or ""
    if s.get("live"):
        return f"{s.get('key')} {_value(s.get('from'))} -> {_value(s.get('to'))}"
    return f"restart with {s.get('restart')}"


def live_suggestion(diagnosis: dict | None) -> dict | None:
    """The `set` arguments of a diagnosis' suggestion when it is a live change, else None."""
    s = (diagnosis or {}).get("suggestion")
    if isinstance(s, dict) and s.get("live") and s.get("key") and "to" in s:
        return {"key": s["key"], "value": s["to"]}
    return None


def _value(v) -> str:
    return format(v, "g") if isinstance(v, float) else str(v)


class DiagnosisLine(Static):
    DEFAULT_CSS = """
    DiagnosisLine { height: 1; padding: 0 1; display: none; text-wrap: nowrap;
                    text-overflow: ellipsis; }
    DiagnosisLine.-shown { display: block; }
    """

    diagnoses: reactive[list] = reactive(list, always_update=True, init=False)

    def __init__(self, **kwargs):
        super().__init__("", markup=False, **kwargs)
        self.dismissed: set[str] = set()  # dismissed here (a finished run: nothing to tell)
        self.applied: set[str] = set()  # rules whose suggestion was sent: waiting to clear

    @property
    def shown(self) -> list[dict]:
        return [d for d in self.diagnoses if d.get("rule") not in self.dismissed]

    @property
    def top(self) -> dict | None:
        shown = self.shown
        return shown[0] if shown else None

    def show(self, telemetry: dict) -> None:
        self.diagnoses = in_force(telemetry, set())

    def watch_diagnoses(self, diagnoses: list) -> None:
        top = self.top
        self.set_class(top is not None, "-shown")
        if top is None:
            self.update("")
            return
        severity = top.get("severity", "warning")
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{MARKS.get(severity, '●')} {top.get('rule')}",
                    SEVERITY_STYLES.get(severity, ""))
        more = len(self.shown) - 1
        if more:
            line.append(f" (+{more})", "dim")
        # at 80 columns the change comes first: the text is cut, the fix must not be
        fix = suggestion_label(top)
        if top.get("rule") in self.applied:
            line.append(f"  ✓ applied {fix}", "bold green")
        elif live_suggestion(top) is not None:
            line.append(f"  a: {fix}", "bold")
        elif fix:
            line.append(f"  {fix}", "bold")
        line.append("  d: why  ", "dim")
        line.append(str(top.get("text", "")))
        self.update(line)

    # -- what the dashboard's keys do -----------------------------------------------------

    def allows(self, action: str, can_steer: bool) -> bool:
        """Whether a key is offered now: `d`/`x` while one is shown, `a` when it has a live
        suggestion and the run can be steered (a finished run: no apply)."""
        top = self.top
        if action == "diagnosis_apply":
            return can_steer and live_suggestion(top) is not None
        return top is not None

    def apply(self, sender, can_steer: bool, diagnosis: dict | None = None) -> None:
        """Send the suggested change of `diagnosis` (the top one) as the editor sends a
        `set`; the app logs the reply (`set KEY = V (from the next minibatch)`) as for any
        change."""
        top = diagnosis or self.top
        args = live_suggestion(top)
        if top is None:
            return
        if args is None or not can_steer:
            why = "the run cannot be steered now" if args is not None else \
                (suggestion_label(top) or "no change to suggest")
            self.app.notify(f"{top.get('rule')}: {why}", severity="warning")
            return
        sender.post_message(lm.EngineRequest("set", args))
        self.applied.add(top["rule"])
        self.diagnoses = list(self.diagnoses)

    def dismiss(self, sender, can_steer: bool, diagnosis: dict | None = None) -> None:
        """Hide `diagnosis` (the top one); on a live run the engine silences its rule for
        the run."""
        top = diagnosis or self.top
        if top is None:
            return
        self.dismissed.add(top["rule"])
        if can_steer:
            sender.post_message(lm.EngineRequest("diagnosis", {"silence": top["rule"]}))
        self.diagnoses = list(self.diagnoses)
