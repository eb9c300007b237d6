# Cython binding of corridor.h: the contract fields and the settings, then puffer-tui's
# shared driver (vecenv.pxi, found on the include path setup.py gives).
from libc.stdint cimport uint64_t

cdef extern from "corridor.h":
    ctypedef struct Log:
        float episode_return
        float episode_length
        float score
        float n

    ctypedef struct Env "Corridor":
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
        int max_ticks


cdef int configure(Env* env, dict settings) except -1:
    env.length = settings["length"]
    env.max_ticks = settings["max_ticks"]
    return 0


include "vecenv.pxi"
