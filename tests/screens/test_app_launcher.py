"""The launcher: envs listed with their spaces, overrides checked, recent runs; Enter starts a
real (tiny) run and opens its dashboard."""

from __future__ import annotations

import time

import pytest

from puffer_tui.app.app import PufferApp
from puffer_tui.app.widgets.override_form import OverrideForm, OverrideRow
from puffer_tui.engine.shared import config as cfg
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.screens.dashboard import DashboardScreen
from puffer_tui.screens.launcher.screen import LauncherScreen
from tests.app.test_app_engine import shut_down, until

TINY = {"vec.num_envs": "64", "train.minibatch_size": "1024", "train.hidden_size": "32",
        "train.torch_threads": "1", "train.total_timesteps": "100000000"}


def screen_text(app) -> str:
    return "\n".join(s.text for s in app.screen._compositor.render_strips())


def form_ready(app) -> bool:
    """The preset form is on the launcher with every row composed (a form mid-mount is
    queryable before its rows have their inputs)."""
    forms = app.screen.query(OverrideForm)
    return bool(forms) and forms.first().ready


def set_field(app, key: str, text: str) -> None:
    row = next(r for r in app.screen.query(OverrideRow) if r.spec.key == key)
    row.query_one("Input").value = text


class LauncherApp(PufferApp):
    def __init__(self, runs_root):
        super().__init__(runs_root=runs_root)
        self.started = []

    def start_run(self, env_name, overrides):
        self.started.append((env_name, overrides))
        super().start_run(env_name, overrides)


async def test_launcher_lists_envs_and_runs_and_refuses_bad_overrides(tmp_path):
    old = rd.create_run_dir("squared", tmp_path, now=time.time() - 60)
    cfg.save(cfg.load_config("squared"), old / rd.CONFIG_FILE)
    rd.write_json_atomic(old / rd.STATUS_FILE, {"state": "stopped", "global_step": 4096})
    app = LauncherApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(app.screen, LauncherScreen)
        await until(pilot, lambda: "Discrete(5)" in screen_text(app), "the env list")
        text = screen_text(app)
        assert "squared" in text and "cartpole" in text and "Box(121,) uint8" in text
        # the runs list loads on its own, after the envs on a loaded box
        await until(pilot, lambda: old.name in screen_text(app), "the runs list")
        assert "stopped" in screen_text(app)
        await until(pilot, lambda: form_ready(app), "the preset form")
        set_field(app, "vec.num_envs", "0")  # below the bound of 1
        await pilot.press("ctrl+s")
        await pilot.pause(0.2)
        assert app.started == [] and isinstance(app.screen, LauncherScreen)
        assert "vec.num_envs = 0 is out of bounds" in screen_text(app)
        set_field(app, "vec.num_envs", "64")
        set_field(app, "train.minibatch_size", "999")  # fine alone, not with horizon 64
        await pilot.press("ctrl+s")
        await pilot.pause(0.2)
        assert app.started == [] and "multiple of train.horizon" in screen_text(app)


async def test_enter_starts_a_run_from_the_launcher(tmp_path):
    app = LauncherApp(tmp_path)
    run_dir = None
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: form_ready(app), "the preset form")
            for key, value in TINY.items():
                set_field(app, key, value)
            await pilot.press("ctrl+s")
            await until(pilot, lambda: isinstance(app.screen, DashboardScreen), "the dashboard")
            run_dir = app.run_dir
            await until(pilot, lambda: app.store.telemetry_seen
                        and app.store.latest.global_step > 0,
                        "training in the new run", timeout=60)
            assert app.started == [("squared", TINY)]
            saved = cfg.load(run_dir / rd.CONFIG_FILE)
            assert saved.vec.num_envs == 64 and saved.train.hidden_size == 32
    finally:
        if run_dir is not None:
            shut_down(run_dir, app.engine_handle)


@pytest.mark.slow
async def test_moving_through_every_env_and_starting_a_non_default_one(tmp_path):
    """Down through the whole env list rebuilds the preset form each time (no DuplicateIds),
    and the env picked last, not squared, is the one that trains."""
    from puffer_tui.envs import ENV_NAMES, env_names

    app = LauncherApp(tmp_path)
    run_dir = None
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.screen.query_one("#envs").option_count
                        == len(env_names()), "the env list (built-ins and plugins)")
            for name in ENV_NAMES[1:]:
                await pilot.press("down")
                await until(pilot, lambda name=name: app.screen.env_name == name
                            and len(app.screen.query(OverrideForm)) == 1
                            and app.screen.query_one(OverrideForm).env_name == name,
                            f"the preset of {name}")
            assert app.return_code is None, "the app crashed while switching envs"
            await pilot.press("up")  # back to one that trains quickly on 64 envs
            # the form is rebuilt for the new env: absent for a moment, not an error
            await until(pilot, lambda: len(app.screen.query(OverrideForm)) == 1
                        and app.screen.query_one(OverrideForm).env_name == ENV_NAMES[-2],
                        "the previous preset")
            name = ENV_NAMES[-2]
            for key, value in TINY.items():
                set_field(app, key, value)
            await pilot.press("enter")  # Enter on the env list starts it
            await until(pilot, lambda: isinstance(app.screen, DashboardScreen), "the dashboard")
            run_dir = app.run_dir
            await until(pilot, lambda: app.store.hello.get("env") == name, "the engine's hello")
            assert [started for started, _ in app.started] == [name]
            saved = cfg.load(run_dir / rd.CONFIG_FILE)
            assert saved.env_name == name and saved.vec.num_envs == 64
    finally:
        if run_dir is not None:
            shut_down(run_dir, app.engine_handle)


