# Cython binding of cartpole_v1.h: declares its settings, then includes the shared driver
# (the contract is declared once, in engine/native/puffer_env.pxd).

cdef extern from "cartpole_v1.h":
    ctypedef struct Settings "CartPoleV1":
        int max_steps


cdef int configure(Settings* env, dict settings) except -1:
    env.max_steps = settings["max_steps"]
    return 0


include "vecenv.pxi"
