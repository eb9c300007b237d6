"""The sweep's state as plain data: what `status` answers and status.json holds.

    {"sweep", "env", "objective", "directions", "target", "counts": {"COMPLETE": 3, ...},
     "best": [numbers], "trials": [{"number", "state", "params", "values", "score",
     "seconds", "epoch", "global_step", "run_dir", "driver", "error"}, ...],
     "trials_total": int (a study of over MAX_ROWS trials lists only some in "trials")}

`best` is the best trial (single objective) or the Pareto front (several).

Tested in: tests/engine/sweep/test_importance_note.py, tests/screens/test_sweep_view.py
"""

from __future__ import annotations

import time

from puffer_tui.engine.sweep.objective import metric_value


def snapshot(study, settings, running: dict) -> dict:
    trials = study.get_trials(deepcopy=False)
    rows = []
    for t in trials:
        attrs = t.user_attrs
        row = {
            "number": t.number, "state": t.state.name, "params": dict(t.params),
            "values": list(t.values) if t.values else None, "score": attrs.get("score"),
            "seconds": attrs.get("seconds"), "epoch": None,
            "global_step": attrs.get("global_step"), "run_dir": attrs.get("run_dir"),
            "driver": attrs.get("driver"), "error": (attrs.get("error") or "").split("\n")[0],
        }
        if t.number in running:  # ours and live: the latest epoch, not yet in the database
            _trial, run, _slot = running[t.number]
            last = run.rows[-1] if run.rows else {}
            row.update(epoch=last.get("epoch"), global_step=last.get("global_step"),
                       score=metric_value(last, settings.metric),
                       seconds=round(time.time() - run.started, 1))
        elif t.intermediate_values and row["score"] is None:
            row["score"] = t.intermediate_values[max(t.intermediate_values)]
        rows.append(row)
    counts: dict[str, int] = {}
    for t in trials:
        counts[t.state.name] = counts.get(t.state.name, 0) + 1
    best = best_numbers(study)
    return {
        "sweep": settings.name, "env": settings.env_name, "objective": settings.objective,
        "reach": settings.reach,
        "metric": settings.metric, "directions": settings.directions(),
        "target": settings.trials, "counts": counts, "best": best,
        "trials": kept_rows(rows, set(best) | set(running)), "trials_total": len(rows),
    }


MAX_ROWS = 500  # a status reply stays far below the protocol's 1 MiB with any study


def kept_rows(rows: list[dict], wanted: set[int]) -> list[dict]:
    """All rows of a study of up to MAX_ROWS trials; of a bigger one, the running and best
    trials and the newest others (the study itself keeps every trial)."""
    if len(rows) <= MAX_ROWS:
        return rows
    keep = {r["number"] for r in rows if r["number"] in wanted}
    for row in sorted(rows, key=lambda r: -r["number"]):
        if len(keep) >= MAX_ROWS:
            break
        keep.add(row["number"])
    return [r for r in rows if r["number"] in keep]


def best_numbers(study) -> list[int]:
    """The best trial's number, or the Pareto front's numbers; [] before any completes."""
    try:
        if len(study.directions) == 1:
            return [study.best_trial.number]
        return sorted(t.number for t in study.best_trials)
    except ValueError:  # no completed trial yet
        return []


MIN_TRIALS_FOR_IMPORTANCE = 4


def importance_wait(study) -> str:
    """Why the importances cannot be computed yet ("" when they can): cheap, unlike them."""
    from optuna.trial import TrialState

    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(complete) < MIN_TRIALS_FOR_IMPORTANCE:
        others = len(study.get_trials(deepcopy=False, states=(TrialState.PRUNED,
                                                                TrialState.FAIL)))
        return (f"needs {MIN_TRIALS_FOR_IMPORTANCE} completed trials, {len(complete)} so far"
                + (f" ({others} pruned or failed do not count)" if others else ""))
    params = sorted({name for t in complete for name in t.params})
    if len(params) < 2:
        return ("needs 2 searched parameters or more to compare; this sweep searches "
                f"{', '.join(params) or 'none'}")
    return ""


def param_importance(study, previous: dict) -> tuple[dict, str]:
    """({param: importance}, why there is none) by Optuna's default evaluator (per objective
    for several: the first, the score), once enough trials completed with more than one
    parameter (importance_wait); until then, or when Optuna cannot compute them, `previous`
    and the reason."""
    import optuna

    wait = importance_wait(study)
    if wait:
        return previous, wait
    try:
        importances = optuna.importance.get_param_importances(
            study, target=(lambda t: t.values[0]) if len(study.directions) > 1 else None)
    except Exception as e:  # e.g. a parameter that never varied: keep what was there
        return previous, f"Optuna could not compute them: {type(e).__name__}: {e}"
    return {name: round(float(value), 4) for name, value in importances.items()}, ""
