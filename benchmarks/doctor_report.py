"""`python -m puffer_tui.benchmarks.doctor --report FILE`: the Markdown table of an earlier
`--json FILE` run, the one on the docs' Diagnosis page.

A row per case (a run broken on purpose for a rule, or a healthy run that must fire
nothing): when the rule fired, and the score three ways: left alone, fixed by a person (the
suggestion applied the moment it fired, as the dashboard's `a` does) and fixed by the
autopilot (`--train.autopilot true`, nobody at the keys), with the fix each made; then the
diagnosis's cost and the other rules that fired. The run's date, machine and commands head
it (benchmarks/run_record.py); a JSON merged from several runs lists each command.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from puffer_tui.benchmarks.run_record import header

# "... autopilot applied kl_blowup's fix at epoch 1: train.learning_rate 0.15 -> 0.015 ..."
AUTOPILOT_CHANGE = re.compile(r"autopilot (applied|reverted) \S+ fix at epoch \d+: (\S+) ")

COLUMNS = ("case", "env", "broken setting", "fired (runs) at epoch", "score, left alone",
           "fixed by a person", "fixed by the autopilot", "diagnosis cost", "also fired")


def load(path: Path) -> dict:
    """A doctor `--json FILE` output; SystemExit(one line) for anything else."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"doctor: --report {path}: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise SystemExit(f"doctor: --report {path}: not a doctor --json output (it has no "
                         f"\"rows\")")
    return data


def score(value) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:  # CartPole x1000's scores
        return f"{value:,.0f}"
    return f"{value:.3f}"


def setting_value(value) -> str:
    """A suggested value as a person would type it (0.015, not 0.015000000000000001)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:g}"


def person_fix(row: dict) -> str:
    """The score with the suggestion applied, and what was applied (the first seed's)."""
    if "score_with" not in row:
        return "-"
    applied = next((a for a in row.get("applied") or () if a), None)
    if applied is None:
        return f"{score(row['score_with'])} (nothing applied)"
    how = "restart with " if applied.get("restart") else ""
    return (f"{score(row['score_with'])} ({how}`{applied['key']} {setting_value(applied['to'])}` at epoch "
            f"{applied['epoch']})")


def autopilot_fix(row: dict, result: dict | None) -> str:
    """The score under the autopilot, with how many changes it made and to which settings."""
    if "score_autopilot" not in row:
        return "-"
    changes = row.get("autopilot_changes") or 0
    keys = list(dict.fromkeys(m.group(2) for run in (result or {}).get("autopilot", ())
                              for line in run.get("autopilot", ())
                              if (m := AUTOPILOT_CHANGE.search(line))))
    what = "no change" if not changes else (
        f"{changes} change{'s' if changes > 1 else ''}" + (f": {', '.join(keys)}" if keys else ""))
    return f"{score(row['score_autopilot'])} ({what})"


def markdown(data: dict) -> str:
    results = {r["case"]: r for r in data.get("results") or ()}
    lines = header(data, "Diagnosis doctor")
    lines += ["", "Score: the mean of a run's last 3 epochs with episodes, the median over "
              "seeds where a case ran more than one; the diagnosis cost is the engine's own "
              "measure of its time against the training time.", "",
              "| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for row in data["rows"]:
        result = results.get(row["case"])
        healthy = row.get("fired") is None
        fired = "-" if healthy else (f"{row['fired']}/{row['runs']} at {row['fired_at']:.0f}"
                                     if row.get("fired_at") is not None
                                     else f"{row['fired']}/{row['runs']}")
        cost = "-" if row.get("cost_pct") is None else f"{row['cost_pct']:.2f}%"
        env = f"`{result['env']}`" if result and result.get("env") else "-"
        others = ", ".join(row.get("others") or ()) or ("none" if healthy else "-")
        lines.append(f"| {row['case']} | {env} | {row['setting']} | {fired} | "
                     f"{score(row.get('score_without'))} | {person_fix(row)} | "
                     f"{autopilot_fix(row, result)} | {cost} | {others} |")
    return "\n".join(lines)


def report(paths: list[Path]) -> str:
    return "\n\n".join(markdown(load(path)) for path in paths)
