"""What a resume trains with: the live hyperparameters given for the resume win over the
checkpoint's, live changes made while the run trained survive, and the learning-rate and beta
schedules continue smoothly when the budget changes."""

import io
import math

import pytest
import torch

from puffer_tui.engine.algo.sampling import annealed_beta
from puffer_tui.engine.algo.schedule import START, learning_rate, progress
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.runtime.metrics import read_metrics
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import load_config

SMALL = {"vec.num_envs": 8, "train.horizon": 8, "train.minibatch_size": 16,
         "train.hidden_size": 16, "train.total_timesteps": 10_000, "train.torch_threads": 1}
M = 1_000_000


def _trainer(**overrides):
    return Trainer(load_config("squared", {**SMALL, **overrides}))


def _roundtrip(state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def _checkpoint(**overrides):
    """A checkpoint of a run built with `overrides` whose vf_coef was changed live to 1.25."""
    with _trainer(**overrides) as first:
        first.run_epoch()
        first.set_hyperparameter("train.vf_coef", 1.25)
        return _roundtrip(first.state_dict())


def test_live_values_given_for_a_resume_win_and_live_changes_survive():
    base = {"train.learning_rate": 0.015, "train.ent_coef": 0.001, "train.anneal_lr": False}
    state = _checkpoint(**base)
    # `train --resume RUN --train.learning-rate 0.001 --train.ent-coef 0.05` rewrote config.toml
    with _trainer(**{**base, "train.learning_rate": 0.001, "train.ent_coef": 0.05}) as resumed:
        resumed.load_state_dict(state)
        assert resumed.config.train.learning_rate == 0.001
        assert resumed.config.train.ent_coef == 0.05
        assert resumed.config.train.vf_coef == 1.25  # changed live, not given: restored
        row = resumed.run_epoch()
        assert row["learning_rate"] == pytest.approx(0.001)
        assert resumed.optimizer.param_groups[0]["lr"] == pytest.approx(0.001)
        again = _roundtrip(resumed.state_dict())
    # resuming that run again without new values keeps them (and the live change)
    with _trainer(**{**base, "train.learning_rate": 0.001, "train.ent_coef": 0.05}) as third:
        third.load_state_dict(again)
        train = third.config.train
        assert (train.learning_rate, train.ent_coef, train.vf_coef) == (0.001, 0.05, 1.25)


def test_resume_without_new_values_restores_the_checkpoints_live_values():
    state = _checkpoint(**{"train.ent_coef": 0.002})
    with _trainer(**{"train.ent_coef": 0.002}) as resumed:
        resumed.load_state_dict(state)
        assert resumed.config.train.vf_coef == 1.25
        assert resumed.config.train.ent_coef == 0.002


def test_engine_resume_trains_with_the_values_written_to_config_toml(tmp_path):
    from engine_harness import make_run

    from puffer_tui.engine.runtime.process import main as engine_main

    steps = 64 * 16
    run = make_run(tmp_path, **{"train.total_timesteps": 2 * steps, "train.anneal_lr": False,
                                "train.learning_rate": 0.015})
    with Trainer(cfg.load(run / rd.CONFIG_FILE)) as trainer:
        trainer.run_epoch()
        ckpt.save_checkpoint(run, trainer.state_dict())
    # what `puffer-tui train --resume RUN --train.learning-rate 0.001` does to the run
    config = cfg.apply(cfg.load(run / rd.CONFIG_FILE), {"train.learning_rate": 0.001})
    cfg.save(config, run / rd.CONFIG_FILE)
    assert engine_main([str(run), "--resume"]) == 0
    rows = read_metrics(run)
    assert [r["epoch"] for r in rows] == [2]
    assert rows[0]["learning_rate"] == pytest.approx(0.001)


def test_schedules_continue_smoothly_when_a_resume_changes_the_budget():
    lr0 = 0.01
    with _trainer(**{"train.total_timesteps": 20 * M, "train.learning_rate": lr0}) as first:
        first.global_step = 10 * M  # as if stopped half-way through 20M steps
        before = learning_rate(first.config.train, first.global_step, first.schedule)
        beta_before = annealed_beta(0.2, progress(first.config.train, first.global_step))
        state = _roundtrip(first.state_dict())
    assert before == pytest.approx(0.5 * lr0)

    with _trainer(**{"train.total_timesteps": 12 * M, "train.learning_rate": lr0}) as resumed:
        resumed.load_state_dict(state)
        train, anchor = resumed.config.train, resumed.schedule
        assert learning_rate(train, 10 * M, anchor) == pytest.approx(before, rel=1e-9)
        assert annealed_beta(0.2, progress(train, 10 * M, anchor)) == pytest.approx(beta_before)
        row = resumed.run_epoch()  # 64 steps on: the rate has barely moved
        assert row["learning_rate"] == pytest.approx(before, rel=1e-3)
        # half of the remaining budget: half of the remaining cosine, then the floor at the end
        assert learning_rate(train, 11 * M, anchor) == pytest.approx(
            lr0 * 0.5 * (1 + math.cos(math.pi * 0.75)), rel=1e-9)
        assert learning_rate(train, 12 * M, anchor) == 0.0
        assert progress(train, 12 * M, anchor) == 1.0
        resumed.global_step = 12 * M - 64
        assert resumed.run_epoch()["learning_rate"] == pytest.approx(0.0, abs=1e-12)
        again = _roundtrip(resumed.state_dict())
    # a further resume with the same budget keeps the re-anchored schedule
    with _trainer(**{"train.total_timesteps": 12 * M, "train.learning_rate": lr0}) as third:
        third.load_state_dict(again)
        assert third.schedule == anchor


def test_same_budget_keeps_the_original_schedule_exactly():
    with _trainer(**{"train.total_timesteps": 20 * M}) as first:
        first.global_step = 7 * M
        state = _roundtrip(first.state_dict())
    with _trainer(**{"train.total_timesteps": 20 * M}) as resumed:
        resumed.load_state_dict(state)
        assert resumed.schedule == START
        train = resumed.config.train
        assert learning_rate(train, 9 * M, resumed.schedule) == \
            train.learning_rate * 0.5 * (1.0 + math.cos(math.pi * (9 * M / (20 * M))))
