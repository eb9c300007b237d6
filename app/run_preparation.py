"""Checks and waits around starting an engine from the app: a new run's directory, a
resume's preconditions, an old engine still shutting down. No Textual here.

Tested in: tests/app/test_serve_code_specs.py, tests/screens/test_launcher_open_run.py,
tests/screens/test_launcher_messages.py (branches).
"""

from __future__ import annotations

import time
from pathlib import Path

from puffer_tui.app.serve_code_specs import (
    branch_import_refusal,
    code_spec_refusal,
    env_settings_of,
)
from puffer_tui.app.services.run_service import new_run, plan_resume
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared.checkpoint import CheckpointError
from puffer_tui.engine.shared.config import ConfigError, from_dict
from puffer_tui.engine.shared.protocol import LIVE_STATES
from puffer_tui.engine.shared.run_dir import RunDirError, engine_alive, read_status, run_state
from puffer_tui.engine.shared.run_dir import runs_root as root_of
from puffer_tui.engine.startup import branch
from puffer_tui.engine.startup.branch import resolve_source


class RunRefused(Exception):
    """A run that cannot be started or resumed; the text says why."""


def prepare_new_run(env_name: str, overrides: dict, runs_root) -> Path:
    """A new run's dir, as `puffer-tui train ENV` makes it (app/services/run_service.py), and
    first refused when a served page types a spec that imports code."""
    # a served page (app/serve_code_specs.py): refused before the spec is imported
    refusal = code_spec_refusal(env_name, env_settings_of(overrides))
    if refusal:
        raise RunRefused(refusal)
    try:
        return new_run(env_name, overrides, runs_root)
    except (ConfigError, RunDirError, OSError) as e:
        raise RunRefused(str(e)) from None


def branch_base(run_dir: Path):
    """(checkpoint, its Config): where a branch of `run_dir` starts and the settings it
    starts with (the launcher's branch form shows them). Loads the checkpoint: off the UI
    thread."""
    try:
        _, path = resolve_source(str(run_dir), run_dir.parent)
        return path, from_dict(ckpt.load_checkpoint(path)["config"])
    except (ConfigError, ckpt.CheckpointError, RunDirError, KeyError, OSError) as e:
        raise RunRefused(str(e)) from None


def prepare_branch(source: Path, overrides: dict, runs_root) -> Path:
    """A branch's run dir (`puffer-tui train --from SOURCE` with these overrides), written
    once all its checks passed; its engine starts as a resume."""
    # the source run's own spec was the owner's choice; a served page may not add imports
    refusal = branch_import_refusal(overrides)
    if refusal:
        raise RunRefused(refusal)
    try:
        plan = branch.plan_branch(str(source), overrides, root_of(runs_root))
        return branch.create_branch(plan, root_of(runs_root))
    except (ConfigError, CheckpointError, RunDirError, OSError) as e:
        raise RunRefused(str(e)) from None


def check_resume(run_dir: Path) -> None:
    """The checks of `puffer-tui train --resume`: a checkpoint, not finished, not damaged,
    not still training..."""
    try:
        plan_resume(run_dir, {}, run_dir.parent)
    except (ConfigError, CheckpointError, RunDirError, OSError) as e:
        raise RunRefused(str(e)) from None


def wait_for_previous_engine(run_dir: Path, timeout: float = 20.0) -> None:
    """A crashed engine may still be shutting down (closing workers, its socket): a new
    one started now would find the run taken. Wait for the old process to be gone."""
    deadline = time.monotonic() + timeout
    while engine_alive(read_status(run_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)


def engine_finished(run_dir: Path) -> bool:
    status = read_status(run_dir)
    return bool(status) and run_state(run_dir, status) not in LIVE_STATES
