"""The adaptive learning rate: each update's measured KL moves the scale on the scheduled rate
down above twice the target, up below half of it, within its bounds; off at a target of 0."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from puffer_tui.engine.algo.adaptive_lr import STEP, AdaptiveRate


def train(kl=0.02, low=0.02, high=1.0):
    return SimpleNamespace(adaptive_lr_kl=kl, adaptive_lr_min_scale=low,
                           adaptive_lr_max_scale=high)


def test_an_overshooting_update_slows_the_next_and_a_timid_one_speeds_it_up_to_the_ceiling():
    rate = AdaptiveRate()
    assert rate.observe(train(), 0.09) == "down"
    assert rate.scale == pytest.approx(1 / STEP)
    assert rate.rate(train(), 3e-4) == pytest.approx(3e-4 / STEP)
    assert rate.observe(train(), 0.02) is None  # inside the band: unchanged
    assert rate.observe(train(), 0.001) == "up"
    assert rate.scale == pytest.approx(1.0)
    assert rate.observe(train(), 0.001) is None  # the set rate is the ceiling by default
    assert rate.scale == 1.0


def test_the_scale_stays_within_its_bounds():
    rate = AdaptiveRate()
    for _ in range(50):
        rate.observe(train(low=0.1), 1.0)
    assert rate.scale == pytest.approx(0.1)
    for _ in range(50):
        rate.observe(train(high=4.0), 0.0)
    assert rate.scale == pytest.approx(4.0)


def test_a_target_of_zero_leaves_the_scheduled_rate_alone():
    rate = AdaptiveRate(scale=0.5)
    assert rate.observe(train(kl=0.0), 5.0) is None
    assert rate.rate(train(kl=0.0), 1e-3) == 1e-3


def test_no_kl_measured_moves_nothing_and_the_scale_survives_a_checkpoint():
    rate = AdaptiveRate()
    assert rate.observe(train(), None) is None
    assert rate.observe(train(), float("nan")) is None
    rate.observe(train(), 0.5)
    restored = AdaptiveRate()
    restored.load_state_dict(rate.state_dict())
    assert restored.scale == rate.scale
    restored.load_state_dict(None)  # a checkpoint from before the controller
    assert restored.scale == 1.0


# -- in the trainer -------------------------------------------------------------------------------


def test_a_rate_far_too_high_is_brought_down_by_the_measured_kl_and_survives_a_resume():
    """squared at a rate 30x its preset's overshoots (approx_kl far above 2x the target): the
    rate the updates use falls below the scheduled one, epoch after epoch; the scale is in the
    checkpoint, so a resumed trainer continues with it. With the target at 0 the rate is the
    schedule's."""
    from puffer_tui.engine.algo.schedule import learning_rate
    from puffer_tui.engine.algo.trainer import Trainer
    from puffer_tui.engine.shared.config import load_config

    small = {"vec.num_envs": 8, "train.horizon": 8, "train.minibatch_size": 16,
             "train.hidden_size": 16, "train.total_timesteps": 100_000,
             "train.torch_threads": 1, "train.learning_rate": 0.45, "train.anneal_lr": False}
    trainer = Trainer(load_config("squared", small))
    try:
        rows = [trainer.run_epoch() for _ in range(6)]
        used = [r["learning_rate"] for r in rows]
        assert used[0] == pytest.approx(0.45)  # the first update has nothing measured yet
        assert used[-1] < 0.45 / STEP, used
        assert trainer.adaptive_lr.scale < 1.0
        state = trainer.state_dict()
    finally:
        trainer.close()
    resumed = Trainer(load_config("squared", small))
    try:
        resumed.load_state_dict(state)
        assert resumed.adaptive_lr.scale == pytest.approx(state["adaptive_lr"]["scale"])
    finally:
        resumed.close()
    off = Trainer(load_config("squared", {**small, "train.adaptive_lr_kl": 0.0}))
    try:
        rows = [off.run_epoch() for _ in range(3)]
        train = off.config.train
        assert [r["learning_rate"] for r in rows] == [pytest.approx(learning_rate(train, 0))] * 3
    finally:
        off.close()
