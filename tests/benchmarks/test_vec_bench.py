"""`puffer-tui bench vec`: the settings it tries are valid and its JSON has the promised shape."""

import json
import subprocess
import sys

import pytest

from puffer_tui.benchmarks import vec as bench_vec
from puffer_tui.benchmarks.vec_workloads import DelayEnv, workloads
from puffer_tui.engine.vec.sizing import plan_workers


@pytest.mark.parametrize("cores", [1, 2, 8])
@pytest.mark.parametrize("sizes", [(16384, 16, 4), (6, 3, 2), (1, 1, 1)])
def test_every_setting_tried_is_a_valid_plan(cores, sizes):
    for workload in workloads(*sizes):
        settings = bench_vec.settings_for(workload, cores)
        assert [s[0] for s in settings[:2]] == ["serial", "multiprocessing"]
        for _, workers, batch, zero_copy in settings:
            with pytest.warns(RuntimeWarning) if workers > cores else _no_warning():
                plan_workers(workload.num_envs, workers, batch, zero_copy, cores=cores)


class _no_warning:
    def __enter__(self):
        import warnings

        self._catcher = warnings.catch_warnings()
        self._catcher.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        self._catcher.__exit__(*exc)


def test_ratios_compare_with_gymnasiums_best_and_our_sync():
    R = bench_vec.Result
    results = [
        R("w", "serial", 4, 1, 4, 100.0), R("w", "multiprocessing", 4, 2, 4, 150.0),
        R("w", "multiprocessing-pool", 4, 4, 1, 300.0),
        R("w", "multiprocessing-pool", 4, 2, 2, 200.0),
        R("w", "gymnasium-sync", 4, 1, 4, 120.0), R("w", "gymnasium-async", 4, 4, 4, 60.0),
    ]
    summary = bench_vec.ratios(results)
    assert summary[("w", "multiprocessing-pool")]["vs_gymnasium_best"] == pytest.approx(2.5)
    assert summary[("w", "multiprocessing-pool")]["vs_our_sync"] == pytest.approx(2.0)
    assert summary[("w", "serial")]["vs_our_sync"] == pytest.approx(100 / 150)


def test_delay_env_has_the_asked_mean_and_spread():
    env = DelayEnv(delay_s=2e-3, spread=1.0)
    env.reset(seed=0)
    draws = [env._delay() for _ in range(4000)]
    mean = sum(draws) / len(draws)
    std = (sum((d - mean) ** 2 for d in draws) / len(draws)) ** 0.5
    assert mean == pytest.approx(2e-3, rel=0.1) and std == pytest.approx(2e-3, rel=0.1)
    assert DelayEnv(delay_s=1e-3, spread=0.0)._delay() == 1e-3
    with pytest.raises(ValueError, match="must be >= 0"):
        DelayEnv(delay_s=-1.0)


def test_json_output_lists_every_backend():
    out = subprocess.run(
        [sys.executable, "-m", "puffer_tui.app.cli", "bench", "vec", "--json", "--seconds",
         "0.05", "--workload", "delay", "--delay-envs", "2"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    backends = {r["backend"] for r in data["results"]}
    assert {"serial", "multiprocessing", "multiprocessing-pool", "gymnasium-sync",
            "gymnasium-async"} <= backends
    cores = data["cores"]
    assert cores < 2 or "multiprocessing-inline" in backends
    for r in data["results"]:
        assert r["error"] is None, r
        assert r["sps"] > 0
        assert {"workload", "backend", "num_envs", "num_workers", "batch_size"} <= r.keys()


def test_median_stat_and_the_comparison_with_envpool():
    R = bench_vec.Result
    fast = R("p", "multiprocessing-pool", 8, 4, 2, 0.0, rounds=[[500, 310], [900, 300],
                                                                [700, 305]])
    cheap = R("p", "serial", 8, 1, 8, 0.0, rounds=[[300, 250], [None, None], [420, 260]])
    theirs = R("p", "envpool", 8, 2, 2, 0.0, rounds=[[400, 290], [600, 280], [500, 300]])
    for r in (fast, cheap, theirs):
        bench_vec.summarize(r, "median")
    assert (fast.sps, fast.cpu_us_per_step) == (700, 305)
    assert (cheap.sps, cheap.cpu_us_per_step) == (360, 255)  # the failed round left out
    peer = bench_vec.against_envpool([fast, cheap, theirs])["p"]
    # the fastest of ours costs more per step than EnvPool: the fastest that does not is ours
    assert peer["ours"]["backend"] == "serial"
    assert peer["sps_ratio"] == pytest.approx(360 / 500)
    assert peer["cpu_ratio"] == pytest.approx(255 / 290)
    assert peer["sps_ratio_rounds"] == pytest.approx([300 / 400, 420 / 500])
    assert len(peer["every_setting"]) == 2
    bench_vec.summarize(fast, "best")
    assert (fast.sps, fast.cpu_us_per_step) == (900, 300)


@pytest.mark.parametrize("cores", [1, 2, 8])
def test_envpool_tries_a_thread_per_core_and_twice_that(monkeypatch, cores):
    """Ours' workers each hold a block of C++ threads (2 workers x 2 threads on 2 cores), so
    EnvPool is run with as many threads as that too, not only one per core; its fastest setting
    is the one compared."""
    import dataclasses

    monkeypatch.setattr(bench_vec.vec_runners, "envpool_available", lambda: True)
    cartpole = next(w for w in workloads(16, 16, 4) if w.name == "CartPole-v1")
    workload = dataclasses.replace(cartpole, envpool_id="CartPole-v1")
    envpool = [(r.num_workers, r.batch_size)
               for r, _ in bench_vec.plan_runs(workload, 1.0, cores) if r.backend == "envpool"]
    threads = sorted({cores, min(2 * cores, workload.num_envs)})
    assert envpool == [(t, b) for t in threads for b in (16, 8, 4)]


@pytest.mark.parametrize("cores, batches", [(1, [4]), (2, [4, 2]), (8, [4, 2])])
def test_the_async_pool_tries_as_many_blocks_as_envpool_has_threads(cores, batches):
    """EnvPool tries up to 2 x cores threads and batches of a quarter of the envs (its fastest
    Pong setting on 2 cores); ours' pool gets as many blocks, a thread each."""
    pytest.importorskip("ale_py", reason='pip install "puffer-tui[atari]"')
    pong = next(w for w in workloads(16, 16, 8) if w.name == "ALE/Pong-v5")
    pool = [r.batch_size for r, _ in bench_vec.plan_runs(pong, 1.0, cores)
            if r.backend == "serial-pool"]
    assert pool == batches
