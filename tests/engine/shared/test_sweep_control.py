"""engine/shared/sweep_control.py's `request` against a stand-in server on a real socket: the
reply found behind pushes and garbled lines, and every way of getting none a ControlError."""

import json
import socket
import threading

import pytest

from puffer_tui.engine.shared.sweep_control import ControlError, request


def serve_once(path, answer):
    """A server that reads one request line and sends `answer(request)` (bytes)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    seen = []

    def run():
        conn, _ = server.accept()
        with conn:
            line = conn.makefile("rb").readline()
            seen.append(json.loads(line))
            conn.sendall(answer(seen[-1]))
        server.close()

    threading.Thread(target=run, daemon=True).start()
    return seen


def line(message) -> bytes:
    return (json.dumps(message) + "\n").encode()


def test_the_reply_is_found_behind_pushes_and_garbled_lines(tmp_path):
    path = tmp_path / "control.sock"
    seen = serve_once(path, lambda req: (line({"type": "telemetry", "step": 5}) + b"not json\n"
                                         + line([1, 2]) + line({"id": 1, "ok": True, "x": 7})))
    assert request(path, "status", {"full": True}) == {"id": 1, "ok": True, "x": 7}
    assert seen == [{"id": 1, "cmd": "status", "args": {"full": True}}]


def test_a_reply_split_over_reads_is_put_together(tmp_path):
    path = tmp_path / "control.sock"
    serve_once(path, lambda req: line({"id": 1, "ok": False, "error": "x" * 200_000}))
    reply = request(path, "stop")
    assert reply["ok"] is False and len(reply["error"]) == 200_000


def test_no_socket_is_a_control_error_naming_it(tmp_path):
    with pytest.raises(ControlError, match=str(tmp_path / "none.sock")):
        request(tmp_path / "none.sock", "status")


def test_a_server_that_hangs_up_or_never_answers_is_a_control_error(tmp_path):
    closed = tmp_path / "closed.sock"
    serve_once(closed, lambda req: line({"type": "event"}))
    with pytest.raises(ControlError, match="closed before answering status"):
        request(closed, "status")
    silent = tmp_path / "silent.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(silent))
    server.listen(1)
    try:
        with pytest.raises(ControlError, match=r"no answer to status within 0.2 s"):
            request(silent, "status", timeout=0.2)
    finally:
        server.close()
