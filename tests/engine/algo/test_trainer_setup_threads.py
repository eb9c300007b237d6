"""Compute threads: torch's pool gets them, numpy's BLAS one thread, in collection and in the
update alike, the plain-MLP (numpy_mlp.py) path included. OpenBLAS's idle workers
busy-wait: with both pools at N threads on N cores each took turns waiting for the other's
spinning workers (a CartPole epoch several times slower), and a second BLAS thread alone held
a core the rest needed."""

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


def test_the_threads_go_to_torch_and_blas_keeps_one():
    trainer_setup._blas_threads().limit(limits=2, user_api="blas")
    trainer_setup.set_compute_threads(2)
    assert trainer_setup.compute_threads() == (2, 1)
    trainer_setup.set_compute_threads(1)
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
        assert trainer.numpy_math == numpy_math
        update = trainer.ppo.update
        monkeypatch.setattr(trainer.ppo, "update", lambda *a, **k: (
            seen["learn"].add(trainer_setup.compute_threads()), update(*a, **k))[1])
        if numpy_math:
            collect = trainer._numpy_mlp.collect
            monkeypatch.setattr(trainer._numpy_mlp, "collect", lambda *a, **k: (
                seen["collect"].add(trainer_setup.compute_threads()), collect(*a, **k))[1])
        else:
            step = trainer._step_fn
            monkeypatch.setattr(trainer, "_step_fn", lambda *a, **k: (
                seen["collect"].add(trainer_setup.compute_threads()), step(*a, **k))[1])
        trainer.run_epoch()
        trainer.run_epoch()
    assert seen == {"collect": {(2, 1)}, "learn": {(2, 1)}}
