"""`puffer-tui attach [RUN | SWEEP]`: open the dashboard of an engine that is already
training, or the sweep view of a sweep (running or ended).

With no RUN, the most recent run whose engine is alive. The engine does not notice the app
coming or going: detaching (q, then "detach") or killing the app leaves it training.
"""

from __future__ import annotations

import sys

from puffer_tui.app.services.run_service import resume_advice
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


def choose_run(run_name: str | None, runs_dir: str | None):
    """The run to attach to; RunDirError naming why there is none."""
    root = rd.runs_root(runs_dir)
    if run_name:
        path = rd.find_run(run_name, root)
        state = rd.run_state(path)
        if state not in LIVE_STATES:
            raise rd.RunDirError(f"{path.name} is not training (state: {state}); "
                                 f"{resume_advice(path)}")
        return path
    runs = rd.list_runs(root)
    for path in reversed(runs):
        if rd.run_state(path) in LIVE_STATES:
            return path.resolve()
    if not runs:
        raise rd.RunDirError(f"no runs in {root}; start one with `puffer-tui train ENV`")
    latest = runs[-1].resolve()
    raise rd.RunDirError(f"no run in {root} is training; the latest is {latest.name} "
                         f"({rd.run_state(latest)}): {resume_advice(latest)}")


def find_sweep(name: str | None, runs_dir: str | None):
    """The sweep directory `name` names, or None when it names no sweep."""
    if not name:
        return None
    try:
        return find(name, runs_dir)
    except SweepError:
        return None


def run(args) -> int:
    sweep = find_sweep(args.run_name, args.runs_dir)
    if sweep is not None:
        # lazy: pulls textual, which this module does not load
        from puffer_tui.app.app import run_app

        return int(run_app(sweep_dir=sweep, runs_root=args.runs_dir) or 0)
    try:
        path = choose_run(args.run_name, args.runs_dir)
    except RunDirError as e:
        print(f"puffer-tui attach: error: {e}", file=sys.stderr)
        return 2
    # lazy: pulls textual, which this module does not load
    from puffer_tui.app.app import run_app

    return int(run_app(run_dir=path, attach=True, runs_root=args.runs_dir) or 0)
