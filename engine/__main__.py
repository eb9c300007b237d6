"""`python -m puffer_tui.engine RUN_DIR [--resume]`: the engine process (see engine/runtime/process.py)."""

import sys

from puffer_tui.engine.runtime.process import main

if __name__ == "__main__":
    sys.exit(main())
