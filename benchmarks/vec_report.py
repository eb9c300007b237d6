"""`puffer-tui bench vec --report FILE`: the Markdown table of an earlier `--json FILE` run.

The same figures as the terminal table (benchmarks/vec_table.py), recomputed from the raw
settings the JSON keeps, under the run's date, machine, load, commit and command
(benchmarks/run_record.py): each backend's best setting per workload, its steps/s and CPU per
step, and its steps/s against Gymnasium's best vectorizer, our synchronous workers and our
serial backend, all measured in that one run. With EnvPool in the run, a line per workload
compares ours with it.
"""

from __future__ import annotations

import json
from pathlib import Path

from puffer_tui.benchmarks.run_record import header
from puffer_tui.benchmarks.vec_table import LABELS, Result, best_by_backend, ratios, setting_label

COLUMNS = ("workload", "backend (best setting)", "envs", "workers", "batch", "steps/s",
           "CPU µs/step", "x Gymnasium's best", "x mp sync", "x serial")


def load(path: Path) -> dict:
    """A `bench vec --json FILE` output; SystemExit(one line) for anything else."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"puffer-tui bench vec: error: --report {path}: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise SystemExit(f"puffer-tui bench vec: error: --report {path}: not a bench vec "
                         f"--json output (it has no \"results\")")
    return data


def _ratio(value) -> str:
    return "" if value is None else f"{value:.2f}x"


def _rounds_text(data: dict) -> str:
    repeat, stat, seconds = data.get("repeat"), data.get("stat"), data.get("seconds")
    each = f" of {seconds:g} s" if seconds else ""
    if not repeat or repeat == 1:
        return f"one round{each} per setting"
    return (f"the {stat or 'best'} of {repeat} rounds{each} per setting, the rounds taken in "
            f"turn across settings")


def markdown(data: dict) -> str:
    results = [Result(**r) for r in data["results"]]
    best = best_by_backend(results)
    summary = ratios(results)
    cores = f" ({data['cores']} cores used)" if data.get("cores") else ""
    lines = header(data, "bench vec")
    lines += ["", f"Agent-steps/s of each backend's best setting{cores}, {_rounds_text(data)}; "
              "CPU µs/step counts this process's threads and its worker processes; the "
              "ratios are its steps/s over Gymnasium's best vectorizer, our synchronous "
              "workers (mp sync) and our serial backend, in the same run.", "",
              "| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for workload in dict.fromkeys(r.workload for r in results):
        for backend in LABELS:
            r = best.get((workload, backend))
            if r is None:
                continue
            ratio = summary[(workload, backend)]
            sps = f"failed: {r.error}" if r.error and not r.sps else f"{r.sps:,.0f}"
            cpu = "" if r.cpu_us_per_step is None else f"{r.cpu_us_per_step:,.1f}"
            lines.append(f"| {workload} | {setting_label(r)} | {r.num_envs} | {r.num_workers} "
                         f"| {r.batch_size} | {sps} | {cpu} | "
                         f"{_ratio(ratio['vs_gymnasium_best'])} | {_ratio(ratio['vs_our_sync'])} "
                         f"| {_ratio(ratio['vs_our_serial'])} |")
    for workload, p in (data.get("against_envpool") or {}).items():
        ours, theirs = p["ours"], p["envpool"]
        lines += ["", f"{workload} against EnvPool: ours ({LABELS.get(ours['backend'], ours['backend'])}, "
                  f"{ours['num_workers']} workers, batch {ours['batch_size']}) / EnvPool "
                  f"({theirs['num_workers']} threads, batch {theirs['batch_size']}): steps/s "
                  f"{p['sps_ratio']:.2f}x, CPU per step {p['cpu_ratio']:.2f}x (below 1: ours "
                  f"cheaper)."]
    return "\n".join(lines)


def report(paths: list[Path]) -> str:
    return "\n\n".join(markdown(load(path)) for path in paths)
