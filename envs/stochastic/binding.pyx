# Cython binding of stochastic.h: declares its settings, then includes the shared driver
# (the contract is declared once, in engine/native/puffer_env.pxd).

cdef extern from "stochastic.h":
    ctypedef struct Settings "Stochastic":
        float p
        int horizon


cdef int configure(Settings* env, dict settings) except -1:
    env.p = settings["p"]
    env.horizon = settings["horizon"]
    return 0


include "vecenv.pxi"
