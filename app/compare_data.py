"""Several runs side by side, read from their files: config differences, final figures, metric
series, and the live hyperparameter changes placed on the curves.

Used by `puffer-tui runs --compare` and the comparison screen; no engine connection needed
(a live run's metrics.jsonl grows: MetricColumns reads on from where it stopped).
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from puffer_tui.app.run_history import read_events
from puffer_tui.engine.shared.config import flat_sections
from puffer_tui.engine.shared.metrics_file import grouped
from puffer_tui.engine.shared.protocol import ENV
from puffer_tui.engine.shared.run_dir import (
    CONFIG_FILE,
    METRICS_FILE,
    read_status,
    run_info,
    run_state,
)

# The metrics the comparison cycles through: (metrics.jsonl column, label)
COMPARE_METRICS = (("score", "score"), ("episode_return", "episode return"),
                   ("episode_length", "episode length"), ("policy_loss", "policy loss"),
                   ("value_loss", "value loss"), ("entropy", "entropy"),
                   ("approx_kl", "approx KL"), ("sps", "SPS"))
X_AXES = (("global_step", "step"), ("uptime", "time trained (s)"))  # uptime: no pauses
# the columns kept from each row (a long run has 100k rows: only these, as float arrays)
KEPT_COLUMNS = ("epoch", "global_step", "uptime", *(key for key, _ in COMPARE_METRICS))
# the env group's fields every env has (the others are the env's own, kept when found)
STANDARD_ENV_FIELDS = ("score", "episode_return", "episode_length", "episodes")

# events.log lines of a live change (engine/runtime/commands.py): "train.X changed from A to B (...)"
_SET_EVENT = re.compile(r"^(?P<key>[\w.]+) changed from (?P<old>.*?) to (?P<new>.*?)"
                        r"(?: \((?P<applies>.*)\))?$")
_AT_STEP = re.compile(r"\bat step (\d+)")
_STEP_MENTION = re.compile(r"\bat step (\d+)|\(step (\d+),")
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
    when: float  # unix time from events.log (the middle of its second)
    step: int | None = None
    uptime: float | None = None


class MetricColumns:
    """A run's metrics.jsonl as float columns (NaN where a row lacks the value), read on from
    where the last read stopped: a live run's file is only parsed for its new rows. A file
    that shrank (a resume drops the rows after its checkpoint) is read again from the start."""

    def __init__(self) -> None:
        self.columns = {key: array("d") for key in KEPT_COLUMNS}
        self.env_fields: list[str] = []  # the env's own columns (is_success...), as found
        self.offset = 0

    def __len__(self) -> int:
        return len(self.columns["global_step"])

    def read_more(self, path: Path) -> bool:
        """Parse the whole lines added since the last call; whether any row was added."""
        try:
            with Path(path).open("rb") as f:
                if f.seek(0, 2) < self.offset:
                    self.__init__()
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return False
        whole = data[:data.rfind(b"\n") + 1]  # a line still being written waits
        self.offset += len(whole)
        before = len(self)
        for line in whole.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a torn line (a killed engine)
            if isinstance(row, dict):
                self._find_env_fields(row)
                for key, column in self.columns.items():
                    value = row.get(key)
                    column.append(float(value) if _number(value) else math.nan)
        return len(self) > before

    def _find_env_fields(self, row: dict) -> None:
        """Columns of the env's own numbers (a C env's log fields, a Python env's info
        numbers) get a column when first seen, NaN for the rows before."""
        for key, value in row.items():
            if key in self.columns or not _number(value):
                continue
            name = next(iter(grouped({key: value})[ENV]), None)
            if name is None or name in STANDARD_ENV_FIELDS:
                continue
            self.columns[key] = array("d", [math.nan] * len(self))
            self.env_fields.append(key)

    def copy(self) -> MetricColumns:
        """A snapshot for another thread, while this one reads on."""
        twin = MetricColumns()
        twin.columns = {key: array("d", column) for key, column in self.columns.items()}
        twin.env_fields = list(self.env_fields)
        twin.offset = self.offset
        return twin

    def last(self, key: str) -> float | None:
        return next((v for v in reversed(self.columns[key]) if math.isfinite(v)), None)

    def values(self, key: str) -> list[float]:
        return [v for v in self.columns[key] if math.isfinite(v)]

    def pairs(self, x_key: str, y_key: str) -> list[tuple[float, float]]:
        return [(x, y) for x, y in zip(self.columns[x_key], self.columns[y_key])
                if math.isfinite(x) and math.isfinite(y)]


@dataclass
class RunSeries:
    path: Path
    name: str
    config: dict[str, object]  # "section.key" -> value (env_name as is)
    metrics: MetricColumns
    events: list[SetEvent] = field(default_factory=list)
    diagnoses: list[dict] = field(default_factory=list)  # see read_diagnoses

    def series(self, metric: str, x_axis: str = "global_step") -> tuple[list[float], list[float]]:
        """(xs, ys) of the rows holding a finite `metric` and x value."""
        pairs = self.metrics.pairs(x_axis, metric)
        return [x for x, _ in pairs], [y for _, y in pairs]


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def flat_config(run_dir: Path) -> dict[str, object]:
    with (Path(run_dir) / CONFIG_FILE).open("rb") as f:
        return flat_sections(tomllib.load(f))


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


def same_value(old: str, new: str) -> bool:
    """Whether two logged values are one (0.005 and 5e-3 are)."""
    if old.strip() == new.strip():
        return True
    try:
        return float(old) == float(new)
    except ValueError:
        return False


def read_set_events(run_dir: Path, metrics: MetricColumns) -> list[SetEvent]:
    """The live changes in events.log, each placed on the curves.

    events.log has wall times, metrics rows have uptimes (time trained: no start-up, pauses
    or checkpoint writes), so a change is placed from the nearest anchor of its engine
    session: an event that names a step ("checkpoint saved ... (step N", "stopped at step
    N", "paused at step N"...), or metrics.jsonl's last write (its last row). From the anchor
    the change is as many seconds earlier or later in uptime as in wall time; without any,
    from the session's start (which then counts the engine's start-up). An event text that
    names its own step ("at step N") is taken at its word."""
    rows = metrics.pairs("global_step", "uptime")  # (step, uptime) of each row
    # events.log has whole seconds (cut, not rounded): the middle of each second
    events = [(e.time + 0.5, e.text.splitlines()[0] if e.text else "")
              for e in read_events(run_dir)]
    starts = [t for t, text in events if _ENGINE_START.match(text)]
    anchors = []  # (wall time, uptime)
    for t, text in events:
        mention = _STEP_MENTION.search(text)
        if mention and not _RESUMED.match(text) and not _SET_EVENT.match(text):
            uptime = _uptime_at(rows, int(mention.group(1) or mention.group(2)))
            if uptime is not None:
                anchors.append((t, uptime))
    try:
        if rows:
            anchors.append(((run_dir / METRICS_FILE).stat().st_mtime, rows[-1][1]))
    except OSError:
        pass
    found: list[SetEvent] = []
    session_step = 0
    for t, text in events:
        if _ENGINE_START.match(text):
            session_step = 0
            continue
        resumed = _RESUMED.match(text)
        if resumed:
            session_step = int(resumed.group(1))
            continue
        match = _SET_EVENT.match(text)
        if not match or same_value(match["old"], match["new"]):
            continue  # a set to the value already in force changed nothing
        change = SetEvent(match["key"], match["old"], match["new"], t)
        at_step = _AT_STEP.search(match["applies"] or "")
        if at_step:
            change.step = int(at_step.group(1))
            change.uptime = _uptime_at(rows, change.step)
        else:
            _place_by_time(change, rows, starts, anchors, session_step)
        found.append(change)
    return found


def _uptime_at(rows: list[tuple[float, float]], step: int) -> float | None:
    """The uptime of the last row at or before `step` (a step between rows: the one before)."""
    before = [uptime for s, uptime in rows if s <= step]
    return before[-1] if before else None


def _place_by_time(change: SetEvent, rows, starts: list[float], anchors, session_step: int):
    session_start = max((s for s in starts if s <= change.when), default=None)
    if session_start is None or not rows:
        return
    session_end = min((s for s in starts if s > change.when), default=math.inf)
    near = [(abs(t - change.when), t, uptime) for t, uptime in anchors
            if session_start <= t < session_end]
    if near:
        _, t, uptime = min(near)
        change.uptime = max(0.0, uptime + change.when - t)
    else:
        start_uptime = (_uptime_at(rows, session_step) or 0.0) if session_step else 0.0
        change.uptime = start_uptime + change.when - session_start
    later = [s for s, uptime in rows if uptime >= change.uptime and s > session_step]
    change.step = int(later[0]) if later else int(rows[-1][0])


def load_run(run_dir: Path, metrics: MetricColumns | None = None) -> RunSeries:
    """One run's config, metrics and live changes (`metrics`: the columns read so far, read on);
    CompareError names a run that has no readable config or no metrics."""
    run_dir = Path(run_dir)
    try:
        config = flat_config(run_dir)
    except (OSError, ValueError) as e:
        raise CompareError(f"{run_dir.name}: cannot read its {CONFIG_FILE} ({e})") from e
    metrics = MetricColumns() if metrics is None else metrics
    metrics.read_more(run_dir / METRICS_FILE)
    if not len(metrics):
        raise CompareError(f"{run_dir.name} has no metrics yet (an empty or missing "
                           f"{METRICS_FILE}): compare runs that have trained at least one epoch")
    return RunSeries(run_dir, run_dir.name, config, metrics, read_set_events(run_dir, metrics),
                     read_diagnoses(run_dir))


def read_diagnoses(run_dir: Path) -> list[dict]:
    """The diagnoses the run had (metrics.jsonl's `diagnoses` field, written only by the
    epochs after which one fired or cleared): {"rule", "fired" (epoch), "cleared" (epoch or
    None: in force at the end), "silenced", "text", "suggestion"}, in the order they fired."""
    spans: list[dict] = []
    try:
        with (Path(run_dir) / METRICS_FILE).open("rb") as f:
            lines = [line for line in f if b'"diagnoses"' in line]
    except OSError:
        return spans
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        for entry in row.get("diagnoses") or []:
            if not isinstance(entry, dict):
                continue
            open_span = next((s for s in reversed(spans) if s["rule"] == entry.get("rule")
                              and s["cleared"] is None), None)
            if entry.get("status") == "fired" and open_span is None:
                spans.append({"rule": entry.get("rule"), "fired": row.get("epoch"),
                              "cleared": None, "silenced": False, "text": entry.get("text", ""),
                              "suggestion": entry.get("suggestion")})
            elif entry.get("status") == "cleared" and open_span is not None:
                open_span["cleared"] = row.get("epoch")
                open_span["silenced"] = bool(entry.get("silenced"))
    return spans


def diagnosis_text(span: dict) -> str:
    """`kl_blowup at epochs 1-18: updates overshoot: ...` (`1-` while still in force)."""
    end = "" if span["cleared"] is None else span["cleared"]
    note = " (silenced)" if span.get("silenced") else ""
    return f"{span['rule']} at epochs {span['fired']}-{end}{note}: {span['text']}"


def final_figures(run: RunSeries) -> dict[str, object]:
    """What a run came to: state, steps, epochs, best and last score, last episode stats,
    mean SPS and time trained (None where the rows never had it)."""
    last = run.metrics.last
    scores, sps = run.metrics.values("score"), run.metrics.values("sps")
    # a run's steps are what `puffer-tui runs` says (run_info): its latest state's, which
    # is past the last row when a stop cut an epoch's update (it counts, it wrote no row)
    steps, epochs = run_info(run.path).global_step, last("epoch")
    status_epoch = read_status(run.path).get("epoch")
    if isinstance(status_epoch, int) and (epochs is None or status_epoch > epochs):
        epochs = status_epoch
    return {"state": run_state(run.path), "steps": None if steps is None else int(steps),
            "epochs": None if epochs is None else int(epochs),
            "best score": max(scores) if scores else None, "last score": last("score"),
            "episode_return": last("episode_return"), "episode_length": last("episode_length"),
            "mean SPS": sum(sps) / len(sps) if sps else None, "uptime": last("uptime"),
            # the env's own fields, last value: env/is_success ...
            **{f"{ENV}/{key.removeprefix(f'{ENV}/')}": last(key)
               for key in run.metrics.env_fields}}
