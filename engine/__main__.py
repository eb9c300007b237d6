"""`python -m puffer_tui.engine RUN_DIR [--resume]`: the engine process (see engine/runtime/process.py)."""

from puffer_tui.engine.algo.distributed import exit_rank
from puffer_tui.engine.runtime.process import main

if __name__ == "__main__":
    # Every engine ends as a torchrun rank must (see exit_rank): threads joined, atexit
    # handlers run, streams flushed, then os._exit. Finalizing the interpreter after that
    # (freeing torch's modules) only cost CPU time after the engine's last word,
    # while everyone waiting for the process to end (the app, `train --headless`, `stop`,
    # a sweep driver) waited with it.
    exit_rank(main())
