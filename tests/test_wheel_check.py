"""tools/wheel_check.py refuses a wheel that lacks what a user needs (an extension, a style,
a preset, a header), naming it; the build and install steps it drives run in .ci/run."""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("wheel_check", ROOT / "tools" / "wheel_check.py")
wheel_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wheel_check)


def complete_names() -> list[str]:
    return ([f"{prefix}cpython-311-x86_64-linux-gnu.so" for prefix in
             wheel_check.extension_prefixes()] + wheel_check.required_files())


def fake_wheel(tmp_path: Path, names: list[str]) -> Path:
    path = tmp_path / "puffer_tui-0.1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.writestr(name, "")
    return path


def test_a_complete_wheel_passes(tmp_path):
    wheel_check.check_contents(fake_wheel(tmp_path, complete_names()), None)


@pytest.mark.parametrize("lost", ["puffer_tui/screens/screens.tcss",
                                  "puffer_tui/engine/native/puffer_env.pxd",
                                  "puffer_tui/envs/squared/binding.cpython-311-x86_64-linux-gnu.so",
                                  "puffer_tui/envs/gym_presets/ALE.toml"])
def test_a_wheel_without_one_of_its_parts_is_refused_by_name(tmp_path, lost):
    names = [n for n in complete_names() if n != lost]
    with pytest.raises(wheel_check.CheckFailed, match="the wheel lacks"):
        wheel_check.check_contents(fake_wheel(tmp_path, names), None)
