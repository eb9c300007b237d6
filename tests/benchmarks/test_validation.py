"""The held-out validation benchmark: its verdict against the zoo's published figure, the
error diagnoses it reads from a run's metrics, and the table its --report prints from JSON
(merged across files, only the envs named after @)."""

from __future__ import annotations

import json

from puffer_tui.benchmarks import validation
from puffer_tui.benchmarks.learn_zoo_settings import ENVS as DEVELOPMENT


def test_no_validation_env_is_a_development_env():
    tuned = {env.ours for env in DEVELOPMENT.values()}
    assert not tuned & {held.env.ours for held in validation.VALIDATION.values()}


def test_the_verdict_reads_the_published_mean_and_std():
    held = validation.VALIDATION["MountainCar-v0"]  # -110.4 +- 19.5
    assert validation.verdict(-100.0, held) == "at or above"
    assert validation.verdict(-125.0, held) == "within std"
    assert validation.verdict(-150.0, held) == "below"
    assert validation.verdict(None, held) == "no result"


def test_fired_errors_are_read_from_the_run_s_metrics(tmp_path):
    rows = [{"epoch": 1}, {"epoch": 2, "diagnoses": [
        {"rule": "policy_collapse", "status": "fired", "severity": "error"},
        {"rule": "env_bound", "status": "fired", "severity": "warning"}]},
        {"epoch": 3, "diagnoses": [{"rule": "policy_collapse", "status": "cleared",
                                     "severity": "error"}]}]
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    assert validation.fired_diagnoses(tmp_path, "error") == ["policy_collapse"]
    assert validation.fired_diagnoses(tmp_path, "warning") == ["env_bound"]


def _file(path, envs):
    path.write_text(json.dumps({"validation": {
        "date": "2026-12-02", "command": "python -m puffer_tui.benchmarks.validation",
        "machine": {"cpu": "Some CPU", "cores": 2}, "commit": "abc1234", "flags": [],
        "envs": envs}}))
    return str(path)


def _runs(*evals, errors=()):
    return [{"seed": i, "eval": {"episode_return": e}, "error_diagnoses": list(errors)}
            for i, e in enumerate(evals)]


def test_the_report_merges_files_and_takes_only_the_envs_named(tmp_path):
    a = _file(tmp_path / "a.json", {
        "MountainCar-v0": {"steps": 1_000_000, "runs": _runs(-100.0, -105.0)},
        "MiniGrid-Unlock-v0": {"steps": 100_000, "runs": _runs(0.1, 0.2, 0.3)}})
    b = _file(tmp_path / "b.json", {
        "MountainCar-v0": {"steps": 1_000_000, "runs": _runs(-200.0, errors=("policy_collapse",))}})
    table = validation.report([f"{a}@MountainCar-v0", b])
    line = next(row for row in table.splitlines() if row.startswith("| MountainCar-v0"))
    assert "-105 (-200 to -100), 3 seeds" in line and "at or above" in line
    assert "policy_collapse" in line
    assert "MiniGrid-Unlock-v0 |" not in table
    assert "Some CPU (2 cores)" in table


def test_an_env_without_a_published_figure_is_judged_against_sb3_run_beside_it(tmp_path):
    held = validation.VALIDATION["ALE/Qbert-v5"]
    assert held.runs_peer and held.env.zoo == "atari" and held.env.steps == 100_000
    peer = [400.0, 500.0, 600.0]
    assert validation.verdict(520.0, held, peer) == "at or above"
    assert validation.verdict(450.0, held, peer) == "within spread"
    assert validation.verdict(300.0, held, peer) == "below"
    assert validation.verdict(300.0, held, []) == "no peer result"
    a = _file(tmp_path / "a.json", {"ALE/Qbert-v5": {
        "steps": 100_000, "runs": _runs(450.0, 700.0), "peer_runs": _runs(400.0, 600.0)}})
    b = _file(tmp_path / "b.json", {"ALE/Qbert-v5": {
        "steps": 100_000, "runs": _runs(500.0), "peer_runs": _runs(550.0)}})
    line = next(row for row in validation.report([a, b]).splitlines()
                if row.startswith("| ALE/Qbert-v5"))
    assert "500 (450 to 700), 3 seeds" in line
    assert "SB3 with its settings, run: 550 (400 to 600), 3 seeds" in line
    assert "within spread" in line


def test_sb3_takes_the_validation_env_it_is_run_on():
    from puffer_tui.benchmarks import learn_sb3

    assert "ALE/Qbert-v5" in learn_sb3.peer_envs()
    assert "MountainCar-v0" not in learn_sb3.peer_envs()  # a published figure: not run


def test_the_balance_env_is_judged_against_sb3_run_with_the_zoo_s_tuned_entry():
    from puffer_tui.benchmarks import learn_sb3

    held = validation.VALIDATION["InvertedDoublePendulum-v5"]
    assert held.runs_peer and held.family == "MuJoCo balance"
    assert held.env.zoo == "InvertedDoublePendulum-v2" and held.env.steps == 1_000_000
    setup = learn_sb3.translate(validation.ZOO_PPO[held.env.zoo])
    assert setup["n_envs"] == 1 and setup["normalize"] == {"gamma": 0.98}
    assert setup["ppo"]["n_steps"] == 128 and setup["ppo"]["gae_lambda"] == 0.8
    assert "InvertedDoublePendulum-v5" in learn_sb3.peer_envs()


def test_the_mpe_env_is_judged_against_sb3_run_as_pettingzoo_s_tutorial_runs_it():
    held = validation.VALIDATION["simple_reference"]
    assert held.runs_peer and held.family == "MPE" and held.env.steps == 1_000_000
    assert held.env.ours == "pz:mpe2.simple_reference_v3:parallel_env"
    assert "supersuit" in held.env.needs  # SB3's side needs it, and says which extra
