"""What a trial is worth: its metric (from metrics.jsonl rows) and, for some objectives, its cost.

    score           the metric at the end of the run (mean of its last FINAL_WINDOW epochs)
    score-per-hour  that score divided by the trial's wall-clock hours
    pareto          (score, wall-clock seconds): a multi-objective study, cost minimized
    time-to-reach   training seconds until the metric first reached `reach` (minimized): what
                    "solves faster" means; the trial stops there. One that never got there
                    costs over twice its whole run, more the further it stayed.

Tested in: tests/engine/sweep/test_sweep_driver_logic.py
"""

from __future__ import annotations

import math

FINAL_WINDOW = 3  # epochs averaged for the final score: one noisy epoch should not decide


def metric_value(row: dict, metric: str):
    """`metric` of a metrics.jsonl row; an env field by its tracker name too: env/is_success
    is the column is_success (metrics.jsonl keeps env fields bare unless a trainer column
    has the name)."""
    value = row.get(metric)
    if value is None and metric.startswith("env/"):
        value = row.get(metric[len("env/"):])
    return value


def metric_series(rows: list[dict], metric: str) -> list[float]:
    """The finite values of `metric` in the rows, in order."""
    out = []
    for row in rows:
        value = metric_value(row, metric)
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value):
            out.append(float(value))
    return out


def final_score(rows: list[dict], metric: str) -> float | None:
    values = metric_series(rows, metric)
    if not values:
        return None
    tail = values[-FINAL_WINDOW:]
    return sum(tail) / len(tail)


def per_hour(score: float, seconds: float) -> float:
    return score / (max(seconds, 1e-3) / 3600.0)


def objective_values(objective: str, score: float, seconds: float) -> list[float]:
    """The values told to the study for a completed trial."""
    if objective == "score":
        return [score]
    if objective == "score-per-hour":
        return [per_hour(score, seconds)]
    if objective == "pareto":
        return [score, seconds]
    raise ValueError(f"unknown objective {objective!r}")


def intermediate(objective: str, score: float, seconds: float) -> float:
    """The value reported at an epoch for the pruner (single-objective studies only)."""
    return per_hour(score, seconds) if objective == "score-per-hour" else score


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


REACH_EPOCHS = 2  # one lucky epoch is not "reached": as benchmarks/time_to_solve.py counts


def reached_at(rows: list[dict], metric: str, reach: float, maximize: bool) -> float | None:
    """Training seconds (the row's `uptime`) at the first of REACH_EPOCHS epochs in a row
    whose metric reached `reach`."""
    streak: list[float] = []
    for row in rows:
        value, uptime = metric_value(row, metric), row.get("uptime")
        if not (_number(value) and _number(uptime)):
            continue
        if value >= reach if maximize else value <= reach:
            streak.append(float(uptime))
            if len(streak) == REACH_EPOCHS:
                return streak[0]
        else:
            streak = []
    return None


def time_to_reach(rows: list[dict], metric: str, reach: float, maximize: bool) -> float | None:
    """The time-to-reach objective of these rows (None without any). Not reached: the run's
    training seconds x (2 + how far short it stayed, as a fraction of `reach`, at most 1), so
    every trial that got there beats every one that did not, and the closer ones rank first."""
    at = reached_at(rows, metric, reach, maximize)
    if at is not None:
        return at
    values = metric_series(rows, metric)
    uptimes = [r["uptime"] for r in rows if _number(r.get("uptime"))]
    if not values or not uptimes:
        return None
    best = max(values) if maximize else min(values)
    shortfall = min(1.0, abs(reach - best) / max(abs(reach), 1e-9))
    return uptimes[-1] * (2.0 + shortfall)
