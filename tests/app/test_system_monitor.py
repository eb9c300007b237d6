"""app/system_monitor.py on this machine's own processes: the cores and RAM, the processes the
engine names (a worker's index in its role), a first sample that only primes a process's CPU,
and processes that are gone or no longer named."""

import subprocess
import sys

import psutil
import pytest

from puffer_tui.app.system_monitor import SystemMonitor


@pytest.fixture
def child():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def test_cores_and_ram_are_this_machines(child):
    sample = SystemMonitor().sample()
    assert len(sample.cores) == psutil.cpu_count()
    assert all(0.0 <= c <= 100.0 for c in sample.cores)
    assert 0 < sample.ram_used <= sample.ram_total == psutil.virtual_memory().total
    assert sample.processes == []


def test_named_processes_are_primed_then_measured(child):
    monitor = SystemMonitor()
    named = [{"role": "engine", "pid": child.pid},
             {"role": "worker", "index": 3, "pid": child.pid + 10**7},  # no such process
             {"role": "worker", "pid": "not a pid"}]
    first = monitor.sample(named)
    assert [(p.role, p.pid) for p in first.processes] == [("engine", child.pid),
                                                           ("worker 3", child.pid + 10**7)]
    engine, gone = first.processes
    assert engine.cpu is None and engine.rss > 0  # the first call only primes the CPU delta
    assert gone.cpu is None and gone.rss == 0  # no such process
    engine = monitor.sample(named).processes[0]
    assert engine.cpu is not None and engine.cpu >= 0.0


def test_a_process_no_longer_named_is_let_go(child):
    monitor = SystemMonitor()
    monitor.sample([{"role": "engine", "pid": child.pid}])
    monitor.sample([])
    again = monitor.sample([{"role": "engine", "pid": child.pid}]).processes[0]
    assert again.cpu is None  # primed afresh: its old handle was dropped


def test_a_process_that_died_reads_unknown(child):
    monitor = SystemMonitor()
    named = [{"role": "engine", "pid": child.pid}]
    monitor.sample(named)
    child.kill()
    child.wait()
    (load,) = monitor.sample(named).processes
    assert load.cpu is None and load.rss == 0
