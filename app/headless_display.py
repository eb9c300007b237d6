"""The `train --headless` display: views of the engine's telemetry snapshot.

In a terminal, a rich Live panel: state, steps (with a bar), SPS, ETA, epoch, uptime, score,
episode return/length, losses and the timing breakdown, engine events printed above it. Off a
terminal (`| tee log`, `> log`, a batch job), where a Live panel would show only its last
frame, one plain line per `log_every` seconds (`progress_line`), and with `progress="jsonl"`
one JSON object per interval (`progress_record`) for scripts; both from the same snapshot. Ctrl-C (or SIGTERM, SIGHUP:
app/stop_signals.py) asks the engine to checkpoint and stop, then waits for it to finish, at
most STOP_PATIENCE seconds (a second Ctrl-C stops waiting; the engine still checkpoints and
exits on its own). With `detach` the first one ends the display and the engine trains on.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import replace

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from puffer_tui.app.engine_client import EngineClient, EngineClientError
from puffer_tui.app.run_history import read_events
from puffer_tui.app.stop_signals import STOP_PATIENCE, say_anywhere, send_stop, signal_label
from puffer_tui.app.terminal import LOG_EVERY, PROGRESS_MODES  # noqa: F401 (named here too)
from puffer_tui.app.widgets.format import duration
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.protocol import (
    FINAL_STATES,
    LIVE_STATES,
    MessageType,
    RunState,
    TelemetrySnapshot,
)

REFRESH_HZ = 4


def _event_key(when, level: str, text: str) -> tuple:
    """An event as events.log keeps it: whole seconds, its lines as the file reads back."""
    return int(when or 0), level, "\n".join(str(text).splitlines())


def _fmt(value, spec: str = ".4g") -> str:
    return "-" if value is None else format(value, spec)


def _sps(t: TelemetrySnapshot) -> str:
    """The engine's SPS now; once the run has ended (nothing steps), its mean instead."""
    if t.state in FINAL_STATES and t.sps_mean > 0:
        return f"{t.sps_mean:,.0f} mean"
    return f"{t.sps:,.0f}"


# short names of the usual losses, so a line stays readable in a log
_LOSS_LABELS = {"approx_kl": "kl", "explained_variance": "expl_var"}


def _losses_text(losses: dict) -> str:
    return " ".join(f"{_LOSS_LABELS.get(k, k.removesuffix('_loss'))} {_fmt(v, '.3g')}"
                    for k, v in losses.items())


def progress_line(t: TelemetrySnapshot) -> str:
    """One plain line for a log: step, SPS, score, return, losses, ETA (no escape codes)."""
    total = t.total_timesteps or 0
    done = f" ({100 * min(t.global_step, total) / total:.0f}%)" if total else ""
    stats = t.stats
    parts = [f"{t.state or '?'}", f"step {t.global_step:,}/{total:,}{done}",
             f"SPS {_sps(t)}", f"ETA {duration(t.eta)}",
             f"score {_fmt(stats.get('score'), '.3f')}",
             f"return {_fmt(stats.get('episode_return'), '.3f')}"]
    if t.losses:
        parts.append(f"losses {_losses_text(t.losses)}")
    parts.append(f"epoch {t.epoch}, up {duration(t.uptime)}")
    return "  ".join(parts)


