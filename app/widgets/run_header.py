"""The dashboard's top lines: run identity, state, progress, speed, time.

Tested in: tests/screens/test_dashboard_starting_header.py, tests/app/test_app_state.py,
tests/screens/test_dashboard_autopilot.py"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from puffer_tui.app.widgets.format import bar, duration, human
from puffer_tui.engine.shared.protocol import RunState, TelemetrySnapshot

STATE_STYLES = {
    RunState.RUNNING: "bold green",
    RunState.PAUSED: "bold yellow",
    RunState.STARTING: "bold cyan",
    RunState.STOPPING: "bold magenta",
    RunState.FINISHED: "bold blue",
    RunState.STOPPED: "bold blue",
    "starting engine": "bold cyan",
    RunState.ERROR: "bold white on red",
    "connecting": "bold cyan",
    "not responding": "bold white on dark_orange3",
    "disconnected": "bold white on red",
}


class RunHeader(Widget):
    """Two lines: who and how (env, run, state, epoch, uptime, ETA); where (steps, bar, SPS)."""

    DEFAULT_CSS = """
    RunHeader {
        text-wrap: nowrap;
        text-overflow: ellipsis;
        height: 2;
        padding: 0 1;
        background: $boost;
    }
    """

    telemetry: reactive[TelemetrySnapshot | None] = reactive(None)  # None: none yet
    identity: reactive[dict] = reactive(dict)  # hello's env, run and state, until telemetry
    # what the app believes about the link, which can override the engine's own state
    link_state: reactive[str | None] = reactive(None)

    def render(self) -> Text:
        t, known = self.telemetry, self.identity
        state = self.link_state or (t.state if t else known.get("state")) or "connecting"
        run = str((t.run if t else "") or known.get("run") or "")
        # an unknown env with a known run: the run's name (it starts with its env) alone
        env = str((t.env if t else "") or known.get("env") or ("" if run else "?"))
        # (text, style, priority): what does not fit goes first, lowest priority first; the
        # run name already starts with the env, so the env alone is shown when it is cut.
        parts = [(run if run.startswith(env) else f"{env}  {run}".strip(), "bold", 5),
                 (f" {state} ", STATE_STYLES.get(state, "bold"), 9)]
        if t is not None:  # attached, no telemetry yet: no made-up "epoch 0"
            parts += [(f"epoch {t.epoch}", "", 8),
                      (f"ETA {duration(t.eta)}", "", 7),
                      (f"up {duration(t.uptime)}", "", 3)]
            if t.hyperparameters.get("train.autopilot"):  # the doctor's fixes apply alone
                parts.append(("autopilot", "bold cyan", 6))
            if t.device:
                parts.append((t.device, "dim", 1))
            if t.preset:  # "MuJoCo locomotion preset (mujoco.toml)": the defaults' source
                parts.append((t.preset, "dim", 0))
        top = _fit(parts, self.size.width - 2, env)
        if t is None:
            bottom = Text("waiting for the engine's first report", style="dim")
            return Text("\n").join([top, bottom])
        return Text("\n").join([top, self._progress_line(t, state)])

    def _progress_line(self, t: TelemetrySnapshot, state: str) -> Text:
        step, total = t.global_step, t.total_timesteps
        # The last epoch runs whole, so the step can pass the target: the percent stops at
        # 100 and the step reads "target+extra" rather than a ratio above one.
        fraction = min(step / total, 1.0) if total else 0.0
        if total and step > total:
            left = f"step {human(total)}+{human(step - total)} "
        else:
            left = f"step {human(step)}/{human(total)} "
        right = f" {fraction * 100:5.1f}%  SPS {human(t.sps):>6}"
        width = max(self.size.width - len(left) - len(right), 4)
        bottom = Text(no_wrap=True, overflow="ellipsis")
        bottom.append(left)
        bottom.append(bar(fraction, width), "green" if state != RunState.ERROR else "red")
        bottom.append(right, "bold")
        return bottom


def _fit(parts: list[tuple[str, str, int]], width: int, env: str) -> Text:
    """Join `parts` two spaces apart, dropping the least important until they fit."""
    parts = list(parts)
    while sum(len(p[0]) + 2 for p in parts) - 2 > width:
        first = parts[0]
        if env and first[0] != env and len(parts) <= 3:
            parts[0] = (env, first[1], first[2])  # the run name gives way to its env
            continue
        droppable = [p for p in parts[1:] if p[2] < 9] or parts[1:]
        if not droppable:
            break
        parts.remove(min(droppable, key=lambda p: p[2]))
    line = Text(no_wrap=True, overflow="ellipsis")
    for i, (text, style, _) in enumerate(parts):
        if i:
            line.append("  ")
        line.append(text, style)
    return line
