"""puffer-tui: a fast, interactive reinforcement-learning trainer for the terminal.

This folder is the package itself; setup.py (ROOMS) maps the repository's other top-level
folders (app, screens, engine, envs, benchmarks) under it, so everything imports as
``puffer_tui.<room>``.
"""

__version__ = "0.1.0"
