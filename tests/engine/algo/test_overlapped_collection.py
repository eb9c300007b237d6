"""Overlapped collection (vec.batch_size = num_envs / 2: one half steps while the trainer
infers for the other) stores exactly the transitions that stepping every env at once stores,
in the same segments, with or without an inline worker. Actions are made deterministic
(the policy's most likely action) so that both runs take the same ones."""

import functools

import numpy as np
import pytest
import torch

from puffer_tui.engine.algo.episode_log import EpisodeLog
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared.config import load_config

pytestmark = pytest.mark.filterwarnings("ignore:num_workers=.* is more than")

EXACT = ("observations", "actions", "rewards", "terminals", "truncations", "masks")
CLOSE = ("values", "logprobs")  # batched forwards of another size may round differently


def collected(env: str, batch_size: int, inline: bool, batches: int = 3):
    config = load_config(env, {
        "vec.backend": "multiprocessing", "vec.num_workers": 2, "vec.num_envs": 8,
        "vec.batch_size": batch_size, "vec.inline": inline, "train.horizon": 16,
        "train.minibatch_size": 32, "train.hidden_size": 16, "train.torch_threads": 1,
        "train.seed": 4})
    out = []
    with Trainer(config) as trainer:
        actor = trainer.policy.actor
        actor.sample = functools.partial(actor.sample, deterministic=True)
        for _ in range(batches):
            trainer._collect(EpisodeLog())
            buffer = trainer.buffer
            out.append({name: getattr(buffer, name).clone() for name in EXACT + CLOSE})
    return out


@pytest.mark.parametrize("env", ["cartpole", "snake"])
def test_overlapped_halves_store_the_same_batches_as_stepping_all_envs(env):
    reference = collected(env, 8, inline=False)
    assert any(bool(b["rewards"].any()) for b in reference), "a run without rewards proves little"
    for batch_size, inline in ((4, False), (4, True), (8, True)):
        got = collected(env, batch_size, inline)
        for index, (want, have) in enumerate(zip(reference, got, strict=True)):
            where = f"batch {index}, vec.batch_size {batch_size}, inline {inline}"
            for name in EXACT:
                assert torch.equal(want[name], have[name]), f"{name} differ in {where}"
            for name in CLOSE:
                np.testing.assert_allclose(want[name].numpy(), have[name].numpy(), rtol=1e-5,
                                           atol=1e-6, err_msg=f"{name} in {where}")
