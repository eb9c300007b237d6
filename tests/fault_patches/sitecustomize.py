"""Loaded at start-up by every Python process whose PYTHONPATH holds this folder (the engine
processes of tests/engine/runtime/test_recovery_faults.py); injects one fault on request, so
that the engine's reaction is tested on a real process without timing anything:

  PUFFER_TEST_NAN_REWARD=STEP:ROW   from the STEP-th recv() on, agent row ROW's reward is NaN
                                    (an env that has gone bad and stays bad)
  PUFFER_TEST_NAN_LOSS=CALL         the CALL-th minibatch's value loss is NaN (once)
  PUFFER_TEST_DISK_FULL=PATH        while PATH exists, appends to metrics.jsonl write half a
                                    line and fail, and checkpoint fsyncs fail, with ENOSPC;
                                    if PATH holds "eio", only checkpoint fsyncs fail, with EIO
  PUFFER_TEST_KILL_WORKER=RECV      at the RECV-th recv(), SIGKILL the vec env's last worker
                                    process (an env machine lost, an OOM kill)
"""

import errno
import os
import signal

_NAN_REWARD = os.environ.get("PUFFER_TEST_NAN_REWARD")
_NAN_LOSS = os.environ.get("PUFFER_TEST_NAN_LOSS")
_DISK_FULL = os.environ.get("PUFFER_TEST_DISK_FULL")
_KILL_WORKER = os.environ.get("PUFFER_TEST_KILL_WORKER")


def _no_space():
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


if _NAN_REWARD:
    from puffer_tui.engine.algo import trainer as _trainer

    _at, _row = (int(x) for x in _NAN_REWARD.split(":"))
    _make = _trainer.make_vecenv

    class _NanRewards:
        def __init__(self, vecenv):
            self._vecenv, self._calls = vecenv, 0

        def __getattr__(self, name):
            return getattr(self._vecenv, name)

        def recv(self):
            result = self._vecenv.recv()
            self._calls += 1
            if self._calls >= _at:
                rewards, env_ids = result[1], list(result[5])
                if _row in env_ids:
                    rewards[env_ids.index(_row)] = float("nan")
            return result

    _trainer.make_vecenv = lambda config: _NanRewards(_make(config))

if _NAN_LOSS:
    from puffer_tui.engine.algo import minibatch_loss as _minibatch_loss

    _loss, _calls = _minibatch_loss.ppo_loss, [0]

    def _nan_once(*args, **kwargs):
        loss, stats, ratio = _loss(*args, **kwargs)
        _calls[0] += 1
        if _calls[0] == int(_NAN_LOSS):
            nan = float("nan")
            loss = loss * nan
            stats = {**stats, "value_loss": stats["value_loss"] * nan}
        return loss, stats, ratio

    _minibatch_loss.ppo_loss = _nan_once

if _DISK_FULL:
    from puffer_tui.engine.runtime import metrics as _metrics
    from puffer_tui.engine.shared import atomic_write as _atomic_write
    from puffer_tui.engine.shared import checkpoint as _checkpoint

    def _eio():
        try:
            with open(_DISK_FULL) as f:
                return f.read().strip() == "eio"
        except OSError:
            return False

    class _FullDisk:
        """The module's `os`, except that writes fail with ENOSPC while the flag file exists."""

        def __getattr__(self, name):
            return getattr(os, name)

        def write(self, fd, data):
            if os.path.exists(_DISK_FULL) and not _eio():
                os.write(fd, bytes(data[: max(1, len(data) // 2)]))  # a torn line
                raise _no_space()
            return os.write(fd, data)

        def fsync(self, fd):
            if os.path.exists(_DISK_FULL) and _in_checkpoints(fd):
                raise OSError(errno.EIO, os.strerror(errno.EIO)) if _eio() else _no_space()
            return os.fsync(fd)

    def _in_checkpoints(fd):
        """Whether `fd` is a file (or the folder) of a run's checkpoints."""
        target = os.readlink(f"/proc/self/fd/{fd}")
        return os.path.basename(os.path.dirname(target)) == _checkpoint.CHECKPOINT_DIR or \
            os.path.basename(target) == _checkpoint.CHECKPOINT_DIR

    _metrics.os = _FullDisk()
    _atomic_write.os = _FullDisk()  # checkpoints are written through it


if _KILL_WORKER:
    from puffer_tui.engine.algo import trainer as _trainer_k

    _make_k = _trainer_k.make_vecenv

    class _KillsAWorker:
        def __init__(self, vecenv):
            self._vecenv, self._calls = vecenv, 0

        def __getattr__(self, name):
            return getattr(self._vecenv, name)

        def recv(self):
            self._calls += 1
            if self._calls == int(_KILL_WORKER):
                os.kill(list(self._vecenv.worker_pids)[-1], signal.SIGKILL)
            return self._vecenv.recv()

    _trainer_k.make_vecenv = lambda config: _KillsAWorker(_make_k(config))
