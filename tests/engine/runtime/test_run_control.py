"""The run state and its pause/stop flags (engine/runtime/run_control.py): which changes each
method allows, so no caller flips a flag without its state."""

from puffer_tui.engine.runtime.run_control import RunControl
from puffer_tui.engine.shared.protocol import RunState


def running() -> RunControl:
    control = RunControl()
    control.enter(RunState.RUNNING)
    return control


def test_a_run_starts_starting_with_no_flag_set():
    control = RunControl()
    assert control.run_state == RunState.STARTING
    assert not control.paused and not control.stop_requested and control.stop_checkpoint


def test_pause_and_resume_each_change_the_run_once():
    control = running()
    assert control.pause() and control.paused and control.run_state == RunState.PAUSED
    assert not control.pause()  # already paused
    assert control.resume() and not control.paused and control.run_state == RunState.RUNNING
    assert not control.resume()  # not paused


def test_a_stop_releases_a_paused_run_and_refuses_a_later_pause():
    control = running()
    control.pause()
    control.request_stop(checkpoint=False)
    assert control.stop_requested and not control.paused
    assert control.run_state == RunState.STOPPING and not control.stop_checkpoint
    assert not control.pause()


def test_a_stop_is_overdue_after_its_grace_counted_from_the_first_request():
    control = running()
    assert not control.stop_overdue(0.0)  # no stop asked
    control.request_stop(checkpoint=True)
    first = control.stop_requested_at
    control.request_stop(checkpoint=True)  # asked again: the wait is not restarted
    assert control.stop_requested_at == first
    assert control.stop_overdue(-1.0) and not control.stop_overdue(3600.0)


def test_a_withdrawn_stop_lets_the_run_be_stopped_or_paused_again():
    control = running()
    control.request_stop(checkpoint=True)
    control.withdraw_stop()
    assert not control.stop_requested and control.pause()
