"""Start a sweep's driver and watch it headless: a live rich table on a terminal, one line per
trial state change otherwise, then a summary. Ctrl-C stops the sweep (the driver records the
running trials as failed so `--resume` runs them again); a second Ctrl-C leaves it running.

The watcher subscribes to the driver (`subscribe`: its snapshot, then each new one pushed), as
the sweep view does (screens/sweep_view.py); it asks nothing on a timer.

Tested in: tests/engine/sweep/test_sweep_driver_logic.py (the table and summary),
tests/engine/sweep/test_sweep_driver.py (watching a real sweep)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from puffer_tui.app.engine_client import EngineClient, EngineClientError
from puffer_tui.app.engine_launcher import tail
from puffer_tui.engine.shared import exit_codes as ec
from puffer_tui.engine.shared import sweep_settings as st
from puffer_tui.engine.shared.protocol import MessageType
from puffer_tui.engine.shared.run_dir import socket_answers
from puffer_tui.engine.shared.sweep_control import ControlError, request

WAIT = 0.5  # seconds between looks at the driver process while no snapshot comes
START_TIMEOUT = 120.0


def launch_driver(sweep_dir: Path) -> subprocess.Popen:
    with (sweep_dir / st.DRIVER_OUT_FILE).open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "puffer_tui.engine.sweep", str(sweep_dir)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def start_driver(sweep_dir: Path) -> subprocess.Popen | None:
    """Launch the driver and wait until its socket answers (or START_TIMEOUT passes); None,
    with the end of its output on stderr, when it exited with an error first."""
    process = launch_driver(sweep_dir)
    deadline = time.monotonic() + START_TIMEOUT
    while process.poll() is None and not _answers(sweep_dir / st.SOCKET_FILE):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if process.poll() is not None and process.returncode != 0:
        print(f"puffer-tui sweep: the driver exited with status {process.returncode}:\n"
              f"{tail(sweep_dir / st.DRIVER_OUT_FILE)}", file=sys.stderr)
        return None
    return process


def launch_and_view(sweep_dir: Path, settings, runs_root=None) -> int:
    """Start the driver, then the app's sweep view; the sweep survives the app (attach again
    with `puffer-tui attach NAME`)."""
    # lazy: pulls textual, which this module does not load
    from puffer_tui.app.app import run_app

    if start_driver(sweep_dir) is None:
        return 1
    return int(run_app(sweep_dir=sweep_dir, runs_root=runs_root) or 0)


def launch_and_watch(sweep_dir: Path, settings, watch: bool = True) -> int:
    from rich.console import Console

    console = Console()
    process = start_driver(sweep_dir)
    if process is None:
        return 1
    sock = sweep_dir / st.SOCKET_FILE
    console.print(f"sweep {settings.name}: driver pid {process.pid}, {sweep_dir}")
    interrupts = 0
    seen: dict[int, str] = {}
    live = _live(console)
    link = None
    try:
        while process.poll() is None:
            try:
                if link is None or link.closed.is_set():
                    link = _subscribe(sock, lambda snap: _show(console, live, snap, seen))
                    if link is None:
                        time.sleep(WAIT)
                        continue
                for push in link.pushes(timeout=WAIT):
                    if push.get("type") == MessageType.SWEEP:
                        _show(console, live, {k: v for k, v in push.items() if k != "type"},
                              seen)
                    if process.poll() is not None:
                        break
            except KeyboardInterrupt:
                interrupts += 1
                if interrupts > 1:
                    console.print(f"left the sweep running (driver pid {process.pid}); stop it "
                                  f"with `kill {process.pid}`")
                    return ec.LEFT_RUNNING
                console.print("stopping the sweep (running trials are rerun by --resume)...")
                try:
                    request(sock, "stop", timeout=5.0)
                except ControlError:
                    process.terminate()
    finally:
        if link is not None:
            link.close()
        if live is not None:
            live.stop()
    final = _read_status(sweep_dir / st.STATUS_FILE)
    if live is not None and final:
        console.print(table(final))  # the last state of the live table stays on screen
    else:
        _show(console, None, final, seen)
    console.print(summary(final, sweep_dir), soft_wrap=True, highlight=False, markup=False)
    if process.returncode and process.returncode < 0:
        console.print(f"the driver was killed (signal {-process.returncode}); its running "
                      f"trials are lost: continue with `puffer-tui sweep --resume {sweep_dir}`",
                      soft_wrap=True, highlight=False, markup=False)
        return 1
    if process.returncode:
        console.print(f"the driver exited with status {process.returncode}; see "
                      f"{sweep_dir / st.DRIVER_OUT_FILE}", soft_wrap=True, markup=False)
        return 1
    return ec.STOPPED if interrupts else ec.FINISHED


def _subscribe(sock: Path, show):
    """A link subscribed to the driver's snapshots, its first one shown; None when no driver
    answers yet (it is starting, or it has gone)."""
    link = None
    try:
        link = EngineClient.connect(sock, timeout=5.0)
        reply = link.call("subscribe", timeout=5.0)
    except EngineClientError:
        if link is not None:
            link.close()
        return None
    show({k: v for k, v in reply.items() if k not in ("id", "ok")})
    return link


def _live(console):
    if not console.is_terminal:
        return None
    from rich.live import Live

    live = Live(console=console, refresh_per_second=4, transient=True)
    live.start()
    return live


def _show(console, live, snap: dict, seen: dict[int, str]) -> None:
    if live is not None:
        live.update(table(snap))
        return
    for row in snap.get("trials", []):  # a log: one line per trial state change
        if seen.get(row["number"]) != row["state"]:
            seen[row["number"]] = row["state"]
            console.print(trial_line(row), highlight=False, markup=False, soft_wrap=True)


def trial_line(row: dict) -> str:
    score = "-" if row.get("score") is None else f"{row['score']:.4g}"
    secs = "-" if row.get("seconds") is None else f"{row['seconds']:.1f}s"
    error = f"  {row['error'][:80]}" if row.get("error") else ""
    return f"trial {row['number']:>3} {row['state']:<8} score {score:>7} {secs:>7}  " \
           f"{_params(row.get('params', {}))}{error}"


def _params(params: dict) -> str:
    def fmt(v):
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    return " ".join(f"{k.split('.')[-1]}={fmt(v)}" for k, v in params.items())


def table(snap: dict):
    """The heading line and the trial table (running trials, the best, the latest 12)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    best = set(snap.get("best", []))
    counts = snap.get("counts", {})
    title = (f"sweep {snap.get('sweep')} · {snap.get('objective')} · "
             f"{counts.get('COMPLETE', 0)} complete, {counts.get('PRUNED', 0)} pruned, "
             f"{counts.get('FAIL', 0)} failed, {counts.get('RUNNING', 0)} running "
             f"of {snap.get('target')}")
    t = Table(expand=False, padding=(0, 1))
    for col in ("#", "state", "score", "secs", "epoch", "params"):
        t.add_column(col, no_wrap=col != "params")
    rows = snap.get("trials", [])
    shown = [r for r in rows if r["state"] == "RUNNING" or r["number"] in best]
    shown += [r for r in rows[-12:] if r not in shown]
    for r in sorted(shown, key=lambda r: r["number"]):
        mark = "*" if r["number"] in best else ""
        t.add_row(f"{r['number']}{mark}", r["state"],
                  "-" if r.get("score") is None else f"{r['score']:.4g}",
                  "-" if r.get("seconds") is None else f"{r['seconds']:.0f}",
                  "-" if r.get("epoch") is None else str(r["epoch"]), _params(r["params"]))
    return Group(Text(title), t)


def summary(snap: dict, sweep_dir: Path) -> str:
    counts = snap.get("counts", {})
    lines = [f"sweep {snap.get('sweep')} {snap.get('state', '?')}: "
             + ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items()))]
    by_number = {r["number"]: r for r in snap.get("trials", [])}
    best = [by_number[n] for n in snap.get("best", []) if n in by_number]
    if len(snap.get("directions", [])) > 1 and best:
        lines.append("Pareto front (score against wall-clock seconds):")
        lines += ["  " + trial_line(r) for r in sorted(best, key=lambda r: r["values"][1])]
    elif best:
        lines.append("best: " + trial_line(best[0]))
    if best:
        lines.append(f"its preset: puffer-tui sweep best {sweep_dir} > best.toml; then "
                     f"puffer-tui train --preset best.toml")
    if snap.get("stopping"):
        lines.append(f"stopped early ({snap['stopping']}); continue with "
                     f"`puffer-tui sweep --resume {sweep_dir}`")
    return "\n".join(lines)


def _read_status(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _answers(path: Path) -> bool:
    return path.exists() and socket_answers(path)
