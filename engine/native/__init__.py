"""The native environment contract: the C header, the Cython driver and the Python base class."""

from puffer_tui.engine.native.actions import ActionError
from puffer_tui.engine.native.buffers import allocate_buffers, buffer_layout
from puffer_tui.engine.native.pufferenv import EnvLayout, NativeEnv, PufferEnv
from puffer_tui.engine.native.settings import Setting, resolve_settings

__all__ = [
    "ActionError",
    "EnvLayout",
    "NativeEnv",
    "PufferEnv",
    "Setting",
    "allocate_buffers",
    "buffer_layout",
    "resolve_settings",
]
