"""The app's data side: TelemetryStore histories, trends, frames; formatting; crash text."""

from __future__ import annotations

import base64
import math

from app_fakes import HELLO, filled_store, frame, telemetry

from puffer_tui.app.telemetry_store import TelemetryStore, downsample, downsample_xy
from puffer_tui.app.widgets.env_render import frame_text
from puffer_tui.app.widgets.format import bar, duration, human, metric
from puffer_tui.engine.shared.protocol import LOSS_KEYS, spec_from_wire
from puffer_tui.screens.crash import last_error_text
from puffer_tui.screens.hyperparameters import current_values


def test_histories_grow_once_per_epoch_not_per_push():
    store = TelemetryStore()
    for _ in range(5):  # the engine repeats an epoch's numbers in every push of that epoch
        store.ingest(telemetry(1))
    store.ingest(telemetry(2))
    assert len(store.sps) == 6  # SPS is sampled every push
    assert list(store.steps) == [4096, 8192]
    assert all(len(store.losses[k]) == 2 for k in LOSS_KEYS)
    assert len(store.stats["score"]) == 2


def test_paused_pushes_do_not_add_sps_samples():
    store = TelemetryStore()
    store.ingest(telemetry(1, state="paused") | {"sps": 0.0, "eta": None})  # as the engine says
    assert not store.sps
    assert store.state == "paused"


def test_trend_follows_the_recent_epochs():
    store = filled_store(20)
    assert store.trend("score") == 1
    assert store.trend("episode_length") == -1
    assert store.trend("missing") == 0


def test_frames_are_decoded_and_bad_frames_dropped():
    store = TelemetryStore()
    store.ingest(frame())
    good = store.frame
    assert (good.height, good.width, len(good.tiles)) == (11, 11, 121)
    store.ingest({"type": "frame", "env": 0, "height": 3, "width": 3,
                  "tiles": base64.b64encode(b"\x00" * 5).decode()})  # wrong size
    store.ingest({"type": "frame", "env": 0, "height": 3, "width": 3, "tiles": "not base64!"})
    assert store.frame is good


def test_events_are_counted_for_incremental_logs():
    store = TelemetryStore(event_capacity=3)
    for i in range(5):
        store.ingest({"type": "event", "level": "info", "text": f"e{i}", "time": 0})
    assert store.events_seen == 5
    assert [e.text for e in store.events] == ["e2", "e3", "e4"]


def test_silence_is_measured_from_the_last_message():
    store = TelemetryStore()
    assert store.silence(now=10.0) == math.inf
    store.ingest(telemetry(1), now=10.0)
    assert store.silence(now=12.5) == 2.5


def test_downsample_keeps_length_and_mean():
    values = list(range(1000))
    out = downsample(values, 10)
    assert len(out) == 10
    assert abs(sum(out) / 10 - sum(values) / 1000) < 1e-9
    assert downsample([1.0, math.nan, 2.0], 10) == [1.0, 2.0]
    xs, ys = downsample_xy(range(100), [float(i) for i in range(100)], 4)
    assert len(xs) == len(ys) == 4 and xs[-1] == 99


def test_formatting():
    assert human(1_234_567) == "1.23M"
    assert human(None) == "-"
    assert duration(3725) == "1:02:05"
    assert duration(None) == "-"
    assert metric(0.00001234) == "1.23e-05"
    assert bar(0.5, 4) == "██  "
    assert bar(2.0, 3) == "███"


def test_frame_text_uses_the_palette_and_crops_to_fit():
    store = TelemetryStore()
    store.ingest(frame())
    palette = {int(k): tuple(v) for k, v in HELLO["palette"].items()}
    wide = frame_text(store.frame, palette, 40, 20)
    assert wide.plain.splitlines()[5].split()[5] == "@"
    small = frame_text(store.frame, palette, 5, 3)
    assert [len(line) for line in small.plain.splitlines()] == [5, 5, 5]


def test_last_error_text_reads_the_traceback_of_the_last_error(tmp_path):
    (tmp_path / "events.log").write_text(
        "2026-11-22T00:00:00Z [error] old failure\n"
        "2026-11-22T00:00:01Z [info] resumed\n"
        "2026-11-22T00:00:02Z [error] engine crashed: RuntimeError: boom\n"
        "  Traceback (most recent call last):\n"
        "    File \"x.py\", line 1\n"
        "2026-11-22T00:00:03Z [info] after\n"
    )
    text = last_error_text(tmp_path)
    assert text.splitlines() == ["engine crashed: RuntimeError: boom",
                                 "Traceback (most recent call last):", "  File \"x.py\", line 1"]
    assert last_error_text(tmp_path / "missing") == ""


def test_hyperparameter_specs_come_from_the_wire_schema():
    specs = {spec_from_wire(f).key: spec_from_wire(f) for f in HELLO["schema"]}
    assert specs["train.learning_rate"].coerce("0.01") == 0.01
    assert specs["train.learning_rate"].live and not specs["train.hidden_size"].live
    store = filled_store(2)
    values = current_values(store)
    assert values["train.learning_rate"] == 0.015 and values["env.size"] == 11


def test_cpu_panel_lines_show_every_core_processes_and_the_gpu():
    from app_fakes import system_sample

    from puffer_tui.app.widgets.cpu_panel import CpuPanel

    cores = CpuPanel._core_lines([float(i) for i in range(16)], width=60, rows=8)
    text = "\n".join(line.plain for line in cores)
    assert all(f"{i:>2} " in text for i in range(16)) and len(cores) <= 8
    lines = CpuPanel._process_lines(system_sample(), width=40)
    assert [line.plain.split()[0] for line in lines] == ["engine", "worker", "this"]
    gpu = CpuPanel._gpu_line({"name": "H100", "utilization": 87.0,
                              "memory_used": 3 * 2**30, "memory_total": 80 * 2**30}).plain
    assert "87%" in gpu and "3.0G/80.0G" in gpu and "H100" in gpu
