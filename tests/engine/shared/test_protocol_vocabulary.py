"""engine/shared/protocol.py as the one home of the protocol's words: run states, push types, the
size limit and line framing, the field schema on the wire. Both sides use these, so the
tests check the forms that cross the socket (or sit in status.json)."""

import dataclasses
import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from puffer_tui.app.engine_client import EngineClient
from puffer_tui.engine.shared.config import schema
from puffer_tui.engine.shared.protocol import (
    FINAL_STATES,
    LIVE_STATES,
    MAX_MESSAGE,
    MessageType,
    RunState,
    encode_request,
    schema_from_wire,
    schema_to_wire,
    split_lines,
)
from puffer_tui.engine.shared.run_dir import SOCKET_FILE, unix_address


def test_run_states_cross_json_as_the_plain_strings():
    """status.json written before the enum existed still reads the same, and a state read
    back from JSON is found in the state groups."""
    assert json.dumps({"state": RunState.PAUSED}) == '{"state": "paused"}'
    read_back = json.loads('{"state": "stopping"}')["state"]
    assert read_back == RunState.STOPPING and read_back in LIVE_STATES
    assert set(LIVE_STATES).isdisjoint(FINAL_STATES)
    assert set(LIVE_STATES) | set(FINAL_STATES) == set(RunState)
    assert json.loads(json.dumps({"type": MessageType.FRAME}))["type"] == "frame"


def test_the_field_schema_survives_the_wire():
    """What the engine sends in hello is what the hyperparameter editor validates with:
    every field of every spec but the sweep distribution (not sent) comes back equal."""
    specs = schema("squared")
    wire = json.loads(json.dumps(schema_to_wire(specs)))  # as it crosses the socket
    back = schema_from_wire(wire)
    assert back == [dataclasses.replace(s, search=None) for s in specs]
    assert any(s.choices for s in back), "choices must round-trip too"
    assert schema_from_wire(None) == []


def test_line_framing_keeps_the_unfinished_rest():
    lines, rest = split_lines(encode_request(1, "status") + b"\n" + encode_request(2, "pause",
                                                                                   {})[:9])
    assert [json.loads(line) for line in lines] == [{"id": 1, "cmd": "status"}]
    assert rest == b'{"id":2,"'
    assert json.loads(encode_request(3, "set", {"key": "k", "value": 1})) == {
        "id": 3, "cmd": "set", "args": {"key": "k", "value": 1}}


@pytest.fixture
def raw_engine(tmp_path):
    """A listening socket standing in for an engine: the test writes raw bytes to it."""
    path = tmp_path / SOCKET_FILE
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    address, fd = unix_address(path)
    try:
        server.bind(address)
    finally:
        if fd is not None:
            os.close(fd)
    server.listen(1)
    accepted = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
    thread.start()
    yield tmp_path, accepted, thread
    for conn in accepted:
        conn.close()
    server.close()


def test_the_client_holds_the_engine_to_the_same_size_limit(raw_engine):
    """One limit both ways: a line longer than MAX_MESSAGE from the engine ends the link with
    a reason naming the limit (before, the client let 64 times that pile up)."""
    run_dir, accepted, thread = raw_engine
    client = EngineClient.connect(run_dir, hello=False)
    try:
        thread.join(5)
        accepted[0].sendall(b'{"type": "telemetry", "pad": "' + b"x" * (MAX_MESSAGE + 100))
        assert client.closed.wait(5), "the client kept buffering an oversized line"
        assert str(MAX_MESSAGE) in client.close_reason
    finally:
        client.close()


def test_the_protocol_module_imports_no_torch():
    code = ("import sys, puffer_tui.engine.shared.protocol; "
            "sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def test_frame_kinds_and_views_cross_json_as_the_plain_strings():
    from puffer_tui.engine.shared.protocol import VIEWS, FrameKind

    assert json.loads(json.dumps({"kind": FrameKind.RGB}))["kind"] == "rgb"
    assert {str(kind) for kind in FrameKind} == {"tiles", "rgb", "text"}
    assert VIEWS == ("env", "obs")


def test_decoding_rgb_and_text_frames_imports_no_torch():
    code = ("import sys; from puffer_tui.engine.shared.protocol import decode_frame; "
            "rgb = decode_frame({'type': 'frame', 'kind': 'rgb', 'height': 1, 'width': 1, "
            "'rgb': 'AAAA'}); text = decode_frame({'type': 'frame', 'kind': 'text', "
            "'text': 'hi'}); assert rgb.data == bytes(3) and text.data == 'hi'; "
            "sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
