"""`python -m puffer_tui.benchmarks.ray_vs_mp`: the workloads it compares, and one of them run
on both backends through a real local Ray, its JSON row's medians and ratio read back from its
own runs (no speed asserted)."""

from __future__ import annotations

import json
import statistics

import pytest

from puffer_tui.benchmarks import ray_vs_mp


def test_the_workloads_scale_the_python_env_per_worker():
    cases = {case.name: case.num_envs for case in ray_vs_mp.cases(workers=3)}
    assert cases == {"squared 65536": 65536, "squared 4096": 4096, "delay 1ms x1": 3,
                     "delay 1ms x8": 24, "delay 1ms x16": 48, "delay 1ms x32": 96}


@pytest.mark.slow
def test_one_workload_on_both_backends_reports_its_runs(monkeypatch, capsys):
    pytest.importorskip("ray")
    small = next(case for case in ray_vs_mp.cases(1) if case.name == "delay 1ms x8")
    monkeypatch.setattr(ray_vs_mp, "cases", lambda workers: [small])
    ray_vs_mp.main(["--workers", "1", "--repeat", "2", "--seconds", "0.2", "--json"])
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["workload"], row["num_envs"], row["workers"]) == ("delay 1ms x8", 8, 1)
    assert len(row["mp_sps"]) == len(row["ray_sps"]) == 2
    assert all(sps > 0 for sps in row["mp_sps"] + row["ray_sps"])
    assert row["mp_median"] == statistics.median(row["mp_sps"])
    assert row["ratio"] == pytest.approx(row["ray_median"] / row["mp_median"])
