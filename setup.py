"""Build the C/Cython extensions; everything else is declared in pyproject.toml.

Every environment folder with a ``binding.pyx`` becomes ``puffer_tui.envs.NAME.binding``;
native engine kernels live in engine/native. Nothing is downloaded at build time.
"""

from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

ROOT = Path(__file__).parent
NATIVE = "engine/native"
COMPILE_ARGS = ["-O3", "-fno-strict-aliasing", "-Wno-unused-function", "-Wno-unreachable-code"]
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "initializedcheck": False,
    "cdivision": True,
}


# Top-level folder -> dotted name under puffer_tui.
ROOMS = {"_pkg": "puffer_tui", "app": "puffer_tui.app", "screens": "puffer_tui.screens",
         "engine": "puffer_tui.engine", "envs": "puffer_tui.envs",
         "benchmarks": "puffer_tui.benchmarks"}


def package_dirs():
    """puffer_tui.X.Y -> folder, for every folder with an __init__.py under each room."""
    dirs = {}
    for folder, dotted in ROOMS.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT / folder)
            name = ".".join([dotted, *rel.parts]) if rel.parts else dotted
            dirs[name] = init.parent.relative_to(ROOT).as_posix()
    return dirs


def env_extensions():
    for pyx in sorted((ROOT / "envs").glob("*/binding.pyx")):
        name = pyx.parent.name
        yield Extension(
            f"puffer_tui.envs.{name}.binding",
            [f"envs/{name}/binding.pyx"],
            include_dirs=[f"envs/{name}", NATIVE, numpy.get_include()],
            extra_compile_args=COMPILE_ARGS,
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        )


def engine_extensions():
    for pyx in sorted((ROOT / NATIVE).glob("*.pyx")):
        yield Extension(
            f"puffer_tui.engine.native.{pyx.stem}",
            [f"{NATIVE}/{pyx.name}"],
            include_dirs=[NATIVE, numpy.get_include()],
            extra_compile_args=COMPILE_ARGS,
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        )


PACKAGE_DIRS = package_dirs()

setup(
    packages=sorted(PACKAGE_DIRS),
    package_dir=PACKAGE_DIRS,
    ext_modules=cythonize(
        [*env_extensions(), *engine_extensions()],
        include_path=[NATIVE],
        compiler_directives=DIRECTIVES,
    ),
)
