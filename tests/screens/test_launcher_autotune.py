"""The launcher's autotune: the command it runs for the selected env, its outcome read back,
and the best layout typed into the preset form's [vec] fields."""

from textual.app import App

from puffer_tui.app.widgets.override_form import OverrideForm
from puffer_tui.engine.shared.config import load_config, schema
from puffer_tui.screens.launcher.launcher_autotune import (
    AutotuneError,
    autotune_argv,
    fill_form,
    run_autotune,
    summary,
    vec_texts,
)
from tests.screens.test_app_launcher import form_ready


def test_the_command_carries_env_train_and_the_total_but_not_the_tuned_vec_values():
    argv = autotune_argv("squared", {"env.num_targets": "2", "train.hidden_size": "32",
                                     "vec.num_envs": "64", "vec.num_workers": "4"}, seconds=5)
    tail = argv[argv.index("squared"):]
    assert tail[:4] == ["squared", "--json", "--seconds", "5"]
    flags = dict(zip(tail[4::2], tail[5::2], strict=True))
    assert flags == {"--env.num-targets": "2", "--train.hidden-size": "32",
                     "--vec.num-envs": "64"}


def test_a_real_run_gives_the_best_layout_as_form_texts():
    outcome = run_autotune("squared", {"vec.num_envs": "64", "train.torch_threads": "1"},
                           seconds=2)
    texts = vec_texts(outcome)
    assert set(texts) == {"vec.backend", "vec.num_envs", "vec.num_workers", "vec.batch_size",
                          "vec.zero_copy", "vec.inline"}
    assert texts["vec.num_envs"] == "64" and texts["vec.zero_copy"] in ("true", "false")
    assert "squared: best" in summary(outcome)


def test_a_failed_run_is_one_message():
    try:
        run_autotune("nosuchenv", {}, seconds=1)
    except AutotuneError as e:
        assert "unknown env 'nosuchenv'" in str(e)
    else:
        raise AssertionError("no AutotuneError")


class FormApp(App):
    def compose(self):
        config = load_config("squared")
        preset = {f"{s}.{k}": v for s, values in config.as_dict().items()
                  if isinstance(values, dict) for k, v in values.items()}
        yield OverrideForm(schema("squared"), preset, env_name="squared", id="form")


async def test_the_best_layout_fills_the_vec_fields():
    app = FormApp()
    async with app.run_test(size=(100, 60)) as pilot:
        form = app.query_one(OverrideForm)
        assert form.overrides() == {}
        fill_form(form, {"vec.backend": "multiprocessing", "vec.num_workers": "4",
                         "vec.batch_size": "512", "vec.zero_copy": "false",
                         "vec.num_envs": "1024"})
        await pilot.pause()
        # num_envs equals the preset's 1024: not an override; the rest are
        assert form.overrides() == {"vec.backend": "multiprocessing", "vec.num_workers": "4",
                                    "vec.batch_size": "512", "vec.zero_copy": "false"}
        load_config("squared", form.overrides())  # what Start would check: a valid config


async def test_ctrl_t_in_the_launcher_autotunes_the_selected_env(tmp_path, monkeypatch):
    from puffer_tui.app.app import PufferApp
    from puffer_tui.app.widgets.override_form import OverrideRow
    from puffer_tui.screens.launcher import launcher_autotune
    from tests.app.test_app_engine import until

    monkeypatch.setattr(launcher_autotune, "AUTOTUNE_SECONDS", 3)
    app = PufferApp(runs_root=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: form_ready(app), "the preset form")
        for key, text in (("vec.num_envs", "64"), ("train.torch_threads", "1")):
            row = next(r for r in app.screen.query(OverrideRow) if r.spec.key == key)
            row.query_one("Input").value = text
        await pilot.press("ctrl+t")
        messages = lambda: [str(n.message) for n in app._notifications]  # noqa: E731
        await until(pilot, lambda: any("squared: best" in m for m in messages()),
                    "the autotune outcome", timeout=90)
        overrides = app.screen.query_one(OverrideForm).overrides()
        assert overrides["vec.num_envs"] == "64"  # the total it was given, kept
