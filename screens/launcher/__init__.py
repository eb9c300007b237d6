"""The launcher: the screen (screen.py), its env list's entries and texts (entries.py), the
branch form's workers (branch.py) and autotune's worker (autotune.py)."""
