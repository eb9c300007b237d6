"""The dashboard's diagnosis line: what the engine's diagnosis rules say is going wrong.

One line under the run header, shown only while a diagnosis is in force (telemetry's
`diagnoses`, docs/protocol.md): the most severe cause's text, its suggested change, how many
diagnoses follow from it (folded under it: a learning rate far too high also collapses the
policy and blows up the value loss; the line names the cause) and how many other causes. The dashboard's keys act on that one (`a` applies its suggestion with
the ordinary live `set`, `x` dismisses it: silenced for the run, `d` opens the evidence);
this module holds what those keys do, so the screen only binds them.

Tested in: tests/screens/test_diagnosis_app.py
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from puffer_tui.app import link_messages as lm
from puffer_tui.engine.shared.protocol import FIRED

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
SEVERITY_STYLES = {"error": "bold red", "warning": "bold yellow", "info": "cyan"}
MARKS = {"error": "✖", "warning": "▲", "info": "●"}


def in_force(diagnoses: list, dismissed: set[str]) -> list[dict]:
    """The run's diagnoses in force (telemetry's), most severe first, without those
    dismissed here."""
    found = [d for d in diagnoses if isinstance(d, dict)
             and d.get("rule") and d.get("rule") not in dismissed]
    return sorted(found, key=lambda d: (SEVERITY_ORDER.get(d.get("severity"), 3),
                                        d.get("epoch") or 0))


def root_of(diagnosis: dict, by_rule: dict[str, dict]) -> dict:
    """The diagnosis in force that explains `diagnosis`, followed to the one that nothing in
    force explains (each fired diagnosis lists its possible causes in `explained_by`); itself
    when none does."""
    root, seen = diagnosis, {diagnosis.get("rule")}
    while True:
        cause = next((c for c in root.get("explained_by") or ()
                      if c in by_rule and c not in seen), None)
        if cause is None:
            return root
        root = by_rule[cause]
        seen.add(cause)


def folded(diagnoses: list[dict]) -> list[tuple[dict, list[dict]]]:
    """The diagnoses as (root, the ones that follow from it), roots in the given order (most
    severe first): one cause, one line; its consequences under it."""
    by_rule = {d.get("rule"): d for d in diagnoses}
    groups: dict[str, tuple[dict, list[dict]]] = {}
    for d in diagnoses:
        root = root_of(d, by_rule)
        group = groups.setdefault(root.get("rule"), (root, []))
        if root is not d:
            group[1].append(d)
    return [groups[d.get("rule")] for d in diagnoses if d.get("rule") in groups
            and groups[d.get("rule")][0] is d]


def merge_diagnosis(diagnoses: list, push: dict) -> list[dict]:
    """Telemetry's `diagnoses` after a `diagnosis` push: a fired one added (or replacing its
    rule's), a cleared one removed."""
    rule = push.get("rule")
    kept = [d for d in diagnoses if d.get("rule") != rule]
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
        self._keys: tuple = (None, False)  # what the footer's keys were last offered for

    @property
    def shown(self) -> list[dict]:
        return [d for d in self.diagnoses if d.get("rule") not in self.dismissed]

    @property
    def groups(self) -> list[tuple[dict, list[dict]]]:
        """The shown diagnoses folded under their causes (`folded`), most severe root first."""
        return folded(self.shown)

    @property
    def ordered(self) -> list[dict]:
        """Every shown diagnosis, each root followed by those it explains."""
        return [d for root, rest in self.groups for d in (root, *rest)]

    @property
    def top(self) -> dict | None:
        groups = self.groups
        return groups[0][0] if groups else None

    def show(self, diagnoses: list) -> None:
        self.diagnoses = in_force(diagnoses, set())

    def watch_diagnoses(self, diagnoses: list) -> None:
        top = self.top
        self.set_class(top is not None, "-shown")
        keys = (top and top.get("rule"), self._can_apply(top))
        if keys != self._keys:  # another one on top, or its fix sent: the footer's keys change
            self._keys = keys
            sync = getattr(self.screen, "sync_footer", self.screen.refresh_bindings)
            self.call_later(sync)
        if top is None:
            self.update("")
            return
        severity = top.get("severity", "warning")
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{MARKS.get(severity, '●')} {top.get('rule')}",
                    SEVERITY_STYLES.get(severity, ""))
        groups = self.groups
        follow, more = len(groups[0][1]), len(groups) - 1
        counts = ([f"{follow} follow"] if follow else []) + ([f"+{more}"] if more else [])
        if counts:
            line.append(f" ({', '.join(counts)})", "dim")
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
        suggestion not applied yet and the run can be steered (a finished run: no apply)."""
        top = self.top
        if action == "diagnosis_apply":
            return can_steer and self._can_apply(top)
        return top is not None

    def _can_apply(self, diagnosis: dict | None) -> bool:
        """A live change not sent yet (once sent, the line says `✓ applied`)."""
        return live_suggestion(diagnosis) is not None and diagnosis["rule"] not in self.applied

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
