# Cython binding of cartpole.h: declares the contract fields and settings, then includes the
# shared driver.
from libc.stdint cimport uint64_t

cdef extern from "cartpole.h":
    ctypedef struct Log:
        float episode_return
        float episode_length
        float cart_out
        float pole_fell
        float score
        float n

    ctypedef struct Env "CartPole":
        void* observations
        void* actions
        float* rewards
        unsigned char* terminals
        unsigned char* truncations
        unsigned char* masks
        void* final_observations
        Log log
        uint64_t rng
        int max_steps



cdef int configure(Env* env, dict settings) except -1:
    env.max_steps = settings["max_steps"]
    return 0


include "vecenv.pxi"
