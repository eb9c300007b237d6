# Cython binding of stochastic.h: declares the contract fields and settings, then includes
# the shared driver.
from libc.stdint cimport uint64_t

cdef extern from "stochastic.h":
    ctypedef struct Log:
        float episode_return
        float episode_length
        float action0_fraction
        float score
        float n

    ctypedef struct Env "Stochastic":
        void* observations
        void* actions
        float* rewards
        unsigned char* terminals
        unsigned char* truncations
        unsigned char* masks
        void* final_observations
        Log log
        uint64_t rng
        float p
        int horizon



cdef int configure(Env* env, dict settings) except -1:
    env.p = settings["p"]
    env.horizon = settings["horizon"]
    return 0


include "vecenv.pxi"
