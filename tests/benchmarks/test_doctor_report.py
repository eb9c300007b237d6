"""`python -m puffer_tui.benchmarks.doctor --report FILE`: a row per case with the score left
alone, fixed by a person and fixed by the autopilot, under the run's machine and commands."""

import json
import subprocess
import sys

from puffer_tui.benchmarks import doctor_report

FIXED = {"case": "critic_blind", "setting": "--train.vf-coef 0 (no critic)", "fired": 3,
         "fired_at": 20, "others": [], "score_without": 0.2694, "runs": 3, "score_with": 0.8667,
         "applied": [{"key": "train.vf_coef", "to": 1.0, "epoch": 20, "ok": True}],
         "score_autopilot": 0.85, "autopilot_changes": 3, "cost_pct": 0.1457}
RESTARTED = {"case": "kl_blowup", "setting": "--train.learning-rate 0.15 (30x)", "fired": 1,
             "fired_at": 1, "others": ["policy_collapse"], "score_without": 9.34, "runs": 1,
             "score_with": 500.0,
             "applied": [{"key": "train.learning_rate", "to": 0.015, "epoch": 1,
                          "restart": True}],
             "score_autopilot": 9.3, "autopilot_changes": 2, "cost_pct": 1.75}
HEALTHY = {"case": "healthy squared", "setting": "defaults", "fired": None, "fired_at": None,
           "others": [], "score_without": 0.9996, "runs": 1, "score_autopilot": 0.9996,
           "autopilot_changes": 0, "cost_pct": 0.17}
LOG = ("2026-12-02T09:39:58Z [info] autopilot applied kl_blowup's fix at epoch 1: "
       "train.learning_rate 0.15 -> 0.015 (evidence: approx_kl 3.998); undo: set ...")
RUN = {
    "date": "2026-12-02 15:00:00 +0000", "commit": "abc1234",
    "command": "python -m puffer_tui.benchmarks.doctor --seeds 3 --json d.json",
    "machine": {"cpu": "Test CPU 9000", "cores": 2, "torch_cpu_capability": "AVX2",
                "native_bfloat16": False},
    "load_average": {"start": 1.0, "end": 2.0},
    "rows": [FIXED, RESTARTED, HEALTHY],
    "results": [{"case": "critic_blind", "env": "squared", "autopilot": []},
                {"case": "kl_blowup", "env": "gym:CartPole-v1",
                 "autopilot": [{"autopilot": [LOG, LOG.replace("kl_blowup's", "policy_collapse's")
                                              .replace("train.learning_rate 0.15 -> 0.015",
                                                       "train.ent_coef 0.0 -> 0.01")]}]},
                {"case": "healthy squared", "env": "squared", "autopilot": [{"autopilot": []}]}],
}


def _cells(text, case):
    line = next(line for line in text.splitlines() if line.startswith(f"| {case} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_each_case_has_its_score_left_alone_and_fixed_both_ways():
    text = doctor_report.markdown(RUN)
    assert _cells(text, "critic_blind")[1:] == [
        "`squared`", "--train.vf-coef 0 (no critic)", "3/3 at 20", "0.269",
        "0.867 (`train.vf_coef 1` at epoch 20)", "0.850 (3 changes)", "0.15%", "-"]
    kl = _cells(text, "kl_blowup")
    assert kl[5] == "500.000 (restart with `train.learning_rate 0.015` at epoch 1)"
    assert kl[6] == "9.300 (2 changes: train.learning_rate, train.ent_coef)"
    assert kl[8] == "policy_collapse"
    assert _cells(text, "healthy squared")[3:] == ["-", "1.000", "-", "1.000 (no change)",
                                                   "0.17%", "none"]


def test_the_header_names_the_machine_and_every_command():
    text = doctor_report.markdown(RUN)
    assert text.startswith("# Diagnosis doctor, 2026-12-02 15:00:00 +0000")
    assert ("- machine: Test CPU 9000, 2 cores, torch CPU capability AVX2, no native bfloat16; "
            "load average 1.00 at the start, 2.00 at the end") in text
    assert "- command: `python -m puffer_tui.benchmarks.doctor --seeds 3 --json d.json`" in text
    # a JSON merged from two runs by hand: the machine as a sentence, both commands
    merged = {**RUN, "machine": "AMD EPYC, 2 cores, shared", "commands": ["doctor A", "doctor B"],
              "commit": None, "load_average": None}
    text = doctor_report.markdown(merged)
    assert "- machine: AMD EPYC, 2 cores, shared\n- commit: not recorded" in text
    assert "- command: `doctor A`\n- command: `doctor B`" in text


def test_the_cli_prints_the_report_and_refuses_another_json_in_one_line(tmp_path):
    path = tmp_path / "doctor.json"
    path.write_text(json.dumps(RUN))
    cli = [sys.executable, "-m", "puffer_tui.benchmarks.doctor", "--report"]
    printed = subprocess.run([*cli, str(path)], capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == doctor_report.markdown(RUN)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"results": []}))
    refused = subprocess.run([*cli, str(other)], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "not a doctor --json output" in refused.stderr
    assert "Traceback" not in refused.stderr
