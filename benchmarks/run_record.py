"""What a benchmark's JSON keeps of the run itself, and the lines its `--report` prints from it.

A speed figure means little without the machine it came from, how busy that machine was, the
code it ran and the command that produced it, so `bench vec`, `bench train` and the doctor
benchmark write these beside their results, and their reports print them above each table:

    record("puffer-tui bench vec --seconds 2 --json vec.json")
        # {"date": ..., "command": ..., "commit": "060daee", "machine": {...},
        #  "load_average": {"start": 0.8}}
    finish(rec)          # adds the load average at the end
    header(rec, "bench vec")   # the report's title and its machine / commit / command lines

Older JSON may hold the machine as a sentence and several `commands`: both are printed as
they are.

Tested in: tests/benchmarks/test_vec_report.py, tests/benchmarks/test_train_speed_report.py,
tests/benchmarks/test_doctor_report.py (the header of each report, the command a run keeps).
"""

from __future__ import annotations

import os
import shlex
import sys
import time

from puffer_tui.benchmarks.machine import machine_line


def typed_command(prefix: str, *words: str) -> str:
    """The command line as typed, for a benchmark reached through `prefix` (`puffer-tui`, or
    `python -m MODULE`) whose own words (`bench vec`) start sys.argv[1:]; called another way
    (in-process, from a test) it says so instead of naming a command nobody typed."""
    argv = sys.argv[1:]
    if argv[:len(words)] != list(words):
        return " ".join([prefix, *words]) + " (called in-process)"
    return " ".join([prefix, shlex.join(argv)])


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # platforms without a load average
        return None


def record(command: str) -> dict:
    """The date, command, commit, machine and load average at the start of a run."""
    # lazy: torch (the CPU capability) and git, which a --report does not need
    from puffer_tui.benchmarks.learn_runs import repo_commit
    from puffer_tui.benchmarks.machine import machine

    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "command": command,
            "commit": repo_commit(), "machine": machine(), "load_average": {"start": _load()}}


def finish(rec: dict) -> dict:
    """`rec` with the load average at the end of the run added."""
    rec.setdefault("load_average", {})["end"] = _load()
    return rec


def machine_text(machine) -> str:
    """The machine as a report prints it: a `machine()` dict, or an older JSON's sentence."""
    if isinstance(machine, str):
        return machine
    if not machine:
        return "not recorded"
    return machine_line(machine)


def header(rec: dict, title: str) -> list[str]:
    """A report's Markdown title (`# TITLE, DATE`) and a list of when, where and how."""
    lines = [f"# {title}, {rec.get('date') or 'date not recorded'}", ""]
    load = rec.get("load_average") or {}
    busy = ""
    if load.get("start") is not None:
        busy = f"; load average {load['start']:.2f} at the start"
        if load.get("end") is not None:
            busy += f", {load['end']:.2f} at the end"
    lines.append(f"- machine: {machine_text(rec.get('machine'))}{busy}")
    lines.append(f"- commit: {rec.get('commit') or 'not recorded'}")
    commands = rec.get("commands") or ([rec["command"]] if rec.get("command") else [])
    for command in commands or ["not recorded"]:
        lines.append(f"- command: `{command}`" if commands else "- command: not recorded")
    return lines
