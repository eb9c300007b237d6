# Cython binding of pendulum.h: declares its settings, then includes the shared driver
# (the contract is declared once, in engine/native/puffer_env.pxd).

cdef extern from "pendulum.h":
    ctypedef struct Settings "Pendulum":
        int max_steps
        double g


cdef int configure(Settings* env, dict settings) except -1:
    env.max_steps = settings["max_steps"]
    env.g = settings["g"]
    return 0


include "vecenv.pxi"
