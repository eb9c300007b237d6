"""`runs --compare` and `runs` give a run one step count: its latest state's (status.json and
the checkpoint), which is past metrics.jsonl's last row when a stop cut an epoch's update
(the epoch counts; it wrote no row)."""

from compare_runs import make_compare_run

from puffer_tui.app.commands.runs_compare import figure_text
from puffer_tui.app.compare_data import final_figures, load_run
from puffer_tui.engine.shared import run_dir as rd


def test_a_cut_epoch_counts_in_compare_as_in_runs(tmp_path):
    run = make_compare_run(tmp_path, state="stopped", epochs=6)  # rows up to step 24,576
    rd.write_json_atomic(run / rd.STATUS_FILE, {"state": "stopped", "global_step": 7 * 4096,
                                                "epoch": 7, "total_timesteps": 10 * 4096})
    figures = final_figures(load_run(run))
    assert figures["steps"] == rd.run_info(run).global_step == 7 * 4096
    assert figures["epochs"] == 7
    assert figure_text("steps", figures["steps"]) == "28,672"


def test_a_set_to_the_value_in_force_is_no_change_in_compare(tmp_path):
    run = make_compare_run(tmp_path, learning_rate="0.005", set_at_s=20)  # 0.005 -> 0.001
    events = run / rd.EVENTS_FILE
    lines = events.read_text().splitlines()
    lines.insert(2, lines[1][:21] + "[info] train.learning_rate changed from 0.005 to 5e-3 "
                 "(from the next minibatch)")
    events.write_text("\n".join(lines) + "\n")
    changes = [(e.old, e.new) for e in load_run(run).events]
    assert changes == [("0.005", "0.001")], changes
