"""The documentation site builds with `mkdocs build --strict` (no broken link, no missing page,
the API reference generated from puffer_tui.api's docstrings), and that reference holds
every public name of the API."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_docs_build_strictly_with_the_api_reference(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e \".[docs]\"")
    pytest.importorskip("mkdocstrings", reason="the docs extra: pip install -e \".[docs]\"")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    page = (tmp_path / "api" / "index.html").read_text()
    import puffer_tui

    for name in ("train", "load", "evaluate", "Run", "Policy", "TrainingError"):
        assert name in puffer_tui.__all__
        assert f'id="puffer_tui.api.{name}"' in page, name
    for method in ("Run.wait", "Run.stop", "Run.set", "Run.metrics", "Policy.act",
                   "Policy.export"):
        assert f'id="puffer_tui.api.{method}"' in page, method
