"""The Textual app: supervises one engine through the control protocol.

Thin by design: it owns the connection (an EngineClient whose reader thread posts typed
messages, app/link_messages.py), the TelemetryStore and the psutil monitor. Messages from the
link are folded into the store here and announced to the screens (`RunChanged`); screens ask
for engine commands with `EngineRequest` messages, which are sent from worker threads, so no
key press or redraw ever waits on the engine.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from textual import on, work
from textual.app import App, SystemCommand
from textual.screen import Screen

from puffer_tui.app import link_messages as lm
from puffer_tui.app import navigation as nav
from puffer_tui.app.app_exit import AppExit, after_exit
from puffer_tui.app.engine_client import EngineClient, EngineClientError
from puffer_tui.app.engine_launcher import EngineStartError, launch_engine
from puffer_tui.app.reply_text import reply_text
from puffer_tui.app.run_history import read_events, read_metric_rows
from puffer_tui.app.run_preparation import (
    RunRefused,
    check_resume,
    engine_finished,
    prepare_new_run,
    wait_for_previous_engine,
)
from puffer_tui.app.system_monitor import SystemMonitor
from puffer_tui.app.telemetry_store import TelemetryStore
from puffer_tui.app.widgets.diagnosis_line import merge_diagnosis
from puffer_tui.engine.shared.protocol import FINAL_STATES, MessageType, RunState
from puffer_tui.engine.shared.run_dir import socket_path
from puffer_tui.screens.compare import CompareScreen
from puffer_tui.screens.confirm import ChoiceDialog
from puffer_tui.screens.crash import CrashScreen, last_error_text
from puffer_tui.screens.dashboard import DashboardScreen
from puffer_tui.screens.help import HelpScreen
from puffer_tui.screens.launcher.screen import LauncherScreen
from puffer_tui.screens.sweep_view import SweepScreen

WATCH_S = 0.25  # how often the watchdog looks at how long the engine has been quiet
SILENCE_PING_S = 1.0  # after this much quiet, ask for status to tell "paused" from "hung"
NOT_RESPONDING_S = 1.3  # after this much quiet (pings unanswered), say so: within 2 s
SOCKET_WAIT_S = 10.0  # how long to wait for the socket of an engine we attach to


class PufferApp(App):
    TITLE = "puffer-tui"
    # The panels' frame, and every screen's layout (one file for the screens' room); absolute
    # paths, as subclasses (the tests' apps) live elsewhere.
    CSS_PATH = [Path(__file__).with_name("panels.tcss"),
                Path(__file__).parents[1] / "screens" / "screens.tcss"]

    def __init__(self, run_dir: str | Path | None = None, attach: bool = False,
                 runs_root: str | Path | None = None, sweep_dir: str | Path | None = None):
        super().__init__()
        self.run_dir = Path(run_dir) if run_dir else None
        self.sweep_dir = Path(sweep_dir) if sweep_dir else None
        self.viewing_trial = False  # a sweep trial's dashboard, over the sweep view
        self.attached = attach  # True: we joined a running engine; False: we started it
        self.runs_root = runs_root
        self.store = TelemetryStore()
        self.link: EngineClient | None = None
        self.engine_handle = None  # the engine process, when this app launched it
        self.link_state: str | None = lm.CONNECTING
        self.render_env = 0
        self.exit_message = ""
        self.stop_asked = False  # the engine of run_dir agreed to stop: say so after the exit
        self.stop_signal: str | None = None  # SIGTERM / SIGHUP that closed the app
        self.ended_run = False  # quit with the run over: its end is said after the exit
        self._monitor: SystemMonitor | None = None
        self._last_ping = 0.0
        self._crash_shown = False

    # -- startup ------------------------------------------------------------------------------

    def on_mount(self) -> None:
        # A watchdog, not a poll: engine data arrives as messages; this only notices silence.
        self.set_interval(WATCH_S, self._watch_silence)
        self._catch_stop_signals()
        self.set_interval(1.0, self._sample_system)
        self.show_first_screen()

    def show_first_screen(self) -> None:
        if self.sweep_dir is not None:
            self.open_sweep(self.sweep_dir)
        elif self.run_dir is None:
            self.open_launcher()
        else:
            self.open_run(self.run_dir, attach=self.attached)

    def _catch_stop_signals(self) -> None:
        """SIGTERM and SIGHUP close the app as q does, and run_app then deals with the engine
        (app/app_exit.py): without this they killed the app and left its engine training."""
        try:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self._on_stop_signal, sig.name)
        except (RuntimeError, ValueError, NotImplementedError):  # not the main thread
            pass

    def _on_stop_signal(self, name: str) -> None:
        if self.stop_signal is None:
            self.stop_signal = name
            self.exit()

    def open_launcher(self) -> None:
        """The launcher, at start or back from a run that has ended (its engine is gone)."""
        self.run_dir, self.store, self.link_state = None, TelemetryStore(), None
        self.stop_asked = self.ended_run = False
        self.switch_or_push(LauncherScreen(self.runs_root))

    def open_run(self, run_dir: Path, attach: bool, resume: bool = False) -> None:
        """Show the dashboard of `run_dir`; start its engine unless attaching, then connect."""
        self.run_dir, self.attached = Path(run_dir), attach
        self.store = TelemetryStore()
        self.stop_asked = self.ended_run = False
        self.link_state, self._crash_shown = lm.STARTING if not attach else lm.CONNECTING, False
        self.switch_or_push(DashboardScreen(self.store, self.link_state, self.render_env))
        self._connect(self.run_dir, launch=not attach, resume=resume)

    def open_sweep(self, sweep_dir: Path) -> None:
        self.sweep_dir = Path(sweep_dir)
        self.switch_or_push(SweepScreen(self.sweep_dir))

    def open_compare(self, run_dirs: list[Path]) -> None:
        """Runs side by side, pushed over the launcher (b or escape comes back)."""
        self.push_screen(CompareScreen(run_dirs))

    def open_trial(self, run_dir: Path) -> None:
        """A running sweep trial's dashboard, pushed over the sweep view (b goes back)."""
        self.run_dir, self.attached, self.viewing_trial = Path(run_dir), True, True
        self.store = TelemetryStore()
        self.link_state, self._crash_shown = lm.CONNECTING, False
        self.push_screen(DashboardScreen(self.store, self.link_state, self.render_env,
                                         over_sweep=True))
        self._connect(self.run_dir)

    def back_to_sweep(self) -> None:
        """Leave a trial's dashboard (its engine trains on) for the sweep view under it."""
        if self.link is not None:
            self.link.close()
        self.link, self.run_dir, self.viewing_trial = None, None, False
        self.store, self.link_state = TelemetryStore(), None
        self.pop_screen()

    # -- the screens' navigation messages (app/navigation.py) -----------------------------------

    @on(nav.OpenLauncher)
    def _on_open_launcher(self, message: nav.OpenLauncher) -> None:
        self.open_launcher()

    @on(nav.OpenRun)
    def _on_open_run(self, message: nav.OpenRun) -> None:
        self.open_run(message.run_dir, attach=message.attach, resume=message.resume)

    @on(nav.StartRun)
    def _on_start_run(self, message: nav.StartRun) -> None:
        self.start_run(message.env_name, message.overrides)

    @on(nav.ResumeRun)
    def _on_resume_run(self, message: nav.ResumeRun) -> None:
        self.resume_run(message.run_dir)

    @on(nav.OpenSweep)
    def _on_open_sweep(self, message: nav.OpenSweep) -> None:
        self.open_sweep(message.sweep_dir)

    @on(nav.OpenTrial)
    def _on_open_trial(self, message: nav.OpenTrial) -> None:
        self.open_trial(message.run_dir)

    @on(nav.BackToSweep)
    def _on_back_to_sweep(self, message: nav.BackToSweep) -> None:
        self.back_to_sweep()

    @on(nav.OpenCompare)
    def _on_open_compare(self, message: nav.OpenCompare) -> None:
        self.open_compare(message.run_dirs)

    @on(nav.OpenHelp)
    def _on_open_help(self, message: nav.OpenHelp) -> None:
        self.open_help()

    def switch_or_push(self, screen: Screen) -> None:
        # The default screen stays at the bottom of the stack; ours sit on top of it.
        if len(self.screen_stack) > 1:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    @work(thread=True, exclusive=True, group="connect")
    def _connect(self, run_dir: Path, launch: bool = False, resume: bool = False) -> None:
        """Launch the engine first when asked, then connect and say hello (a worker thread)."""
        if launch:
            wait_for_previous_engine(run_dir)
            try:
                self.engine_handle = launch_engine(run_dir, resume=resume)
            except EngineStartError as e:
                self.post_message(lm.LinkLost(None, f"the engine failed to start: {e}"))
                return
        sock = socket_path(run_dir)
        deadline = time.monotonic() + SOCKET_WAIT_S
        while not sock.exists():
            if engine_finished(run_dir) or time.monotonic() > deadline:
                self.post_message(lm.LinkLost(None, f"no engine is listening on {sock}"))
                return
            time.sleep(0.1)
        try:
            client = EngineClient.connect(run_dir)
        except EngineClientError as e:
            self.post_message(lm.LinkLost(None, str(e)))
            return
        # Read after connecting: whatever happens from now on is pushed (and de-duplicated).
        history = (read_metric_rows(run_dir), read_events(run_dir))
        self.post_message(lm.Linked(client, client.hello, history))
        # From here the reader thread posts every push (those queued since connecting first),
        # after Linked in the app's queue.
        client.subscribe(lambda push: self._pushed(client, push),
                         lambda reason: self.post_message(lm.LinkLost(client, reason)))

    def _pushed(self, link: EngineClient, push: dict) -> None:
        """On the reader thread: stamp the arrival (silence is measured to the push, not to
        when the app gets to it) and post the push as a typed message."""
        if link is self.link:
            self.store.last_message = time.monotonic()  # a float store: safe from any thread
        message = lm.message_for_push(link, push)
        if message is not None:
            self.post_message(message)

    # -- the link's messages, on the app's thread ----------------------------------------------

    @on(lm.Linked)
    def _on_linked(self, message: lm.Linked) -> None:
        self.link = message.link
        hello = message.hello
        self.store.set_hello(hello)
        self.store.load_history(*message.history)  # loss curves, stats and events from before
        self.store.touch()
        self.store.add_event("app", f"connected to engine pid {hello.get('pid')} ({hello.get('run')})")
        self._set_link_state(None)  # the screens that show frames ask for them now
        self._run_changed("numbers", "frame", urgent=True)

    @on(lm.Telemetry)
    def _on_telemetry(self, message: lm.Telemetry) -> None:
        if message.link is not self.link:
            return  # from a link the app has left
        before = self.store.state
        self.store.ingest(message.push)
        if self.store.state in FINAL_STATES:
            self._withdraw_live_questions()
        # a new state (paused after `p`) shows at once, with the engine's numbers for it
        self._run_changed("numbers", urgent=self.store.state != before)

    @on(lm.EngineEvent)
    @on(lm.Frame)
    def _on_push(self, message: lm.EngineEvent | lm.Frame) -> None:
        """An event or a frame of this run's link: into the store, then the screens told."""
        if message.link is self.link:
            self.store.ingest(message.push)
            self._run_changed("frame" if isinstance(message, lm.Frame) else "numbers")

    @on(lm.Diagnosis)
    def _on_diagnosis(self, message: lm.Diagnosis) -> None:
        if message.link is self.link and self.store.latest:  # shown now, not at the next telemetry
            self.store.amend(diagnoses=merge_diagnosis(self.store.latest.diagnoses, message.push))
            self._run_changed("numbers", urgent=True)

    @on(lm.LinkLost)
    def _on_link_lost(self, message: lm.LinkLost) -> None:
        if message.link is self.link:
            self._link_lost(message.reason)

    def _run_changed(self, *parts: str, urgent: bool = False) -> None:
        # Not the app's default screen at the bottom: nothing there to redraw, and every
        # message a screen handles costs it a round of idle processing.
        for screen in self.screen_stack[1:]:
            screen.post_message(lm.RunChanged(frozenset(parts), urgent))

    def _set_link_state(self, state: str | None) -> None:
        if state != self.link_state:
            self.link_state = state
            self._announce_link_state()

    def _announce_link_state(self) -> None:
        for screen in self.screen_stack[1:]:  # say so now, not at the next redraw
            screen.post_message(lm.LinkStateChanged(self.link_state, self.link is not None))

    def _watch_silence(self) -> None:
        if self.link is None:
            return
        quiet = self.store.silence()
        if quiet > SILENCE_PING_S and time.monotonic() - self._last_ping > SILENCE_PING_S:
            self._last_ping = time.monotonic()
            self.engine_request("status", quiet=True, timeout=1.0)
        self._set_link_state(lm.NOT_RESPONDING if quiet > NOT_RESPONDING_S else None)

    def _link_lost(self, reason: str) -> None:
        if self.link is not None:
            self.link.close()
        self.link = None
        if self.engine_handle is not None:  # our child: reap it when it exits (no zombie)
            threading.Thread(target=self.engine_handle.wait, daemon=True).start()
            self.engine_handle = None
        state = self.store.state
        ended = state in FINAL_STATES and state != RunState.ERROR
        self.link_state = None if ended else lm.DISCONNECTED
        self.store.add_event("app" if ended else "error", f"engine link closed: {reason}")
        self._withdraw_live_questions()
        self._announce_link_state()
        self._run_changed("numbers", urgent=True)
        if self.viewing_trial:  # the sweep records how it ended; no resume offer here
            self.notify(f"trial's engine: {reason}; b goes back to the sweep", timeout=10)
        elif ended:
            self.notify(f"the run is {state}: b opens the launcher, q quits", timeout=10)
        elif not self._crash_shown and self.run_dir is not None:
            self._show_crash(reason)

    def can_steer(self) -> bool:
        return lm.can_steer(self.link_state, self.store.state)

    def _withdraw_live_questions(self) -> None:
        """A "stop the run?" left open when the run ends on its own would stop nothing."""
        screen = self.screen
        if isinstance(screen, ChoiceDialog) and screen.live_run_only:
            screen.dismiss(None)
            self.notify(f"the run is {self.store.state}: {screen.withdrawn_note}", timeout=10)

    def _show_crash(self, reason: str) -> None:
        self._crash_shown = True
        # The engine's own error event (pushed, or in events.log) says more than "EOF".
        pushed = [e.text for e in self.store.events if e.level == "error"
                  and not e.text.startswith("engine link closed")]
        traceback = (pushed[-1] if pushed else "") or last_error_text(self.run_dir) or reason
        self.push_screen(CrashScreen(self.run_dir, traceback), self._after_crash)

    def _after_crash(self, choice: str | None) -> None:
        if choice == "resume":
            self.resume_run(self.run_dir)
        elif choice == "quit":
            self.ended_run = True  # run_app says how it ended, where its last checkpoint is
            self.exit()

    # -- requests (from the screens) -------------------------------------------------------

    @on(lm.EngineRequest)
    def _on_engine_request(self, message: lm.EngineRequest) -> None:
        message.stop()
        self.engine_request(message.cmd, message.args, reply_to=message.reply_to,
                            quiet=message.quiet, timeout=message.timeout)

    def engine_request(self, cmd: str, args: dict | None = None, reply_to=None,
                       on_reply: Callable[[dict], None] | None = None,
                       quiet: bool = False, timeout: float = 3.0) -> None:
        """Send `cmd` from a worker; its reply comes back as a `Replied` message, is logged,
        and goes on to `reply_to` (a screen) or `on_reply(reply)` (the app's own dialogs)."""
        link = self.link
        if link is None:
            self.notify("not connected to an engine", severity="error")
            return
        self._request_worker(link, cmd, args, reply_to, on_reply, quiet, timeout)

    @work(thread=True, group="requests")
    def _request_worker(self, link, cmd, args, reply_to, on_reply, quiet, timeout) -> None:
        start = time.perf_counter()
        try:
            reply = link.request(cmd, timeout=timeout, **(args or {}))
        except EngineClientError as e:
            reply = {"ok": False, "error": str(e)}
        reply["_round_trip_ms"] = (time.perf_counter() - start) * 1000
        self.post_message(lm.Replied(cmd, args, reply, link, quiet=quiet, reply_to=reply_to,
                                     on_reply=on_reply))

    @on(lm.Replied)
    def _on_replied(self, message: lm.Replied) -> None:
        cmd, reply, quiet = message.cmd, message.reply, message.quiet
        if reply.get("ok") and message.link is self.link:
            self.store.touch()
            if cmd == "stop":  # the end of this run is said once the app has closed
                self.stop_asked = True
            if cmd == "status":
                before = self.store.state
                self.store.ingest({"type": MessageType.TELEMETRY, **reply})
                self._run_changed("numbers", urgent=self.store.state != before)
        if not quiet:  # quiet ones (status pings, render choice) would only flood the log
            self.store.add_event("app" if reply.get("ok") else "error", reply_text(cmd, reply))
            self._run_changed("numbers")
        if not reply.get("ok") and not quiet:
            self.notify(f"{cmd}: {reply.get('error')}", severity="error", markup=False)
        if message.reply_to is not None:
            message.reply_to.post_message(lm.Replied(cmd, message.args, reply, message.link))
        if message.on_reply is not None:
            message.on_reply(reply)

    @on(lm.RenderEnvStep)
    def _on_render_env_step(self, message: lm.RenderEnvStep) -> None:
        message.stop()
        count = int(self.store.hello.get("num_envs") or 1)
        self.render_env = (self.render_env + message.delta) % max(count, 1)
        for screen in self.screen_stack[1:]:  # each asks for its frames (its view and rate)
            screen.post_message(lm.RenderEnvChanged(self.render_env))

    # -- dialogs and screens ---------------------------------------------------------------

    def confirm_quit(self) -> None:
        if self.link is None:
            self.exit()
            return
        if self.store.state in FINAL_STATES:  # nothing trains on: nothing to keep or stop
            self.detach()
            return

        def chosen(choice: str | None) -> None:
            if choice == "detach":
                self.detach()
            elif choice == "stop":
                self.engine_request("stop", {"checkpoint": True}, on_reply=lambda _: self.exit())

        self.push_screen(ChoiceDialog(
            "Quit the app. Training can go on without it.",
            [("detach", "Detach (keep training)", "primary"),
             ("stop", "Stop the run", "error"),
             ("cancel", "Cancel", "default")],
            live_run_only=True, withdrawn_note="q quits",
        ), chosen)

    async def action_quit(self) -> None:
        # ctrl+q (Textual's own quit key) asks the same question as q: detach or stop.
        if isinstance(self.screen, ChoiceDialog):
            return
        self.confirm_quit()

    def detach(self) -> None:
        name = self.run_dir.name if self.run_dir else "latest"
        if self.store.state in FINAL_STATES:  # it ended as the question was answered
            self.exit_message = f"The run is {self.store.state}: {self.run_dir}"
            self.ended_run = True  # run_app says how: steps, checkpoint, how to resume
        else:
            self.exit_message = (f"Detached: training goes on in {self.run_dir}.\n"
                                 f"Reattach with: puffer-tui attach {name}")
        if self.link is not None:
            self.link.close()
            self.link = None
        self.exit()

    def open_help(self) -> None:
        self.push_screen(HelpScreen())

    def start_run(self, env_name: str, overrides: dict) -> None:
        """A new run from the launcher: write its run dir and config, then launch and watch."""
        try:
            run_dir = prepare_new_run(env_name, overrides, self.runs_root)
        except RunRefused as e:
            self.notify(f"cannot start {env_name}: {e}", severity="error", timeout=10,
                        markup=False)
            return
        self.open_run(run_dir, attach=False)

    def resume_run(self, run_dir: Path) -> None:
        """Start a new engine on `run_dir` from its latest checkpoint, after the same checks
        as `puffer-tui train --resume` (no checkpoint, finished, damaged, still training...)."""
        try:
            check_resume(run_dir)
        except RunRefused as e:
            self.notify(f"cannot resume {run_dir.name}: {e}", severity="error", timeout=10,
                        markup=False)
            return
        self.open_run(run_dir, attach=False, resume=True)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "The keys and what each one does", self.open_help)
        if isinstance(screen, DashboardScreen):
            yield from screen.palette_commands()
            if self.link is not None and self.store.state not in FINAL_STATES:
                yield SystemCommand("Detach", "Quit the app, keep training", self.detach)

    def _sample_system(self) -> None:
        if isinstance(self.screen, DashboardScreen):
            self._sample_worker(list(self.store.latest.processes if self.store.latest else []))

    @work(thread=True, exclusive=True, group="system")
    def _sample_worker(self, processes: list[dict]) -> None:
        if self._monitor is None:
            self._monitor = SystemMonitor()
        sample = self._monitor.sample(processes)
        self.call_from_thread(self._show_sample, sample)

    def _show_sample(self, sample) -> None:
        if isinstance(self.screen, DashboardScreen):
            self.screen.show_system(sample)

    def on_unmount(self) -> None:
        if self.link is not None:
            self.link.close()  # closing our socket never stops the engine


def run_app(run_dir: str | Path | None = None, attach: bool = False,
            runs_root: str | Path | None = None, sweep_dir: str | Path | None = None,
            owns_engine: bool = False) -> int:
    """Run the app until it exits, then say what became of its run (app/app_exit.py): how to
    reattach after a detach; the step, checkpoint and resume command after a stop. The exit
    status is engine/shared/exit_codes.py's. `owns_engine`: this command started the engine
    (`train --resume` launches it before the app), as the app does for a new run."""
    app = PufferApp(run_dir=run_dir, attach=attach, runs_root=runs_root, sweep_dir=sweep_dir)
    app.run()
    if app.return_code:  # Textual sets 1 when the app died of an exception
        return app.return_code
    return after_exit(AppExit(
        run_dir=app.run_dir if not app.viewing_trial else None, stop_asked=app.stop_asked,
        signal=app.stop_signal, owns_engine=owns_engine or not app.attached,
        ended=app.ended_run, message=app.exit_message))
