"""The dashboard: every panel of a live run on one screen, and the keys that steer it.

The screen polls the app's TelemetryStore on its own timers and hands each widget plain data;
it never waits on the engine. Redraws are the app's main cost, so each panel is refreshed at
the rate its data really changes: the render ~4 Hz, numbers and plots once a second, and a
widget whose data did not change is not redrawn at all. Keys turn into requests the app
sends from a worker.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer

from puffer_tui.app.telemetry_store import TelemetryStore
from puffer_tui.app.widgets.cpu_panel import CpuPanel
from puffer_tui.app.widgets.env_render import EnvRender
from puffer_tui.app.widgets.episode_stats import EpisodeStats
from puffer_tui.app.widgets.event_log import EventLog
from puffer_tui.app.widgets.loss_panel import LossPanel
from puffer_tui.app.widgets.run_header import RunHeader
from puffer_tui.app.widgets.sps_history import SpsHistory
from puffer_tui.app.widgets.timing_bars import TimingBars
from puffer_tui.engine.protocol import FINAL_STATES, RunState, palette_from_wire

# keys that need a live engine (hidden once the run has ended or the link is gone)
STEERING = ("pause", "resume", "checkpoint", "stop", "hyperparameters")
FRAME_REFRESH_S = 0.25
PANEL_REFRESH_S = 1.0  # numbers and plots (plots only when a new epoch arrived)


class DashboardScreen(Screen):
    # 80x24 first (the default terminal): narrow side panels leave the plots room; from 100
    # columns on, the side panels take their full width.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    DEFAULT_CSS = """
    DashboardScreen { layout: vertical; }
    DashboardScreen #top { height: 3fr; min-height: 10; }
    DashboardScreen #bottom { height: 2fr; min-height: 6; }
    DashboardScreen #left { width: 32; }
    DashboardScreen TimingBars { height: 7; }
    DashboardScreen LossPanel { width: 1fr; }
    DashboardScreen EnvRender { width: 28; }
    DashboardScreen CpuPanel { width: 32; }
    DashboardScreen EpisodeStats { width: 1fr; max-width: 56; }
    DashboardScreen EventLog { width: 1fr; }
    DashboardScreen.-narrow #left { width: 26; }
    DashboardScreen.-narrow EnvRender { width: 26; }
    DashboardScreen.-narrow CpuPanel { width: 26; }
    DashboardScreen.-narrow EpisodeStats { width: 26; }
    """

    BINDINGS = [
        Binding("p", "pause", "Pause"),
        Binding("p", "resume", "Resume"),
        Binding("c", "checkpoint", "Checkpoint"),
        Binding("s", "stop", "Stop"),
        Binding("h", "hyperparameters", "Hyperparams"),
        Binding("r", "render_view", "Render"),
        Binding("left_square_bracket", "env(-1)", "Prev env", show=False),
        Binding("right_square_bracket", "env(1)", "Next env", show=False),
        Binding("l", "next_loss", "Next loss", show=False),
        Binding("b", "launcher", "Launcher"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit_run", "Quit"),
    ]

    def __init__(self, store: TelemetryStore, **kwargs):
        super().__init__(**kwargs)
        self.store = store
        self._shown_version = -1
        self._shown_frame = None
        self._plotted_epochs = -1
        self._last_state = ""

    def compose(self) -> ComposeResult:
        yield RunHeader()
        with Horizontal(id="top"):
            with Vertical(id="left"):
                yield SpsHistory()
                yield TimingBars()
            yield LossPanel()
            yield EnvRender()
        with Horizontal(id="bottom"):
            yield CpuPanel()
            yield EpisodeStats()
            yield EventLog()
        yield Footer(compact=True)  # every key's label fits 80 columns

    def on_mount(self) -> None:
        self.set_render_env(getattr(self.app, "render_env", 0))
        self.refresh_frame()
        self.refresh_panels()
        self.refresh_plots()
        self.set_interval(FRAME_REFRESH_S, self.refresh_frame)
        self.set_interval(PANEL_REFRESH_S, self.refresh_numbers_and_plots)

    # -- attributes down -------------------------------------------------------------------

    def refresh_frame(self) -> None:
        store = self.store
        header = self.query_one(RunHeader)
        link_state = getattr(self.app, "link_state", None)
        if header.link_state != link_state:
            header.link_state = link_state  # "not responding" shows without waiting
            self.sync_footer()  # connected or lost: the steering keys come or go
        if store.frame is self._shown_frame:
            return
        self._shown_frame = store.frame
        render = self.query_one(EnvRender)
        render.palette = self.app_palette()
        render.num_envs = int(store.hello.get("num_envs") or 0)
        render.frame = store.frame

    def refresh_numbers_and_plots(self) -> None:
        self.refresh_panels()
        self.refresh_plots()

    def refresh_panels(self) -> None:
        store = self.store
        if store.version == self._shown_version:
            return
        self._shown_version = store.version
        t = store.latest
        self.query_one(RunHeader).telemetry = {**self._identity(), **t}
        sps = self.query_one(SpsHistory)
        sps.samples = list(store.sps)
        sps.state = store.state
        timing = self.query_one(TimingBars)
        timing.percent = t.get("timing_pct") or {}
        timing.seconds = t.get("timing") or {}
        stats = self.query_one(EpisodeStats)
        stats.trends = {k: store.trend(k) for k in store.stats}
        stats.history = {k: list(v) for k, v in store.stats.items()}
        self.query_one(CpuPanel).gpu = t.get("gpu")
        self.query_one(EventLog).show(list(store.events), store.events_seen,
                                      store.events_reordered)
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

    def show_system(self, sample) -> None:
        """A psutil sample from the app's monitor worker (may land before compose is done)."""
        for panel in self.query(CpuPanel):
            panel.sample = sample

    def app_palette(self) -> dict:
        return palette_from_wire(self.store.hello.get("palette"))

    def _identity(self) -> dict:
        hello = self.store.hello
        return {"env": hello.get("env"), "run": hello.get("run"), "state": hello.get("state")}

    # -- keys (messages up, to the app) ----------------------------------------------------

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        state = self.store.state
        if action in STEERING and not self.app.can_steer():
            return False  # hidden from the footer: the run is over or not connected yet
        if action == "launcher":  # back to the launcher once this run is over (or lost)
            return self.app.link is None and (self.store.state in FINAL_STATES
                                              or self.app.link_state == "disconnected")
        if action == "pause":
            return state != RunState.PAUSED
        if action == "resume":
            return state == RunState.PAUSED
        return True

    def action_pause(self) -> None:
        self.app.engine_request("pause")

    def action_resume(self) -> None:
        self.app.engine_request("resume")

    def action_checkpoint(self) -> None:
        self.app.engine_request("checkpoint")

    def action_stop(self) -> None:
        self.app.confirm_stop()

    def action_hyperparameters(self) -> None:
        self.app.open_hyperparameters()

    def action_render_view(self) -> None:
        self.app.open_render_view()

    def action_help(self) -> None:
        self.app.open_help()

    def action_launcher(self) -> None:
        self.app.open_launcher()

    def action_quit_run(self) -> None:
        self.app.confirm_quit()

    def action_next_loss(self) -> None:
        self.query_one(LossPanel).cycle()

    def action_env(self, delta: int) -> None:
        self.app.select_render_env(delta)

    def set_render_env(self, index: int) -> None:
        for render in self.query(EnvRender):
            render.env_index = index
