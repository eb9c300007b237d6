"""An env worker that dies mid-collection (SIGKILL: a lost machine, an OOM kill) no longer
takes the learning with it: the engine saves a checkpoint of the last finished epoch (the
learner state is intact), names the dead worker and how to go on, and `--resume` continues
from that checkpoint. It ended with the error alone, losing everything since the last
periodic checkpoint (4.2M steps on squared's defaults)."""

from engine_harness import make_run

from puffer_tui.app.cli import main
from puffer_tui.engine.shared import checkpoint as ckpt
from puffer_tui.engine.shared import run_dir as rd
from tests.engine.runtime.test_recovery_faults import (  # noqa: F401
    RECVS_PER_EPOCH,
    STEPS_PER_EPOCH,
    cleanup,
    events,
    start_engine,
)


def test_a_killed_env_worker_leaves_a_checkpoint_of_the_last_epoch_and_resume_goes_on(
        tmp_path, cleanup, capsys):  # noqa: F811
    run = make_run(tmp_path, **{"train.total_timesteps": 100 * STEPS_PER_EPOCH,
                                "train.checkpoint_interval": 0,  # none but the one it saves
                                "vec.backend": "multiprocessing", "vec.num_workers": 2})
    # the last worker is killed in the middle of the 4th epoch's collection
    proc = start_engine(run, PUFFER_TEST_KILL_WORKER=str(3 * RECVS_PER_EPOCH + 5))
    cleanup.append((run, proc))
    assert proc.wait(120) == 1
    log = events(run)
    line = next(ln for ln in log.splitlines() if "died" in ln and "[error]" in ln)
    assert "env worker 1 died" in line and "checkpoint of epoch 3" in line, line
    assert "puffer-tui train --resume" in line
    (saved,) = ckpt.list_checkpoints(run)
    assert ckpt.parse_name(saved.name)[1] == 3
    assert rd.read_status(run)["state"] == "error"

    assert main(["train", "--resume", str(run), "--headless",
                 "--train.total-timesteps", str(6 * STEPS_PER_EPOCH)]) == 0, \
        capsys.readouterr().err
    log = events(run)
    assert "resume is not exact" in log and "env worker 1 died" in log
    assert rd.read_status(run)["state"] == "finished"
