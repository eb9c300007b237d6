"""Can a run that asks for Weights & Biases start here? Checked before its run dir exists.

The tracker itself (engine/runtime/wandb_tracker.py) runs in the engine; this check runs in the
CLI's process, so it imports nothing of the engine process.

Tested in: tests/engine/runtime/test_wandb_tracker.py
"""

from __future__ import annotations

import importlib.util

from puffer_tui.engine.shared.config import Config, ConfigError

INSTALL_HINT = 'pip install "puffer-tui[wandb]"'


def wandb_available() -> bool:
    return importlib.util.find_spec("wandb") is not None


def check_wandb(config: Config) -> None:
    """A run asking for W&B without the package, or online with no login, fails here, before
    its run dir exists (the engine would only fail once started)."""
    if not config.train.wandb:
        return
    if not wandb_available():
        raise ConfigError(f"train.wandb is on but the wandb package is not installed: "
                          f"{INSTALL_HINT} (or --train.wandb false)")
    if not has_login():
        raise ConfigError("train.wandb is on but there is no Weights & Biases login here: run "
                          "`wandb login` (or set WANDB_API_KEY), or set WANDB_MODE=offline to "
                          "log without an account")


def has_login() -> bool:
    """Whether W&B can start here: offline (or disabled), or credentials found without asking
    (WANDB_API_KEY, ~/.netrc, W&B's settings). True when wandb's internals cannot tell (a
    version that moved them): the engine then reports what wandb.init says."""
    try:
        from wandb.sdk import wandb_setup
        from wandb.sdk.lib.wbauth import authenticate

        settings = wandb_setup.singleton().settings
        if settings.mode in ("offline", "dryrun", "disabled"):
            return True
        return authenticate.authenticate_session(
            host=settings.base_url, source="puffer-tui", prompt=False,
            update_session=False) is not None
    except Exception:
        return True
