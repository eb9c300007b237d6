"""The wire between the pool and a worker (engine/vec/mp/channel.py): one byte for the hot
path, pickles for anything else, and the other end's death read as ChannelClosed."""

import socket
import threading

import numpy as np
import pytest

from puffer_tui.engine.vec.mp import channel


@pytest.fixture
def pair():
    main, worker = socket.socketpair()
    yield main, worker
    main.close()
    worker.close()


def test_step_and_done_are_one_byte_each_way(pair):
    main, worker = pair
    main.sendall(channel.STEP)
    assert channel.receive(worker) == channel.STEP
    worker.sendall(channel.DONE)
    assert channel.receive(main) == channel.DONE


def test_an_object_arrives_whole_however_large(pair):
    main, worker = pair
    infos = ("infos", [{"score": 1.5}], np.arange(100_000))  # bigger than a socket buffer

    sender = threading.Thread(target=channel.send_object, args=(main, infos))
    sender.start()
    kind, rows, array = channel.receive(worker)
    sender.join()
    assert kind == "infos" and rows == [{"score": 1.5}]
    assert np.array_equal(array, np.arange(100_000))


def test_wait_readable_says_which_socket_has_a_message_and_times_out_empty(pair):
    main, worker = pair
    assert channel.wait_readable([worker], spin_s=0.0, timeout=0.01) == []
    main.sendall(channel.STEP)
    assert channel.wait_readable([worker], spin_s=0.001, timeout=1.0) == [worker]


def test_a_closed_end_is_channel_closed_even_mid_message(pair):
    main, worker = pair
    main.sendall(channel.OBJECT + b"\x10\x00")  # a length cut short, then the end goes
    main.close()
    with pytest.raises(channel.ChannelClosed, match="mid-message"):
        channel.receive(worker)
    with pytest.raises(channel.ChannelClosed):
        channel.receive(worker)
