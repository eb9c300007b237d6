"""The dashboard's diagnosis line and keys, with fixed data (tests/app_fakes.py) and the
requests the app would send recorded: `a` sends the suggestion's live `set`, `x` silences
the rule, `d` opens the evidence; a finished run offers no apply; 80x24 fits."""

from __future__ import annotations

from app_fakes import push, telemetry

from puffer_tui.app.widgets.diagnosis_line import DiagnosisLine, merge_diagnosis
from puffer_tui.screens.dashboard import DashboardScreen
from puffer_tui.screens.diagnosis import DiagnosisScreen
from tests.screens.test_app_keys import OfflineApp

KL = {"type": "diagnosis", "time": 1_790_000_041.0, "rule": "kl_blowup", "status": "fired",
      "epoch": 1, "global_step": 65536, "severity": "error",
      "text": "updates overshoot: approx_kl 2.27e+04 (usual 0.01-0.05), clipfrac 0.94 "
              "(usual 0.1-0.3): learning rate 0.9 too high?",
      "evidence": {"approx_kl": 22712.86, "clipfrac": 0.9375, "learning_rate": 0.9,
                   "epochs": [1]},
      "suggestion": {"key": "train.learning_rate", "from": 0.9, "to": 0.09, "live": True},
      "hint": ""}
OBS = {"type": "diagnosis", "time": 1_790_000_042.0, "rule": "obs_scale", "status": "fired",
       "epoch": 2, "global_step": 8192, "severity": "warning",
       "text": "observation column 1 reaches 1.9e+04, 9500x the typical column (2)",
       "evidence": {"column": 1, "ratio": 9500.0, "epochs": [1, 2]},
       "suggestion": {"key": "train.normalize_observations", "to": True, "live": False,
                      "restart": "--train.normalize-observations true"}, "hint": ""}


def screen_text(app) -> str:
    return "\n".join(s.text for s in app.screen._compositor.render_strips())


async def settle(pilot, app, predicate, what: str):
    for _ in range(60):  # a loaded machine redraws late (bounded)
        await pilot.pause(0.1)
        if predicate():
            return
    raise AssertionError(f"gave up waiting for {what}:\n{screen_text(app)}")


async def test_the_line_shows_the_diagnosis_and_a_applies_its_set():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        line = app.screen.query_one(DiagnosisLine)
        assert not line.display or line.top is None  # nothing in force: no line
        push(app, KL)
        await settle(pilot, app, lambda: "kl_blowup" in screen_text(app), "the line")
        text = screen_text(app)
        assert "train.learning_rate 0.9 -> 0.09" in text
        assert "d: why" in text
        await settle(pilot, app, lambda: "a Fix" in screen_text(app).splitlines()[-1],
                     "the footer's keys")
        footer = screen_text(app).splitlines()[-1]
        assert "x Hide" in footer and "q Quit" in footer  # 80 columns hold them all
        await pilot.press("a")
        await pilot.pause(0.1)
        assert app.sent[-1] == ("set", {"key": "train.learning_rate", "value": 0.09})
        await settle(pilot, app, lambda: "applied" in screen_text(app), "the applied mark")


async def test_x_silences_the_rule_and_the_line_goes():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        push(app, KL)
        await settle(pilot, app, lambda: "kl_blowup" in screen_text(app), "the line")
        await pilot.press("x")
        await pilot.pause(0.1)
        assert app.sent[-1] == ("diagnosis", {"silence": "kl_blowup"})
        await settle(pilot, app, lambda: "kl_blowup" not in screen_text(app), "the line gone")


async def test_d_shows_the_evidence_and_a_restart_is_not_applied():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        push(app, OBS)
        push(app, KL)
        await settle(pilot, app, lambda: "(+1)" in screen_text(app), "two diagnoses")
        await pilot.press("d")
        await settle(pilot, app, lambda: isinstance(app.screen, DiagnosisScreen), "the screen")
        text = screen_text(app)
        assert "approx_kl" in text and "2.271e+04" in text  # the evidence's numbers
        assert "seen at epochs" in text
        assert "restart with --train.normalize-observations true" in text
        await pilot.press("n")  # the restart one: no apply offered
        await pilot.pause(0.1)
        assert not app.screen.check_action("apply", ())
        sent = len(app.sent)
        await pilot.press("a")
        await pilot.pause(0.1)
        assert len(app.sent) == sent
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


