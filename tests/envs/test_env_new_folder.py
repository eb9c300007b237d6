"""A new C env added in one folder, as the README's "Write your own C environment" says: a
tiny env (header, binding, class, preset, and the package's pyproject.toml and setup.py)
written into a temp dir, built with pip, and found through the registry with no file of
puffer-tui touched. It is installed with `--target` into the temp dir, so this test's env
never shows up in the shared environment; a user runs `pip install --no-build-isolation .`.

Also: the built-in envs are found from their folders (no table), in their list order.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tree_paths import REPO_ROOT

from puffer_tui.envs import ENV_NAMES, env_names
from puffer_tui.envs.env_folders import find_env_folders, read_folder

HEADER = """\
/* echo: say back the bit you see. One agent; observation: one byte, 0 or 1; actions 0 or 1;
 * reward 1 when the action equals the bit. An episode is `length` steps. */
#include "puffer_env.h"

#define ECHO_LOG(F) PUFFER_STANDARD_LOG(F) F(misses)
PUFFER_LOG(ECHO_LOG);

typedef struct {
    PUFFER_ENV_FIELDS(unsigned char, int32_t);
    int length;
    int tick;
    float episode_return;
} Echo;
#define PUFFER_ENV Echo

static inline void c_init(Echo* env) { (void)env; }

static inline void c_reset(Echo* env) {
    env->tick = 0;
    env->episode_return = 0.0f;
    env->observations[0] = (unsigned char)puffer_rand_int(&env->rng, 2);
}

static inline void c_step(Echo* env) {
    float reward = env->actions[0] == env->observations[0] ? 1.0f : 0.0f;
    env->rewards[0] = reward;
    env->episode_return += reward;
    env->tick += 1;
    int done = env->tick >= env->length;
    env->terminals[0] = (unsigned char)done;
    env->truncations[0] = 0;
    if (done) {
        env->log.misses += (float)env->length - env->episode_return;
        PUFFER_LOG_EPISODE(env->log, env->episode_return, (float)env->tick,
                           env->episode_return / (float)env->length);
        c_reset(env);
    } else {
        env->observations[0] = (unsigned char)puffer_rand_int(&env->rng, 2);
    }
}

static inline void c_frame(const Echo* env, unsigned char* tiles) {
    tiles[0] = env->observations[0];
}

static inline void c_close(Echo* env) { (void)env; }
"""

BINDING = """\
cdef extern from "echo.h":
    ctypedef struct Settings "Echo":
        int length


cdef int configure(Settings* env, dict settings) except -1:
    env.length = settings["length"]
    return 0


include "vecenv.pxi"
"""

CLASS = """\
\"\"\"echo: say back the bit you see.\"\"\"

import numpy as np
from gymnasium import spaces

from puffer_tui.engine.native import EnvLayout, NativeEnv, Setting
from puffer_tui_echo import binding


class Echo(NativeEnv):
    name = "echo"
    description = "say back the bit you see; +1 each time"
    binding = binding
    palette = {0: ("0", "white"), 1: ("1", "yellow")}
    settings_schema = (Setting("length", 4, 1, 1000, "steps in an episode"),)

    @classmethod
    def layout(cls, s):
        return EnvLayout(observation_space=spaces.Box(0, 1, (1,), np.uint8),
                         action_space=spaces.Discrete(2), frame_shape=(1, 1))
"""

PRESET = """\
[env]
length = 5
"""

PYPROJECT = """\
[build-system]
requires = ["setuptools>=77", "cython>=3.0", "numpy>=1.26", "puffer-tui"]
build-backend = "setuptools.build_meta"

[project]
name = "puffer-tui-echo"
version = "0.1.0"
dependencies = ["puffer-tui"]

[project.entry-points."puffer_tui.envs"]
echo = "puffer_tui_echo:Echo"

[tool.setuptools]
packages = ["puffer_tui_echo"]

[tool.setuptools.package-data]
puffer_tui_echo = ["*.h", "*.pyx", "config.toml"]
"""

SETUP = """\
from setuptools import setup

from puffer_tui.engine.native.build import env_extensions

setup(ext_modules=env_extensions("puffer_tui_echo"))
"""

# What the child process checks, with the temp install on its path.
CHECK = """\
import json
import numpy as np
from puffer_tui.envs import env_names, load_preset, make

preset = load_preset("echo")
env = make("echo", num_envs=8, seed=3, log_interval=1, **preset["env"])
env.reset()
logs = []
for _ in range(10):
    bits = env.observations[:, 0].astype(np.int32)
    logs += env.step(bits)[4]  # always right
