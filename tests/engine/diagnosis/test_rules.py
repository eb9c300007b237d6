"""The diagnosis rules on epochs recorded from real runs (tests/fixtures/diagnosis/: each
line one epoch's signals and settings, as the engine measured them, written by
`python -m puffer_tui.benchmarks.doctor --fixtures tests/fixtures/diagnosis`).

Each rule fires on the run broken on purpose for it, and on none of the healthy runs (full
default runs of the built-in presets squared, cartpole, password, snake (20M steps) and of
the Gymnasium presets CartPole-v1, Acrobot-v1, Pendulum-v1, HalfCheetah-v5 and Hopper-v5
(500k)); nor on the healthy runs where a rule once raised a false alarm (false_*: the
epochs recorded when it fired).
"""

from __future__ import annotations

import json
import statistics

import pytest
from tree_paths import REPO_ROOT, TESTS_DIR

from puffer_tui.engine.diagnosis.rules import EXPLAINED_BY, RULES, kl_blowup
from puffer_tui.engine.diagnosis.state import Diagnoser, event_text, suggestion_text
from puffer_tui.engine.shared.protocol import DIAGNOSIS_RULES

FIXTURES = TESTS_DIR / "fixtures" / "diagnosis"
HEALTHY = ("healthy_squared", "healthy_cartpole", "healthy_password", "healthy_snake",
           "healthy_gym-CartPole-v1", "healthy_gym-Acrobot-v1", "healthy_gym-Pendulum-v1",
           "healthy_gym-HalfCheetah-v5", "healthy_gym-Hopper-v5",
           # squared with a 100M-step budget (the rate still high at 23M steps), epochs
           # 1-360: converged by epoch 30, its approx_kl spikes to 2.8 at epoch 347
           "healthy_squared_converged")
# a rule -> the healthy run it once fired on (the fix's reason is in the rule's docstring)
FALSE_ALARMS = {
    # Acrobot-v1, classic-control preset: the shared machine's load rose mid-run and the
    # env's wall time per step grew 2.7x, with the learner's (the env-vs-compute split: 1.8x)
    "env_bound": "false_env_bound_acrobot",
    # breakout's default run (recorded with a 3M-step budget): 30 scored epochs are 500k
    # steps (2 s); its score rises from about 800k (the test gives it the preset's budget)
    "plateau": "false_plateau_breakout",
    # breakout's default run, epochs 1000-1320 of 50M steps: episodes of 2,000 steps once it
    # plays well, against gamma 0.99's 100, with a brick every few dozen steps
    "short_horizon": "false_short_horizon_breakout",
    # MountainCar-v0, classic-control preset, seed 0, epochs 1-600 of 1M steps: -1 a step, so
    # its first scored epochs were already -160 and its near-deterministic policy's rise to
    # -95 was under half of that (also false_policy_collapse_minigrid, below)
    "policy_collapse": "false_policy_collapse_mountaincar",
}
BREAKOUT_BUDGET = 50_000_000  # envs/breakout/config.toml


def replay_with(name: str, diagnoser: Diagnoser, **settings) -> list[dict]:
    messages = []
    for epoch in epochs(name):
        messages += diagnoser.feed(epoch["signals"], {**epoch["settings"], **settings})
    return messages
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


def test_a_solved_minigrid_run_is_not_called_a_collapsed_policy():
    """MiniGrid-Empty-Random-5x5-v0, its preset, seed 2, 100k steps: the first scored epochs
    were already 0.59-0.85 (the quick finishers), the policy went near-deterministic as it
    solved the env at 0.97, a gain under half of where it began."""
    only = Diagnoser(rules={"policy_collapse": RULES["policy_collapse"]})
    assert fired(replay("false_policy_collapse_minigrid", only)) == {}
    assert fired(replay("false_policy_collapse_minigrid")) == {}


@pytest.mark.parametrize("rule", FALSE_ALARMS)
def test_a_healthy_run_it_once_fired_on_is_quiet(rule):
    budget = {"total_timesteps": BREAKOUT_BUDGET} if rule == "plateau" else {}
    only = Diagnoser(rules={rule: RULES[rule]})
    assert fired(replay_with(FALSE_ALARMS[rule], only, **budget)) == {}
    assert fired(replay_with(FALSE_ALARMS[rule], Diagnoser(), **budget)) == {}  # nor another


