"""One core count: engine/vec/sizing.py asks the OS; the trainer and the sweep use it."""

import os

import pytest

from puffer_tui.engine import cpu_load, trainer
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
    monkeypatch.setattr(cpu_load, "busy_cores_of_others", lambda: 0.0)
    config = load_config("squared", {"vec.backend": "multiprocessing", "vec.num_workers": 2,
                                     "vec.num_envs": 2})
    assert trainer.auto_threads(config) == 4  # 6 cores less the 2 env workers
    assert trainer.auto_threads(config, phase="learn") == 6  # the workers wait meanwhile
    monkeypatch.setattr(cpu_load, "busy_cores_of_others", lambda: 2.4)
    assert trainer.auto_threads(config, phase="learn") == 4  # others' load still counts
    monkeypatch.setattr(cpu_load, "busy_cores_of_others", lambda: 2.6)
    assert trainer.auto_threads(config, phase="learn") == 3  # a core mostly busy is taken


def test_the_learner_takes_the_idle_workers_cores_and_collection_gets_them_back(monkeypatch):
    import torch

    from puffer_tui.engine import trainer_setup

    monkeypatch.setattr(trainer_setup, "available_cores", lambda: 3)
    monkeypatch.setattr(cpu_load, "busy_cores_of_others", lambda: 0.0)
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


def test_the_load_average_does_not_take_a_core_from_an_idle_machine(monkeypatch):
    """Some VMs (this project's dev box) read a load average of 1 with every core idle; the
    trainer used to give up a core to that phantom load. Idle cores are measured as idle."""
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0), raising=False)
    cpu_load.forget()
    config = load_config("squared")
    assert trainer.auto_threads(config, phase="learn") == sizing.available_cores()


def test_a_process_spinning_on_a_core_is_measured_as_busy():
    import signal
    import subprocess
    import sys
    import time

    # not our child (a shell starts it and exits): our children's time counts as our own
    out = subprocess.run(["sh", "-c", f"'{sys.executable}' -c 'while True: pass' "
                          ">/dev/null 2>&1 & echo $!"], capture_output=True, text=True, check=True)
    spinner = int(out.stdout.strip())
    try:
        time.sleep(0.3)  # past its start-up
        cpu_load.forget()
        assert cpu_load.busy_cores_of_others(window=0.5) >= 0.6
    finally:
        os.kill(spinner, signal.SIGKILL)
        cpu_load.forget()


def test_this_process_and_its_children_are_not_others():
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        cpu_load.forget()
        assert cpu_load.busy_cores_of_others(window=0.5) < 0.5
    finally:
        child.kill()
        child.wait()
        cpu_load.forget()
