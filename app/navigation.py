"""Where the screens ask the app to go: one message per destination.

A screen never calls the App by method name (an import checker cannot see such calls, and a
renamed method would break only at runtime); it posts one of these and PufferApp
(app/app.py) handles it: each message bubbles from the screen to the App.
tests/screens/test_navigation_messages.py checks that no screen or widget calls the App's own
methods, and tests/screens/test_launcher_open_run.py that posting one opens the screen.

Tested in: tests/screens/test_navigation_messages.py
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.message import Message


class OpenLauncher(Message):
    """Back to the launcher (the run on screen has ended, or the sweep view is left)."""


@dataclass
class OpenRun(Message):
    """The dashboard of `run_dir`: attach to its engine, or start one (resume from the latest
    checkpoint when `resume`)."""

    run_dir: Path
    attach: bool
    resume: bool = False


@dataclass
class StartRun(Message):
    """A new run of `env_name` with the launcher's overrides."""

    env_name: str
    overrides: dict


@dataclass
class ResumeRun(Message):
    """Resume `run_dir` after the same checks as `train --resume`."""

    run_dir: Path


@dataclass
class OpenSweep(Message):
    """The sweep view of `sweep_dir`."""

    sweep_dir: Path


@dataclass
class OpenTrial(Message):
    """A running sweep trial's dashboard, over the sweep view."""

    run_dir: Path


class BackToSweep(Message):
    """Leave a trial's dashboard for the sweep view under it."""


@dataclass
class OpenCompare(Message):
    """These runs side by side, over the launcher."""

    run_dirs: list[Path]


class OpenHelp(Message):
    """The keys of every screen."""
