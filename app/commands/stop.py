"""`puffer-tui stop RUN | --all`: stop running engines from any shell, each with a final
checkpoint, and say where it is.

    puffer-tui stop squared-20261122-001401      # a run name, a path
    puffer-tui stop latest                        # the newest run that trains (as attach)
    puffer-tui stop --all                         # every run under the runs root that trains

Each engine gets its ordinary `stop` over its control socket (it finishes the epoch,
checkpoints and exits), the reason goes into its events.log, and the command waits for all of
them (at most --timeout seconds), printing one line per run: where its checkpoint is, or why
there is none. Exit status (engine/shared/exit_codes.py): 0 all stopped, 1 one could not be
reached or did not stop in time, 2 bad input (no such run, a run that is not training), 130
Ctrl-C while waiting.

Tested in: tests/app/test_cli_stop.py, tests/app/test_attach_stop_choice.py (which run is picked)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

from puffer_tui.app.commands.attach import find_sweep, newest_training, wait_while_starting
from puffer_tui.app.engine_client import EngineClientError
from puffer_tui.app.stop_signals import (
    REPORT_EVERY,
    STOP_PATIENCE,
    engine_gone,
    send_stop,
    stop_line,
)
from puffer_tui.engine.shared import exit_codes as ec
from puffer_tui.engine.shared import run_dir as rd

POLL = 0.2  # seconds between looks at the engines' status


def add_parser(sub, name, help_text):
    p = sub.add_parser(
        name, help=help_text, description=help_text,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit status:\n  0    every engine named stopped with its checkpoint\n"
               "  1    one could not be reached, or did not stop within --timeout\n"
               "  2    refused input (no such run, a run that is not training)\n"
               "  130  Ctrl-C while waiting (the engines go on stopping)")
    p.add_argument("run_name", nargs="?", metavar="RUN",
                   help="the run to stop: a run name or path, or `latest` (the newest run "
                        "that trains)")
    p.add_argument("--all", action="store_true",
                   help="stop every run under the runs root whose engine is running")
    p.add_argument("--timeout", type=float, default=STOP_PATIENCE, metavar="S",
                   help=f"seconds to wait for the final checkpoints (default {STOP_PATIENCE:g}); "
                        "0 sends the stops and returns at once")
    p.add_argument("--runs-dir", metavar="D",
                   help="where runs live (default $PUFFER_TUI_RUNS or ./runs)")
    p.set_defaults(run=run)


def _fail(message: str) -> int:
    print(f"puffer-tui stop: error: {message}", file=sys.stderr)
    return ec.USAGE


def _say(text: str) -> None:
    print(text, flush=True)


def running_runs(root) -> list:
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.app.engine_launcher import engine_running

    return [path.resolve() for path in rd.list_runs(root) if engine_running(path)]


def not_training(path) -> str:
    """Why `path` has nothing to stop, with how it ended."""
    return f"{path.name} is not training ({stop_line(path)[0]})"


def choose_runs(args) -> list:
    """The runs to stop; RunDirError naming why a RUN cannot be."""
    # lazy: kept off the CLI's fast path (puffer-tui --help, runs, stop)
    from puffer_tui.app.engine_launcher import engine_running

    root = rd.runs_root(args.runs_dir)
    if args.all:
        return running_runs(root)
    if args.run_name == "latest":  # the newest that trains, not the newest run
        return [newest_training(root, engine_running)]
    try:
        path = rd.find_run(args.run_name, root)
    except rd.RunDirError:
        if find_sweep(args.run_name, args.runs_dir) is not None:
            raise rd.RunDirError(f"{args.run_name} is a sweep: stop it from its view "
                                 f"(`puffer-tui attach {args.run_name}`, then s), or stop its "
                                 f"trials' runs by name") from None
        raise
    wait_while_starting(path, lambda text: print(text, file=sys.stderr, flush=True))
    if not engine_running(path):
        raise rd.RunDirError(not_training(path))
    return [path]


def run(args) -> int:
    if args.all and args.run_name:
        return _fail("give a RUN or --all, not both")
    if not args.all and not args.run_name:
        return _fail("name the RUN to stop (a run name or path, or latest), or give --all; "
                     "`puffer-tui runs` lists them")
    if not math.isfinite(args.timeout) or args.timeout < 0:
        return _fail(f"--timeout {args.timeout:g}: give the seconds to wait, 0 or more")
    try:
        runs = choose_runs(args)
    except rd.RunDirError as e:
        return _fail(str(e))
    if not runs:
        _say(f"no engine is running under {rd.runs_root(args.runs_dir).resolve()}")
        return ec.FINISHED
    return stop_runs(runs, args.timeout)


def stop_runs(runs: list, timeout: float) -> int:
    """Send each run's engine a stop, then wait for them all; one line per run."""
    code, clients = 0, {}
    for path in runs:
        pid = rd.read_status(path).get("pid", "?")
        try:
            clients[path] = send_stop(path, f"`puffer-tui stop` (pid {os.getpid()})")
        except EngineClientError as e:
            _say(f"{path.name}: could not reach its engine (pid {pid}): {e}; "
                 f"`kill -TERM {pid}` also checkpoints and stops it")
            code = ec.ERROR
    try:
        if timeout == 0:
            for path in clients:
                _say(f"{path.name}: stop sent to the engine (pid "
                     f"{rd.read_status(path).get('pid', '?')}); it checkpoints and exits on "
                     f"its own, `puffer-tui runs` shows when")
            return code
        return max(code, _wait(clients, timeout))
    except KeyboardInterrupt:
        names = ", ".join(path.name for path in clients if not _gone(path))
        _say(f"Ctrl-C: not waiting any longer; {names or 'the engines'} checkpoint and exit "
             f"on their own, `puffer-tui runs` shows when")
        return ec.INTERRUPTED
    finally:
        for client in clients.values():
            client.close()


def _gone(path) -> bool:
    return engine_gone(path)


def _wait(clients: dict, timeout: float) -> int:
    code, pending = 0, list(clients)
    start = time.monotonic()
    next_report = REPORT_EVERY
    while pending:
        for path in list(pending):
            if _gone(path):
                pending.remove(path)
                line, clean = stop_line(path)
                _say(f"{path.name} {line}")
                code = code if clean else ec.ERROR
        seconds = time.monotonic() - start
        if pending and seconds > timeout:
            for path in pending:
                _say(f"{path.name}: still stopping after {timeout:g} s (engine pid "
                     f"{rd.read_status(path).get('pid', '?')}); it checkpoints and exits on its "
                     f"own, `puffer-tui runs` shows when")
            return ec.ERROR
        if pending and seconds >= next_report:
            _say(f"waiting for {len(pending)} engine(s) to checkpoint and exit: {seconds:.0f} s")
            next_report = seconds + REPORT_EVERY
        if pending:
            time.sleep(POLL)
    return code
