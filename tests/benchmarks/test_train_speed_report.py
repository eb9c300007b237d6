"""`puffer-tui bench train --report FILE`: the Markdown table of a `--json FILE` run (one env
alone, or ours against SB3 with --peer sb3), with the machine, load and command."""

import json
import subprocess
import sys

from puffer_tui.benchmarks import train_speed_report

RECORD = {"date": "2026-12-02 15:00:00 +0000", "commit": "abc1234",
          "machine": {"cpu": "Test CPU 9000", "cores": 2, "torch_cpu_capability": "AVX2",
                      "native_bfloat16": False},
          "load_average": {"start": 2.0, "end": 3.5}}

ALONE = {**RECORD, "command": "puffer-tui bench train squared --json t.json", "train": {
    "env": "squared", "backend": "multiprocessing", "num_envs": 1024, "num_workers": 2,
    "torch_threads": 1, "precision": "float32", "math": "torch", "sps": 250_000.0,
    "steps": 3_932_160, "epochs": 60, "seconds": 15.7, "cpu_seconds": 27.5,
    "cpu_us_per_step": 7.0, "timing": {},
    "timing_pct": {"env": 10.0, "forward": 25.0, "copy": 5.0, "learn": 59.0, "misc": 1.0}}}


def _side(name, sps, steps, seconds, cpu, reached_at=None):
    return {"name": name, "steps": steps, "seconds": seconds, "sps": sps,
            "reached": reached_at is not None, "reach_seconds": reached_at,
            "reach_steps": None if reached_at is None else int(sps * reached_at),
            "last_mean_length": 480.0 if reached_at else 300.0, "cpu_seconds": cpu}


PEER = {**RECORD, "command": "puffer-tui bench train --peer sb3 --json p.json", "peer": {
    "reach": 475.0, "window": 100, "budget": 60.0, "sb3_torch_threads": 1,
    "ours": _side("puffer-tui", 20_000.0, 100_000, 5.0, 6.0, reached_at=5.0),
    "peer": _side("stable-baselines3", 2_000.0, 120_000, 60.0, 60.0),
    "ratios": {"sps": 10.0, "time_to_reach_seconds": 12.0,
               "time_to_reach_seconds_bound": "lower", "time_to_reach_steps": 1.2,
               "time_to_reach_steps_bound": "lower"}}}


def _cells(text, first):
    line = next(line for line in text.splitlines() if line.startswith(f"| {first} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_a_run_alone_gives_its_rate_cpu_per_step_and_shares():
    text = train_speed_report.markdown(ALONE)
    row = _cells(text, "squared")
    assert row[1:] == ["1,024 (multiprocessing, 2 workers)", "float32, torch, 1 thread",
                       "250,000", "3,932,160 (60)", "15.7", "7.0", "10", "25", "5", "59", "1"]
    assert text.startswith("# bench train, 2026-12-02 15:00:00 +0000")
    assert ("- machine: Test CPU 9000, 2 cores, torch CPU capability AVX2, no native bfloat16; "
            "load average 2.00 at the start, 3.50 at the end") in text
    assert "- command: `puffer-tui bench train squared --json t.json`" in text


def test_the_peer_run_gives_ours_against_sb3_with_its_bounds():
    text = train_speed_report.markdown(PEER)
    assert _cells(text, "training agent-steps/s")[1:] == ["20,000", "2,000", "10.0x"]
    # CPU per step: ours 60 µs against SB3's 500 µs
    assert _cells(text, "CPU µs/step")[1:] == ["60.0", "500.0", "0.12x"]
    # SB3 never got there in its budget: the ratio is a lower bound
    assert _cells(text, "seconds to 475")[1:] == ["5.0", "> 60.0", ">= 12.0x"]
    assert _cells(text, "agent steps to 475")[1:] == ["100,000", "> 120,000", ">= 1.2x"]
    assert "Test CPU 9000" in text and "--peer sb3" in text.splitlines()[0]


def test_an_older_peer_json_without_cpu_figures_still_reports():
    old = json.loads(json.dumps(PEER))
    for side in ("ours", "peer"):
        del old["peer"][side]["cpu_seconds"]
    assert _cells(train_speed_report.markdown(old), "CPU µs/step")[1:] == ["-", "-", "-"]


def bench_train(*argv, timeout=180):
    return subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", "bench", "train", *argv],
                          capture_output=True, text=True, timeout=timeout)


def test_the_cli_prints_each_report_and_refuses_another_json_in_one_line(tmp_path):
    alone, peer = tmp_path / "alone.json", tmp_path / "peer.json"
    alone.write_text(json.dumps(ALONE))
    peer.write_text(json.dumps(PEER))
    printed = bench_train("--report", str(alone), "--report", str(peer))
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == (train_speed_report.markdown(ALONE) + "\n\n"
                                      + train_speed_report.markdown(PEER))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"results": []}))
    refused = bench_train("--report", str(other))
    assert refused.returncode == 2 and "not a bench train --json output" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_json_file_keeps_the_run_with_its_cpu_per_step(tmp_path):
    path = tmp_path / "train.json"
    ran = bench_train("squared", "--seconds", "0.3", "--json", str(path))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "agent-steps/s" in ran.stdout  # the table is printed as well
    data = json.loads(path.read_text())
    assert data["command"] == f"puffer-tui bench train squared --seconds 0.3 --json {path}"
    result = data["train"]
    assert result["sps"] > 0 and result["cpu_us_per_step"] > 0
    assert result["cpu_us_per_step"] == 1e6 * result["cpu_seconds"] / result["steps"]
    assert "| squared |" in train_speed_report.markdown(data)


def test_a_bare_json_still_prints_the_json_alone():
    ran = bench_train("squared", "--seconds", "0.2", "--json")
    assert ran.returncode == 0, ran.stderr[-2000:]
    data = json.loads(ran.stdout)
    assert data["train"]["env"] == "squared" and data["machine"]["cores"] >= 1
