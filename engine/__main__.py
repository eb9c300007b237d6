"""`python -m puffer_tui.engine RUN_DIR [--resume]`: the engine process (see engine/runtime/process.py)."""

import sys

from puffer_tui.engine.algo.distributed import World, exit_rank
from puffer_tui.engine.runtime.process import main

if __name__ == "__main__":
    code = main()
    if World.from_environment().enabled:
        exit_rank(code)  # a torchrun rank: see exit_rank for why not sys.exit
    sys.exit(code)
