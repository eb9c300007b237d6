"""Several runs side by side, read from their files: config differences, final figures, metric
series, and the live hyperparameter changes placed on the curves.

Used by `puffer-tui runs --compare` and the comparison screen; no engine connection needed
(a live run's metrics.jsonl grows, so a reader simply reads it again).
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from puffer_tui.engine.metrics import read_metrics
from puffer_tui.engine.run_dir import CONFIG_FILE, METRICS_FILE, run_state

# The metrics the comparison cycles through: (metrics.jsonl column, label)
COMPARE_METRICS = (("score", "score"), ("episode_return", "episode return"),
                   ("episode_length", "episode length"), ("policy_loss", "policy loss"),
                   ("value_loss", "value loss"), ("entropy", "entropy"),
                   ("approx_kl", "approx KL"), ("sps", "SPS"))
X_AXES = (("global_step", "step"), ("uptime", "wall time (s)"))

# events.log lines of a live change (engine/commands.py): "train.X changed from A to B (...)"
_SET_EVENT = re.compile(r"^(?P<key>[\w.]+) changed from (?P<old>.*?) to (?P<new>.*?)"
                        r"(?: \((?P<applies>.*)\))?$")
_AT_STEP = re.compile(r"\bat step (\d+)")
_ENGINE_START = re.compile(r"^engine \d+ starting ")
_RESUMED = re.compile(r"^resumed from \S+ at step (\d+)")


class CompareError(ValueError):
    """A run that cannot be compared; the text names it and says why."""


@dataclass
class SetEvent:
    """A hyperparameter changed live, placed at the step (and uptime) it happened near."""
    key: str
    old: str
    new: str
    when: float  # unix time from events.log
    step: int | None = None
    uptime: float | None = None


@dataclass
class RunSeries:
    path: Path
    name: str
    config: dict[str, object]  # "section.key" -> value (env_name as is)
    rows: list[dict]
    events: list[SetEvent] = field(default_factory=list)

    def series(self, metric: str, x_axis: str = "global_step") -> tuple[list[float], list[float]]:
        """(xs, ys) of the rows holding a finite `metric` and x value."""
        xs, ys = [], []
        for row in self.rows:
            x, y = row.get(x_axis), row.get(metric)
            if _number(x) and _number(y):
                xs.append(float(x))
                ys.append(float(y))
        return xs, ys


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def flat_config(run_dir: Path) -> dict[str, object]:
    with (Path(run_dir) / CONFIG_FILE).open("rb") as f:
        data = tomllib.load(f)
    flat: dict[str, object] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def config_differences(runs: list[RunSeries]) -> list[tuple[str, list[str]]]:
    """(field, one text per run) for the fields whose values are not all the same; a field a
    run does not have reads "-"."""
    keys: list[str] = []
    for run in runs:
        keys += [k for k in run.config if k not in keys]
    differences = []
    for key in keys:
        values = [run.config.get(key, _MISSING) for run in runs]
        if any(v != values[0] for v in values[1:]):
            differences.append((key, ["-" if v is _MISSING else format_value(v) for v in values]))
    return differences


_MISSING = object()


def format_value(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def read_set_events(run_dir: Path, rows: list[dict]) -> list[SetEvent]:
    """The live changes in events.log, each placed on the curves. events.log has wall times
    and metrics rows have uptimes (time trained, summed over sessions), so a change is put at
    the row whose uptime is that of its session's start plus the time since; an event text
    that names its step ("at step N") is taken at its word."""
    from puffer_tui.app.run_history import read_events

    found: list[SetEvent] = []
    session_start, session_step = None, 0
    for event in read_events(run_dir):
        text = event.text.splitlines()[0] if event.text else ""
        if _ENGINE_START.match(text):
            session_start, session_step = event.time, 0
            continue
        resumed = _RESUMED.match(text)
        if resumed:
            session_step = int(resumed.group(1))
            continue
        match = _SET_EVENT.match(text)
        if not match:
            continue
        change = SetEvent(match["key"], match["old"], match["new"], event.time)
        at_step = _AT_STEP.search(match["applies"] or "")
        if at_step:
            _place_by_step(change, rows, int(at_step.group(1)))
        elif session_start is not None:
            _place_by_time(change, rows, session_step, event.time - session_start)
        found.append(change)
    return found


def _place_by_step(change: SetEvent, rows: list[dict], step: int) -> None:
    change.step = step
    for row in rows:
        if _number(row.get("global_step")) and row["global_step"] >= step:
            change.uptime = row.get("uptime")
            return


def _place_by_time(change: SetEvent, rows: list[dict], session_step: int, since: float) -> None:
    before = [r for r in rows if _number(r.get("global_step")) and r["global_step"] <= session_step]
    start_uptime = float(before[-1].get("uptime") or 0.0) if before and session_step else 0.0
    change.uptime = start_uptime + max(0.0, since)
    session = [r for r in rows if _number(r.get("global_step")) and r["global_step"] > session_step
               and _number(r.get("uptime"))]
    for row in session:
        if row["uptime"] >= change.uptime:
            change.step = int(row["global_step"])
            return
    if session:  # after the last row written so far: at the run's end for now
        change.step = int(session[-1]["global_step"])


def load_run(run_dir: Path) -> RunSeries:
    """One run's config, metrics rows and live changes; CompareError names a run that has no
    readable config or no metrics."""
    run_dir = Path(run_dir)
    try:
        config = flat_config(run_dir)
    except (OSError, ValueError) as e:
        raise CompareError(f"{run_dir.name}: cannot read its {CONFIG_FILE} ({e})") from e
    rows = [r for r in read_metrics(run_dir) if isinstance(r, dict)]
    if not rows:
        raise CompareError(f"{run_dir.name} has no metrics yet (an empty or missing "
                           f"{METRICS_FILE}): compare runs that have trained at least one epoch")
    return RunSeries(run_dir, run_dir.name, config, rows, read_set_events(run_dir, rows))


def final_figures(run: RunSeries) -> dict[str, object]:
    """What a run came to: state, steps, epochs, best and last score, last episode stats,
    mean SPS and time trained (None where the rows never had it)."""
    def last(key):
        return next((r[key] for r in reversed(run.rows) if _number(r.get(key))), None)

    scores = [r["score"] for r in run.rows if _number(r.get("score"))]
    sps = [r["sps"] for r in run.rows if _number(r.get("sps"))]
    return {"state": run_state(run.path), "steps": last("global_step"), "epochs": last("epoch"),
            "best score": max(scores) if scores else None, "last score": last("score"),
            "episode_return": last("episode_return"), "episode_length": last("episode_length"),
            "mean SPS": sum(sps) / len(sps) if sps else None, "uptime": last("uptime")}
