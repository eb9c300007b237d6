"""benchmarks/vec_table.py: the table `puffer-tui bench vec` prints (each backend's best setting
per workload, its label saying how a pool batches, steps/s, the ratios) and the EnvPool line."""

from __future__ import annotations

from types import SimpleNamespace

from puffer_tui.benchmarks.vec_table import print_peers, print_table


def result(backend, sps, **kw):
    fields = dict(workload="cartpole", backend=backend, num_envs=64, num_workers=2,
                  batch_size=64, sps=sps, error=None, cpu_us_per_step=12.34, zero_copy=False)
    return SimpleNamespace(**{**fields, **kw})


def ratios(gym=None, sync=None, serial=None):
    return {"vs_gymnasium_best": gym, "vs_our_sync": sync, "vs_our_serial": serial}


def test_each_backends_best_is_a_row_with_its_label_and_ratios(capsys):
    rows = [result("serial", 800_000.0, num_workers=1),
            result("multiprocessing-pool", 2_500_000.0, batch_size=32, zero_copy=True),
            result("multiprocessing-inline", 1_200.0, batch_size=32),
            result("gymnasium-async", 0.0, error="worker died")]
    best = {(r.workload, r.backend): r for r in rows}
    summary = {(r.workload, r.backend): ratios() for r in rows}
    summary[("cartpole", "multiprocessing-pool")] = ratios(gym=3.125, sync=1.5, serial=3.125)
    print_table(rows, best, summary, cores=2)
    out = capsys.readouterr().out
    assert "agent-steps/second, best setting per backend (2 cores)" in out
    lines = {label: next(line for line in out.splitlines() if label in line)
             for label in ("serial  ", "mp pool zero-copy", "mp inline pool", "gym Async")}
    assert "800,000" in lines["serial  "]
    pool = lines["mp pool zero-copy"]
    assert "2.5 M" in pool and "3.12x" in pool and "1.50x" in pool and "12.3" in pool
    assert "1,200" in lines["mp inline pool"]
    assert "worker died" in lines["gym Async"]
    assert out.index("serial  ") < out.index("mp pool") < out.index("mp inline") \
        < out.index("gym Async")  # the backends in one order, whatever the results' order


def test_the_envpool_line_gives_both_sides_and_the_rounds_spread(capsys):
    peers = {"pong": {"ours": {"backend": "multiprocessing-pool", "num_workers": 2,
                               "batch_size": 16},
                      "envpool": {"num_workers": 2, "batch_size": 16},
                      "sps_ratio": 1.2, "sps_ratio_rounds": [1.0, 1.2, 1.4],
                      "cpu_ratio": 0.8, "cpu_ratio_rounds": []}}
    print_peers(peers, "median")
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("pong: ours (mp pool, 2 workers, batch 16) / EnvPool (2 threads, "
                           "batch 16), median of rounds: steps/s 1.20x (round by round: "
                           "median 1.20x, 1.00-1.40x over 3)")
    assert line.endswith("CPU per step 0.80x (below 1: ours cheaper)")
