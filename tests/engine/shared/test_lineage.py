"""Branched runs listed as a tree: each under the run it started from (engine/shared/lineage.py), in
`puffer-tui runs` (with where it branched) and in the launcher's 30-column runs list."""

import json
import os
from pathlib import Path

from puffer_tui.app.cli import main
from puffer_tui.app.widgets.runs_list import ENTRY_WIDTH, run_entry, runs_as_tree
from puffer_tui.engine.shared import run_dir as rd
from puffer_tui.engine.shared.lineage import describe_parent, tree_order
from puffer_tui.engine.shared.run_dir import RunInfo

STEP = "step-000000002048-epoch-00000002.pt"


def ckpt_of(run: Path, name: str = STEP) -> str:
    return str(run / rd.CHECKPOINT_DIR / name)


def test_children_follow_their_parent_one_level_deeper():
    a, b, c, d, e = (Path(f"/runs/r{i}") for i in range(5))
    parents = {b: ckpt_of(a), c: ckpt_of(b), d: ckpt_of(a, "best.pt"),
               e: ckpt_of(Path("/elsewhere/gone"))}
    # newest first, as the launcher lists them: the children come after their parents anyway
    assert tree_order([e, d, c, b, a], parents) == [(e, 0), (a, 0), (d, 1), (b, 1), (c, 2)]
    assert tree_order([a, b, c, d, e], parents) == [(a, 0), (b, 1), (c, 2), (d, 1), (e, 0)]


def test_a_cycle_of_hand_edited_parents_is_still_listed_once_each():
    a, b = Path("/runs/a"), Path("/runs/b")
    order = tree_order([a, b], {a: ckpt_of(b), b: ckpt_of(a)})
    assert sorted(path for path, _ in order) == [a, b]


def test_where_a_branch_started_is_short():
    run = Path("/runs/squared-20261122-190522")
    assert describe_parent(ckpt_of(run)) == "squared-20261122-190522 @ 2,048"
    assert describe_parent(ckpt_of(run), with_run=False) == "step 2,048"
    assert describe_parent(ckpt_of(run, "best.pt")) == "squared-20261122-190522/best.pt"
    assert describe_parent("") == ""


def info(name, parent="", step=8192):
    return RunInfo(Path("/runs") / name, name, "squared", "finished", step, step, None, None,
                   parent=parent)


def test_launcher_entries_fit_its_column_at_every_depth():
    root = info("squared-20261122-190522", step=2048)
    child = info("squared-20261122-190925", ckpt_of(root.path))
    grandchild = info("squared-20261122-191418",
                      ckpt_of(child.path, "step-000000008192-epoch-00000008.pt"), step=10240)
    tree = runs_as_tree([grandchild, child, root])
    assert [(i.name, depth) for i, depth in tree] == [
        (root.name, 0), (child.name, 1), (grandchild.name, 2)]
    for item, depth in tree:
        for marked in (False, True):
            lines = run_entry(item, marked, depth).plain.split("\n")
            assert all(len(line) <= ENTRY_WIDTH for line in lines), lines
            assert lines[0].endswith(item.name[-6:])  # the distinct end of the name stays
    assert run_entry(child, False, 1).plain.split("\n")[1] == "  finished, 2.05k→8.19k"
    assert run_entry(root, False, 0).plain == "squared-20261122-190522\n  finished, 2,048 steps"


def test_runs_lists_a_branch_under_its_parent_with_where_it_started(tmp_path, capsys):
    def run(env, born, parent=""):
        path = rd.create_run_dir(env, tmp_path, now=born)
        line = f'parent = "{parent}"\n' if parent else ""
        (path / rd.CONFIG_FILE).write_text(f'env_name = "{env}"\n{line}')
        os.utime(path / rd.CONFIG_FILE, (born, born))  # listed in order of birth
        return path

    parent = run("squared", 1000)
    other = run("cartpole", 2000)
    child = run("squared", 3000, ckpt_of(parent))
    assert main(["runs", "--runs-dir", str(tmp_path), "--json"]) == 0
    listed = {Path(r["path"]).name: r["parent"] for r in json.loads(capsys.readouterr().out)["runs"]}
    assert listed == {parent.name: None, other.name: None, child.name: ckpt_of(parent)}
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "from step 2,048" in out
    # the child right under its parent, though the other run was created between them
    assert out.index("squared-") < out.index("└─") < out.index("cartpole")


async def test_the_launcher_shows_a_branch_under_its_parent_at_80x24(tmp_path):
    from puffer_tui.app.app import PufferApp
    from puffer_tui.screens.launcher.screen import LauncherScreen
    from tests.app.test_app_engine import until

    parent = rd.create_run_dir("squared", tmp_path, now=0)
    (parent / rd.CONFIG_FILE).write_text('env_name = "squared"\n')
    rd.write_json_atomic(parent / rd.STATUS_FILE, {"state": "finished", "global_step": 2048})
    child = rd.create_run_dir("squared", tmp_path, now=60)
    (child / rd.CONFIG_FILE).write_text(f'env_name = "squared"\nparent = "{ckpt_of(parent)}"\n')
    rd.write_json_atomic(child / rd.STATUS_FILE, {"state": "finished", "global_step": 8192})
    app = PufferApp(runs_root=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        assert isinstance(app.screen, LauncherScreen)

        def lines():
            return [s.text for s in app.screen._compositor.render_strips()]

        await until(pilot, lambda: any("└─" in line for line in lines()), "the runs tree")
        text = lines()
        at = {name: next(i for i, line in enumerate(text) if name in line)
              for name in (parent.name, "└─")}
        assert at[parent.name] < at["└─"]  # the child listed below its parent, indented
        assert child.name[-6:] in text[at["└─"]]
        assert "finished, 2.05k→8.19k" in text[at["└─"] + 1]
