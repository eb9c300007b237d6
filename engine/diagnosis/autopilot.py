"""The doctor's autopilot (`train.autopilot`, off by default; the dashboard's `A` toggles it):
the live fixes the diagnoses propose are applied by themselves. Pure: fed each epoch's
fired messages and signals, it says which changes to make; engine/diagnosis/epoch_diagnosis.py sends
each as the `set` a person would send (checked once by the schema, applied at the epoch's
end) and logs it as an event with its evidence and how to undo it.

- Only a fired diagnosis whose suggestion is a live change is applied; a restart-only
  suggestion stays a suggestion.
- At most one change per rule in COOLDOWN epochs (a rule that refires at once does not
  ratchet its setting further each epoch).
- Reversible: each change's event names the `set` that undoes it, and the autopilot itself
  reverts a change when the score fell after it: the mean score of the WATCH scored epochs
  after the change below that of the WATCH before it, by more than REVERT_MARGIN of its size.
  Without scores before the change there is nothing to compare, and the change stays.
- Turning the autopilot off leaves the settings as they are (nothing pending is undone).
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field

COOLDOWN = 10  # epochs between two changes made for the same rule
WATCH = 5  # scored epochs compared before and after a change
REVERT_MARGIN = 0.1  # how much worse the score must get: a share of its size (taken as 0.1+)


def _score(signals: dict) -> float | None:
    score = signals.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return None
    return float(score) if (signals.get("episodes") or 0) > 0 else None


@dataclass
class Change:
    """One change the autopilot makes: applying a rule's fix, or reverting one."""

    rule: str
    key: str
    old: object
    new: object
    epoch: int | None
    evidence: dict = field(default_factory=dict)
    revert: bool = False
    score_before: float | None = None  # the mean score of the WATCH epochs before it
    scores_after: list[float] = field(default_factory=list)

    def text(self) -> str:
        """The event's line: what changed, why, and how to undo it."""
        figures = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                            for k, v in self.evidence.items() if k != "epochs")
        if self.revert:
            return (f"autopilot reverted {self.key} {self.new} (was {self.old}) at epoch "
                    f"{self.epoch}: the score fell after the {self.rule} fix ({figures})")
        return (f"autopilot applied {self.rule}'s fix at epoch {self.epoch}: {self.key} "
                f"{self.old} -> {self.new} (evidence: {figures}); undo: set {self.key} "
                f"{self.old}")


class Autopilot:
    def __init__(self):
        self.last_change: dict[str, int] = {}  # rule -> the epoch of its last change
        self.watched: list[Change] = []  # changes whose outcome is still being watched
        self.applied: list[Change] = []  # every change made, in order
        self._scores: deque[float] = deque(maxlen=WATCH)

    def feed(self, messages: list[dict], signals: dict, on: bool) -> list[Change]:
        """One epoch: the changes to make now (none while `on` is false; what was changed
        stays changed)."""
        epoch = signals.get("epoch")
        score = _score(signals)
        changes = self._reverts(score, epoch) if on else []
        if on:
            changes += [c for c in (self._fix(m, epoch) for m in messages) if c is not None]
        if score is not None:
            self._scores.append(score)
        self.applied += changes
        return changes

    def _fix(self, message: dict, epoch) -> Change | None:
        suggestion = message.get("suggestion") or {}
        rule = message.get("rule")
        if message.get("status") != "fired" or not suggestion.get("live") \
                or "to" not in suggestion or "from" not in suggestion:
            return None
        last = self.last_change.get(rule)
        if last is not None and epoch is not None and epoch - last < COOLDOWN:
            return None
        if epoch is not None:
            self.last_change[rule] = epoch
        before = statistics.fmean(self._scores) if len(self._scores) == WATCH else None
        change = Change(rule, suggestion["key"], suggestion["from"], suggestion["to"], epoch,
                        dict(message.get("evidence") or {}), score_before=before)
        if before is not None:
            self.watched.append(change)
        return change

    def _reverts(self, score: float | None, epoch) -> list[Change]:
        if score is None:
            return []
        reverts = []
        for change in list(self.watched):
            change.scores_after.append(score)
            if len(change.scores_after) < WATCH:
                continue
            self.watched.remove(change)
            after, before = statistics.fmean(change.scores_after), change.score_before
            if after < before - REVERT_MARGIN * max(abs(before), 0.1):
                reverts.append(Change(change.rule, change.key, change.new, change.old, epoch,
                                      {"score_before": before, "score_after": after},
                                      revert=True))
        return reverts
