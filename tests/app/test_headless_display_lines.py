"""`train --headless` off a terminal: one plain line per interval (no escape codes, no panel
that a pipe shows only at the end), `--progress jsonl` one JSON object per interval with the
events as objects too; in a terminal the live panel as before. All from the same snapshot."""

import io
import json
from types import SimpleNamespace

from app_fakes import QueuedClient
from rich.console import Console

from puffer_tui.app import headless_display
from puffer_tui.app.headless_display import HeadlessDisplay
from puffer_tui.engine.shared.protocol import MessageType, RunState, TelemetrySnapshot


class Clock:
    def __init__(self):
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


def push(epoch: int, state=RunState.RUNNING) -> dict:
    snapshot = TelemetrySnapshot(
        time=1.0, state=state, env="squared", run="squared-1", global_step=256 * epoch,
        total_timesteps=100_000, epoch=epoch, sps=12345.0, sps_mean=12000.0, uptime=3.0,
        eta=42.0, learning_rate=3e-3,
        losses={"policy_loss": 0.0123, "value_loss": 0.5, "approx_kl": float("nan")},
        stats={"episode_return": 3.5, "score": 0.875, "episodes": 4})
    return {**snapshot.to_wire(), "type": MessageType.TELEMETRY}


def display(monkeypatch, **kwargs):
    clock = Clock()
    monkeypatch.setattr(headless_display, "time", SimpleNamespace(
        monotonic=clock.monotonic, time=lambda: 1.0, sleep=lambda s: None))
    client = QueuedClient({"state": RunState.STARTING, "env": "squared", "run": "squared-1"})
    out = io.StringIO()
    shown = HeadlessDisplay(client, run_dir=None, console=Console(file=out, width=300),
                            log_every=10.0, **kwargs)
    return shown, client, clock, out


def test_off_a_terminal_one_plain_line_per_interval(monkeypatch):
    shown, client, clock, out = display(monkeypatch)
    assert shown.progress == "lines"
    client.queued = [push(0, RunState.STARTING)]
    shown._pump(None)
    assert out.getvalue() == ""  # nothing measured yet
    client.queued = [push(1)]
    shown._pump(None)
    clock.now += 3
    client.queued = [push(2)]
    shown._pump(None)  # within the interval: no line
    clock.now += 8
    client.queued = [push(3)]
    shown._pump(None)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert "\x1b" not in out.getvalue()
    first = lines[0]
    for part in ("running", "step 256/100,000 (0%)", "SPS 12,345", "ETA 0:00:42",
                 "score 0.875", "return 3.500", "losses policy 0.0123 value 0.5 kl nan"):
        assert part in first, (part, first)
    assert "step 768/100,000" in lines[1]


def test_a_state_change_is_a_line_at_once(monkeypatch):
    shown, client, clock, out = display(monkeypatch)
    client.queued = [push(1)]
    shown._pump(None)
    client.queued = [push(1, RunState.STOPPING)]
    shown._pump(None)
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == ["running", "stopping"]


def test_jsonl_writes_one_object_per_interval_and_events_as_objects(monkeypatch):
    records = io.StringIO()
    shown, client, clock, out = display(monkeypatch, progress="jsonl", records=records)
    client.queued = [push(1), {"type": MessageType.EVENT, "time": 1.0, "level": "info",
                               "text": "checkpoint saved"}]
    shown._pump(None)
    rows = [json.loads(line) for line in records.getvalue().splitlines()]  # valid JSON: no NaN
    assert [row["type"] for row in rows] == ["event", "progress"]
    progress = rows[1]
    assert progress["global_step"] == 256 and progress["sps"] == 12345.0
    assert progress["score"] == 0.875 and progress["losses"]["approx_kl"] is None
    assert out.getvalue() == ""  # the console carries no JSON, the JSON no prose


def test_in_a_terminal_the_panel_as_before(monkeypatch):
    client = QueuedClient({"state": RunState.STARTING, "env": "squared", "run": "squared-1"})
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    assert HeadlessDisplay(client, run_dir=None, console=console).progress == "panel"
