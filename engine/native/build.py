"""Compile a C env's binding against the contract: puffer-tui's own envs and plugin packages.

puffer-tui's setup.py builds every envs/NAME/binding.pyx with `env_extension`; a plugin
package's setup.py is three lines (examples/puffer_tui_corridor/setup.py):

    from setuptools import setup
    from puffer_tui.engine.native.build import env_extensions
    setup(ext_modules=env_extensions("my_package"))

Build a plugin without isolation (pip install --no-build-isolation ...), so this module,
Cython and numpy come from the environment puffer-tui is installed in.

Tested in: tests/envs/test_env_new_folder.py"""

from __future__ import annotations

from pathlib import Path

# The folder of puffer_env.h, puffer_env.pxd and vecenv.pxi (the include and cimport path).
NATIVE = Path(__file__).resolve().parent
# -ffp-contract=off: no fused multiply-adds (aarch64 and Apple silicon would fuse a + b * c),
# so the Gymnasium ports round as numpy does, to the bit, on every machine.
COMPILE_ARGS = ["-O3", "-fno-strict-aliasing", "-ffp-contract=off", "-Wno-unused-function",
                "-Wno-unreachable-code"]
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "initializedcheck": False,
    "cdivision": True,
}


def env_extension(module: str, folder: str, native: str | Path = NATIVE):
    """The Extension `module` (dotted, ending in `.binding`) from `folder`/binding.pyx, with
    the env's folder and the contract's on the include path."""
    import numpy
    from setuptools import Extension

    return Extension(
        module,
        [f"{folder}/binding.pyx"],
        include_dirs=[folder, str(native), numpy.get_include()],
        extra_compile_args=COMPILE_ARGS,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


def cythonize_envs(extensions, native: str | Path = NATIVE):
    """Cython -> C for these extensions, cimporting the contract from `native`."""
    from Cython.Build import cythonize

    return cythonize(list(extensions), include_path=[str(native)], compiler_directives=DIRECTIVES)


def env_extensions(package: str, folder: str | None = None):
    """A plugin package's compiled binding: `package`.binding from `folder` (default: the
    package's folder, named like it, beside setup.py)."""
    folder = folder or package.replace(".", "/")
    if not Path(folder, "binding.pyx").is_file():
        raise SystemExit(f"no {folder}/binding.pyx: the env's binding must sit in its package "
                         f"folder (see puffer-tui's README, 'Write your own C environment')")
    return cythonize_envs([env_extension(f"{package}.binding", folder)])