def test_a_plateau_waits_for_a_quarter_of_the_budget():
    # the same breakout epochs on the 3M-step budget they were recorded with: a plateau may
    # be called from 750k steps (25%), not at 30 scored epochs (491k)
    messages = replay_with(FALSE_ALARMS["plateau"], Diagnoser(rules={"plateau": RULES["plateau"]}),
                           total_timesteps=3_000_000)
    first = next(m for m in messages if m["status"] == "fired")
    assert first["global_step"] >= 750_000


def test_the_observation_scan_may_skip_epochs():
    # the doctor skips the scan on some epochs of a fast run (its cost budget): obs_scale
    # reads the last measures; the run broken for it still fires, an epoch later at most
    diagnoser, messages = Diagnoser(rules={"obs_scale": RULES["obs_scale"]}), []
    for epoch in epochs("obs_scale"):
        signals = dict(epoch["signals"])
        if signals["epoch"] % 2:
            for key in ("obs_ratio", "obs_worst", "obs_worst_scale", "obs_median_scale"):
                signals.pop(key, None)
        messages += diagnoser.feed(signals, epoch["settings"])
    every = fired(replay("obs_scale", Diagnoser(rules={"obs_scale": RULES["obs_scale"]})))
    assert fired(messages)["obs_scale"] <= every["obs_scale"] + 2


def test_the_false_alarms_recorded_what_had_set_them_off():
    acrobot = [e["signals"] for e in epochs(FALSE_ALARMS["env_bound"])]
    per_step = [s["env_seconds_per_step"] for s in acrobot]
    assert max(per_step[-150:]) > 2.5 * min(per_step[:150])  # the env's wall time did grow
    assert max(s["timing_pct_env"] for s in acrobot) > 70
    breakout = epochs(FALSE_ALARMS["plateau"])
    scores = [e["signals"]["score"] for e in breakout if e["signals"].get("episodes")]
    assert len(scores) >= 30 and max(scores[-10:]) > 1.5 * statistics.fmean(scores[:3])
    later = [e["signals"] for e in epochs(FALSE_ALARMS["short_horizon"])]
    lengths = [s["episode_length"] for s in later if s.get("episode_length")]
    assert max(lengths) > 2000  # over 20x gamma 0.99's horizon of 100
    assert statistics.median(s["reward_gap"] for s in later) < 100  # rewards all along


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
    kl = [m for m in replay("kl_blowup") if m["status"] == "fired"]
    # CartPole-v1 at 30x the rate: the first update leaves the policy collapsed (entropy 9% of
    # its maximum), where a lower rate live changes nothing: a restart with the command
    first = kl[0]["suggestion"]
    assert first["live"] is False and first["to"] == pytest.approx(first["from"] / 10)
    assert first["restart"] == f"--train.learning-rate {first['to']:g}"
    assert kl[0]["evidence"]["entropy"] < 0.2 * kl[0]["evidence"]["entropy_max"]
    # the command (the fixture's settings name no env: ENV; the engine's name it), and no
    # checkpoint to go back to when the very first epoch blew up
    assert kl[0]["hint"].endswith(f"puffer-tui train ENV --train.learning-rate {first['to']:g}")
    named = kl_blowup([epochs("kl_blowup")[0]["signals"]],
                      {**epochs("kl_blowup")[0]["settings"], "env_name": "gym:CartPole-v1"},
                      False)
    assert "puffer-tui train gym:CartPole-v1 --train.learning-rate 0.015" in named.hint
    # later, with the entropy back, a new blow-up can still be caught live
    lr = next(m["suggestion"] for m in kl if m["suggestion"]["live"])
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


def test_what_follows_from_a_cause_in_force_names_it():
    # squared at learning rate 0.9: kl_blowup at epoch 1, and the rest follow from it
    messages = [m for m in replay("policy_collapse") if m["status"] == "fired"]
    root = next(m for m in messages if m["rule"] == "kl_blowup")
    assert "follows" not in root and "(follows from" not in event_text(root)
    after = {m["rule"]: m.get("follows") for m in messages if m["rule"] != "kl_blowup"}
    assert after and set(after.values()) == {"kl_blowup"}, after
    assert {"policy_collapse", "value_dominates", "plateau"} <= set(after)
    line = event_text(next(m for m in messages if m["rule"] == "policy_collapse"))
    assert line.startswith("diagnosis policy_collapse (follows from kl_blowup): ")
    # rewards x1000: the value loss explains the clipped gradients and the blind critic
    messages = [m for m in replay("value_dominates") if m["status"] == "fired"]
    assert {m["rule"]: m.get("follows") for m in messages} == {
        "value_dominates": None, "grad_always_clipped": "value_dominates",
        "critic_blind": "value_dominates"}


