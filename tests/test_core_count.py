"""One core count: engine/vec/sizing.py asks the OS; the trainer and the sweep use it."""

import os

import pytest

from puffer_tui.engine import trainer
from puffer_tui.engine.config import load_config
from puffer_tui.engine.vec import sizing


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")
def test_usable_cores_are_the_affinity_sorted_and_the_count_matches(monkeypatch):
    monkeypatch.setattr(sizing.os, "sched_getaffinity", lambda pid: {5, 1, 3})
    assert sizing.usable_cores() == [1, 3, 5]
    assert sizing.available_cores() == 3


def test_without_affinity_every_core_is_usable(monkeypatch):
    monkeypatch.delattr(sizing.os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(sizing.os, "cpu_count", lambda: None)
    assert sizing.usable_cores() == [0]  # an OS that cannot say still has one core


def test_auto_threads_counts_the_cores_this_process_may_use(monkeypatch):
    monkeypatch.setattr(sizing.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5},
                        raising=False)
    monkeypatch.setattr(trainer.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    config = load_config("squared", {"vec.backend": "multiprocessing", "vec.num_workers": 2,
                                     "vec.num_envs": 2})
    assert trainer.auto_threads(config) == 4  # 6 cores less the 2 env workers
    assert trainer.auto_threads(config, phase="learn") == 6  # the workers wait meanwhile
    monkeypatch.setattr(trainer.os, "getloadavg", lambda: (2.5, 0.0, 0.0))
    assert trainer.auto_threads(config, phase="learn") == 4  # others' load still counts


def test_the_learner_takes_the_idle_workers_cores_and_collection_gets_them_back(monkeypatch):
    import torch

    from puffer_tui.engine import trainer_setup

    monkeypatch.setattr(trainer_setup, "available_cores", lambda: 3)
    monkeypatch.setattr(trainer.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    before = torch.get_num_threads()
    config = load_config("squared", {"vec.backend": "multiprocessing", "vec.num_workers": 2,
                                     "vec.num_envs": 8, "train.horizon": 8,
                                     "train.minibatch_size": 16, "train.hidden_size": 16})
    seen = []
    with trainer.Trainer(config) as t:
        update = t.learner.update
        monkeypatch.setattr(t.learner, "update",
                            lambda *a, **k: (seen.append(torch.get_num_threads()), update(*a, **k))[1])
        t.run_epoch()
        assert seen == [3] and torch.get_num_threads() == 1  # 3 cores less 2 workers
    torch.set_num_threads(before)