def _finite(value):
    """A JSON-safe number: NaN and infinity (which json writes as bare words) become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def progress_record(t: TelemetrySnapshot) -> dict:
    """The same snapshot as one JSON object, for `--progress jsonl`."""
    stats = t.stats
    return _finite({
        "type": "progress", "time": round(t.time or time.time(), 3), "run": t.run,
        "env": t.env, "state": t.state, "global_step": t.global_step,
        "total_timesteps": t.total_timesteps, "epoch": t.epoch, "sps": round(t.sps, 1),
        "sps_mean": round(t.sps_mean, 1), "eta": t.eta, "uptime": round(t.uptime, 1),
        "score": stats.get("score"), "episode_return": stats.get("episode_return"),
        "episode_length": stats.get("episode_length"), "learning_rate": t.learning_rate,
        "losses": dict(t.losses),
    })


def render(t: TelemetrySnapshot, width: int | None = None) -> Panel:
    """The panel for one telemetry snapshot (`width` columns, else the console's)."""
    total = t.total_timesteps or 1
    step, stats = t.global_step, t.stats
    summary = Table.grid(padding=(0, 2))
    for _ in range(4):
        summary.add_column()
    summary.add_row("state", f"[bold]{t.state or '?'}[/]", "epoch", str(t.epoch))
    summary.add_row("steps", f"{step:,} / {total:,}", "SPS", _sps(t))
    summary.add_row("uptime", duration(t.uptime), "ETA", duration(t.eta))
    summary.add_row("score", _fmt(stats.get("score"), ".3f"),
                    "return", _fmt(stats.get("episode_return"), ".3f"))
    summary.add_row("ep length", _fmt(stats.get("episode_length"), ".1f"),
                    "lr", _fmt(t.learning_rate, ".3g"))
    loss_row = "  ".join(f"{k} {_fmt(v)}" for k, v in t.losses.items()) or "-"
    timing_row = "  ".join(f"{k} {v:.0f}%" for k, v in t.timing_pct.items()
                           if v is not None) or "-"
    bar = Table.grid(padding=(0, 1))
    bar.add_row(ProgressBar(total=total, completed=min(step, total), width=50),
                f"{100 * min(step, total) / total:.0f}%")
    body = Group(
        bar,
        summary,
        f"[dim]losses[/]  {loss_row}",
        f"[dim]timing[/]  {timing_row}",
    )
    return Panel(body, title=f"puffer-tui  {t.env}  {t.run}",
                 border_style="cyan", width=width)


class HeadlessDisplay:
    def __init__(self, client: EngineClient, run_dir, console: Console | None = None,
                 signals=None, detach: bool = False, patience: float = STOP_PATIENCE,
                 progress: str = "auto", log_every: float = LOG_EVERY, records=None):
        self.client = client
        self.run_dir = run_dir
        self.console = console or Console()
        if progress == "auto":  # chosen by whether the output is a terminal
            progress = "panel" if self.console.is_terminal else "lines"
        self.progress = progress
        self.log_every = log_every
        self.records = records  # the stream JSON lines go to (--progress jsonl): stdout
        self._next_line: float | None = None  # monotonic time the next line is due
        self._line_state: str | None = None  # the state the last line showed
        self._last_line: dict | None = None  # what it showed: the end repeats no line
        self.signals = signals  # app/stop_signals.py StopSignals: a second Ctrl-C in `again`
        self.detach = detach
        self.patience = patience
        self.stop_signal: str | None = None  # the signal that asked for the stop
        self.detached: str | None = None  # the signal that ended the display under --detach
        self.timed_out = False  # the engine did not stop within `patience` seconds
        self.telemetry = TelemetrySnapshot.from_wire(  # what hello says, until the first push
            {"state": client.hello.get("state", RunState.STARTING),
             "env": client.hello.get("env", ""), "run": client.hello.get("run", "")})
        self.errors: list[str] = []
        self.gave_up = False  # a second Ctrl-C: stopped watching while the engine stops
        # (second, level, text) of the events read back from events.log and printed: a push of
        # one of them (it came as we read) is skipped once
        self._from_log: set[tuple] = set()

    def run(self) -> str:
        """Show progress until the engine exits; returns its final state. With StopSignals
        the signals are flags read here between frames, not exceptions: one raised inside a
        redraw would leave half a frame on the screen."""
        if self.signals is not None:
            self.signals.raising = False
        try:
            self.print_earlier_events()  # a Ctrl-C meanwhile is a flag, as in the loop
            if self.progress == "panel":
                with Live(self._render(), console=self.console,
                          refresh_per_second=REFRESH_HZ, transient=False) as live:
                    self._loop(live)
            else:
                self._loop(None)
        finally:
            if self.signals is not None:
                self.signals.raising = True
        if self.progress == "panel" and not self.console.is_terminal:
            self.console.print()  # the last frame of a non-terminal Live has no newline
        state = self.final_state(wait=self.client.closed.is_set())
        if self.progress != "panel":  # the last word: how it ended, at which step
            self.telemetry = replace(self.telemetry, state=state, sps=0.0, eta=None)
            self._emit()
        return state

    def _loop(self, live: Live | None) -> None:
        stop_sent = None  # monotonic time of the stop
        while True:
            try:
                self._pump(live)
                name = self.signals.first if self.signals is not None else None
            except KeyboardInterrupt:  # without StopSignals: a plain Ctrl-C
                if stop_sent is not None:
                    self._give_up()
                    return
                name = "SIGINT"
            if name and stop_sent is None:
                if self.detach:
                    self.detached = name
                    return
                stop_sent, self.stop_signal = time.monotonic(), name
                try:  # first the stop, then the words: the output may be gone
                    send_stop(self.run_dir, f"{name} to `puffer-tui train --headless` "
                                            f"(pid {os.getpid()})", self.client)
                except EngineClientError:
                    return
                say_anywhere(self.console, f"{signal_label(name)}: asking the engine to "
                                           f"checkpoint and stop...")
            elif self.client.closed.is_set():
                return
            elif stop_sent is not None and self._stop_wait_over(stop_sent):
                return

    @property
    def handled(self) -> bool:
        """Whether a signal that came while showing was acted on (stop sent, or detached)."""
        return self.stop_signal is not None or self.detached is not None

    def _stop_wait_over(self, stop_sent: float) -> bool:
        if self.signals is not None and self.signals.again:
            self._give_up()
            return True
        if time.monotonic() - stop_sent > self.patience:
            self.timed_out = True
            return True
        return False

    def _give_up(self) -> None:
        say_anywhere(self.console, "Ctrl-C again: not waiting any longer; the engine "
                                   "checkpoints and exits on its own")
        self.gave_up = True

    def _render(self) -> Panel:
        # in a terminal, two columns short of its width: the "^C" a Ctrl-C echoes then fits
        # after the panel's last line instead of wrapping, which scrolled the screen under
        # the live display and left a stray copy of its top border
        if self.console.is_terminal and self.console.width > 40:
            return render(self.telemetry, self.console.width - 2)
        return render(self.telemetry)

    def _pump(self, live: Live | None) -> None:
        deadline = time.monotonic() + 1 / REFRESH_HZ
        for push in self.client.pushes(timeout=1 / REFRESH_HZ):
            kind = push.get("type")
            if kind == MessageType.TELEMETRY:
                snapshot = TelemetrySnapshot.from_wire(push)
                if set(snapshot.stats) <= {"episodes"} and self.telemetry.stats:
                    # no episode ended in the last epoch (its stats are just `episodes: 0`):
                    # keep showing the last known ones
                    snapshot = replace(snapshot, stats=self.telemetry.stats)
                self.telemetry = snapshot
            elif kind == MessageType.EVENT:
                self._print_event(push)
            if time.monotonic() >= deadline:
                break
        if live is not None:
            live.update(self._render())
        else:
            self._maybe_emit()

    def _maybe_emit(self) -> None:
        """A line once the first epoch is in, then every `log_every` seconds, and whenever
        the run's state changes (paused, stopping...)."""
        t, now = self.telemetry, time.monotonic()
        changed = t.state != self._line_state and (
            self._line_state is not None or t.state not in (RunState.STARTING, RunState.RUNNING))
        if self._next_line is None and t.epoch < 1 and not changed:
            return  # nothing measured yet: the first line waits for the first epoch
        if self._next_line is not None and now < self._next_line and not changed:
            return
        self._emit()
        self._next_line = now + self.log_every

    def _emit(self) -> None:
        record = progress_record(self.telemetry)
        if record == self._last_line:
            return  # the end, already shown as the state changed
        self._line_state, self._last_line = self.telemetry.state, record
        if self.progress == "jsonl":
            self._write_record(progress_record(self.telemetry))
        else:
            self.console.print(progress_line(self.telemetry), markup=False, highlight=False,
                               soft_wrap=True)

    def _write_record(self, record: dict) -> None:
        stream = self.records if self.records is not None else self.console.file
        stream.write(json.dumps(record) + "\n")
        stream.flush()

    def print_earlier_events(self) -> None:
        """What this engine said before we connected (pushed only to the clients connected
        then: its start-up lines, a C port's note): events.log from the engine's own
        `engine PID starting` entry on, so a resumed run's earlier engines stay out."""
        pid = self.client.hello.get("pid")
        if self.run_dir is None or pid is None:
            return
        events = read_events(self.run_dir)
        starts = [i for i, e in enumerate(events) if e.text.startswith(f"engine {pid} starting")]
        for event in events[starts[-1]:] if starts else ():
            self._print_event({"time": event.time, "level": event.level, "text": event.text})
            self._from_log.add(_event_key(event.time, event.level, event.text))

    def _print_event(self, event: dict) -> None:
        level = event.get("level", "info")
        style = {"info": "dim", "warning": "yellow", "error": "bold red"}.get(level, "")
        text = str(event.get("text", ""))
        key = _event_key(event.get("time"), level, text)
        if key in self._from_log:
            self._from_log.discard(key)
            return  # read back from events.log already: it came as we read
        if level == "error":
            self.errors.append(text)
        if self.progress == "jsonl":  # the JSON stream stays JSON: events are records too
            self._write_record({"type": "event", "time": event.get("time"), "level": level,
                                "text": text})
            return
        # one print: above a live display a partial line (end="") is erased by its redraw;
        # soft wrap: a checkpoint path stays one piece to copy, not cut by a newline
        self.console.print(Text.assemble((f"{level} ", style), text), highlight=False,
                           soft_wrap=True)

    def final_state(self, wait: bool = True) -> str:
        """The engine's last word: status.json once it has exited, else the last telemetry."""
        for _ in range(50 if wait else 1):  # status.json is final just before the socket closes
            state = rd.run_state(self.run_dir)
            if state not in LIVE_STATES:
                return state
            time.sleep(0.1)
        return self.telemetry.state or "unknown"
