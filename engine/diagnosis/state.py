"""The diagnoses of one run: which rules (engine/diagnosis/rules.py) have fired, cleared or been
silenced, and the protocol's `diagnosis` messages saying so. Pure: fed one epoch's signals
and settings at a time, so tests replay epochs recorded from real runs through it exactly
as the engine does (engine/diagnosis/epoch_diagnosis.py measures the signals in the engine).

A rule fires once, when its condition starts to hold, and is cleared when it stops; a
silenced rule says nothing more in this run (an active one is cleared as it is silenced).

Tested in: tests/engine/diagnosis/test_rules.py (fired, cleared and silenced on recorded epochs),
tests/engine/diagnosis/test_autopilot.py
"""

from __future__ import annotations

import statistics
import time
from collections import deque

from puffer_tui.engine.diagnosis.rules import EXPLAINED_BY, HELD, RULES, Finding, _num
from puffer_tui.engine.shared.protocol import CLEARED, DIAGNOSIS_RULES, FIRED, MessageType

HISTORY = 64  # epochs the rules look back over (plateau wants 30 with episodes)


def suggestion_text(suggestion: dict | None) -> str:
    """`train.learning_rate 0.9 -> 0.09` (a live set), or `restart with --train.x V`."""
    if not suggestion:
        return ""
    if suggestion.get("live"):
        return f"{suggestion['key']} {suggestion['from']:g} -> {suggestion['to']:g}" \
            if isinstance(suggestion.get("from"), (int, float)) and \
            not isinstance(suggestion.get("from"), bool) else \
            f"{suggestion['key']} {suggestion.get('from')} -> {suggestion['to']}"
    return f"restart with {suggestion['restart']}"


def event_text(message: dict) -> str:
    """The events.log line of a diagnosis message (what `--headless` prints too)."""
    rule = message["rule"]
    if message["status"] == CLEARED:
        why = "silenced for this run" if message.get("silenced") else "the condition ended"
        return f"diagnosis {rule} cleared at epoch {message.get('epoch')}: {why}"
    after = f" (follows from {message['follows']})" if message.get("follows") else ""
    text = f"diagnosis {rule}{after}: {message['text']}"
    suggested = suggestion_text(message.get("suggestion"))
    if suggested:
        text += f"; suggested: {suggested}"
    elif message.get("hint"):
        text += f"; {message['hint']}"
    return text


def row_entry(message: dict) -> dict:
    """What metrics.jsonl's `diagnoses` field keeps of a message (no evidence: events.log
    and the push carry it)."""
    keep = ("rule", "status", "severity", "text", "suggestion", "silenced", "follows")
    return {k: message[k] for k in keep if message.get(k) not in (None, "", False)}


class Diagnoser:
    def __init__(self, rules: dict | None = None, history: int = HISTORY):
        self.rules = dict(RULES if rules is None else rules)
        self.history: deque[dict] = deque(maxlen=history)
        self.active: dict[str, dict] = {}  # rule -> the message that fired it
        self.silenced: set[str] = set()
        # the whole run's summary the recent history cannot hold
        # best_score: the best mean of 3 consecutive scored epochs; best_held: the best median of
        # HELD (the score a run kept, not one lucky stretch), with the epochs it was held over
        self.run = {"first_scores": [], "best_score": None, "best_held": None,
                    "best_held_epochs": None, "terminals_seen": 0, "truncations_seen": 0,
                    "ends_seen": 0}
        self._recent_scores: deque[float] = deque(maxlen=3)
        self._held_scores: deque[tuple[int, float]] = deque(maxlen=HELD)

    def feed(self, signals: dict, settings: dict) -> list[dict]:
        """One epoch: the messages of the rules that fired or cleared with it."""
        self.history.append(signals)
        self._summarise(signals)
        ctx = {**settings, **self.run}
        for key in ("best_score", "best_held", "best_held_epochs"):
            if ctx[key] is None:
                ctx.pop(key)
        history = list(self.history)
        messages = []
        for name, rule in self.rules.items():
            if name in self.silenced:
                continue
            finding = rule(history, ctx, name in self.active)
            if finding is not None and name not in self.active:
                message = self._message(name, FIRED, signals, finding)
                cause = self.cause_of(name)
                if cause:  # said in the event line; clients fold it by `explained_by`
                    message["follows"] = cause
                self.active[name] = message
                messages.append(message)
            elif finding is None and name in self.active:
                del self.active[name]
                messages.append(self._message(name, CLEARED, signals))
        return messages

    def cause_of(self, rule: str) -> str | None:
        """The root of `rule` among the diagnoses in force now (following EXPLAINED_BY up to
        one that nothing in force explains), or None when nothing in force explains it."""
        root, seen = None, {rule}
        while True:
            cause = next((c for c in EXPLAINED_BY.get(root or rule, ())
                          if c in self.active and c not in seen), None)
            if cause is None:
                return root
            root = cause
            seen.add(cause)

    def silence(self, rule: str, signals: dict | None = None) -> dict | None:
        """Silence `rule` for the rest of the run; the `cleared` message if it was active."""
        if rule not in DIAGNOSIS_RULES:
            raise ValueError(f"no diagnosis rule {rule!r} (rules: {', '.join(DIAGNOSIS_RULES)})")
        self.silenced.add(rule)
        if rule not in self.active:
            return None
        del self.active[rule]
        last = signals or (self.history[-1] if self.history else {})
        return {**self._message(rule, CLEARED, last), "silenced": True}

    def _summarise(self, signals: dict) -> None:
        score = _num(signals, "score")
        if score is not None and (_num(signals, "episodes") or 0) > 0:
            if len(self.run["first_scores"]) < 3:
                self.run["first_scores"].append(score)
            self._recent_scores.append(score)
            if len(self._recent_scores) == 3:
                mean = sum(self._recent_scores) / 3
                best = self.run["best_score"]
                self.run["best_score"] = mean if best is None else max(best, mean)
            self._held_scores.append((int(signals.get("epoch", 0)), score))
            if len(self._held_scores) == HELD and len(self.run["first_scores"]) == 3:
                self._note_held()
        for name in ("terminals", "truncations", "ends"):
            self.run[f"{name}_seen"] += _num(signals, name) or 0

    def _note_held(self) -> None:
        """The last HELD scored epochs as the run's best held score if they are: their median
        (three lucky epochs in ten are not a score the run held), when even their lowest is
        half way from the start to it (a stretch of noise about the start, Ant's first 20
        epochs near 0 or RedBlueDoors' 0.0-0.2, is not held either)."""
        scores = [s for _, s in self._held_scores]
        early, held = statistics.fmean(self.run["first_scores"]), statistics.median(scores)
        if min(scores) - early < 0.5 * (held - early):
            return
        if self.run["best_held"] is None or held > self.run["best_held"]:
            self.run["best_held"] = held
            self.run["best_held_epochs"] = [self._held_scores[0][0], self._held_scores[-1][0]]

    @staticmethod
    def _message(rule: str, status: str, signals: dict, finding: Finding | None = None) -> dict:
        message = {"type": MessageType.DIAGNOSIS, "time": time.time(), "rule": rule,
                   "status": status, "epoch": signals.get("epoch"),
                   "global_step": signals.get("global_step")}
        if finding is not None:
            message.update(severity=finding.severity, text=finding.text,
                           evidence={**finding.evidence, "epochs": finding.epochs},
                           suggestion=finding.suggestion, hint=finding.hint,
                           explained_by=list(EXPLAINED_BY.get(rule, ())))
        return message
