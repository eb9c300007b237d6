"""One core count: engine/vec/sizing.py asks the OS; the trainer and the sweep use it."""

import os

import pytest

from puffer_tui.engine.algo import cpu_load, trainer
from puffer_tui.engine.shared.config import load_config
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

    from puffer_tui.engine.algo import trainer_setup

    monkeypatch.setattr(trainer_setup, "available_cores", lambda: 3)
    monkeypatch.setattr(cpu_load, "busy_cores_of_others", lambda: 0.0)
    before = torch.get_num_threads()
    config = load_config("squared", {"vec.backend": "multiprocessing", "vec.num_workers": 2,
                                     "vec.num_envs": 8, "train.horizon": 8,
                                     "train.minibatch_size": 16, "train.hidden_size": 16})
    seen = []
    with trainer.Trainer(config) as t:
        update = t.ppo.update
        monkeypatch.setattr(t.ppo, "update",
                            lambda *a, **k: (seen.append(torch.get_num_threads()), update(*a, **k))[1])
        t.run_epoch()
        assert seen == [3] and torch.get_num_threads() == 1  # 3 cores less 2 workers
    torch.set_num_threads(before)


def test_the_load_average_does_not_take_a_core_from_an_idle_machine(monkeypatch):
    """Some VMs (this project's dev box) read a load average of 1 with every core idle; the
    trainer used to give up a core to that phantom load. Idle cores are measured as idle."""
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0), raising=False)
    monkeypatch.setattr(cpu_load, "_busy_seconds", lambda cores: 1000.0)  # nothing runs
    cpu_load.forget()
    try:
        config = load_config("squared")
        assert trainer.auto_threads(config, phase="learn") == sizing.available_cores()
    finally:
        cpu_load.forget()


def test_the_measurement_subtracts_our_own_time_and_counts_the_rest(monkeypatch):
    """Others = the cores' busy time over the window less ours (our children's included)."""
    readings = iter([(100.0, 10.0), (100.9, 10.5)])  # (machine busy s, our s) before, after
    now = iter([0.0, 0.4, 0.5])
    ours = {}
    monkeypatch.setattr(cpu_load, "_busy_seconds", lambda cores: ours.setdefault(
        "pair", next(readings))[0])
    monkeypatch.setattr(cpu_load, "_own_seconds", lambda process: ours.pop("pair")[1])
    monkeypatch.setattr(cpu_load.time, "sleep", lambda s: None)
    monkeypatch.setattr(cpu_load.time, "monotonic", lambda: next(now))
    # 0.9 s busy, 0.5 s of it ours, over 0.4 s: one core's worth of others
    assert cpu_load._measure(0.4) == pytest.approx(1.0)


def test_a_child_that_exits_during_the_window_is_still_ours():
    """A reaped child's time moves to our children_user/system: it never looks like others'."""
    import subprocess
    import sys
    import threading
    import time

    burn = ("import time\nt = time.process_time()\n"
            "while time.process_time() - t < 0.6: pass\ntime.sleep(0.3)")
    child = subprocess.Popen([sys.executable, "-c", burn])
    time.sleep(0.75)  # it has burned its CPU and sleeps; it exits inside the window
    reaper = threading.Timer(0.2, child.wait)
    reaper.start()
    process = cpu_load.psutil.Process()
    before = cpu_load._own_seconds(process)
    time.sleep(0.5)
    reaper.join()
    assert child.poll() is not None
    assert cpu_load._own_seconds(process) >= before - 0.01  # not lost when it was reaped


@pytest.mark.skipif(os.getpid() == 1, reason="an orphan would be our child here")
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
        assert cpu_load.busy_cores_of_others(window=0.5) >= 0.4  # a core's worth, shared
    finally:
        os.kill(spinner, signal.SIGKILL)
        cpu_load.forget()


def test_a_failing_measurement_means_an_idle_machine(monkeypatch):
    def refuse(cores):
        raise cpu_load.psutil.AccessDenied()

    monkeypatch.setattr(cpu_load, "_busy_seconds", refuse)
    cpu_load.forget()
    try:
        assert cpu_load.busy_cores_of_others() == 0.0
    finally:
        cpu_load.forget()


def test_learner_ranks_do_not_count_their_siblings_as_load(monkeypatch):
    monkeypatch.setattr(sizing.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3},
                        raising=False)
    monkeypatch.setattr(cpu_load, "busy_cores_of_others", lambda: 2.0)  # ranks starting
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    config = load_config("squared")
    assert trainer.auto_threads(config, phase="learn") == 2  # its share of 4 cores


def test_the_load_watch_averages_others_since_its_last_look(monkeypatch):
    clock = iter([100.0, 101.0, 106.0, 116.0])
    machine = iter([50.0, 51.0, 56.0, 76.0])  # busy CPU seconds of the usable cores
    own = iter([10.0, 10.5, 13.0, 23.0])  # ours and our children's
    monkeypatch.setattr(cpu_load.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(cpu_load, "_busy_seconds", lambda cores: next(machine))
    monkeypatch.setattr(cpu_load, "_own_seconds", lambda process: next(own))
    monkeypatch.setattr(cpu_load, "usable_cores", lambda: [0, 1])
    watch = cpu_load.LoadWatch()
    assert watch.others_since_last(5.0) is None  # 1 s: too short to average, mark kept
    assert watch.others_since_last(5.0) == pytest.approx((6.0 - 3.0) / 6.0)  # since t=100
    assert watch.others_since_last(5.0) == pytest.approx((20.0 - 10.0) / 10.0)  # since t=106


def test_automatic_threads_give_back_cores_to_a_run_started_beside(monkeypatch):
    """Two runs started together both saw an idle machine and took both cores (each op then
    waited for a descheduled thread: a MiniGrid run fell from ~2,500 to ~190 steps/s); the
    load seen between epochs now sets the threads again, and a fixed count is left alone."""
    import torch

    from puffer_tui.engine.algo import trainer_setup

    monkeypatch.setattr(trainer_setup, "available_cores", lambda: 2)
    monkeypatch.setattr(cpu_load, "busy_cores_of_others", lambda: 0.0)  # idle at the start
    seen = iter([None, 1.0, 0.9, 0.2])
    monkeypatch.setattr(cpu_load.LoadWatch, "others_since_last", lambda self, s: next(seen))
    before = torch.get_num_threads()
    overrides = {"vec.backend": "serial", "vec.num_envs": 8, "train.horizon": 8,
                 "train.minibatch_size": 16, "train.hidden_size": 16}
    with trainer.Trainer(load_config("squared", overrides)) as t:
        assert t.torch_threads == (2, 2)
        chosen = []
        for _ in range(4):
            t.run_epoch()
            chosen.append((t.torch_threads, torch.get_num_threads()))
    assert chosen == [((2, 2), 2), ((1, 1), 1), ((1, 1), 1), ((2, 2), 2)]
    seen = iter([1.0])
    with trainer.Trainer(load_config("squared", {**overrides, "train.torch_threads": 2})) as t:
        t.run_epoch()
        assert t.torch_threads == (2, 2) and torch.get_num_threads() == 2
    torch.set_num_threads(before)