async def test_a_finished_run_shows_its_diagnoses_without_apply():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        push(app, {**telemetry(41, state="finished"), "diagnoses": [KL]})
        await settle(pilot, app, lambda: "kl_blowup" in screen_text(app), "the line")
        dashboard = app.screen
        assert not dashboard.check_action("diagnosis_apply", ())
        assert dashboard.check_action("diagnosis", ())
        sent = len(app.sent)
        await pilot.press("a")
        await pilot.press("x")  # dismissed here; nothing to tell a finished engine
        await pilot.pause(0.1)
        assert len(app.sent) == sent
        await settle(pilot, app, lambda: "kl_blowup" not in screen_text(app), "the line gone")


def test_a_cleared_push_removes_its_rule_and_a_fired_one_replaces_it():
    state = [KL, OBS]  # telemetry's diagnoses
    assert [d["rule"] for d in merge_diagnosis(state, {**KL, "status": "cleared"})] == \
        ["obs_scale"]
    again = merge_diagnosis(state, {**KL, "epoch": 9})
    assert [(d["rule"], d["epoch"]) for d in again] == [("obs_scale", 2), ("kl_blowup", 9)]


COLLAPSE = {"type": "diagnosis", "time": 1_790_000_045.0, "rule": "policy_collapse",
            "status": "fired", "epoch": 5, "global_step": 327680, "severity": "error",
            "text": "policy collapsed: entropy 0.0026 of at most 1.61 while the score stayed "
                    "at 0.0283: it stopped exploring before it learned",
            "evidence": {"entropy": 0.0026, "entropy_max": 1.61, "epochs": [4, 5]},
            "suggestion": None, "hint": "lower train.learning_rate",
            "explained_by": ["kl_blowup"], "follows": "kl_blowup"}


async def test_what_follows_from_the_cause_is_folded_under_it():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        push(app, KL)
        push(app, COLLAPSE)  # the more recent, equally severe: still folded under its cause
        await settle(pilot, app, lambda: "1 follow" in screen_text(app), "the folded line")
        line = next(ln for ln in screen_text(app).splitlines() if "kl_blowup" in ln)
        assert "policy_collapse" not in line and "+1" not in line  # the line says one thing
        await pilot.press("d")
        await settle(pilot, app, lambda: isinstance(app.screen, DiagnosisScreen), "the screen")
        text = screen_text(app)
        assert "follows from kl_blowup" in text and "entropy_max" in text  # evidence kept
        assert text.index("kl_blowup") < text.index("policy_collapse")
        await pilot.press("escape")
        await pilot.press("x")  # the cause hidden: what followed from it is its own line now
        await settle(pilot, app, lambda: "✖ policy_collapse" in screen_text(app), "the next")


def footer(app) -> str:
    return screen_text(app).splitlines()[-1]


def footer_drawn(app) -> bool:
    """The footer recomposes when the keys change and is blank for a frame: wait for its
    keys, or a predicate about an absent key passes on the blank frame (CI saw that)."""
    return "q Quit" in footer(app)


async def test_the_footer_offers_each_key_only_while_it_does_something():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app, lambda: footer_drawn(app), "the footer")
        assert "Fix" not in footer(app) and "Hide" not in footer(app)  # nothing in force
        push(app, OBS)  # a restart: nothing to apply live
        await settle(pilot, app, lambda: "x Hide" in footer(app), "x for the restart one")
        assert "a Fix" not in footer(app)
        push(app, KL)  # more severe, with a live change: `a` comes
        await settle(pilot, app, lambda: "a Fix" in footer(app), "a for the live one")
        await pilot.press("a")
        await settle(pilot, app, lambda: footer_drawn(app) and "a Fix" not in footer(app),
                     "a gone once sent")
        assert "x Hide" in footer(app) and app.sent[-1][0] == "set"
        await pilot.press("x")  # kl_blowup hidden: obs_scale's restart on top, still no `a`
        await settle(pilot, app, lambda: "obs_scale" in screen_text(app) and footer_drawn(app),
                     "the next one")
        assert "a Fix" not in footer(app) and "x Hide" in footer(app)
        await pilot.press("x")
        await settle(pilot, app, lambda: footer_drawn(app) and "Hide" not in footer(app),
                     "the keys gone")


async def test_the_help_lists_the_diagnosis_keys():
    app = OfflineApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await settle(pilot, app, lambda: "puffer-tui keys" in screen_text(app), "the help")
        from puffer_tui.screens.help import HELP
        for key in ("`a` apply the diagnosis", "`x` hide the diagnosis", "`d` the diagnoses"):
            assert key in HELP
