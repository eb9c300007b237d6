"""Keys and the command palette on the dashboard, with fixed data (no engine needed)."""

from __future__ import annotations

from puffer_tui.app.widgets.loss_panel import LossPanel
from puffer_tui.screens.confirm import ChoiceDialog
from puffer_tui.screens.dashboard import DashboardScreen
from puffer_tui.screens.help import HelpScreen
from puffer_tui.screens.hyperparameters import HyperparameterScreen
from puffer_tui.screens.render import RenderScreen
from tests.screens.test_app_snapshots import FixedDataApp


class OfflineApp(FixedDataApp):
    """Records what would have gone to the engine."""

    def __init__(self):
        super().__init__("dashboard")
        self.sent = []

    def engine_request(self, cmd, args=None, on_reply=None, **kwargs):
        self.sent.append((cmd, args))


async def test_screens_open_and_close_from_their_keys():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        for key, screen in (("question_mark", HelpScreen), ("r", RenderScreen),
                            ("h", HyperparameterScreen)):
            await pilot.press(key)
            assert isinstance(app.screen, screen), key
            await pilot.press("escape")
            assert isinstance(app.screen, DashboardScreen), key


async def test_render_env_keys_wrap_around_and_ask_the_engine():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("left_square_bracket")
        assert app.render_env == 63  # 64 envs in the fixed hello
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert app.render_env == 1
        await pilot.pause(0.1)
        assert app.sent[-1] == ("render", {"env": 1, "fps": 4, "policy": True})  # the panel draws 4 a second
        await pilot.pause(0.3)
        assert app.screen.query_one("EnvRender").border_title == "env 1/64"


async def test_loss_key_cycles_the_plotted_curve():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.screen.query_one(LossPanel)
        assert panel.selected == "policy_loss"
        await pilot.press("l")
        assert panel.selected == "value_loss"


async def test_pause_checkpoint_and_quit_dialog_without_an_engine_link():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("p", "c")
        assert app.sent == [("pause", None), ("checkpoint", None)]
        app.link = object()  # pretend to be connected so q asks instead of quitting
        await pilot.press("q")
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("c")  # cancel
        assert isinstance(app.screen, DashboardScreen)
        await pilot.press("ctrl+q")  # Textual's quit key asks the same question
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("escape")
        app.link = None


async def test_command_palette_offers_the_dashboard_actions():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)):
        app.link = object()  # connected: Detach is offered
        titles = {command.title for command in app.get_system_commands(app.screen)}
        app.link = None
    assert {"Pause training", "Checkpoint now", "Stop run", "Help",
            "Hyperparameters", "Render view", "Detach"} <= titles


async def test_command_palette_offers_only_what_applies_now():
    from app_fakes import telemetry

    app = OfflineApp()
    async with app.run_test(size=(100, 30)):
        def titles():
            return {command.title for command in app.get_system_commands(app.screen)}

        assert "Pause training" in titles() and "Resume training" not in titles()
        app.store.ingest(telemetry(41, state="paused"))
        assert "Resume training" in titles() and "Pause training" not in titles()
        app.store.ingest(telemetry(42, state="finished"))
        assert not {"Pause training", "Resume training", "Checkpoint now", "Stop run",
                    "Hyperparameters"} & titles()
        assert "Help" in titles()


async def test_footer_follows_the_state_even_when_the_terminal_reports_no_focus():
    from app_fakes import telemetry

    def footer_text(app) -> str:
        return "\n".join(s.text for s in app.screen._compositor.render_strips()).splitlines()[-1]

    from app_fakes import push

    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):  # the first footer; a loaded machine draws it late (bounded)
            await pilot.pause(0.1)
            if "Pause" in footer_text(app):
                break
        assert "Pause" in footer_text(app)
        app.app_focus = False  # what a terminal's focus-out report sets
        push(app, telemetry(41, state="paused"))
        for _ in range(50):  # a panel refresh (1 s) and the footer's recompose; bounded
            await pilot.pause(0.1)
            if "Resume" in footer_text(app):
                break
        assert "Resume" in footer_text(app)


async def test_o_in_the_render_view_switches_to_the_observation_and_back():
    from puffer_tui.app.widgets.env_render import EnvRender

    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        app.link = object()  # linked: the dashboard asks for its frames
        app._announce_link_state()
        await pilot.pause(0.2)
        assert app.sent[-1] == ("render", {"env": 0, "fps": 4, "policy": True})
        await pilot.press("r")
        await pilot.pause(0.1)
        assert isinstance(app.screen, RenderScreen)
        assert app.sent[-1] == ("render", {"env": 0, "fps": 15, "policy": True})  # full screen: every frame
        await pilot.press("o")
        await pilot.pause(0.1)
        assert app.sent[-1] == ("render", {"env": 0, "fps": 15, "view": "obs"})
        assert app.screen.query_one(EnvRender).view == "obs"
        await pilot.press("o")
        await pilot.pause(0.1)
        assert app.sent[-1] == ("render", {"env": 0, "fps": 15, "policy": True})
        await pilot.press("o", "escape")  # leaving on the observation: the panel gets the env
        await pilot.pause(0.2)
        assert isinstance(app.screen, DashboardScreen)
        assert app.sent[-1] == ("render", {"env": 0, "fps": 4, "policy": True})
        app.link = None


async def test_the_render_view_of_an_ended_run_offers_no_env_or_view_keys():
    # they changed the title and left the last frame of env 0 on the screen, the app toasting
    # "not connected to an engine" for each press: the frames come from the engine
    from app_fakes import push, telemetry

    def footer_text(app) -> str:
        return "\n".join(s.text for s in app.screen._compositor.render_strips()).splitlines()[-1]

    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("r")
        await pilot.pause(0.2)
        assert isinstance(app.screen, RenderScreen)
        assert "Next env" in footer_text(app) and "Obs/env" in footer_text(app)
        push(app, telemetry(41, state="finished"))
        for _ in range(50):  # the screen's redraw and the footer's recompose; bounded
            await pilot.pause(0.1)
            if "Next env" not in footer_text(app):
                break
        assert "Next env" not in footer_text(app) and "Obs/env" not in footer_text(app)
        sent = len(app.sent)
        await pilot.press("right_square_bracket", "o")
        await pilot.pause(0.1)
        assert len(app.sent) == sent and app.screen.env_index == 0
        assert "Back" in footer_text(app)
        # opening it again on the ended run asks the engine for nothing
        await pilot.press("escape", "r")
        await pilot.pause(0.2)
        assert isinstance(app.screen, RenderScreen) and len(app.sent) == sent
