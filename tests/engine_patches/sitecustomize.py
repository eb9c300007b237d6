"""Loaded at start-up by every Python process whose PYTHONPATH holds this folder (the CLI and
the engine it launches), this slows the engine down on request, to test the CLI against a
slow engine without timing anything:

  PUFFER_TEST_HELLO_DELAY=S    the engine answers its first hello only after S seconds
  PUFFER_TEST_EXIT_DELAY=S     the engine lingers S seconds after its shutdown (its
                               connections already ended) before the process exits
  PUFFER_TEST_CHECKPOINT_GATE=PATH   a checkpoint save creates PATH.waiting, then waits
                               until PATH exists
  PUFFER_TEST_EXIT_MARKS=PREFIX  the process creates PREFIX.atexit when its atexit handlers
                               run and PREFIX.finalized when the interpreter is finalized
"""

import os
import time

_DELAY = os.environ.get("PUFFER_TEST_HELLO_DELAY")
_GATE = os.environ.get("PUFFER_TEST_CHECKPOINT_GATE")
_EXIT_DELAY = os.environ.get("PUFFER_TEST_EXIT_DELAY")
_EXIT_MARKS = os.environ.get("PUFFER_TEST_EXIT_MARKS")

if _DELAY:
    from puffer_tui.engine.runtime import process as _process

    _hello = _process.Engine.hello

    def _slow_hello(self, _done=[]):  # noqa: B006 - once per process
        if not _done:
            time.sleep(float(_DELAY))
            _done.append(True)
        return _hello(self)

    _process.Engine.hello = _slow_hello

if _EXIT_DELAY:
    from puffer_tui.engine.runtime import process as _process

    _shutdown = _process.Engine._shutdown

    def _slow_exit(self, *args, **kwargs):
        try:
            return _shutdown(self, *args, **kwargs)
        finally:
            time.sleep(float(_EXIT_DELAY))

    _process.Engine._shutdown = _slow_exit

if _GATE:
    from puffer_tui.engine.shared import checkpoint as _checkpoint

    _save = _checkpoint.save_checkpoint

    def _gated_save(*args, **kwargs):
        open(_GATE + ".waiting", "w").close()
        deadline = time.monotonic() + 120  # never hang a test run for good
        while not os.path.exists(_GATE) and time.monotonic() < deadline:
            time.sleep(0.05)
        return _save(*args, **kwargs)

    _checkpoint.save_checkpoint = _gated_save

if _EXIT_MARKS:
    import atexit
    import sys

    def _touch(path, _open=os.open, _close=os.close, _flags=os.O_CREAT | os.O_WRONLY):
        _close(_open(path, _flags, 0o600))

    atexit.register(_touch, _EXIT_MARKS + ".atexit")

    # the audit event CPython raises as it clears the interpreter (finalization, after atexit);
    # the names are bound now: module globals may be gone by then
    def _on_audit(event, args, _marks=_EXIT_MARKS + ".finalized", _touch=_touch):
        if event == "cpython.PyInterpreterState_Clear":
            _touch(_marks)

    sys.addaudithook(_on_audit)
