"""What a page of `puffer-tui serve` may not do: choose code to run as the owner.

`serve` marks the apps it starts with CODE_SPECS_ENV_VAR (unless started with
--allow-code-specs); such an app refuses an env spec that imports a module the spec names
(`module:callable`, `pz:...`, `gym:module:Id`, `env.import`) wherever a page would have it
imported or built: typing it, starting a new run with it, branching with a new `env.import`.
Resuming or branching a run the owner made keeps its spec. No Textual here.
"""

from __future__ import annotations

import os

CODE_SPECS_ENV_VAR = "PUFFER_TUI_SERVED_NO_CODE_SPECS"
ALLOW_FLAG = "--allow-code-specs"


def refused_in_this_app() -> bool:
    """Whether this process is a served page's app that may not choose code."""
    return os.environ.get(CODE_SPECS_ENV_VAR) == "1"


def code_spec_refusal(spec: str, env_settings: dict | None = None) -> str | None:
    """One line saying why a served page may not use `spec`, or None if it may."""
    if not refused_in_this_app():
        return None
    # lazy: pulls gymnasium, which this module does not load
    from puffer_tui.envs.env_spec import spec_imports_code

    reason = spec_imports_code(spec, env_settings)
    if reason is None:
        return None
    return _refusal(reason)


def branch_import_refusal(overrides: dict) -> str | None:
    """A branch keeps its source run's spec (the owner's); a served page may not add an
    `env.import` to it."""
    value = env_settings_of(overrides).get("import")
    if not refused_in_this_app() or value in (None, ""):
        return None
    return _refusal(f"env.import = {value!r} imports that module")


def _refusal(reason: str) -> str:
    return (f"{reason}: a page of `puffer-tui serve` may not choose code to run; start it "
            f"in a terminal (puffer-tui train ...) or restart serve with {ALLOW_FLAG}")


def env_settings_of(overrides: dict) -> dict:
    """The [env] part of launcher overrides ({"env.import": ...} -> {"import": ...})."""
    return {key[len("env."):]: value for key, value in (overrides or {}).items()
            if key.startswith("env.")}
