"""What the app knows about the run: the engine's latest telemetry plus short histories.

The app feeds the link's messages in (`ingest`, on the app's thread) and tells the screens
what changed; they read from here when they redraw, at their own pace, so a burst of
telemetry never turns into a burst of redraws. Nothing here touches Textual, which keeps it
easy to test.

Tested in: tests/app/test_app_store.py, tests/app/test_app_state.py
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import time
from collections import deque
from dataclasses import dataclass, field

from puffer_tui.engine.shared.protocol import (
    ENV,
    EVAL,  # the epoch row's evaluation: telemetry carries the last row's, tagged with its epoch
    EVAL_KEYS,
    LOSS_KEYS,
    LOSSES,
    Frame,  # tiles, an RGB image or text; widgets and tests import it from here
    MessageType,
    TelemetrySnapshot,
    decode_frame,
)


@dataclass
class Event:
    time: float
    level: str
    text: str


@dataclass
class TelemetryStore:
    """Telemetry, histories and events of one run, as seen by one client."""

    sps_capacity: int = 600
    epoch_capacity: int = 2000
    event_capacity: int = 500
    hello: dict = field(default_factory=dict)
    latest: TelemetrySnapshot | None = None  # the engine's last telemetry, as it sent it
    sps: deque = field(init=False)
    steps: deque = field(init=False)  # global_step at each epoch, the x axis of the loss curves
    losses: dict = field(init=False)
    stats: dict = field(init=False)
    events: deque = field(init=False)
    evals: dict = field(init=False)  # {eval key: values, one per evaluation}
    eval_steps: deque = field(init=False)  # global_step of each evaluation
    frame: Frame | None = None
    last_message: float = 0.0  # time.monotonic() of the last line received
    events_seen: int = 0  # total events ever ingested, so a log can append only the new ones
    events_reordered: int = 0  # bumped when an event lands before others: a log redraws all
    telemetry_seen: int = 0  # telemetry pushes ingested (tests wait for "a few more pushes")
    _last_epoch: int | None = None
    _last_eval_epoch: int = 0

    def __post_init__(self):
        self.sps = deque(maxlen=self.sps_capacity)
        self.steps = deque(maxlen=self.epoch_capacity)
        self.losses = {k: deque(maxlen=self.epoch_capacity) for k in LOSS_KEYS}
        self.stats = {}
        self.events = deque(maxlen=self.event_capacity)
        self.evals = {k: deque(maxlen=self.epoch_capacity) for k in EVAL_KEYS}
        self.eval_steps = deque(maxlen=self.epoch_capacity)

    # -- input --------------------------------------------------------------------------------

    def set_hello(self, reply: dict) -> None:
        self.hello = dict(reply)

    def ingest(self, message: dict, now: float | None = None) -> None:
        """One push from the engine (telemetry, event or frame); unknown types are ignored."""
        self.last_message = time.monotonic() if now is None else now
        kind = message.get("type")
        if kind == MessageType.TELEMETRY:
            self._telemetry(TelemetrySnapshot.from_wire(message))
        elif kind == MessageType.EVENT:
            self.add_event(message.get("level", "info"), str(message.get("text", "")),
                           message.get("time"))
        elif kind == MessageType.FRAME:
            self._frame(message)

    def touch(self, now: float | None = None) -> None:
        """Any sign of life from the engine (a reply counts too)."""
        self.last_message = time.monotonic() if now is None else now

    def add_event(self, level: str, text: str, when: float | None = None) -> None:
        """Keep events in time order: the app's own and the engine's clocks interleave."""
        event = Event(time.time() if when is None else float(when), level, text)
        if self.events and event.time < self.events[-1].time:
            if _event_key(event) in {_event_key(e) for e in self.events}:
                return  # already known (read from events.log, then pushed again)
            ordered = list(self.events)
            bisect.insort(ordered, event, key=lambda e: e.time)
            self.events = deque(ordered, maxlen=self.event_capacity)
            self.events_reordered += 1
        else:
            self.events.append(event)
        self.events_seen += 1

    def load_history(self, rows: list[dict], events: list[Event]) -> None:
        """What happened before this client connected: metrics.jsonl rows (one per epoch,
        grouped as run_history reads them) and events.log entries. Pushed events already here are not repeated."""
        for row in rows[-self.epoch_capacity:]:
            epoch = row.get("epoch")
            if not isinstance(epoch, int) or epoch <= (self._last_epoch or 0):
                continue
            if isinstance(row.get("sps"), (int, float)) and math.isfinite(row["sps"]):
                self.sps.append(float(row["sps"]))  # one sample per epoch: the shape, roughly
            self._epoch_row(epoch, row.get("global_step", 0), row.get(LOSSES) or {},
                            row.get(ENV) or {})
            self._evaluation(row.get(EVAL), epoch, row.get("global_step", 0))
        # The file's entries happened first; within one second (the file's resolution) they
        # stay ahead of what was pushed or said by the app since connecting.
        from_file = {_event_key(e) for e in events}
        merged = list(events) + [e for e in self.events if _event_key(e) not in from_file]
        merged.sort(key=lambda e: int(e.time))
        self.events = deque(merged, maxlen=self.event_capacity)
        self.events_seen += len(merged)
        self.events_reordered += 1

    def amend(self, **fields) -> None:
        """Change fields of the latest telemetry before the next push does (a diagnosis pushed
        between two telemetries); nothing before the first."""
        if self.latest is not None:
            self.latest = dataclasses.replace(self.latest, **fields)

    def _telemetry(self, t: TelemetrySnapshot) -> None:
        self.latest = t
        self.telemetry_seen += 1
        if t.sps > 0 and math.isfinite(t.sps):  # the engine's rate; 0: nothing stepping
            self.sps.append(t.sps)
        self._evaluation(t.eval, t.eval.get("epoch"), t.global_step)
        if not t.epoch or t.epoch <= (self._last_epoch or 0):
            return
        self._epoch_row(t.epoch, t.global_step, t.losses, t.stats)

    def _epoch_row(self, epoch: int, step, losses: dict, stats: dict) -> None:
        # Loss and episode histories grow once per epoch, not once per push.
        self._last_epoch = epoch
        if losses:
            self.steps.append(int(step or 0))
            for k in LOSS_KEYS:
                v = losses.get(k)
                self.losses[k].append(float(v) if isinstance(v, (int, float)) else math.nan)
        for k, v in stats.items():
            if isinstance(v, (int, float)) and math.isfinite(v):
                self.stats.setdefault(k, deque(maxlen=self.epoch_capacity)).append(float(v))

    def _evaluation(self, group, epoch, step) -> None:
        """One point per evaluation: the telemetry repeats the last row's until the next
        epoch, so an evaluation counts once, by the epoch that ran it."""
        if not isinstance(group, dict) or not group or not isinstance(epoch, int) \
                or epoch <= self._last_eval_epoch:
            return
        self._last_eval_epoch = epoch
        self.eval_steps.append(int(step or 0))
        for k in EVAL_KEYS:
            v = group.get(k)
            finite = isinstance(v, (int, float)) and math.isfinite(v)
            self.evals[k].append(float(v) if finite else math.nan)

    def _frame(self, m: dict) -> None:
        frame = decode_frame(m)
        if frame is not None:  # a bad frame is dropped; the render keeps the last good one
            self.frame = frame

    # -- views --------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        if self.latest is not None:
            return self.latest.state
        return self.hello.get("state") or "connecting"

    def silence(self, now: float | None = None) -> float:
        """Seconds since the engine last said anything (inf before the first message)."""
        if not self.last_message:
            return math.inf
        return (time.monotonic() if now is None else now) - self.last_message

    def eval_history(self, key: str = "score") -> list[float]:
        """The evaluations' `key` so far (NaN where one had none, e.g. no score logged)."""
        return list(self.evals.get(key, ()))

    def trend(self, key: str, window: int = 5) -> int:
        """+1 / -1 / 0: the mean of the last `window` epochs against the `window` before
        ("eval/<name>": of the last evaluations)."""
        if key.startswith(f"{EVAL}/"):
            values = [v for v in self.eval_history(key[len(EVAL) + 1:]) if math.isfinite(v)]
        else:
            values = list(self.stats.get(key, ()))
        if len(values) < 2:
            return 0
        window = min(window, len(values) // 2)
        recent = sum(values[-window:]) / window
        before = sum(values[-2 * window:-window]) / window
        scale = max(abs(recent), abs(before), 1e-9)
        if abs(recent - before) / scale < 0.01:
            return 0
        return 1 if recent > before else -1


def _event_key(event: Event) -> tuple:
    # events.log keeps whole seconds: compare at that resolution
    return int(event.time), event.level, event.text


def downsample(values, width: int) -> list[float]:
    """At most `width` points: the mean of equal buckets (keeps a curve's shape, drops noise)."""
    values = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if width <= 0 or len(values) <= width:
        return values
    out = []
    n = len(values)
    for i in range(width):
        lo, hi = i * n // width, (i + 1) * n // width
        bucket = values[lo:max(hi, lo + 1)]
        out.append(sum(bucket) / len(bucket))
    return out


def downsample_xy(xs, ys, width: int) -> tuple[list[float], list[float]]:
    """Paired (x, y) series bucketed to at most `width` points; non-finite y are dropped."""
    pairs = [(x, y) for x, y in zip(xs, ys) if isinstance(y, (int, float)) and math.isfinite(y)]
    if width <= 0 or len(pairs) <= width:
        return [p[0] for p in pairs], [p[1] for p in pairs]
    n = len(pairs)
    out_x, out_y = [], []
    for i in range(width):
        bucket = pairs[i * n // width:max((i + 1) * n // width, i * n // width + 1)]
        out_x.append(bucket[-1][0])
        out_y.append(sum(p[1] for p in bucket) / len(bucket))
    return out_x, out_y
