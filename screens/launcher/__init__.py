"""The launcher: the screen (screen.py), its env list's entries and texts (entries.py), the
branch form's workers (branch_form.py) and autotune's worker (launcher_autotune.py)."""
