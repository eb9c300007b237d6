"""`puffer-tui train --from RUN[/CHECKPOINT]`: a new run that records its parent and starts
from the parent's checkpoint (same weights and optimizer moments, global_step going on), with
any setting changed that the weights still fit; everything else refused in one line, exit 2,
before a run dir exists."""

import pytest
import torch
from engine_harness import make_run

from puffer_tui.app.cli import build_parser, main
from puffer_tui.app.commands.train import prepare_run
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.runtime.metrics import read_metrics
from puffer_tui.engine.runtime.process import main as engine_main
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.startup.branch import plan_branch, seed_state

EPOCH = 64 * 16  # agent steps per epoch of engine_harness.TINY


@pytest.fixture(scope="module")
def parent(tmp_path_factory):
    """A finished run of two epochs under its own runs root: (root, run dir)."""
    root = tmp_path_factory.mktemp("runs")
    run = make_run(root, **{"train.total_timesteps": 2 * EPOCH, "train.learning_rate": 0.01})
    assert engine_main([str(run)]) == 0
    return root, run


def parse(*argv):
    args, extra = build_parser().parse_known_args(["train", *argv])
    assert not extra
    args.extra = []
    return args


def files_under(root):
    return {p.relative_to(root): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_a_branch_records_its_parent_and_starts_from_its_checkpoint(parent):
    root, run = parent
    source = ckpt.latest_checkpoint(run)
    parent_files = files_under(run)
    child, resuming = prepare_run(parse("--from", run.name, "--runs-dir", str(root), "--headless",
                                        "--train.learning-rate", "0.002",
                                        "--train.total-timesteps", str(4 * EPOCH),
                                        "--train.adam-beta1", "0.9"))
    assert resuming and child != run and child.parent == run.parent
    config = cfg.load(child / rd.CONFIG_FILE)
    assert config.parent == str(source)  # PARENT_RUN_DIR/checkpoints/NAME.pt
    assert rd.run_info(child).parent == str(source)
    assert (config.train.learning_rate, config.train.total_timesteps) == (0.002, 4 * EPOCH)
    assert "branched from" in (child / rd.EVENTS_FILE).read_text()

    # what the engine does first: build from config.toml, load the seed checkpoint
    saved = ckpt.load_checkpoint(source)
    with Trainer(config) as trainer:
        trainer.load_state_dict(ckpt.load_latest(child)[1])
        assert trainer.global_step == saved["global_step"] == 2 * EPOCH
        for name, weight in saved["policy"].items():
            assert torch.equal(trainer.policy.state_dict()[name], weight), name
        moments = trainer.optimizer.state_dict()["state"]
        for index, entry in saved["optimizer"]["state"].items():
            assert torch.equal(moments[index]["exp_avg"], entry["exp_avg"])
        assert trainer.config.train.learning_rate == 0.002  # the branch's value, not 0.01
        assert trainer.optimizer.param_groups[0]["betas"] == (0.9, 0.999)

    assert engine_main([str(child), "--resume"]) == 0
    rows = read_metrics(child)
    assert [r["epoch"] for r in rows] == [3, 4]
    assert [r["global_step"] for r in rows] == [3 * EPOCH, 4 * EPOCH]
    assert rd.run_state(child) == "finished"
    assert files_under(run) == parent_files  # the parent is only read


def test_a_named_checkpoint_file_or_path_is_the_branch_point(parent):
    root, run = parent
    source = ckpt.latest_checkpoint(run)
    for text in (f"{run.name}/{source.name}", str(source), f"{run}/checkpoints/{source.name}"):
        plan = plan_branch(text, {"train.total_timesteps": str(4 * EPOCH)}, root)
        assert plan.checkpoint == source and plan.parent_run == run
        assert plan.changes == [f"train.total_timesteps {2 * EPOCH} -> {4 * EPOCH}"]


def test_what_does_not_carry_over_is_said(parent):
    root, run = parent
    base = cfg.load(run / rd.CONFIG_FILE)
    state = ckpt.load_checkpoint(ckpt.latest_checkpoint(run))
    other_seed = cfg.apply(base, {"train.seed": 7})
    seed, notes = seed_state(state, base, other_seed)
    assert seed["rng"] == {} and seed["vecenv"] is None and "train.seed 7" in notes[0]
    muon = cfg.apply(base, {"train.optimizer": "muon"})
    seed, notes = seed_state(state, base, muon)
    assert seed["optimizer"] is None and "starts afresh" in notes[0]
    assert seed["policy"] is state["policy"]


@pytest.mark.parametrize("argv, message", [
    (["--from", "no-such-run"], "no run 'no-such-run'"),
    (["--from", "{run}/best.pt"], "has no checkpoint 'best.pt'; it has step-"),
    (["--from", "{run}", "--train.hidden-size", "64"],
     "--train.hidden-size 64: the parent's weights have train.hidden_size = 32"),
    (["--from", "{run}", "--train.total-timesteps", "9999", "--env.size", "9"],
     "weights do not fit the branch's policy (env.size changed)"),
    (["--from", "{run}", "--train.total-timesteps", "9999", "--train.policy", "lstm"],
     "(train.policy changed)"),
    (["--from", "{run}"], "must be above it: add --train.total-timesteps 4096"),
    (["cartpole", "--from", "{run}"], "a branch keeps its parent's env (not cartpole)"),
    (["--from", "{run}", "--resume", "{run}"], "give one of them"),
    (["--from", "{run}", "--train.lerning-rate", "1"], "did you mean --train.learning-rate"),
])
def test_bad_branches_are_refused_in_one_line_before_any_run_dir(parent, capsys, argv,
                                                                  message):
    root, run = parent
    before = files_under(root)
    argv = [a.format(run=run.name) for a in argv]
    assert main(["train", *argv, "--headless", "--runs-dir", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert files_under(root) == before


def test_a_run_without_checkpoints_cannot_be_branched(tmp_path, capsys):
    run = make_run(tmp_path)
    assert main(["train", "--from", str(run), "--headless", "--runs-dir", str(tmp_path)]) == 2
    assert "has no checkpoint to branch from" in capsys.readouterr().err
    assert rd.list_runs(tmp_path) == [run]


def test_another_optimizer_starts_fresh_on_the_parents_weights(parent):
    root, run = parent
    plan = plan_branch(run.name, {"train.optimizer": "muon",
                                  "train.total_timesteps": str(4 * EPOCH)}, root)
    saved = ckpt.load_checkpoint(plan.checkpoint)
    with Trainer(plan.config) as trainer:
        trainer.load_state_dict(plan.state)
        assert all(torch.equal(trainer.policy.state_dict()[k], w)
                   for k, w in saved["policy"].items())
        assert trainer.global_step == 2 * EPOCH
        fresh = trainer.optimizer.state_dict()
        assert set(fresh) == {"adam", "muon"} and not fresh["adam"]["state"]
        muon_state = trainer.state_dict()
    # a Muon run's branch with other Adam settings: its Adam groups take them
    base = cfg.from_dict(muon_state["config"])
    seed, _ = seed_state(muon_state, base, cfg.apply(base, {"train.adam_beta1": 0.9,
                                                           "train.adam_eps": 1e-6}))
    adam_groups = seed["optimizer"]["adam"]["param_groups"]
    assert [(g["betas"], g["eps"]) for g in adam_groups] == [((0.9, 0.999), 1e-6)] * len(
        adam_groups)
    assert seed["optimizer"]["muon"] == muon_state["optimizer"]["muon"]


@pytest.mark.e2e
def test_the_command_line_branch_trains_on_from_the_parents_step(parent, tmp_path):
    import os
    import subprocess
    import sys

    root, run = parent
    runs = tmp_path / "runs"
    out = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "train", "--from", str(run), "--headless",
         "--runs-dir", str(runs), "--train.total-timesteps", str(3 * EPOCH)],
        capture_output=True, text=True, timeout=180, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"branch of {run.name} at step-000000002048" in out.stdout
    assert "finished: 3,072 steps" in out.stdout
    (child,) = rd.list_runs(runs)  # a branch may live under another runs root
    assert [r["global_step"] for r in read_metrics(child)] == [3 * EPOCH]
