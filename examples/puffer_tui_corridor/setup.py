"""Build the corridor binding against the C contract puffer-tui installs (puffer_env.h,
puffer_env.pxd, vecenv.pxi). Build without isolation, so puffer-tui, Cython and numpy come
from the environment: pip install --no-build-isolation examples/puffer_tui_corridor"""

from setuptools import setup

from puffer_tui.engine.native.build import env_extensions

setup(ext_modules=env_extensions("puffer_tui_corridor"))
