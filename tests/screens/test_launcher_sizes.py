"""The launcher uses the terminal it has: wider, its left side widens (run names whole, the
env first); taller, every env is listed without a scrollbar. 80x24 keeps its layout."""

from __future__ import annotations

import pytest
from compare_runs import make_compare_run

from puffer_tui.app.widgets.runs_list import short_name
from tests.app.test_app_engine import until
from tests.screens.test_app_launcher import LauncherApp, screen_text


@pytest.mark.parametrize("size, left", [((80, 24), 30), ((120, 40), 40), ((200, 60), 52)])
async def test_the_left_side_and_env_list_follow_the_terminal(tmp_path, size, left):
    run = make_compare_run(tmp_path, state="stopped")
    app = LauncherApp(tmp_path)
    async with app.run_test(size=size) as pilot:
        envs = app.screen.query_one("#envs")
        await until(pilot, lambda: envs.option_count >= 12
                    and app.screen.query_one("#runs").option_count > 0
                    and app.screen.query_one("#runs").get_option_at_index(0).id != "none",
                    "the env and runs lists")
        await pilot.pause(0.3)
        assert app.screen.query_one("#left").outer_size.width == left
        text = screen_text(app)
        if size[1] >= 40:  # all of them shown, no scrollbar
            assert envs.outer_size.height == envs.option_count + 2, envs.outer_size
            assert not envs.show_vertical_scrollbar
            for name in ("acrobot", "cartpole_v1", "pendulum"):
                assert name in text, name
        if size[0] >= 120:
            assert run.name in text  # whole: the list is wide enough
        else:  # cut in the middle: its env and its time of day stay
            assert short_name(run.name, 24) in text


def test_a_cut_name_keeps_its_env_and_its_end():
    name = "cartpole_v1-20261201-220000"
    cut = short_name(name, 24)
    assert len(cut) == 24 and cut.startswith("cartpole_v1") and cut.endswith("220000")
    assert short_name("gym-CartPole-v1-20261201-220000-2", 24).startswith("gym-CartPole-v1")
    assert short_name(name, 40) == name
