"""The dashboard: every panel of a live run on one screen, and the keys that steer it.

The app folds the engine's messages into the TelemetryStore and tells this screen what
changed (`RunChanged`); the screen hands each widget plain data from the store. Redraws are
the app's main cost, so they are throttled per kind: the render at most ~4 times a second,
numbers and plots at most once a second (plots only when a new epoch arrived); a change a
key asked for (pause, resume, the link lost) is drawn at once. With no messages, nothing
runs. Keys become `EngineRequest` messages that the app sends from a worker; it never waits
on the engine.

Evaluation during training (engine/evaluation/periodic_eval.py) shows as an "eval score" line beside the
training score in the episodes panel. Once the run has a recording, `v` replays the newest one
in the env panel at its frame rate (a RecordingPlayer, screens/dashboard_replay.py); any key
stops it.
"""

from __future__ import annotations

import gc
import time
import tomllib
from collections.abc import Iterable
from pathlib import Path

from textual import events, on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import Footer

from puffer_tui.app import link_messages as lm
from puffer_tui.app import navigation as nav
from puffer_tui.app.telemetry_store import TelemetryStore
from puffer_tui.app.widgets.cpu_panel import CpuPanel
from puffer_tui.app.widgets.diagnosis_line import DiagnosisLine
from puffer_tui.app.widgets.env_render import EnvRender
from puffer_tui.app.widgets.episode_stats import EpisodeStats
from puffer_tui.app.widgets.event_log import EventLog
from puffer_tui.app.widgets.loss_panel import LossPanel
from puffer_tui.app.widgets.run_header import RunHeader
from puffer_tui.app.widgets.sps_history import SpsHistory
from puffer_tui.app.widgets.timing_bars import TimingBars
from puffer_tui.app.widgets.workers_panel import WorkersPanel
from puffer_tui.engine.shared.protocol import (
    FINAL_STATES,
    RunState,
    TelemetrySnapshot,
    next_saliency,
    palette_from_wire,
)
from puffer_tui.engine.shared.run_dir import CONFIG_FILE
from puffer_tui.screens.confirm import ChoiceDialog
from puffer_tui.screens.dashboard_replay import RecordingPlayer
from puffer_tui.screens.diagnosis import DiagnosisScreen
from puffer_tui.screens.help import HelpScreen
from puffer_tui.screens.hyperparameters import HyperparameterScreen, current_values
from puffer_tui.screens.render import RenderScreen

EVAL_SCORE = "eval/score"  # the episodes panel's line of the evaluations' score
# keys that need a live engine (hidden once the run has ended or the link is gone)
STEERING = ("pause", "resume", "checkpoint", "stop", "hyperparameters", "autopilot")
FRAME_REFRESH_S = 0.25  # the render, at most this often (the engine sends no more frames)
PANEL_REFRESH_S = 1.0  # numbers and plots, at most this often (plots only when a new epoch arrived)


def _saved_env(run_dir: Path) -> str | None:
    """The env named in the run's config.toml (None when it cannot be read)."""
    try:
        with (run_dir / CONFIG_FILE).open("rb") as f:
            env = tomllib.load(f).get("env_name")
    except (OSError, ValueError):
        return None
    return env if isinstance(env, str) else None


