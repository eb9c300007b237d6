"""What the terminal shows after the dashboard closes: a stop asked from it (`s`, or q then
"stop") prints the step, the checkpoint and the resume command, as `train --headless` does;
SIGTERM or SIGHUP close the app and hand the engine over to that same ending; the exit status
says how the run ended. The app's side runs on fixed data; the ending on a run dir whose
engine has exited (its pid is none alive)."""

from __future__ import annotations

import io

from rich.console import Console

from puffer_tui.app import link_messages as lm
from puffer_tui.app.app_exit import AppExit, after_exit
from puffer_tui.engine.shared import exit_codes
from puffer_tui.engine.shared import run_dir as rd
from tests.screens.test_app_snapshots import FixedDataApp


def ended_run(root, state: str):
    run = rd.create_run_dir("squared", root)
    (run / rd.CONFIG_FILE).write_text('env_name = "squared"\n')
    checkpoint = run / rd.CHECKPOINT_DIR / "step-000000720896-epoch-00000011.pt"
    checkpoint.write_bytes(b"x")
    rd.write_json_atomic(run / rd.STATUS_FILE, {
        "state": state, "pid": 1 << 22, "global_step": 720896,
        "last_checkpoint": str(checkpoint)})
    return run, checkpoint


def shown(done: AppExit) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = after_exit(done, Console(file=out, width=400))
    return code, out.getvalue().splitlines()


def test_a_stop_from_the_dashboard_says_step_checkpoint_and_resume(tmp_path):
    run, checkpoint = ended_run(tmp_path, "stopped")
    code, lines = shown(AppExit(run_dir=run, stop_asked=True, owns_engine=True,
                                message=f"The run is stopped: {run}"))
    assert code == exit_codes.STOPPED
    assert lines == [f"{run.name} stopped: 720,896 steps; checkpoint {checkpoint}",
                     f"resume with: puffer-tui train --resume {run}"]


def test_quitting_a_finished_run_says_how_it_ended(tmp_path):
    run, checkpoint = ended_run(tmp_path, "finished")
    code, lines = shown(AppExit(run_dir=run, ended=True))
    assert code == exit_codes.FINISHED
    assert lines == [f"{run.name} finished: 720,896 steps; checkpoint {checkpoint}"]


def test_a_detach_says_how_to_reattach_and_that_the_engine_trains_on(tmp_path):
    run, _ = ended_run(tmp_path, "running")
    message = f"Detached: training goes on in {run}.\nReattach with: puffer-tui attach x"
    assert shown(AppExit(run_dir=run, owns_engine=True, message=message)) == (
        exit_codes.LEFT_RUNNING, message.splitlines())
    assert shown(AppExit(run_dir=run, message=message))[0] == exit_codes.FINISHED  # attach


def test_a_signal_to_an_attached_dashboard_leaves_the_engine_alone(tmp_path):
    run, _ = ended_run(tmp_path, "running")
    code, lines = shown(AppExit(run_dir=run, signal="SIGTERM", owns_engine=False,
                                message="Detached: training goes on."))
    assert code == exit_codes.FINISHED
    assert lines == ["SIGTERM: the dashboard closed; Detached: training goes on."]
    events = run / rd.EVENTS_FILE
    assert not events.exists() or "stop asked" not in events.read_text()


async def test_the_app_remembers_an_accepted_stop_and_closes_on_sigterm():
    app = FixedDataApp("dashboard")
    async with app.run_test(size=(100, 30)) as pilot:
        app.post_message(lm.Replied("stop", {"checkpoint": True}, {"ok": True}, app.link))
        await pilot.pause(0.2)
        assert app.stop_asked
        app._on_stop_signal("SIGTERM")
        await pilot.pause(0.2)
    assert app.stop_signal == "SIGTERM" and app.return_code in (0, None)
