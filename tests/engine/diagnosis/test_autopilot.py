"""The autopilot on epochs recorded from real runs (tests/fixtures/diagnosis/): it applies a
fired rule's live fix, never on a healthy run, never a restart-only one, at most once per
rule in its cooldown, and reverts a change the score fell after."""

from __future__ import annotations

import json

import pytest

from puffer_tui.engine.diagnosis.autopilot import COOLDOWN, WATCH, Autopilot
from puffer_tui.engine.diagnosis.state import Diagnoser
from tests.engine.diagnosis.test_rules import FIXTURES, HEALTHY


def epochs(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines()]


def fly(name: str, on: bool = True) -> list:
    diagnoser, pilot, changes = Diagnoser(), Autopilot(), []
    for epoch in epochs(name):
        messages = diagnoser.feed(epoch["signals"], epoch["settings"])
        changes += pilot.feed(messages, epoch["signals"], on)
    return changes


@pytest.mark.parametrize("healthy", HEALTHY)
def test_a_healthy_run_is_never_changed(healthy):
    assert fly(healthy) == []


def test_a_fired_live_fix_is_applied_with_its_evidence_and_its_undo():
    changes = fly("kl_blowup")
    assert changes, "the learning rate 30x too high gets its fix"
    first = changes[0]
    assert (first.rule, first.key, first.revert) == ("kl_blowup", "train.learning_rate", False)
    assert first.new < first.old
    assert "approx_kl" in first.evidence
    assert f"undo: set train.learning_rate {first.old}" in first.text()


def test_nothing_changes_while_it_is_off():
    assert fly("kl_blowup", on=False) == []


def test_a_restart_only_suggestion_stays_a_suggestion():
    message = {"rule": "obs_scale", "status": "fired", "suggestion": {
        "key": "train.normalize_observations", "to": True, "live": False,
        "restart": "--train.normalize-observations true"}}
    assert Autopilot().feed([message], {"epoch": 3}, True) == []


def fired(epoch: int, to: float) -> dict:
    return {"rule": "kl_blowup", "status": "fired", "epoch": epoch, "evidence": {},
            "suggestion": {"key": "train.learning_rate", "from": 0.1, "to": to, "live": True}}


def test_one_change_per_rule_in_its_cooldown():
    pilot = Autopilot()
    assert len(pilot.feed([fired(1, 0.01)], {"epoch": 1}, True)) == 1
    assert pilot.feed([fired(2, 0.001)], {"epoch": 2}, True) == []
    assert len(pilot.feed([fired(1 + COOLDOWN, 0.001)], {"epoch": 1 + COOLDOWN}, True)) == 1


def scored(epoch: int, score: float) -> dict:
    return {"epoch": epoch, "score": score, "episodes": 4}


def test_a_change_the_score_fell_after_is_reverted():
    pilot = Autopilot()
    for epoch in range(WATCH):
        pilot.feed([], scored(epoch, 10.0), True)
    pilot.feed([fired(WATCH, 0.01)], scored(WATCH, 10.0), True)
    reverts = []
    for epoch in range(WATCH + 1, 2 * WATCH + 2):
        reverts += pilot.feed([], scored(epoch, 2.0), True)
    assert [(c.key, c.old, c.new, c.revert) for c in reverts] == \
        [("train.learning_rate", 0.01, 0.1, True)]


def test_a_change_the_score_rose_after_stays():
    pilot = Autopilot()
    for epoch in range(WATCH):
        pilot.feed([], scored(epoch, 2.0), True)
    pilot.feed([fired(WATCH, 0.01)], scored(WATCH, 2.0), True)
    for epoch in range(WATCH + 1, 3 * WATCH):
        assert pilot.feed([], scored(epoch, 9.0), True) == []
