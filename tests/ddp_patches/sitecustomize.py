"""Loaded by every rank of a DDP engine whose PYTHONPATH holds this folder (tests/engine/runtime/test_ddp.py):

  PUFFER_TEST_DDP_TRACE=DIR    each rank appends to DIR/rank-N.jsonl one line per command it
                               applies ({"cmd", "epoch", "step", "ent_coef", "paused"}) and one
                               per epoch ({"epoch", "step", "ent_coef", "weights": the sum
                               of the policy's weights})
  PUFFER_TEST_CRASH_RANK=N     rank N raises at the start of epoch PUFFER_TEST_CRASH_EPOCH (2)
  PUFFER_TEST_KILL_RANK=N:E:M  rank N SIGKILLs itself at its M-th minibatch of epoch E, when
                               the others have already learnt from M-1 (a lost machine, an OOM
                               kill: no exception, no message, no closing of anything)
"""

import json
import os

_TRACE = os.environ.get("PUFFER_TEST_DDP_TRACE")
_CRASH_RANK = os.environ.get("PUFFER_TEST_CRASH_RANK")
_RANK = os.environ.get("RANK", "0")
_KILL_RANK = os.environ.get("PUFFER_TEST_KILL_RANK")

if _TRACE:
    from puffer_tui.engine.algo import trainer as _trainer
    from puffer_tui.engine.runtime import commands as _commands

    def _write(record):
        with open(os.path.join(_TRACE, f"rank-{_RANK}.jsonl"), "a") as f:
            f.write(json.dumps(record) + "\n")

    _apply = _commands.CommandQueue._apply

    def _traced_apply(self, command, boundary):
        _apply(self, command, boundary)
        trainer = self.trainer  # handed in by CommandQueue.attach
        if trainer is not None and not command.name.startswith("_"):
            _write({"cmd": command.name, "epoch": trainer.epoch, "step": trainer.global_step,
                    "ent_coef": trainer.config.train.ent_coef, "paused": self.state.paused})

    _commands.CommandQueue._apply = _traced_apply

    _run_epoch = _trainer.Trainer.run_epoch

    def _traced_epoch(self):
        row = _run_epoch(self)
        weights = sum(float(p.double().sum()) for p in self.policy.parameters())
        _write({"epoch": self.epoch, "step": self.global_step,
                "ent_coef": self.config.train.ent_coef, "weights": weights})
        return row

    _trainer.Trainer.run_epoch = _traced_epoch

if _CRASH_RANK == _RANK:
    from puffer_tui.engine.algo import trainer as _trainer2

    _crash_epoch = int(os.environ.get("PUFFER_TEST_CRASH_EPOCH", "2"))
    _run_epoch2 = _trainer2.Trainer.run_epoch

    def _crashing_epoch(self):
        if self.epoch + 1 >= _crash_epoch:
            raise RuntimeError(f"injected crash on rank {_RANK}")
        return _run_epoch2(self)

    _trainer2.Trainer.run_epoch = _crashing_epoch

if _KILL_RANK and _KILL_RANK.split(":")[0] == _RANK:
    import signal as _signal

    from puffer_tui.engine.algo import minibatch_loss as _minibatch_loss
    from puffer_tui.engine.algo import trainer as _trainer3

    _kill_epoch, _kill_minibatch = (int(x) for x in _KILL_RANK.split(":")[1:])
    _epoch_now, _minibatches = [0], [0]
    _run_epoch3, _loss = _trainer3.Trainer.run_epoch, _minibatch_loss.ppo_loss

    def _counting_epoch(self):
        _epoch_now[0], _minibatches[0] = self.epoch + 1, 0
        return _run_epoch3(self)

    def _killing_loss(*args, **kwargs):
        _minibatches[0] += 1
        if (_epoch_now[0], _minibatches[0]) == (_kill_epoch, _kill_minibatch):
            os.kill(os.getpid(), _signal.SIGKILL)
        return _loss(*args, **kwargs)

    _trainer3.Trainer.run_epoch = _counting_epoch
    _minibatch_loss.ppo_loss = _killing_loss
