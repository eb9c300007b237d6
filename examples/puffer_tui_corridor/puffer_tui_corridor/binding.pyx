# Cython binding of corridor.h: its settings, then puffer-tui's shared driver (vecenv.pxi,
# which cimports the contract from puffer_env.pxd; both on the path setup.py gives).

cdef extern from "corridor.h":
    ctypedef struct Settings "Corridor":
        int length
        int max_ticks


cdef int configure(Settings* env, dict settings) except -1:
    env.length = settings["length"]
    env.max_ticks = settings["max_ticks"]
    return 0


include "vecenv.pxi"
