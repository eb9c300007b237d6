"""`puffer-tui train --headless` end to end, `runs` and `eval` on the result, and clear errors
for bad flags. (Ctrl-C in the headless display is tested with resume, in
tests/engine/runtime/test_process_resume.py.)"""

import json
import subprocess
import sys

import pytest

from puffer_tui.app.cli import main
from puffer_tui.engine.runtime.metrics import read_metrics
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.checkpoint import list_checkpoints

CLI = [sys.executable, "-m", "puffer_tui.app.cli"]
TINY_FLAGS = ["--vec.num-envs", "64", "--train.horizon", "16", "--train.minibatch-size", "256",
              "--train.hidden-size", "32", "--train.torch-threads", "1"]


def cli(*args, timeout=120):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.e2e
def test_headless_train_then_runs_and_eval(tmp_path, capsys):
    runs = tmp_path / "runs"
    result = cli("train", "squared", "--headless", "--runs-dir", str(runs), *TINY_FLAGS,
                 "--train.total-timesteps", "8192", "--train.checkpoint-interval", "4",
                 "--env.size", "7")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "finished" in result.stdout
    (run,) = rd.list_runs(runs)
    assert run.name.startswith("squared-")
    assert "size = 7" in (run / rd.CONFIG_FILE).read_text()
    rows = read_metrics(run)
    assert [r["epoch"] for r in rows] == list(range(1, 9))
    required = {"epoch", "global_step", "sps", "uptime", "learning_rate", "policy_loss",
                "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance",
                *(f"timing_{k}" for k in ("env", "forward", "copy", "learn", "misc")),
                *(f"timing_pct_{k}" for k in ("env", "forward", "copy", "learn", "misc"))}
    assert required <= set(rows[-1])
    assert {"score", "episode_return", "episode_length"} <= set().union(*rows)
    assert [p.name for p in list_checkpoints(run)][-1].startswith("step-000000008192")
    assert "checkpoint saved" in (run / rd.EVENTS_FILE).read_text()

    listing = json.loads(cli("runs", "--runs-dir", str(runs), "--json").stdout)
    (entry,) = listing["runs"]
    assert (entry["name"], entry["status"], entry["global_step"]) == (run.name, "finished", 8192), \
        entry

    played = cli("eval", str(run), "--episodes", "20", "--json")
    assert played.returncode == 0, played.stderr
    outcome = json.loads(played.stdout)
    assert outcome["episodes"] >= 20 and outcome["episode_length"] > 0
    assert outcome["checkpoint"].endswith(".pt") and outcome["score"] is not None

    capsys.readouterr()
    assert main(["eval", run.name, "--runs-dir", str(runs), "--episodes", "1",
                 "--render", "ascii", "--fps", "1000"]) == 0
    shown = capsys.readouterr().out
    assert "@" in shown and "episode 1/1" in shown and "squared: " in shown


def test_eval_of_a_corrupt_checkpoint_names_the_file(tmp_path, capsys):
    run = rd.create_run_dir("squared", tmp_path)
    (run / rd.CONFIG_FILE).write_text('env_name = "squared"\n')
    bad = run / rd.CHECKPOINT_DIR / "step-000000000064-epoch-00000001.pt"
    bad.write_bytes(b"PK\x03\x04 truncated")
    assert main(["eval", str(run)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "corrupt or truncated" in err
    assert main(["eval", str(tmp_path / "nothing-here")]) == 2
    assert "no run" in capsys.readouterr().err


@pytest.mark.parametrize("flags, message", [
    (["squared", "--train.learning-rate", "5"],
     r"--train.learning-rate 5: train.learning_rate = 5.0 is out of bounds: float in \[0, 1\]"),
    (["squared", "--vec.num-envs", "lots"], r"--vec.num-envs lots: .*not a valid int"),
    (["squared", "--env.size", "1"], r"--env.size 1: env.size = 1 is out of bounds: int in \[3, 255\]"),
    (["squared", "--env.colour", "red"], r"unknown config key env.colour"),
    (["squared", "--train.device", "tpu"], r"--train.device tpu: .*one of auto, cpu, cuda"),
    (["squared", "--bogus"], r"unrecognized argument '--bogus'"),
    (["squared", "train.toml"], r"unrecognized argument 'train.toml'\n"),  # no field hint
    (["squared", "--train.foo", "1"], r"unrecognized argument '--train.foo'; train has no field "
                                      r"'foo' \(`puffer-tui train --help` lists the --train\.\* "
                                      r"flags\)"),
    (["nosuchenv"], r"unknown env 'nosuchenv'; available envs: squared, .*; or gym:ID"),
    ([], r"name the ENV to train"),
    (["--resume", "nowhere"], r"no run 'nowhere'"),
])
def test_bad_flags_name_the_flag_and_its_bounds(tmp_path, capsys, flags, message):
    import re

    code = main(["train", "--headless", "--runs-dir", str(tmp_path), *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(message, err), err
    assert not list(tmp_path.iterdir())  # nothing was created


def test_resume_refuses_changes_the_checkpoint_depends_on(tmp_path, capsys):
    run = rd.create_run_dir("squared", tmp_path)
    (run / rd.CONFIG_FILE).write_text('env_name = "squared"\n')
    code = main(["train", "--resume", str(run), "--headless", "--vec.num-envs", "8"])
    assert code == 2
    assert "vec.num_envs cannot change when resuming" in capsys.readouterr().err


def test_help_lists_every_field_with_default(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    from puffer_tui.engine.shared.config import schema

    for spec in schema():
        assert spec.flag in text
    assert "default 0.015" in text and "[live]" in text
    assert "--env.size" in text and "--env.num-targets" in text
