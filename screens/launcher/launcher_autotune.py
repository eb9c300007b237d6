"""The launcher's autotune key: `puffer-tui autotune ENV --json` for the selected env, in a
subprocess (it spawns env workers and trains briefly: none of that belongs in the app's
process), with the form's [env] and [train] values; its best layout then fills the form's
[vec] fields, marked as changed, for the person to start with or edit.

    screen.run_worker(partial(autotune_in_thread, screen, env_name, overrides), thread=True)
        -> AutotuneFinished(env_name, outcome) | AutotuneFailed(env_name, error)

LauncherScreen (screens/launcher/screen.py) handles the two messages: `fill_form` with `vec_texts`,
or the error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

from textual.message import Message
from textual.message_pump import MessagePump

from puffer_tui.app.serve_code_specs import code_spec_refusal, env_settings_of
from puffer_tui.app.widgets.field_input import value_text
from puffer_tui.app.widgets.override_form import OverrideRow

AUTOTUNE_SECONDS = 30  # the launcher's budget: half the command's default, a person waits
VEC_KEYS = ("backend", "num_envs", "num_workers", "batch_size", "zero_copy", "inline")


class AutotuneError(Exception):
    """The autotune command failed; the message is its last line of error output."""


def autotune_argv(env_name: str, overrides: dict, seconds: float = AUTOTUNE_SECONDS) -> list[str]:
    """The command for `env_name` with the form's overrides: every [env] and [train] value,
    and vec.num_envs (the total the layouts share); the other [vec] values are what it tunes."""
    argv = [sys.executable, "-m", "puffer_tui.app.cli", "autotune", env_name, "--json",
            "--seconds", f"{seconds:g}"]
    for key, text in overrides.items():
        section, name = key.split(".", 1)
        if section in ("env", "train") or key == "vec.num_envs":
            argv += [f"--{section}.{name.replace('_', '-')}", str(text)]
    return argv


def run_autotune(env_name: str, overrides: dict, seconds: float = AUTOTUNE_SECONDS) -> dict:
    """The command's JSON outcome; AutotuneError with its message when it fails."""
    refusal = code_spec_refusal(env_name, env_settings_of(overrides))  # a page of `serve`
    if refusal:
        raise AutotuneError(refusal)
    try:
        done = subprocess.run(autotune_argv(env_name, overrides, seconds), capture_output=True,
                              text=True, timeout=3 * seconds + 60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AutotuneError(f"autotune of {env_name} did not finish in {3 * seconds + 60:g} s") \
            from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise AutotuneError(lines[-1] if lines else f"autotune exited {done.returncode}")
    return json.loads(done.stdout)


def vec_texts(outcome: dict) -> dict[str, str]:
    """{"vec.backend": "multiprocessing", ...}: the best layout as the form's texts."""
    best = outcome["best"]
    return {f"vec.{key}": value_text(best[key]) for key in VEC_KEYS}


def summary(outcome: dict) -> str:
    best = outcome["best"]
    rate = best["train_sps"] if outcome["best_by"] == "training" else best["vec_sps"]
    return (f"{outcome['env']}: best {best['label']}, {rate:,.0f} agent-steps/s "
            f"({outcome['best_by']}); its [vec] values are in the form")


def fill_form(form, texts: dict[str, str]) -> None:
    """Type `texts` into the form's fields (each then shows as changed from the preset)."""
    from textual.widgets import Input

    for row in form.query(OverrideRow):
        if row.spec.key in texts:
            row.query_one(Input).value = texts[row.spec.key]


def starting(env_name: str) -> str:
    """What the launcher says as the autotune starts."""
    return (f"autotuning {env_name}: about {AUTOTUNE_SECONDS} s (the layouts it tries use "
            f"every core)")


@dataclass(eq=False)
class AutotuneFinished(Message):
    """The best layout for `env_name` (the command's JSON `outcome`)."""

    env_name: str
    outcome: dict


@dataclass(eq=False)
class AutotuneFailed(Message):
    env_name: str
    error: str


def autotune_in_thread(target: MessagePump, env_name: str, overrides: dict) -> None:
    """A worker thread's body: autotune `env_name`, tell `target` how it went."""
    try:
        outcome = run_autotune(env_name, overrides, AUTOTUNE_SECONDS)
    except (AutotuneError, ValueError) as e:
        target.post_message(AutotuneFailed(env_name, str(e)))
        return
    target.post_message(AutotuneFinished(env_name, outcome))
