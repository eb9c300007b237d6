"""`puffer-tui bench train --report FILE`: the Markdown table of an earlier `--json FILE` run.

Two kinds of run: one env trained alone (its agent-steps/s, CPU per step and the trainer's
own timing breakdown), and `--peer sb3` (ours and Stable-Baselines3's PPO on CartPole-v1 one
after the other in the same run, with ours against SB3 as ratios). Each under the run's date,
machine, load, commit and command (benchmarks/run_record.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from puffer_tui.benchmarks.run_record import header
from puffer_tui.engine.shared.protocol import TIMING_KEYS


def load(path: Path) -> dict:
    """A `bench train --json FILE` output; SystemExit(one line) for anything else."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"puffer-tui bench train: error: --report {path}: {e}") from None
    if not isinstance(data, dict) or not ({"train", "peer"} & data.keys()):
        raise SystemExit(f"puffer-tui bench train: error: --report {path}: not a bench train "
                         f"--json output (it has neither \"train\" nor \"peer\")")
    return data


def _cpu_us(value) -> str:
    return "-" if value is None else f"{value:,.1f}"


def train_markdown(data: dict) -> list[str]:
    r = data["train"]
    threads = f"{r['torch_threads']} thread{'' if r['torch_threads'] == 1 else 's'}"
    heads = ["env", "envs (backend)", "precision, math, torch threads", "agent-steps/s",
             "steps (epochs)", "seconds", "CPU µs/step", *[f"{k} %" for k in TIMING_KEYS]]
    # workers only where the backend has them (serial steps every env in this process)
    workers = "" if r["backend"] == "serial" else f", {r['num_workers']} workers"
    row = [r["env"], f"{r['num_envs']:,} ({r['backend']}{workers})",
           f"{r['precision']}, {r['math']}, {threads}", f"{r['sps']:,.0f}",
           f"{r['steps']:,} ({r['epochs']})", f"{r['seconds']:.1f}",
           _cpu_us(r.get("cpu_us_per_step")),
           *[f"{r['timing_pct'][k]:.0f}" for k in TIMING_KEYS]]
    return ["Training agent-steps/s of the real Trainer over whole epochs after a warm-up "
            "epoch; CPU µs/step: this process's threads and its env workers over the same "
            "epochs; the shares: where the trainer's own timing says those epochs went.", "",
            "| " + " | ".join(heads) + " |", "|" + " --- |" * len(heads),
            "| " + " | ".join(row) + " |"]


def _cpu_per_step(side: dict) -> float | None:
    cpu, steps = side.get("cpu_seconds"), side.get("steps")
    return 1e6 * cpu / steps if cpu is not None and steps else None


def peer_markdown(data: dict) -> list[str]:
    # lazy: the peer's module pulls numpy and gymnasium
    from puffer_tui.benchmarks.peer_sb3 import PeerResult, ratio_text, reach_text

    p = data["peer"]
    ours, sb3, r = PeerResult(**p["ours"]), PeerResult(**p["peer"]), p["ratios"]
    reach = f"{p['reach']:g}"
    mine, theirs = _cpu_per_step(p["ours"]), _cpu_per_step(p["peer"])
    cpu_ratio = f"{mine / theirs:.2f}x" if mine and theirs else "-"
    last = [f"{x.last_mean_length:.0f}" if x.last_mean_length is not None else "-"
            for x in (ours, sb3)]
    threads = p.get("sb3_torch_threads", "?")
    threads = f"{threads} torch thread{'' if threads == 1 else 's'}"
    return [f"PPO on CartPole-v1: puffer-tui (gym:CartPole-v1's preset) and Stable-Baselines3 "
            f"(its defaults, {threads}) one after the "
            f"other in this run, each until the mean length of its last {p['window']} "
            f"episodes reached {reach} or its {p['budget']:g} s budget ran out. Ratios: ours / "
            f"SB3 for agent-steps/s and CPU per step, SB3 / ours for the time and steps to "
            f"{reach} (above 1: ours faster; `>=` a bound where only ours got there).", "",
            "| measure | puffer-tui | Stable-Baselines3 | ratio |", "| --- | --- | --- | --- |",
            f"| training agent-steps/s | {ours.sps:,.0f} | {sb3.sps:,.0f} | "
            f"{ratio_text(r, 'sps')} |",
            f"| CPU µs/step | {_cpu_us(mine)} | {_cpu_us(theirs)} | {cpu_ratio} |",
            f"| seconds to {reach} | {reach_text(ours, 'seconds')} | "
            f"{reach_text(sb3, 'seconds')} | {ratio_text(r, 'time_to_reach_seconds')} |",
            f"| agent steps to {reach} | {reach_text(ours, 'steps')} | "
            f"{reach_text(sb3, 'steps')} | {ratio_text(r, 'time_to_reach_steps')} |",
            f"| last mean length | {last[0]} | {last[1]} | |"]


def markdown(data: dict) -> str:
    if "peer" in data:
        return "\n".join([*header(data, "bench train --peer sb3"), "", *peer_markdown(data)])
    return "\n".join([*header(data, "bench train"), "", *train_markdown(data)])


def report(paths: list[Path]) -> str:
    return "\n\n".join(markdown(load(path)) for path in paths)
