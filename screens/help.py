"""The keys, and what each one does.

Tested in: tests/screens/test_app_keys.py, tests/screens/test_app_snapshots.py"""

from __future__ import annotations

from rich.markdown import Markdown as RichMarkdown
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

HELP = """\
# puffer-tui keys

**Dashboard**

- `p` pause / resume training (the engine and its workers idle while paused)
- `c` save a checkpoint now
- `s` stop the run (asks first; the engine checkpoints and exits)
- `h` hyperparameter editor (live fields change while training)
- `r` full-screen render of one environment; `[` `]` previous / next env
- `g` saliency over the render: what drives the policy's choice (|d log pi(a|s) / d obs|),
  again: of the value V(s), again: off. The policy strip beside the render shows the
  action probabilities (the action taken marked), V(s), the reward, and once an episode
  ends V(s_t) against the realized return with the critic's error
- `l` plot the next loss curve
- `v` replay the run's newest recording in the env panel (shown once one exists; any key stops)
- `a` apply the diagnosis line's suggested change (a live `set`, acknowledged in the event
  log; offered only while the line shows one), `x` hide the diagnosis (the engine silences
  that rule for this run), `d` the diagnoses in full: evidence, the epochs, what follows from
  what (`n` next, `a` and `x` there too). The line and these keys appear only while a
  diagnosis is in force
- `A` autopilot on/off (`train.autopilot`): the diagnoses' live fixes apply by themselves,
  each in the event log with its evidence and the `set` that undoes it; the header says
  "autopilot" while it is on; off leaves the settings as they are
- `ctrl+p` command palette (every action above, by name)
- `?` this help
- `b` back to the launcher (once the run has finished or stopped)
- `q` quit: **detach** (training goes on) or **stop** the run

Pause, checkpoint, stop and the editor need a live engine: once the run has finished or
stopped they leave the footer and the palette. The last epoch runs whole, so the step can
pass the target: the header then reads `step 4M+61.4k` and stays at 100%.

In the full-screen render, `o` switches between the env's own drawing and its
observation as the policy sees it (an image observation, e.g. Atari's 84x84 frame stack).

**Sweep view** (`puffer-tui sweep ...`, `puffer-tui attach SWEEP`)

- `enter` on a running trial: its dashboard (`b` comes back to the sweep)
- `x` prune the highlighted running trial (recorded as pruned)
- `p` pause / resume launching new trials (running ones go on)
- `+` add one trial to the study's target
- `o` sort the table (trial, score, state, duration, cost)
- `s` stop the sweep (asks first; running trials are rerun by `--resume`)
- `q` quit the view: the sweep goes on

**Comparing runs** (launcher)

- `space` on a run in the runs list marks it (●) or unmarks it; `ctrl+o` compares the
  marked runs (two or more, live or finished)
- in the comparison: `m` next metric (score, return, losses, SPS), `x` by step or by time
  trained, `b` or `escape` back; `|` lines mark hyperparameters changed live
- `puffer-tui runs --compare A B ...` prints their config differences and final figures

**Branching runs** (launcher)

- the runs list shows each branched run under its parent (`└─`, with the steps it trained
  from its branch point: `2.05k→8.19k`)
- `b` on a run opens its branch form: the settings its latest checkpoint trained with; change
  any (the budget must go above its steps), then `ctrl+s`: a new run from that checkpoint,
  recording its parent (`puffer-tui train --from RUN[/CHECKPOINT]` on the command line).
  Choosing an env leaves the form.
- `ctrl+t` autotunes the selected env (about 30 s): the fastest vectorization layout on this
  machine fills the [vec] fields

**Enter, everywhere:** Enter confirms what has the focus. On a list it opens the highlighted
entry (an env: start training it with the preset; a recent run: attach if it is training,
else ask whether to resume it, naming its step and checkpoint). In a field it confirms that
value: the editor sends it to the engine (which says when it applies), the launcher checks
it and moves to the next field. `tab` moves
between lists and fields; `ctrl+s` starts training from anywhere in the launcher.

Detached runs keep training: `puffer-tui attach [RUN]` reconnects (the latest running run
if RUN is omitted). If the engine stops answering, the header says **not responding**; if it
dies, its traceback is shown with an offer to resume from the last checkpoint.

`escape` or `?` closes this help.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            # one widget drawing Rich's Markdown: Textual's Markdown widget made ~200 widgets
            # of this text (one per paragraph and list item), each styled before it showed
            yield Static(RichMarkdown(HELP), id="help-text")
        yield Footer(compact=True)  # `esc Close` in sight: the text's own hint is at its end
