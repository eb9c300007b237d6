"""Shared pytest hooks: tests marked `cuda` are skipped, with the reason, where torch sees no
CUDA device (they run on a GPU machine: `pytest -m cuda`, or benchmarks/gpu_check.py)."""

from __future__ import annotations

import pytest


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
