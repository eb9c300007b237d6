"""tools/loss_paths.py end to end with one round of one minibatch: the CPU named, and each
preset shape's row giving the three paths' milliseconds and ratios worked out from them (no
speed asserted)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"(\S+) +minibatch +(\d+): numpy ([\d.]+) ms, autograd ([\d.]+) ms, compiled "
                 r"([\d.]+) ms; autograd/numpy ([\d.]+)x, compiled/numpy ([\d.]+)x")


@pytest.mark.slow
def test_every_case_reports_the_three_paths_and_their_ratios():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "loss_paths.py"), "--rounds",
                             "1", "--minibatches", "1"], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    first, *rows = result.stdout.strip().splitlines()
    assert first.startswith("CPU: ") and "1 thread each" in first
    cases = [ROW.fullmatch(row) for row in rows]
    assert all(cases), rows
    assert [(m[1], int(m[2])) for m in cases] == [("CartPole-v1", 256), ("Pendulum-v1", 128),
                                                  ("HalfCheetah-v5", 64)]
    for m in cases:
        numpy, autograd, compiled = (float(m[i]) for i in (3, 4, 5))
        assert float(m[6]) == pytest.approx(autograd / numpy, abs=0.01, rel=0.01)
        assert float(m[7]) == pytest.approx(compiled / numpy, abs=0.01, rel=0.01)
