"""puffer-tui: a fast, interactive reinforcement-learning trainer for the terminal.

The repository's top-level folders (app, screens, engine, envs, benchmarks) are mapped
into this package by pyproject.toml, so everything imports as ``puffer_tui.<room>``.
"""

__version__ = "0.1.0"
