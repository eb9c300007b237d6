"""The vec buffers' shared memory (engine/vec/mp/shared_memory.py): a nameless file another
process maps and writes into, each worker's rows a view of it, and nothing left behind once
the last mapping is closed (no /dev/shm entry, no open descriptor, no mapping)."""

import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces

from puffer_tui.engine.vec.mp.shared_memory import ALIGN, SharedLayout, SharedMemoryFile

OBS, ACT = spaces.Box(0, 1, (5,), np.float32), spaces.Discrete(3)
AGENTS = 4


def _mapped_memfds() -> int:
    """How many mappings of our memory file this process holds."""
    return Path("/proc/self/maps").read_text().count("puffer_tui_vec")


def _write_rows(memory: SharedMemoryFile, layout: SharedLayout, start: int, stop: int) -> None:
    """Run in a child: map the file it was handed and fill its rows of the rewards."""
    views = layout.views(memory.attach(), start, stop)
    views["rewards"][:] = np.arange(start, stop) + 0.5
    views["observations"][:] = 1.0


def test_the_buffers_are_aligned_and_never_overlap():
    layout = SharedLayout(OBS, ACT, AGENTS)
    spans = sorted((offset, offset + int(np.prod(shape)) * dtype.itemsize)
                   for offset, shape, dtype in layout.fields.values())
    assert all(start % ALIGN == 0 for start, _ in spans)
    assert all(end <= following for (_, end), (following, _) in zip(spans, spans[1:]))
    assert spans[-1][1] <= layout.nbytes


def test_a_workers_rows_are_views_of_the_whole_buffer():
    layout = SharedLayout(OBS, ACT, AGENTS)
    memory = SharedMemoryFile(layout.nbytes)
    buffer = memory.attach()
    whole, rows = layout.views(buffer), layout.views(buffer, 2, 4)
    rows["rewards"][:] = 7.0
    assert whole["rewards"].tolist() == [0.0, 0.0, 7.0, 7.0]
    assert rows["observations"].shape == (2, 5)
    del whole, rows
    buffer.close()


def test_another_process_writes_into_the_same_memory():
    layout = SharedLayout(OBS, ACT, AGENTS)
    memory = SharedMemoryFile(layout.nbytes)
    buffer = memory.attach(keep_fd=True)  # as the pool does until its workers have started
    context = multiprocessing.get_context("spawn")
    child = context.Process(target=_write_rows, args=(memory, layout, 1, 3))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    memory.close_fd()
    views = layout.views(buffer)
    assert views["rewards"].tolist() == [0.0, 1.5, 2.5, 0.0]
    assert views["observations"][1:3].min() == 1.0 and views["observations"][0].max() == 0.0
    del views
    buffer.close()


def test_after_attach_only_the_mapping_holds_it_and_nothing_is_left_once_it_closes():
    before_shm = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    before_maps = _mapped_memfds()
    memory = SharedMemoryFile(4096)
    fd = memory.fd
    buffer = memory.attach()
    with pytest.raises(OSError):
        os.fstat(fd)  # the descriptor is closed: the mapping alone keeps the memory
    with pytest.raises(RuntimeError, match="before attach"):
        memory.__reduce__()  # too late to hand it to a worker
    assert _mapped_memfds() == before_maps + 1
    buffer.close()
    assert _mapped_memfds() == before_maps
    after_shm = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    assert not {name for name in after_shm - before_shm if "puffer_tui" in name}
