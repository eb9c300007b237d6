"""`train --headless` prints the engine's start-up lines even when they came before it
connected: the engine pushes events only to the clients connected at the time, so a quick
engine's first lines (its device, its preset, a C port's note) went missing in about one
headless run in four. They are read back from events.log, from this engine's own start."""

import io
import time

from app_fakes import NullLive, QueuedClient
from rich.console import Console

from puffer_tui.app.headless_display import HeadlessDisplay
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.events import EventLog
from puffer_tui.engine.shared.protocol import MessageType, RunState


def test_the_lines_before_the_connection_are_printed_once_and_only_this_engines(tmp_path):
    events = EventLog(tmp_path)
    events.info("engine 111 starting gym:Acrobot-v1 (new run)")  # an earlier engine of the run
    events.info("training stopped at step 2048")
    events.info("engine 222 starting gym:Acrobot-v1 (resumed)")
    port = events.info("gym:Acrobot-v1 steps through its C port (acrobot: ...)")
    assert (tmp_path / rd.EVENTS_FILE).exists()
    client = QueuedClient({"state": RunState.RUNNING, "env": "gym:Acrobot-v1", "run": "r",
                           "pid": 222})
    out = io.StringIO()
    display = HeadlessDisplay(client, run_dir=tmp_path, console=Console(file=out, width=200))
    display.print_earlier_events()
    # the port's line was pushed too (we connected within its second): printed once
    later = {"type": MessageType.EVENT, "time": time.time() + 2, "level": "info",
             "text": "checkpoint saved: step-2.pt"}
    client.queued = [port, later]
    display._pump(NullLive())
    lines = [line for line in out.getvalue().splitlines() if line.startswith("info ")]
    assert lines == ["info engine 222 starting gym:Acrobot-v1 (resumed)",
                     "info gym:Acrobot-v1 steps through its C port (acrobot: ...)",
                     "info checkpoint saved: step-2.pt"]
