"""`puffer-tui attach [RUN | SWEEP]`: open the dashboard of an engine that is already
training, or the sweep view of a sweep (running or ended).

With no RUN (or `latest`), the most recent run whose engine is alive; a run whose engine is
only starting (its first second or two) is waited for. The engine does not notice the app
coming or going: detaching (q, then "detach") or killing the app leaves it training.
"""

from __future__ import annotations

import sys
import time

from puffer_tui.app.services.run_service import resume_advice
from puffer_tui.app.terminal import no_terminal
from puffer_tui.engine.shared import exit_codes as ec
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.protocol import LIVE_STATES
from puffer_tui.engine.shared.run_dir import RunDirError
from puffer_tui.engine.shared.sweep_settings import SweepError
from puffer_tui.engine.shared.sweep_settings import find_sweep as find


def add_parser(sub, name, help_text):
    p = sub.add_parser(name, help=help_text, description=help_text)
    p.add_argument("run_name", nargs="?", metavar="RUN",
                   help="a run name or path, or a sweep's name or path (default: the latest "
                        "run that is still training)")
    p.add_argument("--runs-dir", metavar="D",
                   help="where runs live (default $PUFFER_TUI_RUNS or ./runs)")
    p.set_defaults(run=run)


STARTING_WAIT = 30.0  # seconds a launched engine gets to write its status before we give up
POLL = 0.2


def starting(path) -> bool:
    """Whether `path`'s engine was launched and has not written its status yet: no status,
    engine.out there, and the run dir touched moments ago (the launcher writes engine.out and
    removes the previous status.json as it starts an engine)."""
    if rd.run_state(path) != "new" or not (path / rd.ENGINE_OUT_FILE).exists():
        return False
    try:
        return time.time() - path.stat().st_mtime < STARTING_WAIT
    except OSError:
        return False


def newest_training(root, is_live=None):
    """The newest run under `root` whose engine is training or starting (`is_live(path)`
    decides, by default its state); RunDirError saying what the newest run is instead."""
    is_live = is_live or (lambda path: rd.run_state(path) in LIVE_STATES or starting(path))
    runs = rd.list_runs(root)
    for path in reversed(runs):
        if is_live(path):
            return path.resolve()
    if not runs:
        raise rd.RunDirError(f"no runs in {root}; start one with `puffer-tui train ENV`")
    latest = runs[-1].resolve()
    raise rd.RunDirError(f"no run in {root} is training; the latest is {latest.name} "
                         f"({rd.run_state(latest)}): {resume_advice(latest)}")


def wait_while_starting(path, say=None, patience: float = STARTING_WAIT) -> str:
    """The run's state once its engine has said it (a starting run waits, at most
    `patience` seconds, with one line through `say`)."""
    deadline = time.monotonic() + patience
    said = False
    while starting(path) and time.monotonic() < deadline:
        if not said and say is not None:
            say(f"{path.name} is starting: waiting for its engine to be ready...")
            said = True
        time.sleep(POLL)
    return rd.run_state(path)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def choose_run(run_name: str | None, runs_dir: str | None, say=_say):
    """The run to attach to (`latest`, or none named: the newest that trains); RunDirError
    naming why there is none. A run whose engine is only starting is waited for."""
    root = rd.runs_root(runs_dir)
    if run_name and run_name != "latest":
        path = rd.find_run(run_name, root)
    else:
        path = newest_training(root)
    state = wait_while_starting(path, say)
    if state == "new" and (path / rd.ENGINE_OUT_FILE).exists():
        raise rd.RunDirError(f"{path.name}'s engine has not started within "
                             f"{STARTING_WAIT:g} s; its output: {path / rd.ENGINE_OUT_FILE}")
    if state not in LIVE_STATES:
        raise rd.RunDirError(f"{path.name} is not training (state: {state}); "
                             f"{resume_advice(path)}")
    return path


def find_sweep(name: str | None, runs_dir: str | None):
    """The sweep directory `name` names, or None when it names no sweep."""
    if not name:
        return None
    try:
        return find(name, runs_dir)
    except SweepError:
        return None


def _refuse_without_terminal() -> int | None:
    why = no_terminal()
    if why is None:
        return None
    # the dashboard's escape codes would land in a file or pipe
    print(f"puffer-tui attach: error: {why}: the dashboard needs one; `puffer-tui runs` "
          f"lists the runs, `tail -f RUN/{rd.EVENTS_FILE}` follows one, `puffer-tui stop "
          f"RUN` stops it", file=sys.stderr)
    return ec.USAGE


def run(args) -> int:
    sweep = find_sweep(args.run_name, args.runs_dir)
    if sweep is not None:
        refused = _refuse_without_terminal()
        if refused is not None:
            return refused
        # lazy: pulls textual, which this module does not load
        from puffer_tui.app.app import run_app

        return int(run_app(sweep_dir=sweep, runs_root=args.runs_dir) or 0)
    try:  # what is wrong with the run first: it says what to do instead
        path = choose_run(args.run_name, args.runs_dir)
    except RunDirError as e:
        print(f"puffer-tui attach: error: {e}", file=sys.stderr)
        return ec.USAGE
    refused = _refuse_without_terminal()
    if refused is not None:
        return refused
    # lazy: pulls textual, which this module does not load
    from puffer_tui.app.app import run_app

    return int(run_app(run_dir=path, attach=True, runs_root=args.runs_dir) or 0)
