"""train.total_timesteps changed live (`set`, the app's editor): the run's end moves and the
cosine learning rate goes on from where it was to 0 at the new end, with no jump; a checkpoint
taken after the change resumes on the moved schedule."""

import io

import pytest
import torch

from puffer_tui.engine.algo.schedule import learning_rate, progress
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared.config import ConfigError, load_config

SMALL = {"vec.num_envs": 8, "train.horizon": 8, "train.minibatch_size": 16,
         "train.hidden_size": 16, "train.torch_threads": 1, "train.learning_rate": 0.01}
M = 1_000_000


def _trainer(total):
    return Trainer(load_config("squared", {**SMALL, "train.total_timesteps": total}))


def test_a_live_budget_change_moves_the_end_and_the_lr_schedule_together():
    with _trainer(20 * M) as trainer:
        trainer.global_step = 10 * M  # half-way: the rate is half of lr0
        before = learning_rate(trainer.config.train, trainer.global_step, trainer.schedule)
        assert before == pytest.approx(0.005)
        value, applies = trainer.set_hyperparameter("train.total_timesteps", 40 * M)
        assert value == 40 * M and "now" in applies
        train, anchor = trainer.config.train, trainer.schedule
        assert learning_rate(train, 10 * M, anchor) == pytest.approx(before, rel=1e-12)
        assert progress(train, 25 * M, anchor) == pytest.approx(0.75)
        assert learning_rate(train, 40 * M, anchor) == 0.0
        assert not trainer.done
        row = trainer.run_epoch()  # 64 steps on: the rate the update used barely moved
        assert row["learning_rate"] == pytest.approx(before, rel=1e-3)
        buffer = io.BytesIO()
        torch.save(trainer.state_dict(), buffer)
        buffer.seek(0)
        state = torch.load(buffer, weights_only=True)
        with pytest.raises(ConfigError, match="not above the .* steps done; to end the run"):
            trainer.set_hyperparameter("train.total_timesteps", trainer.global_step)
        assert trainer.config.train.total_timesteps == 40 * M and trainer.schedule == anchor
    # the run's config.toml still says 20M; its checkpoint carries the moved budget and anchor
    with _trainer(20 * M) as resumed:
        resumed.load_state_dict(state)
        assert resumed.config.train.total_timesteps == 40 * M
        assert resumed.schedule == anchor
