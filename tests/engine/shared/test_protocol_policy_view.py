"""The policy's view on the wire: `render`'s policy and saliency arguments, and a frame's
optional "policy" field (decoded into a PolicyView; an older client never reads it)."""

import base64

import numpy as np
import pytest

from puffer_tui.engine.shared.protocol import (
    PolicyView,
    RequestError,
    check_render_policy,
    decode_frame,
    frame_message,
    parse_request,
)

VIEW = {"env": 2, "agent": 0, "kind": "discrete", "value": 0.5, "reward": 1.0, "step": 7,
        "heads": [[0.1, 0.2, 0.7]], "action": [2],
        "episode": {"values": [0.4, 0.9], "returns": [0.99, 1.0], "error": 0.3, "length": 2},
        "saliency": {"of": "action", "height": 2, "width": 2,
                     "cells": base64.b64encode(bytes([0, 255, 51, 0])).decode()}}


def test_a_frame_carries_the_policy_view_it_was_sent_with():
    message = frame_message(2, np.zeros((2, 2), np.uint8), policy=VIEW)
    frame = decode_frame(message)
    view = frame.policy
    assert isinstance(view, PolicyView) and view.heads == ((0.1, 0.2, 0.7),)
    assert view.action == (2,) and view.value == 0.5 and view.step == 7
    assert view.episode.error == 0.3 and view.episode.returns == (0.99, 1.0)
    assert view.saliency.of == "action" and view.saliency.grid == (0.0, 1.0, 0.2, 0.0)


def test_a_frame_without_a_policy_view_has_none():
    message = frame_message(0, np.zeros((2, 2), np.uint8))
    assert "policy" not in message and decode_frame(message).policy is None


@pytest.mark.parametrize("bad", [
    {"kind": "mystery"},
    {**VIEW, "heads": "no"},
    {**VIEW, "saliency": {**VIEW["saliency"], "height": 3}},
])
def test_a_malformed_policy_view_is_dropped_and_the_frame_kept(bad):
    frame = decode_frame(frame_message(0, np.zeros((2, 2), np.uint8), policy=bad))
    assert frame is not None and frame.height == 2
    assert frame.policy is None or frame.policy.saliency is None


def test_render_asks_for_the_policy_view_and_its_saliency():
    assert check_render_policy({}) == (False, None)
    assert check_render_policy({"policy": True}) == (True, None)
    assert check_render_policy({"saliency": "value"}) == (True, "value")
    _, cmd, args = parse_request(b'{"id": 1, "cmd": "render", "args": {"env": 0, '
                                 b'"policy": true, "saliency": "action"}}')
    assert check_render_policy(args) == (True, "action")
    with pytest.raises(RequestError, match="saliency"):
        check_render_policy({"saliency": "pixels"})
    with pytest.raises(RequestError, match="policy"):
        check_render_policy({"policy": "yes"})