def test_a_rule_alone_follows_from_nothing():
    diagnoser = Diagnoser(rules={"plateau": RULES["plateau"]})
    messages = replay("plateau", diagnoser)
    assert fired(messages) and all("follows" not in m for m in messages)
    assert messages[0]["explained_by"] == list(EXPLAINED_BY["plateau"])


def test_the_causes_have_no_cycle():
    for rule in EXPLAINED_BY:
        seen, todo = set(), [rule]
        while todo:
            for cause in EXPLAINED_BY.get(todo.pop(), ()):
                assert cause != rule, f"{rule} explains itself through {cause}"
                if cause not in seen:
                    seen.add(cause)
                    todo.append(cause)


def test_a_blind_critic_is_held_until_it_sees_again():
    # obs_scale's run (a column x1e4): explained variance stays low with single epochs at
    # 0.1-0.2; the rule fired, cleared and fired again (epochs 20, 78, 93, 133, 148) when its
    # hold read a spread measured only under 0.1
    messages = replay("obs_scale", Diagnoser(rules={"critic_blind": RULES["critic_blind"]}))
    assert [(m["status"], m["epoch"]) for m in messages] == [("fired", 20)]


def test_a_converged_policy_whose_kl_spikes_alone_is_not_called_collapsed():
    recorded = epochs("healthy_squared_converged")
    spike = next(e["signals"] for e in recorded if e["signals"]["approx_kl"] > 1)
    top = recorded[0]["settings"]["entropy_max"]
    # what once fired an error: "the policy already collapsed", at a score near its best
    assert spike["entropy"] < 0.02 * top and spike["score"] > 0.85
    assert fired(replay("healthy_squared_converged")) == {}


def test_a_blow_up_that_breaks_a_converged_policy_still_fires():
    # the converged run, then updates that overshoot (approx_kl 3) and take the score back
    # towards its start: the epochs after the recording, made from its last one
    diagnoser = Diagnoser()
    recorded = epochs("healthy_squared_converged")
    replay_with("healthy_squared_converged", diagnoser)
    last, settings = recorded[-1]["signals"], recorded[-1]["settings"]
    messages = []
    for i, score in enumerate((0.9, 0.4, 0.25, 0.2)):
        broken = {**last, "epoch": last["epoch"] + 1 + i, "approx_kl": 3.0, "clipfrac": 0.6,
                  "score": score}
        messages += diagnoser.feed(broken, settings)
    kl = [m for m in messages if m["rule"] == "kl_blowup" and m["status"] == "fired"]
    assert kl and kl[0]["severity"] == "error", messages
    assert kl[0]["epoch"] > last["epoch"] + 1  # once the score fell, not at the first spike


def test_a_converged_policy_broken_by_a_late_spike_fires_once_its_scores_fall():
    # MiniGrid-KeyCorridorS3R1-v0, seed 1 (MiniGrid preset, 500k steps), epochs 1-70: at
    # 0.951 from epoch 38 with entropy 0.009; approx_kl 0.33 at epoch 40 and 2.2 at 43 while
    # no episode ended, then scores of 0 at epochs 45 and 49 (and on)
    recorded = epochs("late_kl_blowup_minigrid")
    spike = next(e["signals"] for e in recorded if e["signals"]["approx_kl"] > 1)
    assert spike["epoch"] == 43
    messages = replay("late_kl_blowup_minigrid")
    kl = [(m["status"], m["epoch"], m["severity"]) for m in messages if m["rule"] == "kl_blowup"]
    # once `converged` no longer holds on the old scores (epoch 49), and held while they stay down
    assert kl == [("fired", 49, "error")], messages


@pytest.mark.parametrize("env_name, flag", [("gym:CliffWalking-v1", True), ("squared", False)])
def test_episodes_that_never_end_name_the_flag_that_gives_a_gym_env_a_time_limit(env_name, flag):
    from puffer_tui.engine.diagnosis.rules import episode_ends

    history = [{"epoch": e, "global_step": e * 16_384, "ends": 0} for e in range(1, 12)]
    ctx = {"env_name": env_name, "num_agents": 16, "ends_seen": 0}
    finding = episode_ends(history, ctx, active=False)
    assert finding is not None and "no episode ended" in finding.text
    assert ("--env.max-episode-steps N" in finding.hint) is flag


