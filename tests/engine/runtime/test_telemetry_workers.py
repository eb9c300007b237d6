"""Telemetry's "workers" and "cluster" (engine/runtime/telemetry.py): per-rank SPS from the
epoch row, per-actor SPS and node from the vec env (engine/vec/ray/worker_rates.py,
RayVec.worker_stats), and the Ray cluster's CPUs (engine/vec/ray/session.py's cluster_usage),
without a Ray cluster."""

from types import SimpleNamespace

from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.runtime.telemetry import Telemetry, TrainerFeed
from puffer_tui.engine.shared.config import load_config
from puffer_tui.engine.shared.protocol import CLUSTER, WORKERS
from puffer_tui.engine.vec.ray import session as ray_session
from puffer_tui.engine.vec.ray.worker_rates import WorkerRates


def test_worker_rates_are_steps_per_second_over_windows_of_a_second_or_more():
    now = [100.0]
    rates = WorkerRates(2, clock=lambda: now[0])
    rates.add(0, 500)
    rates.add(1, 100)
    now[0] = 100.5
    assert rates.rates() == [0.0, 0.0]  # under a second: the last window's (none yet)
    now[0] = 102.0
    assert rates.rates() == [250.0, 50.0]
    rates.add(0, 300)
    now[0] = 102.4
    assert rates.rates() == [250.0, 50.0]  # asked again too soon: same window
    now[0] = 103.0
    assert rates.rates() == [300.0, 0.0]


def test_cluster_usage_is_what_ray_has_handed_out_or_none():
    ray = SimpleNamespace(cluster_resources=lambda: {"CPU": 32.0, "memory": 1e9},
                          available_resources=lambda: {"CPU": 29.0})
    assert ray_session.cluster_usage(ray) == {"cpus": 32.0, "cpus_reserved": 3.0}

    def gone():
        raise RuntimeError("Ray has not been started yet")

    assert ray_session.cluster_usage(SimpleNamespace(cluster_resources=gone)) is None


class _Vec:
    def __init__(self):
        self.fail = False

    def worker_stats(self):
        if self.fail:
            raise RuntimeError("the vec env was closed")
        return [{"actor": 0, "node": "box-1", "sps": 900.0}]

    def cluster_usage(self):
        return {"cpus": 8.0, "cpus_reserved": 2.0}


def test_snapshot_lists_ranks_then_actors_and_the_cluster():
    config = load_config("squared")
    trainer = SimpleNamespace(config=config, progress={}, worker_pids=[], device="cpu",
                              vecenv=_Vec())
    telemetry = Telemetry(config, "run", RunControl())
    telemetry.attach(TrainerFeed.of(trainer))
    ranks = [{"rank": 0, "node": "gpu-a", "sps": 10.0}, {"rank": 1, "node": "gpu-b", "sps": 9.0}]
    telemetry.record({WORKERS: ranks})
    snap = telemetry.snapshot().to_wire()
    assert snap[WORKERS] == [*ranks, {"actor": 0, "node": "box-1", "sps": 900.0}]
    assert snap[CLUSTER] == {"cpus": 8.0, "cpus_reserved": 2.0}
    trainer.vecenv.fail = True  # a closed vec env must not break telemetry
    assert telemetry.snapshot().workers == ranks


def test_one_process_without_ray_has_no_workers_and_no_cluster():
    config = load_config("squared")
    trainer = SimpleNamespace(config=config, progress={}, worker_pids=[], device="cpu",
                              vecenv=object())
    telemetry = Telemetry(config, "run", RunControl())
    telemetry.attach(TrainerFeed.of(trainer))
    snap = telemetry.snapshot().to_wire()
    assert snap[WORKERS] == [] and snap[CLUSTER] is None


def test_the_other_ranks_on_this_machine_are_listed_as_processes():
    config = load_config("squared")
    world = SimpleNamespace(local_peer_pids=lambda: [(1, 4242), (3, 4343)])
    trainer = SimpleNamespace(config=config, progress={}, worker_pids=[77], device="cpu",
                              vecenv=object(), world=world)
    telemetry = Telemetry(config, "run", RunControl())
    telemetry.attach(TrainerFeed.of(trainer))
    processes = telemetry.snapshot().processes
    assert processes[1:] == [{"role": "rank", "index": 1, "pid": 4242},
                             {"role": "rank", "index": 3, "pid": 4343},
                             {"role": "worker", "index": 0, "pid": 77}]
