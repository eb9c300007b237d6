"""The launcher: pick an env (or type any env spec), adjust its preset, start; or reopen a
recent run.

Everything here comes from the config schema and the engine's env catalogue (plain data: no
native env module is imported here), so a new env or a new field shows up without touching
this file. The spec field completes plugin names and `gym:ID` for every registered Gymnasium
id; the specs chosen there are remembered (app/services/recent_specs.py) and listed under the envs.
"""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from puffer_tui.app import navigation as nav
from puffer_tui.app.run_preparation import RunRefused, check_resume
from puffer_tui.app.serve_code_specs import code_spec_refusal
from puffer_tui.app.services.env_catalogue import describe_envs, preset_label, spec_suggestions
from puffer_tui.app.services.recent_specs import recent, remember
from puffer_tui.app.widgets.format import human
from puffer_tui.app.widgets.ordered_input import OrderedInput
from puffer_tui.app.widgets.ordered_keys import OrderedOptionList
from puffer_tui.app.widgets.override_form import OverrideForm, OverrideRow
from puffer_tui.app.widgets.runs_list import (
    ENTRY_GUTTER,
    ENTRY_WIDTH,
    SWEEP_OPTION,
    RunsList,
    recent_sweeps,
    run_entry,
    runs_as_tree,
    sweep_entry,
)
from puffer_tui.engine.shared.config import ConfigError, load_config, schema
from puffer_tui.engine.shared.protocol import LIVE_STATES
from puffer_tui.engine.shared.run_dir import list_runs, run_info, runs_root
from puffer_tui.screens.confirm import ChoiceDialog
from puffer_tui.screens.launcher import launcher_autotune
from puffer_tui.screens.launcher.branch_form import (
    BRANCH_FORM,
    BranchBaseRead,
    BranchPrepared,
    BranchRefused,
    BranchUnreadable,
    branch_title,
    prepare_branch_run,
    read_branch_base,
)
from puffer_tui.screens.launcher.entries import (
    SpecSuggester,
    env_option,
    env_spaces,
    field_text,
    typed_spec_info,
)

FORM_DELAY_S = 0.15  # the preset form follows the env cursor once it rests this long


def resume_question(path: Path, info=None) -> str:
    """What Enter on a stopped run asks: the run, where it stands, and what resuming does."""
    info = info or run_info(path)
    step, total = info.global_step or 0, info.total_timesteps
    where = f"at step {step:,}" + (f" of {total:,} ({human(total)})" if total else "")
    checkpoint = info.last_checkpoint.name if info.last_checkpoint else "its latest checkpoint"
    goal = f"trains on to {total:,} steps" if total else "trains on to its step budget"
    return (f"Resume {info.name}?\nIt is {info.state} {where}. Resuming starts its engine "
            f"again from {checkpoint} and {goal}, using this machine's CPU until it is "
            f"stopped or done.")


