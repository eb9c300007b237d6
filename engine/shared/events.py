"""Engine events: appended to RUN_DIR/events.log and pushed to every connected client.

    events = EventLog(run_dir)
    events.subscribe(server.publish_event)   # push {"type": "event", ...} to clients
    events.info("checkpoint saved: ...")
    events.error("training crashed", traceback_text)

Each event is one entry in events.log: `2026-11-22T00:14:01Z [info] text`, with the further
lines of a multi-line text (a traceback) indented by two spaces. Thread-safe.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from puffer_tui.engine.shared.protocol import MessageType
from puffer_tui.engine.shared.run_dir import EVENTS_FILE

LEVELS = ("info", "warning", "error")


def event_record(level: str, text: str, when: float | None = None) -> dict:
    if level not in LEVELS:
        raise ValueError(f"event level must be one of {', '.join(LEVELS)}, got {level!r}")
    return {"type": MessageType.EVENT, "time": time.time() if when is None else when,
            "level": level, "text": text}


def format_line(event: dict) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(event["time"]))
    lines = str(event["text"]).rstrip("\n").split("\n")
    return "\n".join([f"{stamp} [{event['level']}] {lines[0]}", *("  " + ln for ln in lines[1:])])


class EventLog:
    def __init__(self, run_dir: str | os.PathLike):
        self.path = Path(run_dir) / EVENTS_FILE
        self._lock = threading.Lock()
        self._subscribers: list[Callable[[dict], None]] = []
        self._writing = True  # False once the run directory is gone: subscribers only

    def stop_writing(self) -> None:
        """The run directory was removed (engine/runtime/process.py): append nothing more."""
        self._writing = False

    def subscribe(self, callback: Callable[[dict], None]) -> None:
        """Call `callback(event)` for every later event (from the emitting thread)."""
        self._subscribers.append(callback)

    def emit(self, level: str, text: str) -> dict:
        event = event_record(level, text)
        with self._lock:
            try:
                if self._writing:
                    self._append(format_line(event) + "\n")
            except OSError as e:
                # A full disk must not swallow the event that says so: clients still get it.
                event = {**event, "text": f"{text}\n(not written to {self.path.name}: {e})"}
        for callback in list(self._subscribers):
            callback(event)
        return event

    def _append(self, line: str) -> None:
        # one write of the whole entry, to a file only the owner can read
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            data = line.encode("utf-8")
            if os.write(fd, data) != len(data):
                raise OSError(f"short write to {self.path}")
        finally:
            os.close(fd)

    def info(self, text: str) -> dict:
        return self.emit("info", text)

    def warning(self, text: str) -> dict:
        return self.emit("warning", text)

    def error(self, text: str) -> dict:
        return self.emit("error", text)
