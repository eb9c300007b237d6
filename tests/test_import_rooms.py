"""The rooms of DESIGN.md, checked by import-linter (contracts in pyproject.toml).

The installed package maps several top-level folders into `puffer_tui`, which import-linter
cannot walk through an editable install, so the test lays the folders out as a real package
tree of symlinks and points import-linter at it.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("app", "screens", "engine", "envs", "benchmarks")


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter not installed")
def test_import_contracts_hold(tmp_path):
    package = tmp_path / "puffer_tui"
    package.mkdir()
    shutil.copy(ROOT / "_pkg" / "__init__.py", package / "__init__.py")
    for room in ROOMS:
        (package / room).symlink_to(ROOT / room, target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [shutil.which("lint-imports"), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "0 broken" in report, report
