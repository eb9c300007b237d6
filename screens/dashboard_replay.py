"""The dashboard's replay of the run's newest recording in its env panel (a mixin of
DashboardScreen, which draws the live frames the rest of the time).

`v` (DashboardScreen.BINDINGS; in the footer once the run has a recording) loads the file in
a worker thread (app/widgets/recording_replay.py), then shows its frames in the env panel at
the recording's frame rate, the frame following the clock; any key, `v` included, stops it,
and so does the end of the recording or leaving the screen.
"""

from __future__ import annotations

import time
from pathlib import Path

from textual import events, work
from textual.timer import Timer

from puffer_tui.app.widgets.env_render import EnvRender
from puffer_tui.app.widgets.recording_replay import LatestRecording, Replay, load_replay

MAX_TICKS_PER_S = 20.0  # redraws of a replay at most this often (frames are skipped to keep time)


class ReplayKeys:
    def init_replay(self) -> None:
        self.recordings = LatestRecording()
        self.replay: Replay | None = None  # the recording playing in the env panel
        self._replay_started = 0.0
        self._replay_timer: Timer | None = None
        self.replays = 0  # replays started so far (tests wait on it)

    def _run_dir(self) -> Path | None:
        run_dir = self.store.hello.get("run_dir") or getattr(self.app, "run_dir", None)
        return Path(run_dir) if run_dir else None

    def action_replay(self) -> None:
        if self.replay is not None:
            self.stop_replay()
        elif self.recordings.path is not None:
            self.query_one(EnvRender).caption = f"loading {self.recordings.path.name}"
            self._load_replay(self.recordings.path)

    @work(thread=True, exclusive=True, group="replay")
    def _load_replay(self, path: Path) -> None:
        from puffer_tui.engine.shared.recordings import RecordingError

        try:
            replay = load_replay(path)
        except (RecordingError, OSError, ValueError) as e:
            self.app.call_from_thread(self._replay_failed, path, e)
            return
        self.app.call_from_thread(self._start_replay, replay)

    def _replay_failed(self, path: Path, error: Exception) -> None:
        self.query_one(EnvRender).caption = ""
        self.notify(f"cannot replay {path.name}: {error}", severity="warning", markup=False)

    def _start_replay(self, replay: Replay) -> None:
        if not self.query_one(EnvRender).caption:
            return  # stopped while it loaded
        self.replay = replay
        self.replays += 1
        self._replay_started = time.monotonic()
        # the frame shown follows the clock, whatever the ticks' jitter; at most 20 a second
        self._replay_timer = self.set_interval(1 / min(replay.fps, MAX_TICKS_PER_S), self._replay_tick)
        self._replay_tick()
        self.sync_footer()

    def _replay_tick(self) -> None:
        replay = self.replay
        if replay is None:
            return
        elapsed = time.monotonic() - self._replay_started
        frame = replay.frame_at(elapsed)
        if frame is None:
            self.stop_replay()
            return
        render = self.query_one(EnvRender)
        render.caption = (f"replay {replay.position(elapsed)}/{len(replay.frames)} "
                          f"{replay.path.name}")
        render.frame = frame

    def stop_replay(self) -> None:
        """Back to the live frames (also what any key does while a replay plays)."""
        if self._replay_timer is not None:
            self._replay_timer.stop()
            self._replay_timer = None
        was_playing = self.replay is not None
        self.replay = None
        for render in self.query(EnvRender):
            render.caption = ""
            render.frame = self.store.frame
        self._shown_frame = self.store.frame
        if was_playing:
            self.sync_footer()

    def on_key(self, event: events.Key) -> None:
        if self.replay is not None or self.query_one(EnvRender).caption:
            event.prevent_default()  # the key stops the replay and does nothing else
            event.stop()
            self.stop_replay()

    def on_screen_suspend(self) -> None:
        self.stop_replay()

