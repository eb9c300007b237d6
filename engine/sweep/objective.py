"""What a trial is worth: its metric (from metrics.jsonl rows) and, for some objectives, its cost.

    score           the metric at the end of the run (mean of its last FINAL_WINDOW epochs)
    score-per-hour  that score divided by the trial's wall-clock hours
    pareto          (score, wall-clock seconds): a multi-objective study, cost minimized
"""

from __future__ import annotations

import math

FINAL_WINDOW = 3  # epochs averaged for the final score: one noisy epoch should not decide


def metric_series(rows: list[dict], metric: str) -> list[float]:
    """The finite values of `metric` in the rows, in order."""
    out = []
    for row in rows:
        value = row.get(metric)
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
