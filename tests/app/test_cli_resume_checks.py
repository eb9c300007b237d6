"""Everything that makes a `train` impossible is refused in one line before anything is
written or started: no checkpoint, a live engine, a finished run, a missing CUDA device."""

import os
import subprocess
import sys

import psutil
import pytest
import torch

from puffer_tui.app.cli import main
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import list_checkpoints

TINY = ["--vec.num-envs", "64", "--train.horizon", "16", "--train.minibatch-size", "256",
        "--train.hidden-size", "32", "--train.torch-threads", "1"]


def make_run(root, checkpoint_step=None, total=20_000_000):
    run = rd.create_run_dir("squared", root)
    (run / rd.CONFIG_FILE).write_text(
        f'env_name = "squared"\n\n[train]\ntotal_timesteps = {total}\n')
    if checkpoint_step is not None:
        name = f"step-{checkpoint_step:012d}-epoch-00000004.pt"
        (run / rd.CHECKPOINT_DIR / name).write_bytes(b"not read by the checks")
    return run


def files_of(run):
    return {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file()}


def test_resume_without_checkpoint_is_refused_before_starting(tmp_path, capsys):
    run = make_run(tmp_path)
    before = files_of(run)
    assert main(["train", "--resume", str(run), "--headless"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "has no checkpoint to resume from" in err and "puffer-tui train squared" in err
    assert files_of(run) == before  # no engine.out, no status.json: nothing was started


def test_resume_refused_for_a_live_engine_leaves_its_config_alone(tmp_path, capsys):
    run = make_run(tmp_path, checkpoint_step=4096)
    me = psutil.Process()
    rd.write_json_atomic(run / rd.STATUS_FILE, {"state": "running", "pid": me.pid,
                                                "pid_create_time": me.create_time()})
    before = files_of(run)
    code = main(["train", "--resume", str(run), "--headless", "--train.learning-rate", "0.001"])
    err = capsys.readouterr().err
    assert code == 2
    assert "is still training" in err and f"puffer-tui attach {run}" in err
    assert files_of(run) == before


def test_attach_and_resume_of_a_run_without_checkpoint_agree(tmp_path, capsys):
    run = make_run(tmp_path)
    rd.write_json_atomic(run / rd.STATUS_FILE, {"state": "error", "pid": 1})
    assert main(["attach", str(run)]) == 2
    err = capsys.readouterr().err
    assert "--resume" not in err and "puffer-tui train squared" in err


def test_a_finished_run_is_extended_by_raising_its_budget(tmp_path, capsys):
    run = make_run(tmp_path, checkpoint_step=8192, total=8192)
    rd.write_json_atomic(run / rd.STATUS_FILE, {"state": "finished", "pid": 1})
    before = files_of(run)
    extend = f"puffer-tui train --resume {run} --train.total-timesteps 16384"
    assert main(["train", "--resume", str(run), "--headless"]) == 2
    assert extend in capsys.readouterr().err
    assert main(["attach", str(run)]) == 2
    assert extend in capsys.readouterr().err
    assert files_of(run) == before


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_cuda_on_a_machine_without_it_is_refused_before_the_run_exists(tmp_path, capsys):
    assert main(["train", "squared", "--headless", "--runs-dir", str(tmp_path),
                 "--train.device", "cuda"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--train.device cuda" in err and "sees no CUDA device" in err and "cpu" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.e2e
def test_extending_a_finished_run_trains_on_to_the_new_budget(tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "puffer_tui.app.cli", *args],
                              capture_output=True, text=True, timeout=180,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})

    first = cli("train", "squared", "--headless", "--runs-dir", str(tmp_path), *TINY,
                "--train.total-timesteps", "2048")
    assert first.returncode == 0, first.stdout + first.stderr
    (run,) = rd.list_runs(tmp_path)
    more = cli("train", "--resume", str(run), "--headless", "--train.total-timesteps", "4096")
    assert more.returncode == 0, more.stdout + more.stderr
    assert "finished: 4,096 steps" in more.stdout
    assert list_checkpoints(run)[-1].name.startswith("step-000000004096")


def test_a_damaged_checkpoint_is_named_before_the_config_changes(tmp_path, capsys):
    run = make_run(tmp_path, checkpoint_step=4096)
    before = files_of(run)
    code = main(["train", "--resume", str(run), "--headless", "--train.learning-rate", "0.001"])
    err = capsys.readouterr().err
    assert code == 2
    assert "step-000000004096-epoch-00000004.pt" in err and "corrupt" in err, err
    assert files_of(run) == before
