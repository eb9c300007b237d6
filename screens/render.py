"""One environment, full screen, with the keys to pick which one, and the policy's view of it
(app/widgets/policy_strip.py) beside the frame; `g` cycles the saliency overlay.

Redrawn when the app says the run changed (`RunChanged`), at most ~15 times a second."""

from __future__ import annotations

import time

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer

from puffer_tui.app import link_messages as lm
from puffer_tui.app.telemetry_store import TelemetryStore
from puffer_tui.app.widgets.env_render import EnvRender
from puffer_tui.app.widgets.run_header import RunHeader
from puffer_tui.engine.shared.protocol import RunState, next_saliency, palette_from_wire

REFRESH_S = 1 / 15  # frames arrive at up to ~15 Hz: draw no more often than that


class RenderScreen(Screen):
    BINDINGS = [
        Binding("escape,r", "app.pop_screen", "Back"),
        Binding("left_square_bracket", "env(-1)", "Prev env"),
        Binding("right_square_bracket", "env(1)", "Next env"),
        Binding("o", "toggle_view", "Obs/env"),
        Binding("g", "saliency", "Saliency"),
        Binding("p", "pause", "Pause"),
        Binding("p", "resume", "Resume"),
    ]

    def __init__(self, store: TelemetryStore, env_index: int, link_state: str | None = None,
                 saliency: str | None = None):
        super().__init__()
        self.store = store
        self.env_index = env_index
        self.link_state = link_state
        self.saliency = saliency  # the overlay asked for: None, "action", "value"
        self.view = "env"  # "obs": the observation drawn as an image, not the env's drawing
        self._state = ""
        self._drawn_at = 0.0
        self._waiting = None  # the redraw waiting for its slot

    def compose(self) -> ComposeResult:
        yield RunHeader()
        yield EnvRender()
        yield Footer(compact=True)

    def on_mount(self) -> None:
        render = self.query_one(EnvRender)
        render.env_index = self.env_index
        render.show_policy, render.saliency = True, self.saliency
        self.refresh_frame()
        self._request_frames()

    def _request_frames(self) -> None:
        """This env, in this view, as fast as the engine sends frames (none once the run is
        over: the last frame stays, with no "not connected" toast for asking)."""
        if not lm.can_steer(self.link_state, self.store.state):
            return
        args = {"env": self.env_index, "fps": round(1 / REFRESH_S)}
        if self.view != "env":
            args["view"] = self.view
        else:  # the policy's view of the step comes with the env's frames
            args["policy"] = True
            if self.saliency:
                args["saliency"] = self.saliency
        self.post_message(lm.EngineRequest("render", args, quiet=True))

    @on(lm.RunChanged)
    def _on_run_changed(self, message: lm.RunChanged) -> None:
        wait = 0.0 if message.urgent else self._drawn_at + REFRESH_S - time.monotonic()
        if wait <= 0:
            self.refresh_frame()
        elif self._waiting is None:
            self._waiting = self.set_timer(wait, self.refresh_frame)

    @on(lm.LinkStateChanged)
    def _on_link_state(self, message: lm.LinkStateChanged) -> None:
        self.link_state = message.state
        self.refresh_bindings()

    @on(lm.RenderEnvChanged)
    def _on_render_env(self, message: lm.RenderEnvChanged) -> None:
        self.env_index = message.index
        self.query_one(EnvRender).env_index = message.index
        self._request_frames()

    def refresh_frame(self) -> None:
        if self._waiting is not None:
            self._waiting.stop()
            self._waiting = None
        self._drawn_at = time.monotonic()
        store = self.store
        if store.state != self._state:
            self._state = store.state
            self.refresh_bindings()  # p only while there is a run to pause
        hello = store.hello
        header = self.query_one(RunHeader)
        header.identity, header.telemetry = hello, store.latest
        render = self.query_one(EnvRender)
        render.palette = palette_from_wire(hello.get("palette"))
        render.num_envs = int(hello.get("num_envs") or 0)
        render.frame = store.frame

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # p says what it will do (Pause or Resume), and only while there is a run to steer
        if action in ("pause", "resume"):
            paused = self.store.state == RunState.PAUSED
            return lm.can_steer(self.link_state, self.store.state) and paused == (action == "resume")
        if action in ("env", "toggle_view", "saliency"):
            # another env or view is a frame the engine draws: once the run is over (or the
            # link is gone) the last frame stays, and the keys that cannot change it go
            return lm.can_steer(self.link_state, self.store.state)
        return True

    def action_env(self, delta: int) -> None:
        self.post_message(lm.RenderEnvStep(delta))

    def action_toggle_view(self) -> None:
        """The observation as the policy sees it (an 84x84 frame stack, say), or the env."""
        self.view = "obs" if self.view == "env" else "env"
        self.query_one(EnvRender).view = self.view
        self._request_frames()

    def action_saliency(self) -> None:
        """What drives the choice, over the frame: of log pi(a|s), then of V(s), then off."""
        self.saliency = next_saliency(self.saliency)
        self.query_one(EnvRender).saliency = self.saliency
        self._request_frames()

    def action_pause(self) -> None:
        self.post_message(lm.EngineRequest("pause"))

    def action_resume(self) -> None:
        self.post_message(lm.EngineRequest("resume"))
