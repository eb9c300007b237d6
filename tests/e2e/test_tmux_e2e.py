"""Runs tests/e2e/tmux_dashboard.sh: the real command in an 80x24 tmux pane, through the
launcher (four envs; E2E_ENVS=all for every one), the dashboard, editor, palette, resizes,
detach and attach (skipped without tmux)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("tmux_dashboard.sh")


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_dashboard_in_tmux():
    env = {**os.environ, "PUFFER_TUI_CMD": f"{sys.executable} -m puffer_tui.app.cli"}
    result = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                            timeout=400)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert "PASS: tmux end-to-end" in result.stdout
