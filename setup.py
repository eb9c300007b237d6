"""Build the C/Cython extensions; everything else is declared in pyproject.toml.

Every environment folder with a ``binding.pyx`` becomes ``puffer_tui.envs.NAME.binding``;
native engine kernels live in engine/native. Nothing is downloaded at build time.
"""

import importlib.util
import os
from pathlib import Path

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).parent
NATIVE = "engine/native"

# The env build (flags, directives, include paths) that plugin packages use too; loaded by
# path, since puffer_tui is not importable before it is installed.
_spec = importlib.util.spec_from_file_location("puffer_env_build", ROOT / NATIVE / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)
COMPILE_ARGS = build.COMPILE_ARGS


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
    """Every env folder with a binding.pyx (envs/NAME/) is the module puffer_tui.envs.NAME.binding."""
    for pyx in sorted((ROOT / "envs").glob("*/binding.pyx")):
        name = pyx.parent.name
        yield build.env_extension(f"puffer_tui.envs.{name}.binding", f"envs/{name}", NATIVE)


def engine_extensions():
    for pyx in sorted((ROOT / NATIVE).glob("*.pyx")):
        yield Extension(
            f"puffer_tui.engine.native.{pyx.stem}",
            [f"{NATIVE}/{pyx.name}"],
            include_dirs=[NATIVE, numpy.get_include()],
            extra_compile_args=COMPILE_ARGS,
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        )


class ParallelBuildExt(build_ext):
    """Compiles the extensions on every core (setuptools compiles one at a time unless told
    `-j`, which `pip install` cannot pass on): about a dozen -O3 modules, minutes on one core."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
                else (os.cpu_count() or 1)


PACKAGE_DIRS = package_dirs()

setup(
    packages=sorted(PACKAGE_DIRS),
    package_dir=PACKAGE_DIRS,
    cmdclass={"build_ext": ParallelBuildExt},
    ext_modules=build.cythonize_envs([*env_extensions(), *engine_extensions()], NATIVE),
)
