"""puffer-tui: a fast, interactive reinforcement-learning trainer for the terminal.

    import puffer_tui
    run = puffer_tui.train("gym:CartPole-v1", total_timesteps=150_000)
    policy = puffer_tui.load(run)
    puffer_tui.evaluate(policy, episodes=20)

The Python API lives in `puffer_tui.api` (train, load, evaluate, Run, Policy); its names are
loaded on first use, so `import puffer_tui` (and every CLI command) stays fast.

This folder is the package itself; setup.py (ROOMS) maps the repository's other top-level
folders (app, screens, engine, envs, benchmarks) under it, so everything imports as
``puffer_tui.<room>``.
"""

__version__ = "0.1.0"

_API = ("train", "load", "evaluate", "Run", "Policy", "TrainingError", "ConfigError",
        "RunDirError", "CheckpointError")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        # lazy: the API pulls the run service and config; `import puffer_tui` alone stays light
        from puffer_tui import api

        return getattr(api, name)
    raise AttributeError(f"module 'puffer_tui' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_API])
