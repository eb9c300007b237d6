"""The "waiting for the engine" lines of `train --headless`: each wait (to start, then to
answer the hello) says so once it passes 2 s, timed from its own beginning."""

import io
from types import SimpleNamespace

from rich.console import Console

from puffer_tui.app.headless_run import _StartProgress


def lines(progress_calls) -> list[str]:
    out = io.StringIO()
    progress = _StartProgress(Console(file=out, width=200))
    handle = SimpleNamespace(pid=42)
    for seconds, what in progress_calls:
        progress(handle, seconds, what)
    return out.getvalue().splitlines()


def test_the_wait_for_the_answer_is_reported_after_a_slow_start():
    # a start that took 3 s used to push the first "to answer" line to the 8th second of
    # that wait: a hello answered in 7 s went unreported
    assert lines([(1.0, "to start"), (3.0, "to start"), (0.5, "to answer"), (2.1, "to answer"),
                  (2.4, "to answer")]) == [
        "waiting for the engine (pid 42) to start: 3 s",
        "waiting for the engine (pid 42) to answer: 2 s",
    ]


def test_a_long_wait_is_reported_every_few_seconds():
    calls = [(s / 4, "to answer") for s in range(0, 60)]  # 15 s, polled every 0.25 s
    assert lines(calls) == [f"waiting for the engine (pid 42) to answer: {s} s"
                            for s in (2, 7, 12)]