def test_the_app_exits_non_zero_when_it_crashes(monkeypatch):
    """An exception inside the app is a failure for the shell too (it used to exit 0)."""
    from puffer_tui.app import app as app_module

    def crash(self):
        raise RuntimeError("a bug in a screen")

    real_run = app_module.PufferApp.run
    monkeypatch.setattr(app_module.PufferApp, "show_first_screen", crash)
    monkeypatch.setattr(app_module.PufferApp, "run",
                        lambda self, **kw: real_run(self, headless=True, **kw))
    assert app_module.run_app() == 1


async def test_launcher_refuses_an_impossible_start_or_resume_before_writing_anything(tmp_path):
    """The launcher asks what `puffer-tui train` asks: a CUDA device torch cannot see, or a
    recent run with no checkpoint, is refused in one line; no run dir, no engine."""
    import torch

    if torch.cuda.is_available():
        import pytest

        pytest.skip("this machine has CUDA: the device check would pass")
    empty = rd.create_run_dir("squared", tmp_path, now=time.time() - 60)
    cfg.save(cfg.load_config("squared"), empty / rd.CONFIG_FILE)
    rd.write_json_atomic(empty / rd.STATUS_FILE, {"state": "error", "global_step": 0})
    app = LauncherApp(tmp_path)
    opened = []
    app.open_run = lambda *a, **kw: opened.append(a)  # an engine start would land here
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: form_ready(app), "the preset form")
        set_field(app, "train.device", "cuda")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "sees no CUDA device" in " ".join(
            str(n.message) for n in app._notifications), "the device refusal")
        assert sorted(p.name for p in tmp_path.iterdir()) == [empty.name]
        app.resume_run(empty)
        await pilot.pause(0.1)
        assert any("has no checkpoint to resume from" in str(n.message)
                   for n in app._notifications)
        assert opened == [] and isinstance(app.screen, LauncherScreen)


async def test_a_typed_spec_completes_is_remembered_and_starts(tmp_path):
    """The spec field completes Gymnasium ids, refuses a bad spec where it was typed, and a
    good one gets its preset form, a place in the env list (and next time too) and trains."""
    from puffer_tui.app.services.recent_specs import recent

    app = LauncherApp(tmp_path)
    opened = []
    app.open_run = lambda run_dir, attach: opened.append(run_dir)  # no engine needed here
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: form_ready(app), "the preset form")
        spec = app.screen.query_one("#spec")
        await until(pilot, lambda: app.screen._suggester.candidates, "the completions")
        spec.focus()
        await pilot.press(*"gym:cartpole-")
        await until(pilot, lambda: spec._suggestion == "gym:CartPole-v1", "the completion")
        await pilot.press("right")  # accept it
        assert spec.value == "gym:CartPole-v1"
        spec.value = "gym:CartPol-v1"
        await pilot.press("enter")
        await until(pilot, lambda: any("close matches: gym:CartPole-v1" in str(n.message)
                                       for n in app._notifications), "the refusal")
        assert "unknown Gymnasium id" in screen_text(app)  # also where the spec was typed
        assert app.screen.env_name == "squared" and recent(tmp_path) == []
        spec.value = "gym:CartPole-v1"
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.query_one(OverrideForm).env_name
                    == "gym:CartPole-v1", "the spec's preset form")
        assert "max_episode_steps" in screen_text(app)
        assert recent(tmp_path) == ["gym:CartPole-v1"]
        await pilot.press("ctrl+s")
        await until(pilot, lambda: opened, "the start")
        saved = cfg.load(opened[0] / rd.CONFIG_FILE)
        # stepped by its C port (envs/classic_ports.py): no worker processes
        assert saved.env_name == "gym:CartPole-v1" and saved.vec.backend == "serial"
        assert app.started == [("gym:CartPole-v1", {})]

    again = LauncherApp(tmp_path)  # a new launcher lists the remembered spec
    async with again.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "gym:CartPole-v1" in again.screen._infos,
                    "the remembered spec")
        assert again.screen.query_one("#envs").get_option("gym:CartPole-v1") is not None


async def test_the_launcher_lists_sweeps_and_enter_opens_the_sweep_view(tmp_path):
    from puffer_tui.engine.shared import sweep_settings as st
    from puffer_tui.screens.sweep_view import SweepScreen

    sweep = st.sweep_dir("night", tmp_path)
    sweep.mkdir(parents=True)
    st.save_settings(st.SweepSettings(name="night", env_name="bandit", trials=8), sweep)
    rd.write_json_atomic(sweep / st.STATUS_FILE, {
        "sweep": "night", "state": "finished", "target": 8,
        "counts": {"COMPLETE": 5, "PRUNED": 3}, "best": [2],
        "trials": [{"number": 2, "state": "COMPLETE", "score": 0.97, "params": {}}]})
    app = LauncherApp(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "sweep night" in screen_text(app), "the sweep in the list")
        assert "finished, 8/8 trials" in screen_text(app)
        runs = app.screen.query_one("#runs")
        runs.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SweepScreen), "the sweep view")
        await until(pilot, lambda: "0.97" in screen_text(app), "the saved trial table")
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, LauncherScreen), "the launcher again")
