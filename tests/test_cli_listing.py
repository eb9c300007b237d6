"""`envs` and `runs` at 80 columns: compact, nothing useful cut, error text printed as is."""

import os
import subprocess
import sys

from puffer_tui.engine import run_dir as rd


def cli_at_80_columns(*args):
    env = {**os.environ, "COLUMNS": "80", "LINES": "24"}
    result = subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", *args],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_envs_prints_bounds_compactly():
    out = cli_at_80_columns("envs")
    assert max(map(len, out.splitlines())) <= 80
    assert "array" not in out and "e+0" not in out, out
    (row,) = [line for line in out.splitlines() if "cartpole" in line]
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
    # the run name may wrap, but all of it is there
    name_cells = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert "".join(name_cells) == run.name
    assert f"{run.name}: OSError: cannot write [/data] to [bold]disk" in out
