"""engine/shared/events.py: events.log's entries (a stamp, the level, a multi-line text's
further lines indented), every subscriber told, and an event that cannot be written still
told, saying why."""

import re
import shutil
import threading

import pytest

from puffer_tui.engine.shared.events import EventLog, event_record, format_line
from puffer_tui.engine.shared.run_dir import EVENTS_FILE


def test_an_entry_is_one_stamped_line_and_a_traceback_is_indented():
    event = event_record("error", "training crashed\nTraceback:\n  File x\n", when=0.0)
    assert format_line(event) == ("1970-01-01T00:00:00Z [error] training crashed\n"
                                  "  Traceback:\n"
                                  "    File x")


def test_an_unknown_level_is_refused():
    with pytest.raises(ValueError, match="one of info, warning, error, got 'debug'"):
        event_record("debug", "x")


def test_events_are_appended_and_told_to_every_subscriber(tmp_path):
    log, told, also = EventLog(tmp_path), [], []
    log.subscribe(told.append)
    log.info("checkpoint saved")
    log.subscribe(also.append)  # from now on
    log.warning("slow env")
    assert [(e["level"], e["text"]) for e in told] == [("info", "checkpoint saved"),
                                                       ("warning", "slow env")]
    assert [e["text"] for e in also] == ["slow env"]
    lines = (tmp_path / EVENTS_FILE).read_text().splitlines()
    assert [re.sub(r"^\S+ ", "", line) for line in lines] == ["[info] checkpoint saved",
                                                              "[warning] slow env"]


def test_entries_from_many_threads_stay_whole(tmp_path):
    log = EventLog(tmp_path)
    threads = [threading.Thread(target=lambda i=i: [log.info(f"thread {i}\nsecond line")
                                                    for _ in range(50)]) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = (tmp_path / EVENTS_FILE).read_text().splitlines()
    assert len(lines) == 400
    for first, second in zip(lines[::2], lines[1::2]):
        assert re.fullmatch(r"\S+ \[info\] thread \d", first) and second == "  second line"


def test_a_removed_run_dir_still_tells_the_clients_why_it_was_not_written(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    log, told = EventLog(run), []
    log.subscribe(told.append)
    shutil.rmtree(run)
    event = log.error("disk full")
    assert event["text"].startswith(f"disk full\n(not written to {EVENTS_FILE}: ")
    assert told == [event]
    log.stop_writing()  # the engine noticed: no more attempts, and no note
    assert log.info("still here")["text"] == "still here"
    assert not run.exists()
