"""The README's Python example, exactly as printed, runs as a script, from `python -` and from
`python -c` (the multiprocessing workers must not need the caller's __main__)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_python_example() -> str:
    text = README.read_text()
    section = text[text.index("From Python"):]
    match = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert match, "README.md has no ```python block after 'From Python'"
    return match.group(1)


@pytest.mark.parametrize("how", ["script", "stdin", "-c"])
def test_readme_python_example_runs(tmp_path, how):
    code = readme_python_example()
    assert "vec.make(" in code and 'backend="multiprocessing"' in code  # the part that broke
    if how == "script":
        script = tmp_path / "example.py"
        script.write_text(code)
        argv, stdin = [sys.executable, str(script)], None
    elif how == "stdin":
        argv, stdin = [sys.executable, "-"], code
    else:
        argv, stdin = [sys.executable, "-c", code], None
    result = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Discrete(5) (4096,) (4096, 121)" in result.stdout, result.stdout
