"""An epoch ended early by a stop that could not wait for its end (no torch: the engine
process catches it before it has imported the trainer).

Tested in: tests/engine/runtime/test_process_stop_long_epoch.py.
"""


class EpochCut(Exception):
    """Raised at a safe point when Trainer.cut_short() says so. The trainer is left at a
    consistent point (Trainer.run_epoch): mid-collection, the partial batch is dropped and the
    step counter is the epoch's start (the envs' episodes go on); mid-update, the epoch counts,
    its policy having learnt from part of its minibatches. The text says which."""
