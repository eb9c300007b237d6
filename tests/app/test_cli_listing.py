"""`envs` and `runs` at 80 columns: compact, nothing useful cut, error text printed as is."""

import os
import subprocess
import sys

from puffer_tui.engine.shared import run_dir as rd


def cli_at_80_columns(*args, columns=80):
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "24"}
    result = subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", *args],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_envs_prints_bounds_compactly():
    out = cli_at_80_columns("envs")
    assert max(map(len, out.splitlines())) <= 80
    assert "array" not in out and "e+0" not in out, out
    (row,) = [line for line in out.splitlines() if line.startswith("│ cartpole ")]
    assert "float32[4] ±1e4*" in row and "Discrete(2)" in row
    assert "uint8[121] 0..2" in out  # squared
    assert len(out.splitlines()) < 60


def make_run(root, name_env="cartpole", state="error", step=4_063_232, detail=None):
    run = rd.create_run_dir(name_env, root)
    (run / rd.CONFIG_FILE).write_text(f'env_name = "{name_env}"\n')
    status = {"state": state, "global_step": step, "total_timesteps": 20_000_000}
    if detail:
        status["error"] = detail
    rd.write_json_atomic(run / rd.STATUS_FILE, status)
    (run / rd.CHECKPOINT_DIR / f"step-{step:012d}-epoch-00000010.pt").write_bytes(b"x")
    return run


def test_runs_table_keeps_its_columns_whole_at_80_columns(tmp_path):
    runs = tmp_path / "runs"
    run = make_run(runs, detail="OSError: cannot write [/data] to [bold]disk")
    out = cli_at_80_columns("runs", "--runs-dir", str(runs))
    table = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]
    assert max(map(len, table)) <= 80
    assert "runs in runs" not in out
    assert f"runs directory: {runs.resolve()}" in out
    (row,) = [line for line in out.splitlines() if "cartpole " in line or "│ cartpole" in line]
    for cell in ("error", "4.06M/20M", "4.06M,"):
        assert cell in row, row
    # the run name is whole on its line
    name_cells = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert name_cells == [run.name]
    assert f"{run.name}: OSError: cannot write [/data] to [bold]disk" in out


def test_runs_says_the_first_line_of_an_error_and_where_the_rest_is(tmp_path):
    runs = tmp_path / "runs"
    make_run(runs, detail="WorkerHung: worker 0: no answer within 15 s\n"
                                "--- worker 0 traceback ---\n  File \"<frozen runpy>\"")
    out = cli_at_80_columns("runs", "--runs-dir", str(runs))
    assert "WorkerHung: worker 0: no answer within 15 s" in out
    assert "traceback" not in out and "frozen runpy" not in out
    assert "events.log" in out


def cli(*args):
    env = {**os.environ, "COLUMNS": "80", "LINES": "24"}
    return subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", *args],
                          capture_output=True, text=True, timeout=60, env=env)


def two_compared_runs(root):
    import time

    from compare_runs import make_compare_run

    slow = make_compare_run(root, learning_rate="0.01", score_gain=0.1, now=time.time() - 60)
    fast = make_compare_run(root, learning_rate="0.02", score_gain=0.2, set_at_s=25)
    return slow, fast


def test_runs_compare_prints_the_config_differences_and_final_figures(tmp_path):
    slow, fast = two_compared_runs(tmp_path)
    result = cli("runs", "--runs-dir", str(tmp_path), "--compare", slow.name, str(fast))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert not any("│" in line for line in lines)  # into a pipe: plain columns, no boxes
    assert slow.name in lines[1] and fast.name in lines[1]
    (lr,) = [line.split() for line in lines if line.split()[:1] == ["train.learning_rate"]]
    assert lr == ["train.learning_rate", "0.01", "0.02"]
    assert not any("total_timesteps" in line or "env_name" in line for line in lines)
    rows = {line.split("  ")[0].strip(): line.split()[-2:] for line in lines if line[:1] == " "}
    assert rows["steps"] == ["24,576", "24,576"] and rows["epochs"] == ["6", "6"]
    assert rows["best score"] == ["0.6", "1.2"] and rows["last score"] == ["0.6", "1.2"]
    assert rows["episode_return"] == ["0.6", "1.2"] and rows["episode_length"] == ["20", "20"]
    assert rows["mean SPS"] == ["404", "404"] and rows["uptime"] == ["0:01:00", "0:01:00"]
    assert rows["state"] == ["finished", "finished"]
    assert f"{fast.name}: step 12,288: train.learning_rate 0.02 -> 0.001" in lines


def test_runs_compare_json(tmp_path):
    import json

    slow, fast = two_compared_runs(tmp_path)
    result = cli("runs", "--runs-dir", str(tmp_path), "--json", "--compare", slow.name, "latest")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["config_differences"] == {"train.learning_rate": ["0.01", "0.02"]}
    import pytest

    assert [r["final"]["best score"] for r in data["runs"]] == pytest.approx([0.6, 1.2])
    (change,) = data["runs"][1]["set_events"]
    assert change["key"] == "train.learning_rate" and change["step"] == 12288
    assert data["runs"][0]["set_events"] == []


def test_runs_compare_refuses_missing_runs_and_runs_without_metrics(tmp_path):
    slow, fast = two_compared_runs(tmp_path)
    result = cli("runs", "--runs-dir", str(tmp_path), "--compare", slow.name, "nosuchrun")
    assert result.returncode == 2 and "no run 'nosuchrun'" in result.stderr
    assert result.stdout == ""
    (fast / rd.METRICS_FILE).write_text("")
    result = cli("runs", "--runs-dir", str(tmp_path), "--compare", slow.name, fast.name)
    assert result.returncode == 2
    assert f"{fast.name} has no metrics yet" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = cli("runs", "--runs-dir", str(tmp_path), "--compare", slow.name)
    assert result.returncode == 2 and "needs two runs or more" in result.stderr
    result = cli("runs", "--runs-dir", str(tmp_path), "--compare", slow.name, str(slow))
    assert result.returncode == 2 and "listed twice" in result.stderr
