"""The launcher's branch form: `b` on a run in the runs list shows the settings its latest
checkpoint trained with; Branch (the start button, ctrl+s) then starts a new run from that
checkpoint with what was changed, as `puffer-tui train --from RUN` does (engine/startup/branch.py),
and opens its dashboard. Choosing an env leaves the form for that env's preset.

    await show_branch_form(launcher, run_dir)   # the key's action
    await start_branch(launcher)                # Branch / ctrl+s while the form is shown
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.text import Text
from textual.widgets import Button, Static

from puffer_tui.app.run_start import RunRefused, branch_base, prepare_branch
from puffer_tui.app.widgets.override_form import OverrideForm
from puffer_tui.engine.shared.config import ConfigError
from puffer_tui.engine.shared.lineage import branch_step

BRANCH_FORM = "branch:"  # the form's name while branching: an env chosen rebuilds the form


async def show_branch_form(screen, run_dir: Path) -> None:
    chosen = screen.query_one("#chosen", Static)
    chosen.update(Text(f"reading {run_dir.name}'s latest checkpoint...", style="yellow"))
    try:  # loading the checkpoint takes a moment: off the UI thread
        checkpoint, config = await asyncio.to_thread(branch_base, run_dir)
    except RunRefused as e:
        chosen.update(Text(str(e), style="red"))
        screen.notify(f"cannot branch {run_dir.name}: {e}", severity="error", timeout=10,
                      markup=False)
        return
    await screen._show_env(config.env_name, config, form_name=BRANCH_FORM + str(checkpoint))
    screen.branch_source = checkpoint
    screen.query_one("#start", Button).label = "Branch"
    step = branch_step(str(checkpoint))
    where = f"@ {step:,}" if step is not None else f"from {checkpoint.name}"
    chosen.update(Text(f"branch of {run_dir.name} {where}: change settings, then ctrl+s",
                       style="bold"))
    screen.query_one("#form", OverrideForm).query("Input").first().focus()  # ready to edit


def leave_branch(screen) -> None:
    """Back to starting fresh runs (the form follows the env cursor again)."""
    screen.branch_source = None
    screen.query_one("#start", Button).label = "Start"


async def start_branch(screen) -> None:
    form = screen.query_one("#form", OverrideForm)
    field = screen.query_one("#field", Static)
    try:
        overrides = form.overrides()
    except ConfigError as e:
        form.show_error(str(e))
        field.update(Text(str(e), style="bold red"))
        return
    source = screen.branch_source
    field.update(Text(f"branching from {source.name}...", "yellow"))
    try:  # every check of `train --from`, then the run dir: off the UI thread
        run_dir = await asyncio.to_thread(prepare_branch, source, overrides, screen.runs_root)
    except RunRefused as e:
        form.show_error(str(e))
        field.update(Text(str(e), style="bold red"))
        screen.notify(f"cannot branch: {e}", severity="error", timeout=10, markup=False)
        return
    leave_branch(screen)
    screen.app.open_run(run_dir, attach=False, resume=True)
