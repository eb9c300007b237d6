"""`.ci/run` runs exactly the README's install and test commands, read from the README, then
installs every extra and runs again the tests that skipped."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    lines = []
    for name in ("install", "test", "test-long"):
        match = re.search(rf"<!-- ci:{name} -->\n```bash\n(.*?)```", text, flags=re.S)
        assert match, f"README.md has no ```bash block after <!-- ci:{name} -->"
        lines += match.group(1).splitlines()
    return lines


def test_ci_runs_the_readme_commands():
    printed = subprocess.run(["bash", str(ROOT / ".ci" / "run"), "--print-commands"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    assert printed.splitlines() == readme_blocks()
    assert 'pip install -e ".[test]"' in printed and "python -m pytest -q" in printed
    assert "--index-url" not in printed  # the registries alone


def test_ci_tests_the_readme_install_alone_then_the_extras():
    """The README's test command right after its install (it must pass with no extra), then
    the extras, then only the tests that skipped."""
    script = (ROOT / ".ci" / "run").read_text()
    steps = ['eval "$install"', 'eval "$tests"', 'eval "$long_tests"',
             'pip install -q "${extras[@]}"',
             "--no-build-isolation ./examples/puffer_tui_corridor",
             'python -m pytest -q -rs -- "${again[@]}"']
    where = [script.find(step) for step in steps]
    assert -1 not in where, list(zip(steps, where, strict=True))
    assert where == sorted(where), list(zip(steps, where, strict=True))
    assert "pip install" not in script[where[0]:where[2]]  # nothing between the three


def test_the_two_readme_test_commands_split_the_suite_by_marker():
    """The README's first test command deselects exactly what its second selects, so that
    together they run every test once."""
    blocks = readme_blocks()
    first = next(line for line in blocks if line.startswith("ruff check . && python -m pytest"))
    second = blocks[-1]
    quick = re.search(r'-m "not \((.*)\)"', first).group(1)
    long = re.search(r'-m "(.*)"', second).group(1)
    assert quick == long == "learning or e2e or slow"
    import tomllib

    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["markers"]
    declared = {m.split(":")[0] for m in markers}
    assert {"learning", "e2e", "slow"} <= declared


# extras left out of `all` on purpose, each named in the README: EnvPool brings ~700 MB of
# other games' assets for one benchmark's peer
NOT_IN_ALL = ("bench-envpool",)


def test_the_all_extra_holds_every_extra():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    printed = subprocess.run([sys.executable, str(ROOT / ".ci" / "all_extras.py"),
                              str(ROOT / "pyproject.toml")], capture_output=True, text=True,
                             timeout=30, check=True).stdout.splitlines()
    for name, requirements in extras.items():
        if name not in ("all", *NOT_IN_ALL):
            assert set(requirements) <= set(printed), name
    assert not set(NOT_IN_ALL) & set(printed)
    assert not any(line.startswith("puffer-tui") for line in printed)
    assert len(printed) == len(set(printed))


def test_the_skipped_tests_are_noted_and_run_again_by_node_id(tmp_path):
    """.ci/skipped_tests.py writes the node ids that skipped, a module skipped at import
    included, xfails not; running those ids again runs exactly them."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_some.py").write_text(
        "import pytest\n"
        "def test_runs(): pass\n"
        "@pytest.mark.parametrize('x', ['a b', 'c'])\n"
        "def test_param(x):\n"
        "    if x == 'a b': pytest.skip('no extra')\n"
        "@pytest.mark.xfail\n"
        "def test_expected_failure(): assert False\n"
        "@pytest.fixture\n"
        "def extra(): pytest.importorskip('no_such_extra_zz')\n"
        "def test_fixture(extra): pass\n")
    (tests / "test_module.py").write_text(
        "import pytest\n"
        "pytest.importorskip('no_such_extra_yy', reason='the yy extra')\n"
        "def test_never(): pass\n")
    noted = tmp_path / "skipped"
    # The children need no installed plugin (the tests above are plain), and loading them all
    # (hypothesis, benchmark, asyncio) is most of a child's start: 6.1 s -> 1.2 s at load 13.
    env = {**os.environ, "PUFFER_CI_SKIPPED": str(noted), "PYTEST_ADDOPTS": "-p skipped_tests",
           "PYTHONPATH": str(ROOT / ".ci"), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    first = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    ids = noted.read_text().splitlines()
    assert sorted(ids) == ["tests/test_module.py", "tests/test_some.py::test_fixture",
                           "tests/test_some.py::test_param[a b]"]
    plain = {k: v for k, v in os.environ.items()  # under .ci/run: not its notes file
             if k not in ("PUFFER_CI_SKIPPED", "PYTEST_ADDOPTS")}
    plain["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    again = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p",
                            "no:cacheprovider", "--", *ids], cwd=tmp_path, env=plain,
                           capture_output=True, text=True, timeout=120)
    assert "3 skipped" in again.stdout and "passed" not in again.stdout, again.stdout


def test_ci_checks_the_wheel_last():
    """After the tests: the wheel built, installed with no compiler and used
    (tools/wheel_check.py)."""
    script = (ROOT / ".ci" / "run").read_text()
    assert script.find("python tools/wheel_check.py") > script.find("tests/sanitize/run.sh") > 0
