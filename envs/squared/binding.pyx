# Cython binding of squared.h: its settings, then the shared driver (the contract is declared
# once, in engine/native/puffer_env.pxd).

cdef extern from "squared.h":
    ctypedef struct Settings "Squared":
        int size
        int num_targets
        int max_ticks


cdef int configure(Settings* env, dict settings) except -1:
    env.size = settings["size"]
    env.num_targets = settings["num_targets"]
    env.max_ticks = settings["max_ticks"]
    return 0


include "vecenv.pxi"
