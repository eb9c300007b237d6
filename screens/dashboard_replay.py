"""The dashboard's replay of the run's newest recording in its env panel: a `RecordingPlayer`
that DashboardScreen builds and calls (the screen draws the live frames the rest of the time).

`v` (DashboardScreen.BINDINGS; in the footer once the run has a recording) loads the file in
a worker thread (app/widgets/recording_replay.py), then shows its frames in the env panel at
the recording's frame rate, the frame following the clock; any key, `v` included, stops it,
and so does the end of the recording or leaving the screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from textual.dom import DOMNode
from textual.timer import Timer

from puffer_tui.app.widgets.env_render import EnvRender
from puffer_tui.app.widgets.recording_replay import LatestRecording, Replay, load_replay

MAX_TICKS_PER_S = 20.0  # redraws of a replay at most this often (frames are skipped to keep time)


class RecordingPlayer:
    """`node` runs its timer and loading worker (the screen); `panels()` are the env panels
    it draws in; `live_frame()` is what they show again when it stops; `on_change()` is
    told when a replay starts or a playing one stops (the footer's replay key changes)."""

    def __init__(self, node: DOMNode, panels: Callable[[], Iterable[EnvRender]],
                 live_frame: Callable[[], object], on_change: Callable[[], None]):
        self._node = node
        self._panels = panels
        self._live_frame = live_frame
        self._on_change = on_change
        self.recordings = LatestRecording()  # the run's newest recording, checked by the screen
        self.replay: Replay | None = None  # the recording playing in the env panel
        self.replays = 0  # replays started so far (tests wait on it)
        self._loading: Path | None = None  # the file a worker is loading
        self._started = 0.0
        self._timer: Timer | None = None

    @property
    def available(self) -> bool:
        """A recording to play (the key shows in the footer)."""
        return self.recordings.path is not None

    @property
    def busy(self) -> bool:
        """Playing or loading: a key stops it (and does nothing else)."""
        return self.replay is not None or self._loading is not None

    def toggle(self) -> None:
        """The key's action: play the newest recording, or stop the one playing."""
        if self.replay is not None:
            self.stop()
        elif self.recordings.path is not None:
            path = self._loading = self.recordings.path
            self._caption(f"loading {path.name}")
            self._node.run_worker(partial(self._load, path), thread=True, exclusive=True,
                                  group="replay")

    def _load(self, path: Path) -> None:
        from puffer_tui.engine.shared.recordings import RecordingError

        try:
            replay = load_replay(path)
        except (RecordingError, OSError, ValueError) as e:
            self._node.app.call_from_thread(self._failed, path, e)
            return
        self._node.app.call_from_thread(self._start, replay)

    def _failed(self, path: Path, error: Exception) -> None:
        self._loading = None
        self._caption("")
        self._node.notify(f"cannot replay {path.name}: {error}", severity="warning",
                          markup=False)

    def _start(self, replay: Replay) -> None:
        if self._loading is None:
            return  # stopped while it loaded
        self._loading = None
        self.replay = replay
        self.replays += 1
        self._started = time.monotonic()
        # the frame shown follows the clock, whatever the ticks' jitter; at most 20 a second
        self._timer = self._node.set_interval(1 / min(replay.fps, MAX_TICKS_PER_S), self._tick)
        self._tick()
        self._on_change()

    def _tick(self) -> None:
        replay = self.replay
        if replay is None:
            return
        elapsed = time.monotonic() - self._started
        frame = replay.frame_at(elapsed)
        if frame is None:
            self.stop()
            return
        for render in self._panels():
            render.caption = (f"replay {replay.position(elapsed)}/{len(replay.frames)} "
                              f"{replay.path.name}")
            render.frame = frame

    def stop(self) -> None:
        """Back to the live frames (also what any key does while a replay plays)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        was_playing = self.replay is not None
        self.replay = None
        self._loading = None
        for render in self._panels():
            render.caption = ""
            render.frame = self._live_frame()
        if was_playing:
            self._on_change()

    def _caption(self, text: str) -> None:
        for render in self._panels():
            render.caption = text
