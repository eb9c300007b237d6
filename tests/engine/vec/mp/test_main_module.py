"""Worker start-up without the caller's __main__ (engine/vec/mp/main_module.py): a creator
defined in the script works when the script has its guard, and one defined in `python -c` is
refused in one line."""

import subprocess
import sys
import textwrap

CREATOR_IN_MAIN = textwrap.dedent("""
    import functools
    import puffer_tui.envs as envs
    from puffer_tui.engine import vec

    def make_squared(**kwargs):
        return envs.make("squared", **kwargs)

    if __name__ == "__main__":
        with vec.make(make_squared, num_envs=4, backend="multiprocessing", num_workers=2) as v:
            v.reset(0)
        print("worked")
""")


def test_a_creator_defined_in_a_guarded_script_works(tmp_path):
    script = tmp_path / "mine.py"
    script.write_text(CREATOR_IN_MAIN)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "worked" in result.stdout


def test_a_creator_defined_in_python_c_is_refused_in_one_line():
    result = subprocess.run([sys.executable, "-c", CREATOR_IN_MAIN.replace(
        'if __name__ == "__main__":', "if True:")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("TypeError: env_creator") and "define it in a module file" in last
