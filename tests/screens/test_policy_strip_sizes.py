"""The policy strip beside (or under) the env render: at 80x24 under the frame, wider
terminals beside it, on the dashboard and the full-screen render; `g` cycles the saliency
overlay and asks the engine for it."""

from __future__ import annotations

import base64

import pytest
from app_fakes import frame

from puffer_tui.app import link_messages as lm
from puffer_tui.app.widgets.env_render import EnvRender
from puffer_tui.screens.dashboard import DashboardScreen
from puffer_tui.screens.render import RenderScreen
from tests.app.test_app_engine import until
from tests.screens.test_app_snapshots import FixedDataApp, screen_text

SALIENCY = bytearray(121)
SALIENCY[3] = 255  # the target at row 0, column 3

POLICY = {"env": 0, "agent": 0, "kind": "discrete", "value": 0.61, "reward": 1.0, "step": 9,
          "heads": [[0.02, 0.05, 0.81, 0.07, 0.05]], "action": [2],
          "episode": {"values": [0.5 + 0.04 * i for i in range(12)],
                      "returns": [0.99 ** (12 - i) for i in range(12)], "error": 0.123,
                      "length": 12},
          "saliency": {"of": "action", "height": 11, "width": 11,
                       "cells": base64.b64encode(bytes(SALIENCY)).decode()}}


def policy_app(screen: str) -> FixedDataApp:
    app = FixedDataApp(screen)
    app.store.ingest({**frame(), "policy": POLICY}, now=1.0)
    return app


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
async def test_the_dashboard_shows_the_policy_strip_with_the_render(size):
    app = policy_app("dashboard")
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        app.screen.refresh_frame()
        # drawn when the screen is: on a loaded box the footer can come after a fixed pause
        await until(pilot, lambda: "V +0.61" in screen_text(app)
                    and "g Saliency" in screen_text(app), "the strip and the footer")
        text = screen_text(app)
        assert "V +0.61" in text and "r +1.00" in text
        render = app.screen.query_one(EnvRender)
        if size == (80, 24):
            assert "a2 81%" in text  # one line of the five actions under the frame
        else:
            assert "▶ 2" in text and "81%" in text  # a bar per action, the taken one marked
            assert "critic err 0.123" in text
            assert render.size.width > 28  # the render takes the room a wide terminal adds
        assert "g Saliency" in text  # the key, in the footer


async def test_the_strip_sits_beside_the_frame_in_the_full_screen_render():
    app = policy_app("render")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        assert isinstance(app.screen, RenderScreen)
        app.screen.refresh_frame()
        await until(pilot, lambda: "critic err 0.123" in screen_text(app)
                    and "• V(s)" in screen_text(app), "the strip beside the frame")
        lines = screen_text(app).splitlines()
        row = next(line for line in lines if "V +0.61" in line)
        assert "·" in row.split("V +0.61")[0]  # the frame's cells on the same line, to its left
        assert any("critic err 0.123" in line for line in lines)
        assert any("• V(s)" in line for line in lines)  # the value-vs-return chart's legend


async def test_g_cycles_the_saliency_and_asks_the_engine_for_it(monkeypatch):
    app = policy_app("dashboard")
    sent = []
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        screen.linked = True
        post = screen.post_message

        def capture(message):  # the engine requests kept; every other message goes on
            if isinstance(message, lm.EngineRequest):
                sent.append(message)
                return True
            return post(message)

        monkeypatch.setattr(screen, "post_message", capture)
        before = screen_text(app)
        await pilot.press("g")
        await until(pilot, lambda: "env 0/64 ∇π" in screen_text(app), "the saliency's title")
        render = screen.query_one(EnvRender)
        assert render.saliency == "action" and "env 0/64 ∇π" in screen_text(app)
        assert sent[-1].cmd == "render" and sent[-1].args["saliency"] == "action"
        assert screen_text(app) != before  # the heat drawn over the frame
        await pilot.press("g")
        await pilot.pause(0.1)
        assert render.saliency == "value" and sent[-1].args["saliency"] == "value"
        await pilot.press("g")
        await pilot.pause(0.1)
        assert render.saliency is None and "saliency" not in sent[-1].args
        assert sent[-1].args["policy"] is True
