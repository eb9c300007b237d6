"""`.ci/run` runs exactly the README's install and test commands, read from the README."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    lines = []
    for name in ("install", "test"):
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
