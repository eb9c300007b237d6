"""The app's typed messages: what supersedes what, the link's hand-over, and a dashboard
that redraws when told to and only then (no polling of engine data)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from app_fakes import push, telemetry

from puffer_tui.app import link_messages as lm
from puffer_tui.app.engine_client import EngineClient
from puffer_tui.app.widgets.run_header import RunHeader
from puffer_tui.engine.shared.protocol import MessageType
from tests.screens.test_app_keys import OfflineApp


def test_newer_telemetry_of_the_same_epoch_supersedes_older_but_never_across_epochs():
    link = object()
    old, same, later = (lm.Telemetry(link, telemetry(e)) for e in (4, 4, 5))
    assert old.can_replace(same)
    assert not same.can_replace(later)  # epoch 4's losses and stats must reach the store
    assert not old.can_replace(lm.Telemetry(object(), telemetry(4)))  # another link's
    assert not old.can_replace(lm.EngineEvent(link, {"type": "event", "text": "x"}))


def test_frames_supersede_frames_and_events_are_never_dropped():
    link = object()
    frame = lm.Frame(link, {"type": "frame"})
    assert frame.can_replace(lm.Frame(link, {"type": "frame"}))
    event = lm.EngineEvent(link, {"type": "event"})
    assert not event.can_replace(lm.EngineEvent(link, {"type": "event"}))


def test_a_superseded_run_changed_hands_its_parts_to_the_newer_one():
    older, newer = lm.RunChanged(frozenset({"frame"}), urgent=True), lm.RunChanged(frozenset({"numbers"}))
    assert older.can_replace(newer)
    assert newer.parts == {"frame", "numbers"} and newer.urgent


def test_pushes_become_typed_messages_and_unknown_types_none():
    assert isinstance(lm.message_for_push(None, {"type": MessageType.TELEMETRY}), lm.Telemetry)
    assert isinstance(lm.message_for_push(None, {"type": MessageType.EVENT}), lm.EngineEvent)
    assert isinstance(lm.message_for_push(None, {"type": MessageType.FRAME}), lm.Frame)
    assert lm.message_for_push(None, {"type": "something-new"}) is None


def _client_pair() -> tuple[EngineClient, socket.socket]:
    ours, engine = socket.socketpair()
    client = EngineClient(ours, Path("test.sock"))
    client._reader.start()
    return client, engine


def _wait(condition, what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def test_subscribe_hands_over_queued_pushes_first_then_live_ones_in_order():
    client, engine = _client_pair()
    try:
        engine.sendall(b'{"type": "event", "n": 1}\n{"type": "event", "n": 2}\n')
        _wait(lambda: client._pushes.qsize() == 2, "two queued pushes")
        got, closed = [], []
        client.subscribe(lambda p: got.append(p["n"]), closed.append)
        engine.sendall(b'{"type": "event", "n": 3}\n')
        _wait(lambda: len(got) == 3, "the live push")
        assert got == [1, 2, 3] and client._pushes.qsize() == 0 and closed == []
        engine.close()
        _wait(lambda: closed, "the end of the connection")
        time.sleep(0.1)
        assert closed == ["closed by the engine"]  # once
    finally:
        client.close()


def test_subscribing_after_the_engine_hung_up_still_reports_the_end_once():
    client, engine = _client_pair()
    try:
        engine.sendall(b'{"type": "event", "n": 1}\n')
        engine.close()
        _wait(client.closed.is_set, "the reader to see EOF")
        got, closed = [], []
        client.subscribe(lambda p: got.append(p["n"]), closed.append)
        assert got == [1] and closed == ["closed by the engine"]
    finally:
        client.close()


def test_subscribe_and_a_concurrent_close_report_the_end_exactly_once():
    for _ in range(50):
        client, engine = _client_pair()
        closed = []
        closer = threading.Thread(target=engine.close)
        closer.start()
        client.subscribe(lambda p: None, closed.append)
        closer.join()
        _wait(client.closed.is_set, "EOF")
        time.sleep(0.02)
        client.close()
        assert len(closed) == 1, closed


async def test_the_dashboard_redraws_on_messages_and_not_on_a_clock():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        dashboard = app.screen
        deadline = time.monotonic() + 15
        while dashboard.redraws < 1:
            assert time.monotonic() < deadline, "never drew"
            await pilot.pause(0.05)
        await pilot.pause(0.5)
        before = dashboard.redraws
        await pilot.pause(2.5)  # two and a half panel slots with nothing new
        assert dashboard.redraws == before
        push(app, telemetry(41) | {"global_step": 41 * 4096 + 1})
        while dashboard.redraws == before:
            assert time.monotonic() < deadline + 10, "a push was never drawn"
            await pilot.pause(0.05)
        header = dashboard.query_one(RunHeader)
        assert header.telemetry.epoch == 41


async def test_a_burst_of_pushes_is_drawn_a_bounded_number_of_times():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        dashboard = app.screen
        while dashboard.redraws < 1:
            await pilot.pause(0.05)
        await pilot.pause(1.1)  # the next panel slot is free
        before = dashboard.redraws
        for step in range(200):
            push(app, telemetry(41) | {"global_step": 41 * 4096 + step})
        await pilot.pause(0.3)
        # The first push of the burst draws at once; the rest wait for the next slot (1 s).
        assert dashboard.redraws - before <= 1
        deadline = time.monotonic() + 15
        while dashboard.query_one(RunHeader).telemetry.global_step != 41 * 4096 + 199:
            assert time.monotonic() < deadline, "the last push of the burst was never drawn"
            await pilot.pause(0.05)
        assert dashboard.redraws - before <= 3


async def test_messages_from_a_link_the_app_has_left_are_dropped():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        seen = app.store.telemetry_seen
        app.post_message(lm.Telemetry(object(), telemetry(50)))  # not the app's link (None)
        app.post_message(lm.LinkLost(object(), "an old connection closing"))
        await pilot.pause(0.3)
        assert app.store.telemetry_seen == seen
        assert not any("old connection" in e.text for e in app.store.events)


async def test_keys_reach_the_app_as_engine_requests_and_render_steps():
    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("c")
        await pilot.pause(0.1)
        assert app.sent[-1] == ("checkpoint", None)
        await pilot.press("right_square_bracket")
        await pilot.pause(0.1)
        assert app.sent[-1] == ("render", {"env": 1, "fps": 4, "policy": True})
        assert app.screen.render_env == 1


async def test_the_workers_panel_appears_for_several_ranks_and_hides_for_one():
    from puffer_tui.app.widgets.workers_panel import WorkersPanel

    app = OfflineApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.screen.query_one(WorkersPanel)
        assert not panel.display or not panel.has_class("-shown")
        ranks = [{"rank": 0, "node": "box-a", "sps": 90_000.0},
                 {"rank": 1, "node": "box-b", "sps": 30_000.0}]
        push(app, telemetry(41) | {"workers": ranks})
        deadline = time.monotonic() + 15
        while not panel.has_class("-shown"):
            assert time.monotonic() < deadline, "the panel never appeared"
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        text = "\n".join(s.text for s in app.screen._compositor.render_strips())
        assert "rank 1" in text and "box-b" in text
        push(app, telemetry(42) | {"workers": ranks[:1]})
        while panel.has_class("-shown"):
            assert time.monotonic() < deadline + 15, "the panel never hid"
            await pilot.pause(0.05)