class LauncherScreen(Screen):
    # 80x24 first: a 30-column left side (envs, recent runs), the preset on the right with the
    # focused field shown in full below it. A wider terminal widens the left side too (run
    # names whole), a taller one lists every env without a scrollbar (screens/screens.tcss).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide"), (160, "-wider")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]

    BINDINGS = [
        Binding("ctrl+s", "start", "Start training"),
        Binding("ctrl+o", "compare", "Compare"),
        Binding("ctrl+t", "autotune", "Autotune"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, runs_root: str | Path | None = None):
        super().__init__()
        self.runs_root = runs_root
        self.env_name = "squared"
        self._infos: dict[str, dict] = {}
        self._form_timer = None
        self._suggester = SpecSuggester()
        self._run_infos: dict[str, object] = {}  # option id (the run's path) -> RunInfo
        self._run_depths: dict[str, int] = {}  # option id -> depth in the lineage tree
        self.marked: list[str] = []  # the runs marked for comparison, in marking order
        self.branch_source: Path | None = None  # the checkpoint the branch form starts from
        self._branch_reading: Path | None = None  # `b` on this run: its checkpoint is read
        self._branching = False  # a branch's run dir is being written
        self._entry_width = ENTRY_WIDTH  # the runs list's entries are drawn this wide
        self._form_built = asyncio.Event()  # clear while a preset form is being mounted
        self._form_built.set()

    def compose(self) -> ComposeResult:
        yield Static("puffer-tui   Enter on an env: train it   tab: lists and fields   ?: help",
                     id="title")
        with Horizontal():
            with Vertical(id="left"):
                yield OrderedOptionList(id="envs")
                with Vertical(id="spec-box"):
                    yield OrderedInput(placeholder="gym:ID or module:fn", id="spec", compact=True,
                                       suggester=self._suggester)
                yield RunsList(id="runs")
            with Vertical(id="right"):
                with Horizontal(id="start-row"):
                    yield Button("Start", id="start", variant="success", compact=True)
                    yield Static("", id="spaces")
                yield Static("", id="chosen")
                yield Vertical(id="form-holder")
                yield Static("", id="field")
        yield Footer()

    async def on_mount(self) -> None:
        envs = self.query_one("#envs", OptionList)
        envs.border_title = "environments"
        spec_box = self.query_one("#spec-box")
        spec_box.border_title = "any env spec"
        spec_box.border_subtitle = "→ completes"
        runs = self.query_one("#runs", OptionList)
        runs.border_title = "runs and sweeps"
        runs.border_subtitle = "Enter: open  space: mark"
        self.query_one("#right").border_title = "preset and overrides"
        self._load_envs()
        self._load_runs()
        envs.focus()
        # the preset form (~70 rows, hundreds of widgets to style) is built after the first
        # paint: the lists and the title show at once instead of after it
        self._show_summary()
        self.query_one("#field", Static).update(
            Text(f"{self.env_name}'s preset...", style="dim"))
        self.call_after_refresh(self.call_after_refresh, self._first_form)  # shown, then built

    async def _first_form(self) -> None:
        if not self.query(OverrideForm) and self.branch_source is None:
            await self._show_env(self.env_name)

    def _recent_specs(self) -> list[str]:
        return recent(runs_root(self.runs_root))

    @work(thread=True, group="launcher")
    def _load_envs(self) -> None:
        # Describing an env loads its native module (in the engine room): off the UI thread.
        infos = describe_envs()
        known = {i["name"] for i in infos}
        infos += [typed_spec_info(s) for s in self._recent_specs() if s not in known]
        self.app.call_from_thread(self._fill_envs, infos)
        suggestions = spec_suggestions()
        self._suggester.candidates = [*(i["name"] for i in infos if i.get("typed")),
                                      *suggestions]

    def _fill_envs(self, infos: list[dict]) -> None:
        self._infos = {i["name"]: i for i in infos}
        self._show_summary()
        envs = self.query_one("#envs", OptionList)
        envs.clear_options()
        envs.add_options([env_option(i) for i in infos])
        names = [i["name"] for i in infos]
        if self.env_name in names:
            envs.highlighted = names.index(self.env_name)

    @work(thread=True, group="launcher")
    def _load_runs(self) -> None:
        infos = [run_info(p) for p in reversed(list_runs(runs_root(self.runs_root)))][:20]
        self.app.call_from_thread(self._fill_runs, infos, recent_sweeps(self.runs_root))

    def _fill_runs(self, infos, sweeps=()) -> None:
        runs = self.query_one("#runs", OptionList)
        runs.clear_options()
        if not infos and not sweeps:
            runs.add_option(Option(Text("no runs yet", style="dim"), id="none", disabled=True))
        for sweep in sweeps:  # the sweeps first: a sweep's trials are runs of their own
            runs.add_option(Option(sweep_entry(sweep), id=SWEEP_OPTION + str(sweep["path"])))
        self._run_infos = {str(info.path): info for info in infos}
        self._run_depths = {}
        self.marked = [m for m in self.marked if m in self._run_infos]
        self._entry_width = self._runs_room()
        for info, depth in runs_as_tree(infos):  # branches under the runs they came from
            self._run_depths[str(info.path)] = depth
            runs.add_option(Option(self._run_prompt(str(info.path)), id=str(info.path)))
        if infos or sweeps:
            runs.highlighted = 0  # so Enter acts on a run as soon as the list has the focus
        self._run_states = {str(i.path): i.state for i in infos}

    def _runs_room(self) -> int:
        """Columns a run's entry may take: the runs list's width less its frame."""
        width = self.query_one("#runs", OptionList).outer_size.width
        return max(width - ENTRY_GUTTER, ENTRY_WIDTH)

    def _run_prompt(self, option_id: str) -> Text:
        return run_entry(self._run_infos[option_id], option_id in self.marked,
                         self._run_depths.get(option_id, 0), self._entry_width)

    def on_resize(self, event) -> None:
        # the left side follows the terminal's width: the entries follow the list's
        self.call_after_refresh(self._fit_entries)

    def _fit_entries(self) -> None:
        room = self._runs_room()
        if room == self._entry_width:
            return
        self._entry_width = room
        runs = self.query_one("#runs", OptionList)
        for option_id in self._run_infos:
            runs.replace_option_prompt(option_id, self._run_prompt(option_id))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_list.id == "envs" and self._branch_reading is not None:
            self._branch_reading = None  # an env chosen before the branch form showed: no form
            self._show_summary()
        if event.option_list.id == "envs" and self.branch_source is not None:
            self._leave_branch()  # an env chosen: its preset replaces the branch form
            self.env_name = ""
        if event.option_list.id == "envs" and event.option.id != self.env_name:
            # The spaces show at once; the form (dozens of widgets) is built once the cursor
            # rests, so holding Down through the list does not build every env's form.
            self.env_name = event.option.id
            self._show_summary()
            # The previous env's form goes at once: its fields are not this env's.
            self.query_one("#form-holder").display = False
            self.query_one("#field", Static).update(
                Text(f"{self.env_name}'s preset...", style="dim"))
            if self._form_timer is not None:
                self._form_timer.stop()
            self._form_timer = self.set_timer(FORM_DELAY_S, self._sync_form)

    async def _sync_form(self) -> None:
        await self._form_built.wait()  # one being built (the first, after the first paint)
        forms = self.query(OverrideForm)
        if not forms or forms.first().env_name != self.env_name:
            await self._show_env(self.env_name)
        else:  # back on the env whose form it is
            self._form_shown()

    async def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "envs":
            if self.branch_source is not None:
                self._leave_branch()
            await self.action_start()
        elif event.option_list.id == "runs" and event.option.id.startswith(SWEEP_OPTION):
            self.post_message(nav.OpenSweep(Path(event.option.id[len(SWEEP_OPTION):])))
        elif event.option_list.id == "runs" and event.option.id != "none":
            path = Path(event.option.id)
            if getattr(self, "_run_states", {}).get(event.option.id) in LIVE_STATES:
                self.post_message(nav.OpenRun(path, attach=True))
            else:
                self.open_ended_run(path)

    def open_ended_run(self, path: Path) -> None:
        """A run with no engine: resumed where it can go on (stopped, or paused by an error);
        one that cannot (finished, no checkpoint...) opens in the compare view, its curves
        and figures, with why and how to train it on, rather than as a resume error."""
        try:
            check_resume(path)
        except RunRefused as e:
            self.post_message(nav.OpenCompare([path]))
            # the refusal names the run and how to train it on (a higher budget)
            self.notify(str(e), title="its curves and figures (b: back)", timeout=12,
                        markup=False)
            return

        def chosen(choice: str | None) -> None:
            if choice == "resume":
                self.post_message(nav.ResumeRun(path))
            elif choice == "curves":
                self.post_message(nav.OpenCompare([path]))

        # resuming starts an engine that may train for hours: asked, never done on one key
        self.app.push_screen(ChoiceDialog(
            resume_question(path, self._run_infos.get(str(path))),
            [("resume", "Resume training", "success"), ("curves", "View its curves", "primary"),
             ("cancel", "Cancel", "default")], focus="cancel"), chosen)

    async def _show_env(self, name: str, config=None, form_name: str | None = None) -> None:
        """The form of `name`'s preset (or of `config`: a branch's starting settings)."""
        self.env_name = name
        self._show_summary()
        try:
            config = load_config(name) if config is None else config
        except ConfigError as e:
            self.query_one("#chosen", Static).update(Text(str(e), style="red"))
            return
        preset = {f"{section}.{k}": v for section, values in config.as_dict().items()
                  if isinstance(values, dict) for k, v in values.items()}
        if label := preset_label(name):  # the env's family preset (envs/gym_presets/family.py)
            self.query_one("#chosen", Static).update(Text(
                f"{(self._infos.get(name) or {}).get('description', '')}  defaults: {label}"))
        # Await the old form's removal before mounting the new one: both have the id "form",
        # and this handler runs to completion before the next highlight is handled.
        holder = self.query_one("#form-holder")
        self._form_built.clear()  # a start waits for the rows, not a form half composed
        try:
            await holder.remove_children()
            await holder.mount(OverrideForm(schema(name), preset, env_name=form_name or name,
                                            id="form"))
        finally:
            self._form_built.set()
        self._form_shown()

    def _form_shown(self) -> None:
        self.query_one("#form-holder").display = True
        self.query_one("#field", Static).update(
            Text("tab to a field: its value, bounds and help show here", style="dim"))

    def _show_summary(self) -> None:
        info = self._infos.get(self.env_name)
        self.query_one("#spaces", Static).update(
            env_spaces(info) if info else Text(self.env_name, style="bold"))
        self.query_one("#chosen", Static).update(info["description"] if info else "")

    def on_descendant_focus(self, event) -> None:
        row = next((a for a in event.widget.ancestors_with_self
                    if isinstance(a, OverrideRow)), None)
        if row is not None:
            self._show_field(row)

    def on_input_changed(self, event: Input.Changed) -> None:
        row = next((a for a in event.input.ancestors if isinstance(a, OverrideRow)), None)
        if row is not None and event.input.has_focus:
            self._show_field(row)

    def _show_field(self, row: OverrideRow) -> None:
        self.query_one("#field", Static).update(field_text(row.spec, row.text, row.check()))

    async def _choose_spec(self, spec: str) -> None:
        """A typed spec: checked off the UI thread (it may import a package), then listed,
        remembered and shown with its preset; a bad one says why where it was typed."""
        if not spec:
            return
        try:
            refusal = code_spec_refusal(spec)  # a page of `serve` (app/serve_code_specs.py)
            if refusal:
                raise ConfigError(refusal)
            await asyncio.to_thread(load_config, spec)
        except ConfigError as e:
            self.query_one("#chosen", Static).update(Text(str(e), style="red"))
            self.notify(str(e), severity="error", markup=False)
            return
        remember(runs_root(self.runs_root), spec)
        envs = self.query_one("#envs", OptionList)
        if spec not in self._infos:
            self._infos[spec] = typed_spec_info(spec)
            envs.add_option(env_option(self._infos[spec]))
        self.env_name = spec
        envs.highlighted = list(self._infos).index(spec)
        await self._show_env(spec)
        envs.focus()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "spec":
            await self._choose_spec(event.value.strip())
            return
        # The one Enter rule (see the help screen): Enter confirms what has the focus. In a
        # field that means "check this value and go on to the next field", as in the editor
        # it means "send this value"; starting is Enter on an env, the button, or ctrl+s.
        form = self.query_one("#form", OverrideForm)
        row = next(a for a in event.input.ancestors if isinstance(a, OverrideRow))
        error = row.check()
        form.show_error(error or "")
        self._show_field(row)
        if error is None:
            self.focus_next()

    async def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            await self.action_start()

    async def action_start(self) -> None:
        if self.branch_source is not None:
            self._start_branch()
            return
        await self._sync_form()  # Enter right after Down: the form of the env now chosen
        form = self.query_one("#form", OverrideForm)
        try:
            overrides = form.overrides()
            load_config(self.env_name, overrides)  # the whole config, cross-field checks too
        except ConfigError as e:
            form.show_error(str(e))
            self.query_one("#field", Static).update(Text(str(e), style="bold red"))
            self.notify(str(e), severity="error", markup=False)
            return
        self.query_one("#field", Static).update(Text(f"starting {self.env_name}...", "yellow"))
        self.post_message(nav.StartRun(self.env_name, overrides))

    def on_runs_list_mark_requested(self, message: RunsList.MarkRequested) -> None:
        """`space` in the runs list: mark or unmark that run for comparison (sweeps are not
        runs)."""
        option_id = message.option_id
        if option_id is None:
            return
        runs = self.query_one("#runs", OptionList)
        if option_id not in self._run_infos:
            self.notify("only runs can be compared (open a sweep to see its trials)")
            return
        if option_id in self.marked:
            self.marked.remove(option_id)
        else:
            self.marked.append(option_id)
        runs.replace_option_prompt(option_id, self._run_prompt(option_id))
        runs.border_subtitle = (f"{len(self.marked)} marked  ctrl+o: compare" if self.marked
                                else "Enter: open  space: mark")

    # -- the branch form (screens/launcher/branch_form.py: its workers and their messages) -----

    def on_runs_list_branch_requested(self, message: RunsList.BranchRequested) -> None:
        """`b` in the runs list: the branch form of the highlighted run, once its latest
        checkpoint is read (off the UI thread)."""
        if message.option_id not in self._run_infos:
            self.notify("only runs can be branched: b on a run starts the branch form")
            return
        run_dir = self._branch_reading = Path(message.option_id)
        self.query_one("#chosen", Static).update(
            Text(f"reading {run_dir.name}'s latest checkpoint...", style="yellow"))
        self.run_worker(partial(read_branch_base, self, run_dir), thread=True, group="branch")

    async def on_branch_base_read(self, message: BranchBaseRead) -> None:
        if message.run_dir != self._branch_reading:
            return  # an env was chosen meanwhile, or b pressed on another run
        self._branch_reading = None
        config, checkpoint = message.config, message.checkpoint
        await self._show_env(config.env_name, config, form_name=BRANCH_FORM + str(checkpoint))
        self.branch_source = checkpoint
        self.query_one("#start", Button).label = "Branch"
        self.query_one("#chosen", Static).update(
            Text(branch_title(message.run_dir, checkpoint), style="bold"))
        self.query_one("#form", OverrideForm).query("Input").first().focus()  # ready to edit

    def on_branch_unreadable(self, message: BranchUnreadable) -> None:
        if message.run_dir != self._branch_reading:
            return
        self._branch_reading = None
        self.query_one("#chosen", Static).update(Text(message.error, style="red"))
        self.notify(f"cannot branch {message.run_dir.name}: {message.error}", severity="error",
                    timeout=10, markup=False)

    def _leave_branch(self) -> None:
        """Back to starting fresh runs (the form follows the env cursor again)."""
        self.branch_source = None
        self.query_one("#start", Button).label = "Start"

    def _start_branch(self) -> None:
        if self._branching:
            return  # one branch at a time: its run dir is being written
        form = self.query_one("#form", OverrideForm)
        try:
            overrides = form.overrides()
        except ConfigError as e:
            form.show_error(str(e))
            self.query_one("#field", Static).update(Text(str(e), style="bold red"))
            return
        source = self.branch_source
        self.query_one("#field", Static).update(Text(f"branching from {source.name}...", "yellow"))
        self._branching = True
        self.run_worker(partial(prepare_branch_run, self, source, overrides, self.runs_root),
                        thread=True, group="branch-start")

    def on_branch_prepared(self, message: BranchPrepared) -> None:
        self._branching = False
        self._leave_branch()
        self.post_message(nav.OpenRun(message.run_dir, attach=False, resume=True))

    def on_branch_refused(self, message: BranchRefused) -> None:
        self._branching = False
        if message.checkpoint == self.branch_source:  # the form is still the branch's
            self.query_one("#form", OverrideForm).show_error(message.error)
            self.query_one("#field", Static).update(Text(message.error, style="bold red"))
        self.notify(f"cannot branch: {message.error}", severity="error", timeout=10,
                    markup=False)

    def action_compare(self) -> None:
        if len(self.marked) < 2:
            self.notify("mark two runs or more to compare: space on a run in the runs list "
                        "marks it, then ctrl+o", title="Compare runs")
            return
        self.post_message(nav.OpenCompare([Path(m) for m in self.marked]))

    # -- autotune (screens/launcher/launcher_autotune.py: its worker and its messages) --------

    def action_autotune(self) -> None:
        """Autotune the env whose form is shown (~30 s in a subprocess, off the UI thread);
        its best layout then fills the form's [vec] fields."""
        forms = self.query(OverrideForm)
        if not forms:
            return
        form = forms.first()
        try:
            overrides = form.overrides()
        except ConfigError as e:
            self.notify(str(e), severity="error", markup=False)
            return
        self.notify(launcher_autotune.starting(form.env_name), title="Autotune")
        self.run_worker(partial(launcher_autotune.autotune_in_thread, self, form.env_name,
                                overrides),
                        thread=True, group="autotune", exclusive=True)

    def on_autotune_finished(self, message: launcher_autotune.AutotuneFinished) -> None:
        forms = self.query(OverrideForm)
        if not forms or forms.first().env_name != message.env_name:  # another env chosen since
            self.notify(f"autotune of {message.env_name} done, but another env is chosen now: "
                        f"{launcher_autotune.summary(message.outcome)}", title="Autotune")
            return
        launcher_autotune.fill_form(forms.first(), launcher_autotune.vec_texts(message.outcome))
        self.notify(launcher_autotune.summary(message.outcome), title="Autotune", timeout=10)

    def on_autotune_failed(self, message: launcher_autotune.AutotuneFailed) -> None:
        self.notify(message.error, title="Autotune failed", severity="error", markup=False)

    def action_help(self) -> None:
        self.post_message(nav.OpenHelp())
