"""A pytest plugin for .ci/run: the node ids of the tests that skipped, one a line, written to
the file named by $PUFFER_CI_SKIPPED when the session ends (a module skipped whole at import,
e.g. by pytest.importorskip, is its file's id). .ci/run installs the extras, then runs only
these again."""

from __future__ import annotations

import os

_skipped: dict[str, None] = {}  # insertion-ordered, each id once


def pytest_collectreport(report) -> None:
    if report.skipped:
        _skipped.setdefault(report.nodeid)


def pytest_runtest_logreport(report) -> None:
    # an expected failure also reports as skipped: it ran, nothing to run again
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.setdefault(report.nodeid)


def pytest_sessionfinish(session) -> None:
    path = os.environ.get("PUFFER_CI_SKIPPED")
    if not path:
        return
    temp = f"{path}.tmp"
    with open(temp, "w") as f:
        f.writelines(f"{nodeid}\n" for nodeid in _skipped)
    os.replace(temp, path)