print(json.dumps({"names": list(env_names()), "preset": preset, "logs": logs,
                  "length": env.settings["length"]}))
"""


def write_package(root: Path) -> Path:
    package = root / "puffer-tui-echo"
    folder = package / "puffer_tui_echo"
    folder.mkdir(parents=True)
    for path, text in {folder / "echo.h": HEADER, folder / "binding.pyx": BINDING,
                       folder / "__init__.py": CLASS, folder / "config.toml": PRESET,
                       package / "pyproject.toml": PYPROJECT, package / "setup.py": SETUP}.items():
        path.write_text(text)
    return package


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="no C compiler")
@pytest.mark.skipif(importlib.util.find_spec("Cython") is None,
                    reason='building a C env needs Cython beside puffer-tui: pip install '
                           '"cython>=3.0" (README, Write your own C environment)')
def test_a_new_c_env_in_one_folder_is_built_and_found(tmp_path):
    package = write_package(tmp_path)
    site = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
         "--target", str(site), str(package)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert build.returncode == 0, build.stdout + build.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                            timeout=300, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["names"][:len(ENV_NAMES)] == list(ENV_NAMES) and "echo" in seen["names"]
    assert seen["preset"] == {"env": {"length": 5}} and seen["length"] == 5
    # 8 envs, 10 steps of 5: 8 episodes ended at step 5 and 8 at step 10, every bit right
    assert [log["n"] for log in seen["logs"]] == [8.0, 8.0]
    for log in seen["logs"]:
        assert list(log) == ["episode_return", "episode_length", "score", "misses", "n"]
        assert log["episode_return"] == 5.0 and log["score"] == 1.0 and log["misses"] == 0.0
    # listed by the command line too, as a plugin
    listing = subprocess.run(
        [sys.executable, "-c", "from puffer_tui.app.cli import main; "
         "raise SystemExit(main(['envs', '--json']))"],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    rows = {r["name"]: r for r in json.loads(listing.stdout)["envs"]}
    assert rows["echo"]["source"].startswith("plugin"), rows["echo"]
    assert "echo" not in env_names(), "the test's env leaked into this environment"


def test_builtin_envs_are_their_folders_in_list_order():
    """Every envs/NAME/ with a binding.pyx is an env, listed by its class's `order`."""
    root = REPO_ROOT / "envs"
    folders = {p.parent.name for p in root.glob("*/binding.pyx")}
    assert set(ENV_NAMES) == folders
    assert ENV_NAMES[0] == "squared"
    # the Gymnasium ports last, the same order sorted by name
    assert ENV_NAMES[-4:] == ("breakout", "acrobot", "cartpole_v1", "pendulum")


def test_a_folder_is_read_without_importing_it(tmp_path):
    """An env folder is found from its text: a class named by `name`, ordered by `order`;
    one without such a class is still listed, and refused with the reason when used."""
    for name, body in {"b_env": 'class B:\n    name = "b_env"\n    order = 3\n',
                       "a_env": 'import no_such_module\n\nclass A:\n    name = "a_env"\n',
                       "c_env": 'class C:\n    name = "other"\n'}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "binding.pyx").write_text("")
        (tmp_path / name / "__init__.py").write_text(body)
    (tmp_path / "no_binding").mkdir()
    (tmp_path / "no_binding" / "__init__.py").write_text('class D:\n    name = "no_binding"\n')
    found = find_env_folders(tmp_path)
    assert [(f.name, f.class_name, f.order) for f in found] == [
        ("b_env", "B", 3), ("a_env", "A", 100), ("c_env", None, 100)]
    assert read_folder(tmp_path / "c_env").class_name is None


def test_a_folder_without_its_class_is_a_clear_error(monkeypatch):
    from puffer_tui.envs import env_folders, registry
    from puffer_tui.envs.env_spec import EnvSpecError

    broken = env_folders.EnvFolder("half", Path("/nonexistent/half"), None)
    monkeypatch.setitem(registry._FOLDERS, "half", broken)
    with pytest.raises(EnvSpecError, match=r"envs/half/__init__.py defines no env class"):
        registry.env_class("half")


def test_the_app_contract_needs_no_edit_for_a_new_env():
    """The import-linter contract forbids env folders by a wildcard, not by a list of names."""
    text = (REPO_ROOT / "pyproject.toml").read_text()
    assert '"puffer_tui.envs.*"' in text
    for name in ENV_NAMES:
        assert f'"puffer_tui.envs.{name}"' not in text, name
