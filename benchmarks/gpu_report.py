"""gpu_check's Markdown table, from its JSON report (benchmarks/gpu_check.py).

Tested in: tests/benchmarks/test_gpu_check.py"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

PHASES = ("env", "forward", "copy", "learn", "misc")


def write_atomic(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _num(value, fmt="{:,.0f}") -> str:
    return "n/a" if value is None else fmt.format(value)


def _peer_sps(report: dict, env: str, mode: str):
    peer = report.get("peer") or {}
    for row in peer.get("rows", []):
        if row["env"] == env and row["mode"] == mode and "sps" in row:
            return row
    return None


def markdown(report: dict) -> str:
    info = report["environment"]
    gpu = ", ".join(info["gpu_names"]) or "no GPU"
    lines = [f"# gpu_check, {info['date']}", "",
             f"{gpu}; {info['cpus']} CPUs; Python {info['python']}, torch {info['torch']} "
             f"(CUDA {info['torch_cuda'] or 'none'}); device {info['device']}; "
             f"nvcc {info['nvcc'] or 'not found'}", "", f"Command: `{info['command']}`", ""]
    if info.get("note"):
        lines += [f"**{info['note']}**", ""]
    if report.get("error"):
        lines += [f"**Not measured: {report['error']}**", ""]
    tests = report.get("tests")
    if tests:
        lines += [f"CUDA tests: {tests['status']}: `{tests['closing_line']}`", ""]
    settings = report["settings"]
    lines += [f"Training agent-steps/s: median of {settings['rounds']} rounds of "
              f"{settings['seconds']:g} s after a warm-up epoch; phase shares of the timed "
              "epochs; PufferLib 3.0 on the same device, `preset` = its config as shipped, "
              "`matched` = our hidden size and recurrence (float32); ratio = ours / peer.", "",
              "| env | precision | steps/s | " + " | ".join(f"{p} %" for p in PHASES)
              + " | peak GPU mem | GPU util | params | PufferLib preset | PufferLib matched "
              "| ratio (preset, matched) |",
              "|" + " --- |" * (10 + len(PHASES) - 1)]
    for row in report.get("ours", []):
        if "sps" not in row:
            why = row.get("skipped") or row.get("error", "")
            lines.append(f"| {row['env']} | {row['precision']} | {why} |"
                         + " |" * (9 + len(PHASES) - 1))
            continue
        pct = row["timing_pct"]
        mem = row.get("gpu_memory_peak_bytes")
        util = row.get("gpu_utilisation")
        peers = [_peer_sps(report, row["env"], m) if row["precision"] == "float32" else None
                 for m in ("preset", "matched")]
        peer_cells = [f"{p['sps']:,.0f} ({p['parameters']:,} params, {p['num_agents']} agents)"
                      if p else "" for p in peers]
        ratios = ", ".join(f"{row['sps'] / p['sps']:.2f}x" if p and p["sps"] else "-"
                           for p in peers) if any(peers) else ""
        lines.append(
            f"| {row['env']} | {row['precision']} | {row['sps']:,.0f} | "
            + " | ".join(f"{pct.get(p, 0):.0f}" for p in PHASES)
            + f" | {_num(mem / 2**20 if mem is not None else None, '{:,.0f} MiB')} | "
            f"{_num(util['mean_pct'] if util else None, '{:.0f}%')} | {row['parameters']:,} "
            f"| {peer_cells[0]} | {peer_cells[1]} | {ratios} |")
    nproc = report.get("nproc") or {}
    lines += ["", "`--train.nproc`: " + (f"{nproc['nproc']} GPUs, {nproc['sps']:,.0f} steps/s"
                                         if "sps" in nproc else nproc.get("skipped")
                                         or nproc.get("error") or "not run")]
    peer = report.get("peer") or {}
    build = peer.get("build") or {}
    if build.get("ok"):
        lines.append(f"PufferLib build: {build['seconds']:.0f} s, CUDA advantage kernel "
                     f"{'built with nvcc' if build.get('cuda_kernel') else 'NOT built (no nvcc): CPU kernel'}")
    if peer.get("skipped"):
        lines.append(f"PufferLib: skipped: {peer['skipped']}")
    for row in peer.get("rows", []):
        if "sps" not in row:
            lines.append(f"PufferLib {row['env']} {row['mode']}: "
                         f"{row.get('skipped') or row.get('error')}")
    return "\n".join(lines) + "\n"
