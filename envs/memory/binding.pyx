# Cython binding of memory.h: declares its settings, then includes the shared driver
# (the contract is declared once, in engine/native/puffer_env.pxd).

cdef extern from "memory.h":
    ctypedef struct Settings "Memory":
        int length
        int delay


cdef int configure(Settings* env, dict settings) except -1:
    env.length = settings["length"]
    env.delay = settings["delay"]
    return 0


include "vecenv.pxi"
