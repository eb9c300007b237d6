"""The trainer keeps freed tensor memory for the next minibatch (engine/algo/allocator.py): after
warm-up an update page-faults next to nothing, where glibc's defaults faulted in and zeroed
each minibatch's tensors anew (9k-39k faults per update of squared on the dev box)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from puffer_tui.engine.algo.allocator import is_glibc

glibc_only = pytest.mark.skipif(
    not is_glibc(), reason="the thresholds are glibc's (elsewhere the allocator is left as it is)")

# A fresh process, so that no earlier test has set the thresholds already: the faults of the
# learner's updates once the trainer has warmed up.
FAULTS_PER_UPDATE = textwrap.dedent("""
    import resource
    from puffer_tui.engine.shared.config import load_config
    from puffer_tui.engine.algo.trainer import Trainer

    config = load_config("squared", {"vec.num_envs": 256, "train.horizon": 32,
                                     "train.minibatch_size": 2048,
                                     "train.total_timesteps": 10**9,
                                     "train.checkpoint_interval": 0,
                                     "train.torch_threads": 1})
    trainer = Trainer(config)
    update = trainer.ppo.update
    faults = []
    def counted(*args, **kwargs):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        row = update(*args, **kwargs)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        return row
    trainer.ppo.update = counted
    for _ in range(12):
        trainer.run_epoch()
    trainer.close()
    print(sorted(faults[3:])[len(faults[3:]) // 2])
""")


@glibc_only
def test_updates_after_warm_up_reuse_freed_memory():
    out = subprocess.run([sys.executable, "-c", FAULTS_PER_UPDATE], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # The median update after warm-up. Each 2048-row activation is 1 MB (256 pages): a single
    # one faulted in anew exceeds the bound (the code before: medians of 257-2976 in 3 runs;
    # now 0-1, with the odd update that grows the heap by a MB or two).
    assert int(out.stdout.split()[-1]) < 64


@glibc_only
def test_the_thresholds_apply_once_and_say_so():
    from puffer_tui.engine.algo import allocator

    assert allocator.keep_freed_memory() is True
    assert allocator.keep_freed_memory() is True  # idempotent
