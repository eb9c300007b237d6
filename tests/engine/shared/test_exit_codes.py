"""engine/shared/exit_codes.py: one list of exit statuses, each distinct and explained, and the
--help paragraph that lists those a verb can end with."""

from puffer_tui.app.cli import build_parser
from puffer_tui.engine.shared import exit_codes as ec


def test_each_status_is_distinct_and_explained():
    codes = [ec.FINISHED, ec.ERROR, ec.USAGE, ec.STOPPED, ec.LEFT_RUNNING, ec.INTERRUPTED]
    assert len(set(codes)) == len(codes)
    assert set(ec.CODES) == set(codes) and all(ec.CODES.values())


def test_the_epilog_lists_the_codes_asked_for_in_order_aligned():
    assert ec.help_epilog((ec.STOPPED, ec.FINISHED)).splitlines() == [
        "exit status:",
        f"  3    {ec.CODES[ec.STOPPED]}",
        f"  0    {ec.CODES[ec.FINISHED]}"]
    lines = ec.help_epilog().splitlines()
    assert len(lines) == 1 + len(ec.CODES) and lines[-1].startswith("  130  ")


def test_a_verbs_help_ends_with_its_statuses():
    parser = build_parser()
    verbs = parser._subparsers._group_actions[0].choices
    assert verbs["export"].epilog == ec.help_epilog((ec.FINISHED, ec.ERROR, ec.USAGE))
    assert "exit status:" in parser.epilog
