"""Checks a new or resumed run must pass before its run dir is written or an engine started.

    check_start(config)    # ConfigError naming the problem and the fix

One place, so `train`, `sweep` and the app's launcher refuse the same things in the same
words: a CUDA device torch cannot see, and sizes that cannot fit in memory.
"""

from __future__ import annotations

from puffer_tui.engine.config import Config, ConfigError


def check_device(config: Config) -> None:
    """A CUDA run on a machine whose torch sees no GPU fails here, before a run dir exists."""
    if config.train.device != "cuda":
        return
    import torch

    if not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        raise ConfigError(f"--train.device cuda: torch {torch.__version__} ({build}) sees no "
                          f"CUDA device here; use --train.device auto or cpu")


def check_start(config: Config) -> None:
    """Everything that can be known to fail before anything is created."""
    from puffer_tui.engine.memory_estimate import check_memory

    check_device(config)
    check_memory(config)  # sizes that cannot fit: refused before the run dir exists
