"""`python -m puffer_tui.engine.sweep SWEEP_DIR`: the sweep driver (see driver.py)."""

import sys

from puffer_tui.engine.sweep.driver import main

if __name__ == "__main__":
    sys.exit(main())
