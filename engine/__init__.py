"""The engine, grouped by role: algo (PPO), runtime (the engine process), evaluation, diagnosis,
sweep, vec, native, startup (checks before a run), shared (the words and files the app reads).

Importable without Textual; nothing here imports puffer_tui.app or puffer_tui.screens.
"""
