"""`puffer-tui bench vec --report FILE`: the Markdown table of a `--json FILE` run, with the
run's machine, load and command, and each backend's ratios against the peers of that run."""

import json
import subprocess
import sys

import pytest

from puffer_tui.benchmarks import vec_report

MACHINE = {"cpu": "Test CPU 9000", "cores": 2, "torch_cpu_capability": "AVX2",
           "native_bfloat16": False}


def _result(backend, workers, batch, sps, cpu, zero_copy=None, error=None):
    return {"workload": "CartPole-v1", "backend": backend, "num_envs": 64,
            "num_workers": workers, "batch_size": batch, "sps": sps, "zero_copy": zero_copy,
            "error": error, "cpu_us_per_step": cpu, "rounds": [[sps, cpu]]}


RUN = {
    "date": "2026-12-02 15:00:00 +0000", "command": "puffer-tui bench vec --json vec.json",
    "commit": "abc1234", "machine": MACHINE, "load_average": {"start": 0.5, "end": 1.25},
    "cores": 2, "stat": "median", "repeat": 3, "seconds": 1.5,
    "results": [
        _result("serial", 1, 64, 30_000.0, 60.0, True),
        _result("multiprocessing", 2, 64, 40_000.0, 55.0, True),
        _result("multiprocessing-pool", 2, 32, 45_000.0, 52.5, True),
        _result("multiprocessing-pool", 2, 32, 20_000.0, 70.0, False),  # not its best
        _result("gymnasium-sync", 1, 64, 25_000.0, 40.0),
        _result("gymnasium-async", 64, 64, 0.0, None, error="OSError: too many files"),
    ],
    "best": [], "against_envpool": {},
}


def _rows(text):
    """The table's CartPole-v1 rows by their backend cell."""
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| CartPole-v1")]
    return {cells[1]: cells for cells in rows}


def test_the_table_holds_each_backend_s_best_and_its_ratios_to_the_peers():
    text = vec_report.markdown(RUN)
    rows = _rows(text)
    # the pool's best of its two settings, against Gymnasium's best (its sync, 25k) and ours
    assert rows["mp pool zero-copy"][5:] == ["45,000", "52.5", "1.80x", "1.12x", "1.50x"]
    assert rows["serial"][5:] == ["30,000", "60.0", "1.20x", "0.75x", "1.00x"]
    assert "mp pool gathered" not in rows
    assert rows["gym Async"][5] == "failed: OSError: too many files"
    assert text.startswith("# bench vec, 2026-12-02 15:00:00 +0000")
    assert ("- machine: Test CPU 9000, 2 cores, torch CPU capability AVX2, no native bfloat16; "
            "load average 0.50 at the start, 1.25 at the end") in text
    assert "- command: `puffer-tui bench vec --json vec.json`" in text
    assert "the median of 3 rounds of 1.5 s per setting" in text


def test_the_envpool_line_gives_ours_against_it():
    run = {**RUN, "against_envpool": {"ALE/Pong-v5": {
        "ours": {"backend": "serial-pool", "num_workers": 1, "batch_size": 4},
        "envpool": {"num_workers": 2, "batch_size": 4}, "sps_ratio": 1.06, "cpu_ratio": 0.9}}}
    assert ("ALE/Pong-v5 against EnvPool: ours (serial pool, 1 workers, batch 4) / EnvPool "
            "(2 threads, batch 4): steps/s 1.06x, CPU per step 0.90x") in vec_report.markdown(run)


def bench_vec(*argv, timeout=180):
    return subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", "bench", "vec", *argv],
                          capture_output=True, text=True, timeout=timeout)


def test_the_cli_prints_the_report_and_refuses_another_json_in_one_line(tmp_path):
    path = tmp_path / "vec.json"
    path.write_text(json.dumps(RUN))
    printed = bench_vec("--report", str(path))
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == vec_report.markdown(RUN)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"bench_learn": {}}))
    refused = bench_vec("--report", str(other))
    assert refused.returncode == 2 and "not a bench vec --json output" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_json_file_keeps_the_run_and_its_report_reads_it(tmp_path):
    path = tmp_path / "vec.json"
    ran = bench_vec("--seconds", "0.05", "--workload", "delay", "--delay-envs", "2", "--json",
                    str(path))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "agent-steps/second" in ran.stdout  # the table is printed as well
    data = json.loads(path.read_text())
    assert data["command"].startswith("puffer-tui bench vec --seconds 0.05")
    assert data["machine"]["cpu"] and data["load_average"]["end"] is not None
    assert data["seconds"] == 0.05 and data["repeat"] == 1
    text = vec_report.markdown(data)
    assert "| delay 1ms±0% | serial |" in text and "| delay 1ms±100% | gym Sync |" in text


def test_json_into_a_missing_directory_is_refused_before_measuring(tmp_path):
    refused = bench_vec("--json", str(tmp_path / "nowhere" / "vec.json"))
    assert refused.returncode == 2 and "no directory" in refused.stderr


@pytest.mark.parametrize("backend", ["serial", "gymnasium-sync"])
def test_a_backend_alone_has_no_ratio_to_a_missing_peer(backend):
    run = {**RUN, "results": [r for r in RUN["results"] if r["backend"] == backend]}
    row = next(iter(_rows(vec_report.markdown(run)).values()))
    gym, sync = row[7], row[8]
    assert sync == ""  # no synchronous workers in the run
    assert gym == ("1.00x" if backend == "gymnasium-sync" else "")
