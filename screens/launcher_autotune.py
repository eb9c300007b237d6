"""The launcher's autotune key: `puffer-tui autotune ENV --json` for the selected env, in a
subprocess (it spawns env workers and trains briefly: none of that belongs in the app's
process), with the form's [env] and [train] values; its best layout then fills the form's
[vec] fields, marked as changed, for the person to start with or edit.

    start_autotune(launcher_screen)     # the key's action: runs in a worker thread
"""

from __future__ import annotations

import json
import subprocess
import sys

from puffer_tui.engine.shared.config import ConfigError

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
    from puffer_tui.app.serve_code_specs import code_spec_refusal, env_settings_of

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
    from puffer_tui.app.widgets.field_input import value_text

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

    from puffer_tui.app.widgets.override_form import OverrideRow

    for row in form.query(OverrideRow):
        if row.spec.key in texts:
            row.query_one(Input).value = texts[row.spec.key]


def start_autotune(screen) -> None:
    """The launcher's action: autotune the env whose form is shown, fill its [vec] fields."""
    from puffer_tui.app.widgets.override_form import OverrideForm

    forms = screen.query(OverrideForm)
    if not forms:
        return
    form = forms.first()
    env_name = form.env_name
    try:
        overrides = form.overrides()
    except ConfigError as e:
        screen.notify(str(e), severity="error", markup=False)
        return
    screen.notify(f"autotuning {env_name}: about {AUTOTUNE_SECONDS} s (the layouts it tries "
                  f"use every core)", title="Autotune")

    def work() -> None:
        try:
            outcome = run_autotune(env_name, overrides)
        except (AutotuneError, ValueError) as e:
            screen.app.call_from_thread(screen.notify, str(e), title="Autotune failed",
                                        severity="error")
            return
        screen.app.call_from_thread(_apply, screen, env_name, outcome)

    screen.run_worker(work, thread=True, group="autotune", exclusive=True)


def _apply(screen, env_name: str, outcome: dict) -> None:
    from puffer_tui.app.widgets.override_form import OverrideForm

    forms = screen.query(OverrideForm)
    if not forms or forms.first().env_name != env_name:  # another env was chosen meanwhile
        screen.notify(f"autotune of {env_name} done, but another env is chosen now: "
                      f"{summary(outcome)}", title="Autotune")
        return
    fill_form(forms.first(), vec_texts(outcome))
    screen.notify(summary(outcome), title="Autotune", timeout=10)
