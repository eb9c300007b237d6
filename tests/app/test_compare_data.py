"""app/compare_data.py's reader: a live run's metrics.jsonl read on from where it stopped, a
torn last line waiting for its end, a file a resume shortened read again; and the thinning
of long curves."""

from __future__ import annotations

import json
import math

from puffer_tui.app.compare_data import MetricColumns
from puffer_tui.app.widgets.compare_plot import MAX_POINTS, thinned


def line(epoch: int, **extra) -> str:
    return json.dumps({"epoch": epoch, "global_step": epoch * 100, "uptime": epoch * 2.0,
                       "score": epoch / 10, **extra}) + "\n"


def test_reads_on_waits_for_a_whole_line_and_rereads_a_shortened_file(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(line(1) + line(2) + '{"epoch": 3, "glo')  # a row still being written
    columns = MetricColumns()
    assert columns.read_more(path) and len(columns) == 2
    assert not columns.read_more(path)  # nothing whole added
    with path.open("a") as f:
        f.write('bal_step": 300, "uptime": 6.0, "sps": 50}\n' + line(4))
    assert columns.read_more(path) and len(columns) == 4
    assert columns.values("global_step") == [100.0, 200.0, 300.0, 400.0]
    assert columns.pairs("global_step", "score") == [(100.0, 0.1), (200.0, 0.2), (400.0, 0.4)]
    assert math.isnan(columns.columns["score"][2]) and columns.last("sps") == 50.0
    snapshot = columns.copy()
    path.write_text(line(1) + line(2))  # a resume from epoch 2 dropped the rows after it
    assert columns.read_more(path)
    assert len(columns) == 2 and columns.last("global_step") == 200.0
    assert len(snapshot) == 4  # a copy handed to the screen is not changed by reading on
    assert not MetricColumns().read_more(tmp_path / "missing.jsonl")


def test_long_curves_are_thinned_keeping_the_last_point():
    xs = [float(i) for i in range(10 * MAX_POINTS + 3)]
    tx, ty = thinned(xs, [x * 2 for x in xs])
    assert len(tx) <= MAX_POINTS and tx[-1] == xs[-1] and ty[-1] == 2 * xs[-1]
    assert tx == sorted(tx)
    short = [1.0, 2.0]
    assert thinned(short, short) == (short, short)


def test_live_changes_are_placed_from_the_nearest_anchor_of_their_session(tmp_path):
    """Two engine sessions (a stop, then a resume); epochs of 2 s (uptime 2 e at step 100 e);
    the second session starts up for 3 s, which a placement from the session's start would
    count as training."""
    import os
    import time

    from puffer_tui.app.compare_data import read_set_events

    t0 = 1_790_000_000

    def at(s, text):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + s)) + f" [info] {text}\n"

    (tmp_path / "metrics.jsonl").write_text("".join(line(e) for e in range(1, 7)))
    os.utime(tmp_path / "metrics.jsonl", (t0 + 109.5, t0 + 109.5))
    (tmp_path / "events.log").write_text("".join([
        at(0, "engine 1 starting squared (new run)"),
        at(2, "train.gamma changed from 0.99 to 0.9 (from the next epoch, at step 100)"),
        at(4, "train.ent_coef changed from 0.01 to 0 (from the next minibatch)"),
        at(7, "stopped at step 300; checkpoint step-000000000300-epoch-00000003.pt"),
        at(100, "engine 2 starting squared (resuming)"),
        at(103, "resumed from step-000000000300-epoch-00000003.pt at step 300, epoch 3"),
        at(106, "train.learning_rate changed from 0.01 to 0.001 (from the next minibatch)"),
        at(109, "training finished at step 600; checkpoint ...")]))
    columns = MetricColumns()
    columns.read_more(tmp_path / "metrics.jsonl")
    gamma, ent, lr = read_set_events(tmp_path, columns)
    assert (gamma.key, gamma.step, gamma.uptime) == ("train.gamma", 100, 2.0)  # its own word
    assert (ent.step, ent.uptime) == (200, 3.0)  # 3 s before the stop at uptime 6
    # 3 s before the end (uptime 12): in epoch 5; 6 s after the session's start would say 6
    assert (lr.key, lr.old, lr.new, lr.step, lr.uptime) == (
        "train.learning_rate", "0.01", "0.001", 500, 9.0)
