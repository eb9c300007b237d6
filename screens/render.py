"""One environment, full screen, with the keys to pick which one."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer

from puffer_tui.app.telemetry_store import TelemetryStore
from puffer_tui.app.widgets.env_render import EnvRender
from puffer_tui.app.widgets.run_header import RunHeader
from puffer_tui.engine.protocol import RunState, palette_from_wire

REFRESH_S = 1 / 15  # frames arrive at up to ~15 Hz


class RenderScreen(Screen):
    DEFAULT_CSS = """
    RenderScreen EnvRender { height: 1fr; width: 1fr; }
    """

    BINDINGS = [
        Binding("escape,r", "app.pop_screen", "Back"),
        Binding("left_square_bracket", "env(-1)", "Prev env"),
        Binding("right_square_bracket", "env(1)", "Next env"),
        Binding("p", "pause", "Pause"),
        Binding("p", "resume", "Resume"),
    ]

    def __init__(self, store: TelemetryStore, env_index: int):
        super().__init__()
        self.store = store
        self.env_index = env_index
        self._shown = -1
        self._state = ""

    def compose(self) -> ComposeResult:
        yield RunHeader()
        yield EnvRender()
        yield Footer(compact=True)

    def on_mount(self) -> None:
        render = self.query_one(EnvRender)
        render.env_index = self.env_index
        self.set_interval(REFRESH_S, self.refresh_frame)
        self.refresh_frame()

    def refresh_frame(self) -> None:
        store = self.store
        if store.version == self._shown:
            return
        self._shown = store.version
        if store.state != self._state:
            self._state = store.state
            self.refresh_bindings()  # p only while there is a run to pause
        hello = store.hello
        self.query_one(RunHeader).telemetry = {
            "env": hello.get("env"), "run": hello.get("run"), **store.latest}
        render = self.query_one(EnvRender)
        render.palette = palette_from_wire(hello.get("palette"))
        render.num_envs = int(hello.get("num_envs") or 0)
        render.frame = store.frame

    def set_render_env(self, index: int) -> None:
        self.env_index = index
        self.query_one(EnvRender).env_index = index

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # p says what it will do (Pause or Resume), and only while there is a run to steer
        if action in ("pause", "resume"):
            paused = self.store.state == RunState.PAUSED
            return self.app.can_steer() and paused == (action == "resume")
        return True

    def action_env(self, delta: int) -> None:
        self.app.select_render_env(delta)

    def action_pause(self) -> None:
        self.app.engine_request("pause")

    def action_resume(self) -> None:
        self.app.engine_request("resume")
