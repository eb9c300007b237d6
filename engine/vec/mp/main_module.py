"""Worker processes that do not import the user's `__main__`.

A spawned or forkserver child imports the parent's main module again before it runs anything
(`multiprocessing.spawn.prepare`): a script without an `if __name__ == "__main__":` guard then
runs again in every worker, and `python -` has no file to import at all. Our workers need only
the env creator, so while one starts, `sys.modules["__main__"]` is an empty stand-in and the
child imports nothing of the script. A creator that itself lives in `__main__` (a function
defined in the script) does need it: then the script is imported as usual (it needs the guard),
and where it cannot be (`python -`, `python -c`, a notebook) the caller gets a one-line error.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import types


def creator_needs_main(env_creator, env_kwargs) -> bool:
    """Whether unpickling the creator needs the main module; TypeError when it does and a
    child process could not import it."""
    if b"__main__" not in pickle.dumps((env_creator, env_kwargs)):
        return False
    main = sys.modules.get("__main__")
    spec_name = getattr(getattr(main, "__spec__", None), "name", None)
    path = getattr(main, "__file__", None)
    if spec_name is None and not (path and os.path.isfile(path)):
        raise TypeError(
            f"env_creator {env_creator!r} is defined in __main__, which the multiprocessing "
            "workers cannot import (python -, python -c or a notebook); define it in a module "
            "file, use puffer_tui.envs.creator(...) / from_gymnasium(...), or backend='serial'")
    return True


@contextlib.contextmanager
def main_module_hidden(hide: bool = True):
    """While a worker process starts: hide `__main__` so the child does not re-import it."""
    if not hide:
        yield
        return
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main
