"""tools/docs_screenshots.py shoots the real app (a real run, the dashboard attached under
Pilot, then the launcher) without crashing, and the pictures hold what the docs say they show."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_screenshot_script_draws_the_dashboard_and_the_launcher(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "docs_screenshots.py"),
                             "--out", str(tmp_path), "--sizes", "80x24"],
                            capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, result.stderr[-3000:]
    dashboard = (tmp_path / "dashboard-80x24.svg").read_text()
    launcher = (tmp_path / "launcher-80x24.svg").read_text()
    assert dashboard.startswith("<svg") and launcher.startswith("<svg")
    for panel in ("losses", "episodes", "cpu"):  # SVG text keeps spaces as &#160;
        assert panel in dashboard, panel
    assert "squared" in launcher
