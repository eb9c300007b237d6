"""Errors raised by the vectorizers.

Tested in: tests/engine/vec/test_backends_conformance.py, tests/engine/vec/mp/test_hang_limit.py"""


class WorkerError(RuntimeError):
    """A worker's env raised, or the worker process died. Carries the worker's traceback."""

    def __init__(self, worker: int, message: str, traceback: str = ""):
        self.worker = worker
        self.message = message
        self.traceback = traceback
        text = f"worker {worker}: {message}"
        if traceback:
            text += f"\n--- worker {worker} traceback ---\n{traceback.rstrip()}"
        super().__init__(text)


class WorkerHung(WorkerError):
    """A worker stayed silent past the hang limit: `limit` and `silent_for` in seconds, and
    the slowest healthy silence `measured` per activity (engine/vec/mp/hang_limit.py)."""

    def __init__(self, worker: int, message: str, traceback: str = "", *, limit: float,
                 silent_for: float, measured: dict):
        super().__init__(worker, message, traceback)
        self.limit, self.silent_for, self.measured = limit, silent_for, measured
