"""exit_rank ends the engine process as the interpreter would, without hanging on threads."""

import subprocess
import sys
import textwrap

import pytest

# A process that ends through exit_rank with a thread pool's workers still alive, as an engine
# does after torch.compile built kernels on Inductor's compile pool (a cold cache).
_SCRIPT = textwrap.dedent("""
    import atexit, concurrent.futures, sys
    from puffer_tui.engine.algo.distributed import exit_rank

    pool = concurrent.futures.ThreadPoolExecutor(2)
    assert pool.submit(lambda: 6 * 7).result() == 42
    atexit.register(lambda: print("atexit ran", flush=True))
    print("ending", flush=True)
    exit_rank(3)
""")


def test_a_live_thread_pool_does_not_keep_the_process_from_ending():
    try:
        done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                              timeout=30)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"exit_rank hung on the thread pool's idle workers: {e.stdout!r}")
    assert done.returncode == 3, done.stderr
    assert done.stdout.splitlines() == ["ending", "atexit ran"], done.stdout + done.stderr
