"""Errors raised by the vectorizers."""


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