class DashboardScreen(Screen):
    # 80x24 first (the default terminal): narrow side panels leave the plots room; from 100
    # columns on, the side panels take their full width.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]

    BINDINGS = [
        Binding("p", "pause", "Pause"),
        Binding("p", "resume", "Resume"),
        Binding("c", "checkpoint", "Checkpoint"),
        Binding("s", "stop", "Stop"),
        Binding("h", "hyperparameters", "Hyperparams"),
        Binding("r", "render_view", "Render"),
        # what drives the policy's choice, over the render: of log pi(a|s), of V(s), off
        Binding("g", "saliency", "Saliency"),
        # a diagnosis in force (app/widgets/diagnosis_line.py): its evidence, fix, dismissal
        Binding("a", "diagnosis_apply", "Fix"),
        Binding("x", "diagnosis_dismiss", "Hide"),
        Binding("d", "diagnosis", "Diagnosis", show=False),  # the line says "d: why"
        # train.autopilot on/off; the header says "autopilot" while it is on (no footer room)
        Binding("A", "autopilot", "Autopilot", show=False),
        Binding("v", "replay", "Replay"),  # shown once the run has a recording
        Binding("left_square_bracket", "env(-1)", "Prev env", show=False),
        Binding("right_square_bracket", "env(1)", "Next env", show=False),
        Binding("l", "next_loss", "Next loss", show=False),
        Binding("b", "launcher", "Launcher"),
        Binding("b", "back_to_sweep", "Sweep"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "app.quit", "Quit"),
    ]

    link_state: reactive[str | None] = reactive(None, init=False)
    linked: reactive[bool] = reactive(False, init=False)

    def __init__(self, store: TelemetryStore, link_state: str | None = None,
                 render_env: int = 0, over_sweep: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.store = store
        self.over_sweep = over_sweep  # a sweep trial's: b goes back to the sweep view
        self.set_reactive(DashboardScreen.link_state, link_state)
        self.render_env = render_env
        self.saliency: str | None = None  # the overlay asked for: "action", "value" (g)
        self._shown_frame = None
        self._plotted_epochs = -1
        self._last_state = ""
        # When each kind of panel was last drawn, and the redraw waiting for its slot.
        self._drawn_at = {"numbers": 0.0, "frame": 0.0}
        self._waiting: dict[str, Timer] = {}
        self.redraws = 0  # numbers-and-plots redraws so far (tests wait on it)
        self._dir_identity: dict | None = None  # env and run read from the run dir, once
        self._stale: set[str] = set()  # parts that changed while a full screen hid this one
        # `v`: the newest recording in the env panel, instead of the live frames
        self.player = RecordingPlayer(self, lambda: self.query(EnvRender),
                                      lambda: self.store.frame, self.sync_footer)

    def compose(self) -> ComposeResult:
        yield RunHeader()
        yield DiagnosisLine()  # one line, only while a diagnosis is in force
        with Horizontal(id="top"):
            with Vertical(id="left"):
                yield SpsHistory()
                yield TimingBars()
                yield WorkersPanel()  # shown for several learner ranks or Ray actors
            yield LossPanel()
            yield EnvRender()
        with Horizontal(id="bottom"):
            yield CpuPanel()
            yield EpisodeStats()
            yield EventLog()
        yield Footer(compact=True)  # every key's label fits 80 columns

    def on_mount(self) -> None:
        # What exists now (the app, its modules, the screens) lives as long as the app: out of
        # the collector's sight. A full collection scanned it all, a pause that landed on a
        # key (h, ?) as its screen's widgets were being made.
        gc.freeze()
        self._set_render_env(self.render_env)
        for render in self.query(EnvRender):
            render.show_policy = True
        self.query_one(RunHeader).link_state = self.link_state
        self.refresh_frame()
        self.refresh_numbers_and_plots()

    # -- messages from the app -------------------------------------------------------------

    @on(lm.RunChanged)
    def _on_run_changed(self, message: lm.RunChanged) -> None:
        if self._hidden():
            # under a full screen (the editor, the full-screen render): nothing to see, and a
            # redraw of the plots would slow the screen on top; drawn when it is back
            self._stale.update(message.parts)
            return
        for part in message.parts:
            self._schedule(part, message.urgent)

    def _hidden(self) -> bool:
        top = self.app.screen
        return top is not self and not isinstance(top, ModalScreen)

    def _schedule(self, part: str, urgent: bool) -> None:
        """Draw `part` now if its slot is free (or it is urgent), else once, when it is."""
        if urgent and part == "numbers":
            # What a key changed (paused, resumed, the link gone) shows at once; the plots,
            # the costly part, wait for their slot like any other change.
            self.refresh_panels()
            urgent = False
        interval = FRAME_REFRESH_S if part == "frame" else PANEL_REFRESH_S
        wait = 0.0 if urgent else self._drawn_at[part] + interval - time.monotonic()
        if wait <= 0:
            if part in self._waiting:
                self._waiting.pop(part).stop()
            self._draw(part)
        elif part not in self._waiting:
            self._waiting[part] = self.set_timer(wait, lambda: self._draw(part))

    def _draw(self, part: str) -> None:
        self._waiting.pop(part, None)
        self._drawn_at[part] = time.monotonic()
        if part == "frame":
            self.refresh_frame()
        else:
            self.refresh_numbers_and_plots()

    @on(lm.LinkStateChanged)
    def _on_link_state(self, message: lm.LinkStateChanged) -> None:
        self.linked = message.linked
        self.link_state = message.state

    def watch_link_state(self, state: str | None) -> None:
        for header in self.query(RunHeader):
            header.link_state = state  # "not responding" shows without waiting
        self.sync_footer()  # connected or lost: the steering keys come or go

    def watch_linked(self, linked: bool) -> None:
        self.sync_footer()
        if linked:
            self._request_frames()

    def on_screen_resume(self) -> None:
        if self.linked:  # back from the full-screen render: this panel's view and rate again
            self._request_frames()
        stale, self._stale = self._stale, set()
        for part in stale:  # what changed while it was hidden
            self._schedule(part, urgent=True)

    def _request_frames(self) -> None:
        # the policy's view comes with the frames (the strip beside the render)
        args = {"env": self.render_env, "fps": round(1 / FRAME_REFRESH_S), "policy": True}
        if self.saliency:
            args["saliency"] = self.saliency
        self.post_message(lm.EngineRequest("render", args, quiet=True))

    @on(lm.RenderEnvChanged)
    def _on_render_env(self, message: lm.RenderEnvChanged) -> None:
        self._set_render_env(message.index)
        if self.is_current:
            self._request_frames()

    # -- attributes down -------------------------------------------------------------------

    def refresh_frame(self) -> None:
        store = self.store
        if store.frame is self._shown_frame or self.player.replay is not None:
            return
        self._shown_frame = store.frame
        render = self.query_one(EnvRender)
        render.palette = self.app_palette()
        render.num_envs = int(store.hello.get("num_envs") or 0)
        render.frame = store.frame

    def refresh_numbers_and_plots(self) -> None:
        self.refresh_panels()
        self.refresh_plots()
        self.redraws += 1

    def refresh_panels(self) -> None:
        store = self.store
        t = store.latest or TelemetrySnapshot()  # the engine's numbers, shown as they are
        header = self.query_one(RunHeader)
        header.identity, header.telemetry = self._identity(), store.latest
        diagnoses = self.query_one(DiagnosisLine)
        before = diagnoses.top
        diagnoses.show(t.diagnoses)
        if (before is None) != (diagnoses.top is None):
            self.set_class(diagnoses.top is not None, "-diagnosis")
            self.sync_footer()  # its keys come (or go)
        sps = self.query_one(SpsHistory)
        sps.samples, sps.now, sps.state = list(store.sps), t.sps, store.state
        timing = self.query_one(TimingBars)
        timing.percent, timing.seconds = t.timing_pct, t.timing
        stats = self.query_one(EpisodeStats)
        history = {k: list(v) for k, v in store.stats.items()}
        if store.eval_history():  # one point per evaluation, beside the training score
            history[EVAL_SCORE] = store.eval_history()
        stats.trends = {k: store.trend(k) for k in history}
        stats.history = history
        self.query_one(CpuPanel).gpu = t.gpu
        workers = self.query_one(WorkersPanel)
        workers.worker_rows, workers.cluster = t.workers, t.cluster
        workers.set_class(len(workers.worker_rows) > 1 or bool(workers.cluster), "-shown")
        self.query_one(EventLog).show(list(store.events), store.events_seen,
                                      store.events_reordered)
        if self.player.recordings.check(self._run_dir()):
            self.set_class(self.player.available, "-recording")
            self.sync_footer()  # the replay key comes (or goes)
        if store.state != self._last_state:
            self._last_state = store.state
            # The footer's pause/resume label follows the state. Footer updates are async
            # recomposes that can overlap and leave an older label, so sync again a moment
            # later, once any recompose in flight is done.
            self.sync_footer()

    def sync_footer(self) -> None:
        self._sync_footer()
        self.set_timer(0.6, self._sync_footer)

    def _sync_footer(self) -> None:
        self.refresh_bindings()
        if not self.app.app_focus:
            # Textual's Footer ignores binding updates while the terminal reports the app
            # unfocused (another window, a detached tmux): ask it directly, in its context.
            for footer in self.query(Footer):
                footer.call_later(footer.recompose)

    def refresh_plots(self) -> None:
        store = self.store
        if len(store.steps) == self._plotted_epochs:
            return
        self._plotted_epochs = len(store.steps)
        losses = self.query_one(LossPanel)
        losses.steps = list(store.steps)
        losses.curves = {k: list(v) for k, v in store.losses.items()}
        losses.learning_rate = getattr(store.latest, "learning_rate", None)

    def show_system(self, sample) -> None:
        """A psutil sample from the app's monitor worker (may land before compose is done)."""
        for panel in self.query(CpuPanel):
            panel.sample = sample

    def app_palette(self) -> dict:
        return palette_from_wire(self.store.hello.get("palette"))

    def _run_dir(self) -> Path | None:
        run_dir = self.store.hello.get("run_dir") or getattr(self.app, "run_dir", None)
        return Path(run_dir) if run_dir else None

    def _identity(self) -> dict:
        hello = self.store.hello
        if not hello.get("run") and (run_dir := self._run_dir()) is not None:
            # no hello yet (the engine is starting): the run's own directory names it
            if self._dir_identity is None:
                self._dir_identity = {"run": run_dir.name, "env": _saved_env(run_dir)}
            hello = {**self._dir_identity, **{k: v for k, v in hello.items() if v}}
        return {"env": hello.get("env"), "run": hello.get("run"), "state": hello.get("state")}

    # -- keys (messages up, to the app) ----------------------------------------------------

    def can_steer(self) -> bool:
        return lm.can_steer(self.link_state, self.store.state)

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The command palette's entries for this run: the same rule as the footer, only
        what can work now."""
        if self.can_steer():
            if self.store.state == RunState.PAUSED:
                yield SystemCommand("Resume training", "Resume the engine", self.action_resume)
            else:
                yield SystemCommand("Pause training", "Pause the engine", self.action_pause)
            yield SystemCommand("Checkpoint now", "Save a checkpoint", self.action_checkpoint)
            yield SystemCommand("Stop run", "Checkpoint and stop the engine", self.action_stop)
            yield SystemCommand("Hyperparameters", "Edit live hyperparameters",
                                self.action_hyperparameters)
        yield SystemCommand("Render view", "Full-screen render", self.action_render_view)
        yield SystemCommand("Next loss curve", "Plot the next loss", self.action_next_loss)
        if self.player.available:
            yield SystemCommand("Replay recording", f"Play {self.player.recordings.path.name} "
                                "in the env panel", self.action_replay)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        state = self.store.state
        if action in STEERING and not self.can_steer():
            return False  # hidden from the footer: the run is over or not connected yet
        if action == "back_to_sweep":
            return self.over_sweep
        if action == "launcher":  # back to the launcher once this run is over (or lost)
            return not self.over_sweep and not self.linked and (state in FINAL_STATES
                                        or self.link_state == lm.DISCONNECTED)
        if action.startswith("diagnosis"):
            return self.query_one(DiagnosisLine).allows(action, self.can_steer())
        if action == "replay":
            return self.player.available or self.player.replay is not None
        if action == "saliency":  # g still works (on_key) when the footer has no room for it
            return not self._footer_crowded()
        if action == "pause":
            return state != RunState.PAUSED
        if action == "resume":
            return state == RunState.PAUSED
        return True

    def action_pause(self) -> None:
        self.post_message(lm.EngineRequest("pause"))

    def action_resume(self) -> None:
        self.post_message(lm.EngineRequest("resume"))

    def action_checkpoint(self) -> None:
        self.post_message(lm.EngineRequest("checkpoint"))

    def action_stop(self) -> None:
        if not self.can_steer() or any(isinstance(s, ChoiceDialog) for s in self.app.screen_stack):
            return  # nothing to stop, or the question is already on screen

        def stop(choice: str | None) -> None:
            if choice == "stop":
                self.post_message(lm.EngineRequest("stop", {"checkpoint": True}))

        self.app.push_screen(ChoiceDialog(
            "Stop training? The engine saves a checkpoint and exits.",
            [("stop", "Stop the run", "error"), ("cancel", "Keep training", "default")],
            live_run_only=True,
        ), stop)

    def action_hyperparameters(self) -> None:
        self.app.push_screen(HyperparameterScreen(self.store, self.link_state))

    def action_replay(self) -> None:
        self.player.toggle()

    def _footer_crowded(self) -> bool:
        """80 columns with the replay or diagnosis keys shown: no room for g's label."""
        return self.has_class("-narrow") and (self.has_class("-recording")
                                              or self.has_class("-diagnosis"))

    def on_key(self, event: events.Key) -> None:
        if event.key == "g" and self._footer_crowded() and not self.player.busy:
            event.stop()
            self.action_saliency()
            return
        if self.player.busy:
            event.prevent_default()  # the key stops the replay and does nothing else
            event.stop()
            self.player.stop()

    def on_screen_suspend(self) -> None:
        self.player.stop()

    def action_render_view(self) -> None:
        self.app.push_screen(RenderScreen(self.store, self.render_env, self.link_state,
                                          saliency=self.saliency))

    def action_saliency(self) -> None:
        """The saliency overlay: of the action's log-probability, then of the value, then off."""
        self.saliency = next_saliency(self.saliency)
        for render in self.query(EnvRender):
            render.saliency = self.saliency
        if self.linked:
            self._request_frames()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    def action_diagnosis(self) -> None:
        self.app.push_screen(DiagnosisScreen(self.query_one(DiagnosisLine), self.can_steer))

    def action_autopilot(self) -> None:
        """Turn the doctor's autopilot on or off: a live `set` of train.autopilot."""
        on = not current_values(self.store).get("train.autopilot", False)
        self.post_message(lm.EngineRequest("set", {"key": "train.autopilot", "value": on}))
        self.notify("autopilot on: the diagnoses' live fixes apply by themselves" if on else
                    "autopilot off: settings stay as they are")

    def action_diagnosis_apply(self) -> None:
        self.query_one(DiagnosisLine).apply(self, self.can_steer())

    def action_diagnosis_dismiss(self) -> None:
        self.query_one(DiagnosisLine).dismiss(self, self.can_steer())
        self.sync_footer()

    def action_launcher(self) -> None:
        self.post_message(nav.OpenLauncher())

    def action_back_to_sweep(self) -> None:
        self.post_message(nav.BackToSweep())

    def action_next_loss(self) -> None:
        self.query_one(LossPanel).cycle()

    def action_env(self, delta: int) -> None:
        self.post_message(lm.RenderEnvStep(delta))

    def _set_render_env(self, index: int) -> None:
        self.render_env = index
        for render in self.query(EnvRender):
            render.env_index = index
