# Cython binding of squared.h: declares the contract fields and settings, then includes the
# shared driver.
from libc.stdint cimport int32_t, uint64_t

cdef extern from "squared.h":
    ctypedef struct Log:
        float episode_return
        float episode_length
        float score
        float n

    ctypedef struct Env "Squared":
        void* observations
        void* actions
        float* rewards
        unsigned char* terminals
        unsigned char* truncations
        unsigned char* masks
        void* final_observations
        Log log
        uint64_t rng
        int size
        int num_targets
        int max_ticks



cdef int configure(Env* env, dict settings) except -1:
    env.size = settings["size"]
    env.num_targets = settings["num_targets"]
    env.max_ticks = settings["max_ticks"]
    return 0


include "vecenv.pxi"
