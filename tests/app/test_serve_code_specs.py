"""A page of `puffer-tui serve` may not choose code to run as the owner of the server:
specs that import a module they name are refused in a served app unless serve was started
with --allow-code-specs; built-in names, plugins and plain Gymnasium ids are not."""

import pytest

from puffer_tui.app import run_preparation
from puffer_tui.app.serve_code_specs import CODE_SPECS_ENV_VAR
from puffer_tui.envs.env_spec import spec_imports_code

# A Python env of an installed package, named as MODULE:CALLABLE: builds without side effects.
CALLABLE_SPEC = "gymnasium.envs.classic_control.cartpole:CartPoleEnv"


@pytest.mark.parametrize("spec, settings, imports", [
    ("squared", None, None),
    ("gym:CartPole-v1", None, None),
    ("gym:ALE/Pong-v5", {}, None),  # ale_py: the known package of a known prefix
    ("gym:CartPole-v1", {"import": "my_pkg"}, "'my_pkg' imports that module"),
    ("gym:my_pkg.envs:MyEnv-v0", None, "imports the module 'my_pkg.envs'"),
    ("timeit:timeit", None, "imports the module 'timeit'"),
    ("pz:my_pkg.envs:make_env", None, "imports the module 'my_pkg.envs'"),
    (CALLABLE_SPEC, {"x": 1}, "imports the module 'gymnasium.envs.classic_control.cartpole'"),
])
def test_which_specs_import_code(spec, settings, imports):
    reason = spec_imports_code(spec, settings)
    assert (reason is None) if imports is None else (imports in reason), reason


def test_a_served_launcher_refuses_a_code_spec_before_importing_it(tmp_path, monkeypatch):
    """The issue's case: `timeit:timeit` with env.stmt ran a command as the owner."""
    monkeypatch.setenv(CODE_SPECS_ENV_VAR, "1")
    marker = tmp_path / "ran"
    stmt = f"open({str(marker)!r}, 'w').write('x'); 1/0"  # ran once, then fails fast
    runs = tmp_path / "runs"
    for spec, overrides in [("timeit:timeit", {"env.stmt": stmt}),
                            (CALLABLE_SPEC, {}),
                            ("pz:timeit:timeit", {}),
                            ("gym:timeit:Timeit-v0", {}),
                            ("gym:CartPole-v1", {"env.import": "timeit"})]:
        with pytest.raises(run_preparation.RunRefused) as refused:
            run_preparation.prepare_new_run(spec, overrides, runs)
        text = str(refused.value)
        assert "may not choose code to run" in text and "--allow-code-specs" in text, text
        assert "\n" not in text
    assert not marker.exists() and not runs.exists()  # nothing ran, nothing was written
    # what the owner installed is still offered
    assert run_preparation.prepare_new_run("squared", {}, runs).is_dir()


def test_with_allow_code_specs_the_launcher_starts_a_code_spec(tmp_path, monkeypatch):
    monkeypatch.delenv(CODE_SPECS_ENV_VAR, raising=False)  # what serve --allow-code-specs does
    run_dir = run_preparation.prepare_new_run(CALLABLE_SPEC, {}, tmp_path)
    assert (run_dir / "config.toml").read_text().count(CALLABLE_SPEC) == 1


def test_a_served_branch_may_not_add_an_import(tmp_path, monkeypatch):
    """A branch keeps the source run's own spec; only a new env.import is refused (before
    the source is even read)."""
    monkeypatch.setenv(CODE_SPECS_ENV_VAR, "1")
    with pytest.raises(run_preparation.RunRefused, match="env.import = 'timeit' imports that module"):
        run_preparation.prepare_branch(tmp_path / "no-such-run", {"env.import": "timeit"}, tmp_path)
    with pytest.raises(run_preparation.RunRefused) as other:  # no import: the branch's own checks
        run_preparation.prepare_branch(tmp_path / "no-such-run", {}, tmp_path)
    assert "may not choose code" not in str(other.value)


def test_autotune_from_a_served_launcher_refuses_a_code_spec(monkeypatch):
    from puffer_tui.screens.launcher.launcher_autotune import AutotuneError, run_autotune

    monkeypatch.setenv(CODE_SPECS_ENV_VAR, "1")
    with pytest.raises(AutotuneError, match="may not choose code to run"):
        run_autotune("timeit:timeit", {"env.stmt": "1"}, seconds=1)


@pytest.mark.parametrize("allowed", [False, True])
def test_a_spec_typed_in_a_served_page_imports_only_with_the_flag(tmp_path, allowed):
    """End to end: the page's launcher (a real app behind serve's websocket) is given a spec
    whose module leaves a file when imported, as the issue's attacker typed one."""
    pytest.importorskip("textual_serve", reason="the web extra (textual-serve) is not installed")
    import asyncio

    from serve_probe import serving, type_into_page

    (tmp_path / "spec_probe_module.py").write_text(
        "open('imported', 'w').write('x')\n"
        "from gymnasium.envs.classic_control.cartpole import CartPoleEnv as make\n")
    runs = tmp_path / "runs"
    flags = ("--allow-code-specs",) if allowed else ()
    with serving(runs, flags=flags, cwd=tmp_path) as served:
        seen = asyncio.run(type_into_page(
            served.base + "ws", served.origin, served.cookie, wait_for=b"Autotune",
            # click into the spec field (where its placeholder is), wait for the footer its
            # focus redraws (keys before would go to the env list), type the spec, Enter
            keys=[("click", b"gym:ID or module:fn"), b"Autotune", *"spec_probe_module:make",
                  "\r"]))
    assert (tmp_path / "imported").exists() == allowed, seen[-2000:]
    recent = runs / ".recent_env_specs.json"
    assert (recent.exists() and "spec_probe_module:make" in recent.read_text()) == allowed
