"""How a command ended, as its exit status: one list for every verb (train, eval, sweep,
stop, attach), so a script tells a finished run from a stopped one the same way for each.

    sys.exit(STOPPED)   # the run was stopped with a checkpoint: `train --resume` continues it

No imports: `puffer-tui --help`, the public API and tests read these without Textual or torch.
"""

from __future__ import annotations

FINISHED = 0  # done: the run reached its steps, eval played its episodes, the sweep its trials
ERROR = 1  # something failed: the engine died or erred, a stop did not finish in time, an
#            evaluated episode never ended
USAGE = 2  # the input was refused before anything ran (a bad flag, value, file or run name)
STOPPED = 3  # stopped before the end (Ctrl-C, SIGTERM, SIGHUP, `puffer-tui stop`), resumable
LEFT_RUNNING = 4  # this command ended and the engine trains on (--detach, a lost connection)
INTERRUPTED = 130  # Ctrl-C in a command that is not a run (a listing, a benchmark)

CODES = {
    FINISHED: "finished (the run reached its steps; eval played its episodes)",
    ERROR: "error (the engine failed, or did not stop in time; eval: an episode never ended)",
    USAGE: "refused input (a bad flag, value, file or run name); nothing ran",
    STOPPED: "stopped before the end (Ctrl-C, SIGTERM, SIGHUP, `puffer-tui stop`); "
             "resume with --resume",
    LEFT_RUNNING: "the command ended, the engine trains on (--detach)",
    INTERRUPTED: "Ctrl-C in a command that is not a run",
}


def help_epilog(codes: tuple[int, ...] = tuple(CODES)) -> str:
    """The "exit status" paragraph of a verb's --help."""
    return "exit status:\n" + "\n".join(f"  {code:<4} {CODES[code]}" for code in codes)
