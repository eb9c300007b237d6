"""The hyperparameter editor and the launcher's lists follow one Enter rule, open ready to
type, line their columns up and say what really applies when (fixed data, no engine)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from tree_paths import REPO_ROOT

from puffer_tui.app.widgets.field_input import FieldInput, FieldValidator
from puffer_tui.app.widgets.override_form import OverrideRow
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.screens.hyperparameters import HyperparameterScreen
from puffer_tui.screens.launcher.screen import LauncherScreen
from tests.screens.test_app_keys import OfflineApp
from tests.screens.test_app_launcher import LauncherApp, form_ready, set_field
from tests.screens.test_app_snapshots import screen_text

README = REPO_ROOT / "docs" / "dashboard.md"  # the page that says when live values apply


async def test_editor_opens_with_the_first_live_field_focused():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HyperparameterScreen)
        assert app.focused is not None and app.focused.id == "input-train-learning_rate"


async def test_editor_columns_line_up_and_fixed_fields_say_how_to_change_them():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("h")
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "resume with overrides" not in text
        assert "in a branch" in text and "puffer-tui train --from RUN" in text
        live = next(line for line in text.splitlines() if "train.learning_rate" in line)
        fixed = next(line for line in text.splitlines() if "train.hidden_size" in line)
        assert re.search(r"\b0\.015\b", live) and re.search(r"\b128\b", fixed)
        assert live.index("0.015") == fixed.index("128"), (live, fixed)
        assert live.index("Adam") == fixed.index("width of"), (live, fixed)


def test_the_readme_says_when_values_apply_in_the_engines_words():
    from puffer_tui.engine.algo.trainer import _APPLIES, _APPLIES_DEFAULT

    readme = " ".join(README.read_text().split())
    assert f"live fields apply {_APPLIES_DEFAULT}" in readme
    for field, applies in _APPLIES.items():
        assert f"`{field}` {applies}" in readme


class RecordingLauncher(LauncherApp):
    def __init__(self, runs_root):
        super().__init__(runs_root)
        self.resumed = []

    def resume_run(self, run_dir):
        self.resumed.append(Path(run_dir))


async def test_enter_on_the_recent_runs_list_resumes_the_highlighted_run_once_confirmed(tmp_path, monkeypatch):
    import puffer_tui.screens.launcher.screen as launcher

    monkeypatch.setattr(launcher, "check_resume", lambda path: None)  # as if it had a checkpoint
    old = rd.create_run_dir("squared", tmp_path, now=time.time() - 60)
    cfg.save(cfg.load_config("squared"), old / rd.CONFIG_FILE)
    rd.write_json_atomic(old / rd.STATUS_FILE, {"state": "stopped", "global_step": 4096})
    app = RecordingLauncher(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        app.screen.query_one("#runs").focus()
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.resumed == []  # asked first (screens/launcher/screen.py: resume_question)
        await pilot.press("r")
        await pilot.pause(0.2)
        assert app.resumed == [old]


async def test_enter_in_a_preset_field_confirms_it_and_moves_on_without_starting(tmp_path):
    app = RecordingLauncher(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        while not form_ready(app):
            await pilot.pause(0.05)
        set_field(app, "vec.num_envs", "64")
        field = next(i for i in app.screen.query("OverrideRow Input")
                     if i.parent.spec.key == "vec.num_envs")
        field.focus()
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.started == [] and isinstance(app.screen, LauncherScreen)
        assert app.focused is not field and app.focused.parent.spec.key != "vec.num_envs"
        set_field(app, "vec.num_envs", "0")
        app.focused.blur()
        field.focus()
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.focused is field
        assert "out of bounds" in str(app.screen.query_one("#form-error").render())


async def test_editor_sends_nothing_once_the_run_has_ended():
    from app_fakes import telemetry

    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await _until(pilot, lambda: isinstance(app.screen, HyperparameterScreen), "the editor")
        app.store.ingest(telemetry(41, state="finished"))
        app._link_lost("connection closed")
        await pilot.pause(0.1)  # the editor hears of the lost link before the key
        await pilot.press("enter")
        await _until(pilot, lambda: "not sent: the run is finished" in screen_text(app),
                     "the refusal")
        assert app.sent == []


async def _until(pilot, condition, what: str, timeout: float = 15.0) -> None:
    """Wait for `condition` on a loaded machine without a fixed sleep; the deadline only
    bounds a hang."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        await pilot.pause(0.05)


def test_the_field_validator_is_the_schemas_own_check():
    spec = cfg.spec_for("train.learning_rate")
    with pytest.raises(cfg.ConfigError) as refused:
        spec.coerce("-1")
    result = FieldValidator(spec).validate("-1")
    assert not result.is_valid and result.failure_descriptions == [str(refused.value)]
    assert FieldValidator(spec).validate(" 0.02 ").is_valid


async def test_editor_and_launcher_rows_are_one_widget_marking_refused_text():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await pilot.pause(0.2)
        field = app.screen.query_one("#input-train-learning_rate")
        assert isinstance(field.parent, FieldInput)
        field.value = "-1"
        await pilot.pause(0.1)
        assert field.has_class("-invalid")
        assert "train.learning_rate = -1.0 is out of bounds" in screen_text(app)
        field.value = "0.02"
        await pilot.pause(0.1)
        assert not field.has_class("-invalid")
    assert issubclass(OverrideRow, FieldInput)