def test_a_run_that_lost_what_it_learnt_says_so_and_where_it_held():
    # MiniGrid-LavaGapS6-v0 at the MiniGrid preset (seed 0, 1M steps):
    # 0.948 from epoch 100 to 131, then undone between KL spikes to 0.0 by epoch 231; no
    # other rule fired (an AMD EPYC, 2026-12-08)
    messages = replay("score_lost")
    assert fired(messages) == {"score_lost": 218}, messages
    lost = next(m for m in messages if m["rule"] == "score_lost")
    assert lost["severity"] == "error"
    held = lost["evidence"]["held_from_epoch"], lost["evidence"]["held_to_epoch"]
    assert held[0] >= 100 and held[1] <= 131 and held[1] - held[0] == 9
    assert f"epochs {held[0]}-{held[1]}" in lost["hint"]
    assert "--train.learning-rate 0.001" in lost["hint"]  # a third of the run's 0.003


def test_a_lost_score_follows_from_the_spike_that_undid_it():
    assert fired(replay("late_kl_blowup_minigrid")) == {"kl_blowup": 49, "score_lost": 62}
    lost = next(m for m in replay("late_kl_blowup_minigrid") if m["rule"] == "score_lost")
    assert lost["follows"] == "kl_blowup"


def _scored(scores: list[float]) -> list[dict]:
    return [{"epoch": i + 1, "global_step": (i + 1) * 4096, "score": s, "episodes": 8}
            for i, s in enumerate(scores)]


def test_a_lucky_stretch_is_not_a_score_that_was_held_and_lost():
    # MiniGrid-RedBlueDoors-6x6-v0's shape: 0.17 at 20k steps by a few episodes, then 0-0.07
    diagnoser = Diagnoser()
    messages = []
    for row in _scored([0.0, 0.0, 0.0, 0.17, 0.18, 0.16] + [0.02, 0.0] * 30):
        messages += diagnoser.feed(row, {"learning_rate": 0.003})
    assert "score_lost" not in fired(messages)


def test_a_lost_score_clears_once_it_is_learnt_again():
    diagnoser = Diagnoser()
    messages = []
    for row in _scored([0.0] * 3 + [0.9] * 12 + [0.0] * 12 + [0.9] * 4):
        messages += diagnoser.feed(row, {"learning_rate": 0.003})
    lost = [(m["status"], m["epoch"]) for m in messages if m["rule"] == "score_lost"]
    assert lost[0][0] == "fired" and lost[-1][0] == "cleared" and lost[-1][1] > 27, lost


# the validation runs whose score the rule calls lost, at the epochs of their scores: the
# KeyCorridorS3R1 runs undone by KL spikes (their kl_blowup errors are in docs/benchmarks.md)
LOST_VALIDATION_RUNS = {
    ("2026-12-07/minigrid-codes-keycorridor.json", 1): 62,
    ("2026-12-07/minigrid-normalized-rewards.json", 1): 112,
    ("2026-12-07/minigrid-normalized-rewards.json", 2): 53,
    ("2026-12-07/minigrid-shuffle.json", 2): 72,
    # and GoToDoor-5x5 with SB3's early stop beside the adaptive rate: 0.946 held, then 0.28
    ("2026-12-08/minigrid-target-kl-gotodoor-s0.json", 0): 408,
}


def test_a_lost_score_is_called_only_on_the_validation_runs_that_lost_theirs():
    # every validation run kept in the docs (Swimmer, Ant, LunarLander, Qbert, RedBlueDoors'
    # few early wins...): each epoch's score and episode count, as the rule reads them
    from puffer_tui.engine.diagnosis.rules import score_lost

    found, checked = {}, 0
    for path in sorted((REPO_ROOT / "docs" / "validation_runs").glob("*/*.json")):
        record = json.loads(path.read_text())
        runs = [(env, run) for env, e in record.get("validation", {}).get("envs", {}).items()
                for run in e.get("runs", []) if run.get("chunks")]
        for _env, run in runs:
            checked += 1
            diagnoser = Diagnoser(rules={"score_lost": score_lost})
            for epoch, (step, score, episodes, *_) in enumerate(run["chunks"], start=1):
                for message in diagnoser.feed({"epoch": epoch, "global_step": step,
                                               "score": score, "episodes": episodes},
                                              {"learning_rate": 0.003}):
                    if message["status"] == "fired":
                        key = (f"{path.parent.name}/{path.name}", run["seed"])
                        found.setdefault(key, message["epoch"])
    assert checked >= 100
    assert found == LOST_VALIDATION_RUNS
