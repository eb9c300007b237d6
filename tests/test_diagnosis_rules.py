"""The diagnosis rules on epochs recorded from real runs (tests/fixtures/diagnosis/: each
line one epoch's signals and settings, as the engine measured them, written by
`python -m puffer_tui.benchmarks.doctor --fixtures tests/fixtures/diagnosis`).

Each rule fires on the run broken on purpose for it, and on none of the healthy runs (the
built-in presets squared and cartpole, and Gymnasium's CartPole-v1, each a full default run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from puffer_tui.engine.diagnosis.rules import RULES
from puffer_tui.engine.diagnosis.state import Diagnoser, event_text, suggestion_text
from puffer_tui.engine.shared.protocol import DIAGNOSIS_RULES

FIXTURES = Path(__file__).parent / "fixtures" / "diagnosis"
HEALTHY = ("healthy_squared", "healthy_cartpole", "healthy_password", "healthy_gym-CartPole-v1")
# the rule -> the recorded run broken for it (benchmarks/doctor.py CASES)
BROKEN = {rule: rule for rule in DIAGNOSIS_RULES}


def epochs(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines()]


def replay(name: str, diagnoser: Diagnoser | None = None) -> list[dict]:
    """Every message the rules send over the recorded run, in order."""
    diagnoser = diagnoser or Diagnoser()
    messages = []
    for epoch in epochs(name):
        messages += diagnoser.feed(epoch["signals"], epoch["settings"])
    return messages


def fired(messages: list[dict]) -> dict[str, int]:
    found: dict[str, int] = {}
    for m in messages:
        if m["status"] == "fired":
            found.setdefault(m["rule"], m["epoch"])
    return found


@pytest.mark.parametrize("rule", DIAGNOSIS_RULES)
def test_the_rule_fires_on_the_run_broken_for_it(rule):
    messages = replay(BROKEN[rule])
    assert rule in fired(messages), f"{rule} did not fire; fired: {fired(messages)}"
    message = next(m for m in messages if m["rule"] == rule)
    assert message["text"] and "\n" not in message["text"]
    assert message["evidence"]["epochs"], "the evidence names the epochs it saw"
    assert message["severity"] in ("error", "warning", "info")


@pytest.mark.parametrize("rule", DIAGNOSIS_RULES)
@pytest.mark.parametrize("healthy", HEALTHY)
def test_the_rule_stays_quiet_on_a_healthy_run(rule, healthy):
    only = Diagnoser(rules={rule: RULES[rule]})
    assert fired(replay(healthy, only)) == {}


def test_a_healthy_run_is_long_enough_to_mean_something():
    for healthy in HEALTHY:
        assert len(epochs(healthy)) >= 50, healthy


def test_a_rule_fires_once_while_its_condition_holds_and_clears_when_it_ends():
    messages = replay("policy_collapse")  # squared at learning rate 0.9
    for rule in {m["rule"] for m in messages}:
        statuses = [m["status"] for m in messages if m["rule"] == rule]
        # alternating, starting with fired: never two fired without a clear between
        assert statuses == ["fired", "cleared"] * (len(statuses) // 2) + \
            ["fired"] * (len(statuses) % 2), (rule, statuses)
    assert any(m["status"] == "cleared" for m in messages), "no rule cleared in this run"


def test_the_suggestions_are_the_editors_set_or_a_restart():
    messages = [m for name in BROKEN.values() for m in replay(name) if m["status"] == "fired"]
    live = [m["suggestion"] for m in messages if (m.get("suggestion") or {}).get("live")]
    restart = [m["suggestion"] for m in messages
               if m.get("suggestion") and not m["suggestion"]["live"]]
    assert {"train.learning_rate", "train.ent_coef", "train.gamma"} <= {s["key"] for s in live}
    assert all(s["restart"].startswith("--") for s in restart)
    lr = next(m for m in messages if m["rule"] == "kl_blowup")["suggestion"]
    assert lr["to"] == pytest.approx(lr["from"] / 10, rel=0.05)
    assert suggestion_text(lr) == f"train.learning_rate {lr['from']:g} -> {lr['to']:g}"


def test_a_silenced_rule_is_cleared_and_says_nothing_more():
    diagnoser = Diagnoser()
    recorded = epochs("kl_blowup")
    first = diagnoser.feed(recorded[0]["signals"], recorded[0]["settings"])
    assert "kl_blowup" in [m["rule"] for m in first]
    cleared = diagnoser.silence("kl_blowup")
    assert cleared["status"] == "cleared" and cleared["silenced"] is True
    assert "silenced for this run" in event_text(cleared)
    later = []
    for epoch in recorded[1:]:
        later += diagnoser.feed(epoch["signals"], epoch["settings"])
    assert "kl_blowup" not in [m["rule"] for m in later]
    assert diagnoser.silence("plateau") is None  # not in force: nothing to clear
    with pytest.raises(ValueError, match="no diagnosis rule"):
        diagnoser.silence("nonsense")


def test_the_event_line_says_the_rule_the_text_and_the_change():
    message = next(m for m in replay("kl_blowup") if m["rule"] == "kl_blowup")
    line = event_text(message)
    assert line.startswith("diagnosis kl_blowup: updates overshoot: approx_kl ")
    assert line.endswith(f"suggested: {suggestion_text(message['suggestion'])}")
