"""Shared pytest hooks: tests marked `cuda` are skipped, with the reason, where torch sees no
CUDA device (they run on a GPU machine: `pytest -m cuda`, or benchmarks/gpu_check.py)."""

from __future__ import annotations

import signal

import pytest

# A test that presses Ctrl-C (SIGINT to a child it started) models a terminal's foreground
# command, where SIGINT is not ignored. Run as a background job of a script, pytest inherits
# SIGINT ignored, and so would every child: the Ctrl-C would never arrive. A handler here (not
# SIG_IGN) is reset to the default in each child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    marked = [item for item in items if item.get_closest_marker("cuda")]
    if not marked:
        return
    import torch  # only when a cuda test was collected

    if torch.cuda.is_available():
        return
    build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
    skip = pytest.mark.skip(reason=f"needs CUDA: torch {torch.__version__} ({build}) sees no "
                                   "CUDA device here")
    for item in marked:
        item.add_marker(skip)
