"""The control server's stop ends every connection it has: one accepted in the stop's last
moments (asyncio used to leave its socket open with nobody serving it) and, when the server's
loop is stuck, the connections it can no longer serve. A client must never wait for good on
an engine that is going away."""

import threading

from puffer_tui.app.engine_client import EngineClient, EngineDisconnected
from puffer_tui.engine.runtime import control_server
from puffer_tui.engine.runtime.commands import CommandQueue
from puffer_tui.engine.runtime.control_server import ControlServer
from puffer_tui.engine.runtime.frame_source import FrameSource
from puffer_tui.engine.runtime.run_control import RunControl

HANG = 5.0  # seconds a client may wait for the end of its connection before it counts as hung


def make_server(path, hello_fn=dict) -> ControlServer:
    """A server with no trainer behind its command queue: requests stay pending."""
    state, frames = RunControl(), FrameSource(lambda env: None)
    return ControlServer(path, CommandQueue(state, frames), state, frames, hello_fn, dict,
                         "squared", 1)


def test_a_client_that_connects_as_the_server_stops_is_never_left_hanging(tmp_path):
    # Connect, send, stop at once: the connection is in the listener's backlog, accepted but
    # without a transport, or just registered, depending on the moment; every case must end.
    for attempt in range(200):
        srv = make_server(tmp_path / "c.sock")
        srv.start()
        client = EngineClient.connect(srv.path, hello=False)
        try:
            _, waiter = client.send("pause")
            srv.stop()
            assert client.closed.wait(HANG), (
                f"attempt {attempt}: the client still waits {HANG:g} s after the server "
                "stopped: a connection it accepted was left open")
            assert waiter[0].is_set()  # the pending request is answered (an error) or dropped
            reply = waiter[1]
            assert reply is None or (reply["ok"] is False and "stopped" in reply["error"])
        finally:
            client.close()
        assert not srv.path.exists()


def test_a_stuck_server_loop_still_ends_its_connections_on_stop(tmp_path):
    # hello_fn blocks the server's loop (as a slow engine's hello does): stop() cannot run
    # the loop's shutdown, so it ends the connections itself and the client sees the end
    release = threading.Event()

    def stuck_hello():
        release.wait(30)
        return {}

    srv = make_server(tmp_path / "c.sock", hello_fn=stuck_hello)
    srv.start()
    client = EngineClient.connect(srv.path, hello=False)
    try:
        _, waiter = client.send("hello")
        srv.stop(timeout=0.2)
        assert client.closed.wait(HANG), "the client of a stuck server was left hanging"
        assert waiter[0].is_set() and waiter[1] is None
        try:
            client.request("status", timeout=1)
        except EngineDisconnected:
            pass
        else:
            raise AssertionError("a request on the ended connection got an answer")
    finally:
        release.set()
        client.close()
        srv._thread.join(10)
    assert not srv._thread.is_alive()


def test_stop_ends_the_server_loop_without_waiting_for_its_next_tick(tmp_path, monkeypatch):
    # The loop slept a whole tick between looks at its stop flag, so every stop waited up to
    # a tick (an engine's exit, each attempt above); with a long tick, stop() gave up on the
    # join and left the loop running. The stop must wake it.
    monkeypatch.setattr(control_server, "TICK", 60.0)
    srv = make_server(tmp_path / "c.sock")
    srv.start()
    srv.stop()
    assert not srv._thread.is_alive(), "the server's loop outlived stop()"
