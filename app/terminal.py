"""Whether this command runs in a terminal a full-screen app can draw on. No imports beyond
the standard library: the verbs ask before they load Textual."""

from __future__ import annotations

import os
import sys

# the progress views of `train --headless` (app/headless_display.py), here so the verbs can
# name them without loading rich
LOG_EVERY = 10.0  # seconds between progress lines off a terminal
PROGRESS_MODES = ("auto", "panel", "lines", "jsonl")  # auto: panel in a terminal, else lines


def no_terminal() -> str | None:
    """Why a dashboard cannot be shown here ("stdout is not a terminal"), None when it can:
    redirected to a file or a pipe its escape codes would land in the log, and with stdin not
    a terminal no key would reach it. A page of `puffer-tui serve` runs the app over pipes
    with Textual's web driver (TEXTUAL_DRIVER): that needs no terminal."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return None
    for name, stream in (("stdout", sys.stdout), ("stdin", sys.stdin)):
        try:
            if stream is None or not stream.isatty():
                return f"{name} is not a terminal"
        except (AttributeError, ValueError, OSError):  # closed or replaced by a non-file
            return f"{name} is not a terminal"
    return None
