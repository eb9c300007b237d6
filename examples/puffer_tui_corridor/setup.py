"""Build the corridor binding against the C header and Cython driver puffer-tui installs
(engine/native/puffer_env.h and vecenv.pxi). Build without isolation, so puffer-tui, Cython and
numpy come from the environment: pip install --no-build-isolation examples/puffer_tui_corridor"""

from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

import puffer_tui.engine.native

NATIVE = str(Path(puffer_tui.engine.native.__file__).parent)

setup(
    ext_modules=cythonize(
        [Extension("puffer_tui_corridor.binding", ["puffer_tui_corridor/binding.pyx"],
                   include_dirs=["puffer_tui_corridor", NATIVE, numpy.get_include()],
                   extra_compile_args=["-O3", "-Wno-unused-function"],
                   define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")])],
        include_path=[NATIVE],
        compiler_directives={"language_level": 3, "boundscheck": False, "wraparound": False},
    ),
)
