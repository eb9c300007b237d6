"""Every benchmark's output names the machine it measured on: the CPU's model, its cores,
torch's CPU capability (the vector instructions its kernels use) and whether bfloat16 is
native (what train.precision auto, and so the path the learner takes, depends on)."""

import json

import torch

from puffer_tui.benchmarks import machine as bench_machine
from puffer_tui.benchmarks import time_to_solve
from puffer_tui.benchmarks.output import print_result


def test_the_machine_is_this_one():
    info = bench_machine.machine()
    assert info["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert info["cpu"] and info["cores"] >= 1 and isinstance(info["native_bfloat16"], bool)
    line = bench_machine.machine_line(info)
    assert line.startswith(f"{info['cpu']}, {info['cores']} cores, torch CPU capability "
                           f"{info['torch_cpu_capability']}, ")


def test_a_bench_table_and_its_json_name_the_machine(capsys):
    line = bench_machine.machine_line()
    print_result("train", {"sps": 1.0}, False, "training x", ("measure", "value"),
                 [("agent-steps/s", "1")])
    out = " ".join(capsys.readouterr().out.split())  # the caption may wrap
    assert f"measured on {line}" in out
    print_result("train", {"sps": 1.0}, True, "training x", ("measure", "value"), [])
    data = json.loads(capsys.readouterr().out)
    assert data == {"train": {"sps": 1.0}, "machine": bench_machine.machine()}


def test_time_to_solve_prints_the_machine_first_and_keeps_it_in_its_json(capsys):
    rc = time_to_solve.main(["bandit", "train.total_timesteps=40000", "train.torch_threads=1",
                             "--threshold", "-1"])
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"time to solve bandit: measured on {bench_machine.machine_line()}"
    summary = json.loads(lines[-1])
    assert summary["solved"] and summary["machine"] == bench_machine.machine()
    assert summary["math"] in ("numpy", "torch") and summary["threads"] == 1
