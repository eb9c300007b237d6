"""Compute threads: only the pool that does the policy's arithmetic is multi-threaded, numpy's
BLAS for the plain-MLP (explicit_gradients.py) path and torch's otherwise. Both pools at N
threads on N cores took turns waiting for each other's spinning workers (a CartPole epoch
several times slower), so at no point of an epoch may both have more than one thread."""

import pytest
import torch

from puffer_tui.engine.algo import trainer_setup
from puffer_tui.engine.algo.trainer import Trainer
from puffer_tui.engine.shared.config import load_config


@pytest.fixture(autouse=True)
def threads_restored():
    torch_threads, blas_threads = trainer_setup.compute_threads()
    yield
    torch.set_num_threads(torch_threads)
    trainer_setup._blas_threads().limit(limits=blas_threads, user_api="blas")


def test_the_threads_go_to_one_pool():
    trainer_setup.set_compute_threads(2)
    assert trainer_setup.compute_threads() == (2, 1)
    trainer_setup.set_compute_threads(2, numpy_math=True)
    assert trainer_setup.compute_threads() == (1, 2)
    trainer_setup.set_compute_threads(1, numpy_math=True)
    assert trainer_setup.compute_threads() == (1, 1)


# cartpole's preset policy (gelu MLP, one trunk) on two threads, small enough for a busy box
SMALL = {"vec.num_envs": 16, "train.horizon": 16, "train.minibatch_size": 64,
         "train.hidden_size": 16, "train.total_timesteps": 10**6, "train.torch_threads": 2}


@pytest.mark.parametrize("precision, numpy_math", [("float32", True), ("bfloat16", False)])
def test_collection_and_learning_never_run_two_threaded_pools(monkeypatch, precision,
                                                              numpy_math):
    config = load_config("cartpole", {**SMALL, "train.precision": precision})
    seen = {"collect": set(), "learn": set()}
    with Trainer(config) as trainer:
        assert trainer.learner.numpy_math == numpy_math
        update = trainer.learner.update
        monkeypatch.setattr(trainer.learner, "update", lambda *a, **k: (
            seen["learn"].add(trainer_setup.compute_threads()), update(*a, **k))[1])
        if numpy_math:
            collect = trainer._explicit.collect
            monkeypatch.setattr(trainer._explicit, "collect", lambda *a, **k: (
                seen["collect"].add(trainer_setup.compute_threads()), collect(*a, **k))[1])
        else:
            step = trainer._step_fn
            monkeypatch.setattr(trainer, "_step_fn", lambda *a, **k: (
                seen["collect"].add(trainer_setup.compute_threads()), step(*a, **k))[1])
        trainer.run_epoch()
        trainer.run_epoch()
    expected = (1, 2) if numpy_math else (2, 1)
    assert seen == {"collect": {expected}, "learn": {expected}}
