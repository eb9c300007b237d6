# Cython binding of bandit.h: declares its settings, then includes the shared driver
# (the contract is declared once, in engine/native/puffer_env.pxd).
from libc.stdint cimport uint64_t

cdef extern from "bandit.h":
    ctypedef struct Settings "Bandit":
        int num_arms
        uint64_t arm_seed


cdef int configure(Settings* env, dict settings) except -1:
    env.num_arms = settings["num_arms"]
    env.arm_seed = settings["arm_seed"]
    return 0


include "vecenv.pxi"
