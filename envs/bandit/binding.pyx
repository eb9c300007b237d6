# Cython binding of bandit.h: declares the contract fields and settings, then includes the
# shared driver.
from libc.stdint cimport uint64_t

cdef extern from "bandit.h":
    ctypedef struct Log:
        float episode_return
        float episode_length
        float best_arm_rate
        float score
        float n

    ctypedef struct Env "Bandit":
        void* observations
        void* actions
        float* rewards
        unsigned char* terminals
        unsigned char* truncations
        unsigned char* masks
        void* final_observations
        Log log
        uint64_t rng
        int num_arms
        uint64_t arm_seed



cdef int configure(Env* env, dict settings) except -1:
    env.num_arms = settings["num_arms"]
    env.arm_seed = settings["arm_seed"]
    return 0


include "vecenv.pxi"
