"""The launcher's branch form, off the UI thread: `b` on a run in the runs list
(RunsList.BranchRequested) shows the settings its latest checkpoint trained with; Branch (the
start button, ctrl+s) then starts a new run from that checkpoint with what was changed, as
`puffer-tui train --from RUN` does (engine/startup/branch.py), and opens its dashboard.

Reading a checkpoint and writing a run dir take a moment, so each is a worker thread that
posts its outcome to the launcher as a message; LauncherScreen (screens/launcher/screen.py)
handles them (`on_branch_base_read`, `on_branch_prepared`, ...) and draws the form:

    screen.run_worker(partial(read_branch_base, screen, run_dir), thread=True)
        -> BranchBaseRead(run_dir, checkpoint, config) | BranchUnreadable(run_dir, error)
    screen.run_worker(partial(prepare_branch_run, screen, checkpoint, overrides, root),
                      thread=True)
        -> BranchPrepared(checkpoint, run_dir) | BranchRefused(checkpoint, error)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.message import Message
from textual.message_pump import MessagePump

from puffer_tui.app.run_preparation import RunRefused, branch_base, prepare_branch
from puffer_tui.engine.shared.config import Config
from puffer_tui.engine.shared.lineage import branch_step

BRANCH_FORM = "branch:"  # the form's name while branching: an env chosen rebuilds the form


@dataclass(eq=False)
class BranchBaseRead(Message):
    """The settings `run_dir`'s latest checkpoint trained with: the branch form's start."""

    run_dir: Path
    checkpoint: Path
    config: Config


@dataclass(eq=False)
class BranchUnreadable(Message):
    """`run_dir` cannot be branched (no checkpoint, a damaged one...): why."""

    run_dir: Path
    error: str


@dataclass(eq=False)
class BranchPrepared(Message):
    """The branch's run dir, written: its engine starts as a resume of the seed checkpoint."""

    checkpoint: Path
    run_dir: Path


@dataclass(eq=False)
class BranchRefused(Message):
    """A check of `train --from` refused the changes (no run dir was written): why."""

    checkpoint: Path
    error: str


def read_branch_base(target: MessagePump, run_dir: Path) -> None:
    """A worker thread's body: load `run_dir`'s latest checkpoint's settings, tell `target`."""
    try:
        checkpoint, config = branch_base(run_dir)
    except RunRefused as e:
        target.post_message(BranchUnreadable(run_dir, str(e)))
        return
    target.post_message(BranchBaseRead(run_dir, checkpoint, config))


def prepare_branch_run(target: MessagePump, checkpoint: Path, overrides: dict,
                       runs_root) -> None:
    """A worker thread's body: every check of `train --from`, then the run dir; tell `target`."""
    try:
        run_dir = prepare_branch(checkpoint, overrides, runs_root)
    except RunRefused as e:
        target.post_message(BranchRefused(checkpoint, str(e)))
        return
    target.post_message(BranchPrepared(checkpoint, run_dir))


def branch_title(run_dir: Path, checkpoint: Path) -> str:
    """The line above the branch form: whose branch, from which step."""
    step = branch_step(str(checkpoint))
    where = f"@ {step:,}" if step is not None else f"from {checkpoint.name}"
    return f"branch of {run_dir.name} {where}: change settings, then ctrl+s"
