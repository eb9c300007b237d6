# Cython binding of memory.h: declares the contract fields and settings, then includes the
# shared driver.
from libc.stdint cimport uint64_t

cdef extern from "memory.h":
    ctypedef struct Log:
        float episode_return
        float episode_length
        float score
        float n

    ctypedef struct Env "Memory":
        void* observations
        void* actions
        float* rewards
        unsigned char* terminals
        unsigned char* truncations
        unsigned char* masks
        void* final_observations
        Log log
        uint64_t rng
        int length
        int delay



cdef int configure(Env* env, dict settings) except -1:
    env.length = settings["length"]
    env.delay = settings["delay"]
    return 0


include "vecenv.pxi"
