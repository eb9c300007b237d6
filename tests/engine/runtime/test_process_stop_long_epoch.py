"""`stop` in an epoch far longer than a second cuts the epoch at the next safe point instead of
waiting for its end; short epochs still end first, as before.

The engine test makes one epoch about a minute of work on this machine (a huge collection),
stops it as soon as it runs, and expects the stop's checkpoint, its event and a resume that
goes on. The trainer tests cut each phase at a chosen safe point and check the counters.
"""

import pytest
from engine_harness import kill_engine, make_run, wait_until

from puffer_tui.app.engine_client import EngineClient
from puffer_tui.app.engine_launcher import launch_engine
from puffer_tui.engine.algo.epoch_cut import EpochCut
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.config import load_config

# 4096 envs x 4096 steps: 16.8M steps in one epoch (minutes here), a budget of two epochs
LONG_EPOCH = {"vec.num_envs": 4096, "train.horizon": 4096, "train.minibatch_size": 4096 * 64,
              "train.total_timesteps": 2 * 4096 * 4096}


def test_stop_in_a_long_collection_cuts_it_checkpoints_and_resume_goes_on(tmp_path):
    run = make_run(tmp_path, "squared", **LONG_EPOCH)
    handle = launch_engine(run)
    try:
        client = EngineClient.connect(run)
        wait_until(lambda: client.call("status")["global_step"] > 0, 60, what="steps")
        assert client.call("stop")["state"] == "stopping"
        # a hang guard, not a timing: the epoch left alone would run for minutes
        assert handle.wait(60) == 0
        client.close()
        events = (run / rd.EVENTS_FILE).read_text()
        assert "stop: the epoch's partial collection (" in events and "was dropped" in events
        assert rd.run_state(run) == "stopped"
        state = ckpt.load_checkpoint(ckpt.latest_checkpoint(run))
        assert state["global_step"] == 0 and state["epoch"] == 0  # nothing was learnt from
        assert state["vecenv"] is not None  # the envs' episodes go on from where they were
    finally:
        kill_engine(run)
        handle.wait(30) if handle.poll() is None else None


def _trainer(cut_after: int, phase: str):
    """A tiny trainer whose cut_short() says yes at the `cut_after`-th safe point of `phase`
    ("collect": between env steps, "learn": between minibatches)."""
    config = load_config("squared", {"vec.num_envs": 16, "train.horizon": 16,
                                     "train.minibatch_size": 64, "train.update_epochs": 2,
                                     "train.hidden_size": 16, "train.torch_threads": 1})
    seen = {"collect": 0, "learn": 0}

    def safe_point(between_steps=False):
        seen["phase"] = "collect" if between_steps else "learn"

    trainer = Trainer(config, safe_point=safe_point)
    original = trainer._safe_point

    def counted(between_steps: bool = False):
        seen[("collect" if between_steps else "learn")] += 1
        original(between_steps)

    trainer._safe_point = counted

    def cut():
        return seen[phase] >= cut_after

    def counting_from_now():
        seen.update(collect=0, learn=0)
        return cut

    return trainer, counting_from_now


@pytest.mark.parametrize("phase", ["collect", "learn"])
def test_a_cut_epoch_leaves_the_trainer_consistent(phase):
    trainer, cut = _trainer(3, phase)
    with trainer:
        trainer.run_epoch()  # a whole epoch first
        step, epoch = trainer.global_step, trainer.epoch
        weights = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
        trainer.cut_short = cut()  # safe points counted from here
        with pytest.raises(EpochCut, match="collection" if phase == "collect" else "update"):
            trainer.run_epoch()
        trainer.cut_short = None
        changed = any(not v.equal(weights[k]) for k, v in trainer.policy.state_dict().items())
        if phase == "collect":  # nothing learnt, the steps not counted
            assert (trainer.global_step, trainer.epoch, changed) == (step, epoch, False)
        else:  # learnt from part of the batch: the epoch and its steps count
            assert trainer.epoch == epoch + 1 and trainer.global_step == step + 16 * 16
            assert changed
        # what telemetry shows agrees with the checkpoint about to be written (the header said
        # epoch 51 of a stopped run whose checkpoint was epoch 52)
        assert (trainer.progress["epoch"], trainer.progress["global_step"]) == \
            (trainer.epoch, trainer.global_step)
        state = trainer.state_dict()  # a checkpoint can be taken at once
        trainer.run_epoch()  # and training goes on
    assert state["global_step"] == (step if phase == "collect" else step + 256)


def test_an_epoch_over_the_limit_is_warned_of_once_with_its_figures(tmp_path, monkeypatch):
    """The engine says when one epoch trains for minutes (here: the limit lowered to 0 s), once,
    with the epoch's steps and rate and how to shorten it; a resumed run's first epoch is
    measured from the checkpoint's uptime, not from zero."""
    from puffer_tui.engine.runtime import process

    run = make_run(tmp_path, "squared", **{"train.total_timesteps": 3 * 64 * 16})
    monkeypatch.setattr(process, "LONG_EPOCH", 0.0)
    assert process.Engine(run).run() == 0
    warned = [line for line in (run / rd.EVENTS_FILE).read_text().splitlines()
              if "one epoch takes" in line]
    assert len(warned) == 1 and "1,024 steps at" in warned[0], warned
    assert "lower vec.num_envs or train.horizon" in warned[0]
    # the first run's three epochs together: one resumed epoch is about a third of it, but
    # measured from zero (not the checkpoint's uptime) it would be more than all three
    from puffer_tui.engine.runtime.metrics import read_metrics
    from puffer_tui.engine.shared import config as cfg

    monkeypatch.setattr(process, "LONG_EPOCH", read_metrics(run)[-1]["uptime"])

    config = cfg.load(run / rd.CONFIG_FILE)
    config.train.total_timesteps *= 2
    cfg.save(config, run / rd.CONFIG_FILE)
    assert process.Engine(run, resume=True).run() == 0
    assert (run / rd.EVENTS_FILE).read_text().count("one epoch takes") == 1
