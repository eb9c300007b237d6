"""A sweep, live: its trials, the best score so far (or the Pareto front), which parameters
matter, and keys to steer it — open a running trial's dashboard, prune it, pause launching,
add a trial, stop the sweep.

A worker connects to the driver's socket and sends `subscribe`: the driver answers with its
snapshot and then pushes each new one (a trial started, reported or ended, launching paused
or resumed), which the connection's reader thread posts here as a `SweepStatus` message (a
newer one replaces one not yet handled). No status is asked for again. While no driver
answers (it is starting, the sweep has ended, the driver died) the view shows status.json
and the worker tries to connect again every RECONNECT_EVERY_S. Steering commands go over the
same connection from a worker; the driver's answer comes back as `Replied`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from puffer_tui.app import link_messages as lm
from puffer_tui.app import navigation as nav
from puffer_tui.app.engine_client import EngineClient, EngineClientError
from puffer_tui.app.widgets.format import duration, metric
from puffer_tui.app.widgets.importance_bars import ImportanceBars
from puffer_tui.app.widgets.sweep_plot import SweepPlot
from puffer_tui.app.widgets.trial_table import TrialTable
from puffer_tui.engine.shared import sweep_settings as st
from puffer_tui.engine.shared.protocol import FINAL_STATES, RunState
from puffer_tui.screens.confirm import ChoiceDialog

RECONNECT_EVERY_S = 1.0  # while no driver answers
CONNECT_TIMEOUT_S = 3.0
CANCEL_CHECK_S = 0.5  # how soon the worker notices the view has gone (its link is closed then)
REQUEST_TIMEOUT_S = 6.0  # the driver answers steering between two looks at its trials
STEERING = ("prune", "pause", "resume", "add", "stop")


def objective_text(snap: dict) -> str:
    """"maximize score", "maximize score per hour", "maximize score, minimize seconds"."""
    direction = (snap.get("directions") or ["maximize"])[0]
    metric_name = snap.get("metric") or "score"
    objective = snap.get("objective")
    if objective == "pareto":
        return f"{direction} {metric_name}, minimize seconds (pareto)"
    if objective == "score-per-hour":
        return f"{direction} {metric_name} per hour"
    if objective == "time-to-reach":
        reach = snap.get("reach")
        return f"minimize seconds to {metric_name} {reach if reach is None else f'{reach:g}'}"
    return f"{direction} {metric_name}"


class SweepScreen(Screen):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]

    BINDINGS = [
        Binding("x", "prune", "Prune"),
        Binding("p", "pause", "Pause"),
        Binding("p", "resume", "Resume"),
        Binding("plus,equals_sign", "add", "+1 trial", key_display="+"),
        Binding("o", "sort", "Sort"),
        Binding("s", "stop", "Stop"),
        Binding("b", "launcher", "Launcher"),
        Binding("q", "quit_view", "Quit"),
    ]

    def __init__(self, sweep_dir: Path, **kwargs):
        super().__init__(**kwargs)
        self.sweep_dir = Path(sweep_dir)
        self.snapshot: dict = {}
        self.live = False
        self.driver_link: EngineClient | None = None  # subscribed to the driver's snapshots
        self._state = ""

    def compose(self) -> ComposeResult:
        yield Static(id="sweep-header")
        yield TrialTable()
        with Horizontal(id="sweep-bottom"):
            yield SweepPlot()
            yield ImportanceBars()
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._show_header()
        self._follow_driver()

    def on_unmount(self) -> None:
        link = self.driver_link
        if link is not None:
            link.close()  # wakes the worker, which then ends

    # -- the driver's snapshots -------------------------------------------------------------

    @work(thread=True, exclusive=True, group="sweep-status")
    def _follow_driver(self) -> None:
        worker = get_current_worker()
        sock = self.sweep_dir / st.SOCKET_FILE
        shown = None  # what was last posted from status.json since the link was lost
        while not worker.is_cancelled:
            link = self._subscribe(sock)
            if link is not None:
                self.driver_link = link
                while not link.closed.wait(CANCEL_CHECK_S) and not worker.is_cancelled:
                    pass
                self.driver_link = None
                link.close()
                shown = None
            # the driver's last word (or, before it wrote one, the last snapshot), not live
            saved = self._read_status_file() or self.snapshot
            if saved != shown:
                self.post_message(lm.SweepStatus(None, saved))
                shown = saved
            time.sleep(RECONNECT_EVERY_S)

    def _subscribe(self, sock: Path) -> EngineClient | None:
        """Connect, subscribe and post the driver's snapshot; from then on the link's reader
        thread posts every pushed one. None when no driver answers."""
        link = None
        try:
            link = EngineClient.connect(sock, timeout=CONNECT_TIMEOUT_S)
            reply = link.call("subscribe", timeout=CONNECT_TIMEOUT_S)
        except EngineClientError:
            if link is not None:
                link.close()
            return None
        self.post_message(lm.SweepStatus(link, {k: v for k, v in reply.items()
                                                if k not in ("id", "ok")}))
        # pushes that came after the reply are handed over first, in order
        link.subscribe(lambda push: self._pushed(link, push), lambda reason: None)
        return link

    def _pushed(self, link: EngineClient, push: dict) -> None:
        """On the link's reader thread: a pushed snapshot, posted as a typed message."""
        message = lm.message_for_push(link, push)
        if isinstance(message, lm.SweepStatus):
            self.post_message(message)

    def _read_status_file(self) -> dict | None:
        try:
            return json.loads((self.sweep_dir / st.STATUS_FILE).read_text())
        except (OSError, ValueError):
            return None  # not written yet (the driver is starting) or being replaced

    @on(lm.SweepStatus)
    def _on_status(self, message: lm.SweepStatus) -> None:
        self.snapshot, self.live = message.snapshot, message.live
        self.query_one(TrialTable).show(self.snapshot.get("trials") or [],
                                        set(self.snapshot.get("best") or ()))
        self.query_one(SweepPlot).snapshot = self.snapshot
        bars = self.query_one(ImportanceBars)
        bars.importance = self.snapshot.get("importance") or {}
        bars.note = self.snapshot.get("importance_note") or ""
        self._show_header()
        state = self.state
        if state != self._state:
            self._state = state
            self.refresh_bindings()  # pause/resume and the steering keys follow the state

    @property
    def state(self) -> str:
        state = self.snapshot.get("state") or "connecting"
        if not self.live and state not in FINAL_STATES:
            return "driver gone" if self.snapshot else "connecting"
        return state

    def _show_header(self) -> None:
        snap = self.snapshot
        counts = snap.get("counts") or {}
        done = sum(counts.get(k, 0) for k in ("COMPLETE", "PRUNED", "FAIL"))
        best = [t for t in snap.get("trials") or [] if t.get("number") in set(snap.get("best") or ())]
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"sweep {snap.get('sweep') or self.sweep_dir.name}  ", "bold")
        line.append(self.state, "bold green" if self.state == RunState.RUNNING else "bold yellow")
        line.append(f"  {snap.get('env', '')}  {objective_text(snap)}")
        line.append(f"\n{done}/{snap.get('target', '?')} trials done: "
                    f"{counts.get('COMPLETE', 0)} complete, {counts.get('PRUNED', 0)} pruned, "
                    f"{counts.get('FAIL', 0)} failed, {counts.get('RUNNING', 0)} running")
        if len(best) == 1 and snap.get("objective") == "time-to-reach" and best[0].get("values"):
            line.append(f"; best #{best[0]['number']}: {metric(best[0]['values'][0])} s")
        elif len(best) == 1:
            line.append(f"; best #{best[0]['number']} = {metric(best[0].get('score'))}")
        if snap.get("uptime") is not None:
            line.append(f"; up {duration(snap['uptime'])}")
        self.query_one("#sweep-header", Static).update(line)

    # -- keys -------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in STEERING and not (self.live and self.state not in FINAL_STATES):
            return False  # nothing to steer: the sweep has ended or no driver answers
        if action == "pause":
            return self.state != RunState.PAUSED
        if action == "resume":
            return self.state == RunState.PAUSED
        return True

    @on(DataTable.RowSelected)
    def _open_trial(self, event: DataTable.RowSelected) -> None:
        trial = self.query_one(TrialTable).selected_trial()
        if trial is None:
            return
        run_dir = trial.get("run_dir")
        if trial.get("state") != "RUNNING" or not run_dir:
            where = f"; its run: {run_dir}" if run_dir else ""
            self.notify(f"trial {trial.get('number')} is {str(trial.get('state')).lower()}: "
                        f"only a running trial has a live dashboard{where}", timeout=8)
            return
        self.post_message(nav.OpenTrial(Path(run_dir)))

    def action_prune(self) -> None:
        trial = self.query_one(TrialTable).selected_trial()
        if trial is None or trial.get("state") != "RUNNING":
            self.notify("select a running trial to prune", severity="warning")
            return
        self._send("prune", {"trial": trial["number"]})

    def action_pause(self) -> None:
        self._send("pause", {})

    def action_resume(self) -> None:
        self._send("resume", {})

    def action_add(self) -> None:
        self._send("add", {"trials": 1})

    def action_sort(self) -> None:
        self.query_one(TrialTable).cycle_sort()

    def action_stop(self) -> None:
        def chosen(choice: str | None) -> None:
            if choice == "stop":
                self._send("stop", {})

        self.app.push_screen(ChoiceDialog(
            "Stop the sweep? Running trials are stopped and recorded as failed; "
            "`puffer-tui sweep --resume` runs them again.",
            [("stop", "Stop the sweep", "error"), ("cancel", "Keep sweeping", "default")]),
            chosen)

    def action_launcher(self) -> None:
        self.post_message(nav.OpenLauncher())  # the sweep goes on; the launcher lists it

    def action_quit_view(self) -> None:
        if self.live and self.state not in FINAL_STATES:
            self.app.exit_message = (f"The sweep goes on in {self.sweep_dir}.\n"
                                     f"Watch it again with: puffer-tui attach {self.sweep_dir.name}")
        self.app.exit()

    @work(thread=True, group="sweep-requests")
    def _send(self, cmd: str, args: dict) -> None:
        link = self.driver_link
        if link is None:
            reply = {"ok": False, "error": f"no sweep driver answers on "
                                           f"{self.sweep_dir / st.SOCKET_FILE}"}
        else:
            try:
                reply = link.request(cmd, timeout=REQUEST_TIMEOUT_S, **args)
            except EngineClientError as e:
                reply = {"ok": False, "error": f"the sweep driver did not answer: {e}"}
        self.post_message(lm.Replied(cmd, args, reply))

    @on(lm.Replied)
    def _on_replied(self, message: lm.Replied) -> None:
        reply = message.reply
        if not reply.get("ok"):
            self.notify(f"{message.cmd}: {reply.get('error')}", severity="error", timeout=8,
                        markup=False)
            return
        text = {"prune": f"trial {reply.get('trial')} is being pruned",
                "pause": "no new trials start until p again (running ones go on)",
                "resume": "launching trials again",
                "add": f"the study now aims at {reply.get('target')} trials",
                "stop": "the sweep is stopping"}.get(message.cmd, f"{message.cmd}: ok")
        self.notify(text)
