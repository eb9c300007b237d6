# The C env contract (puffer_env.h) declared once for Cython. The shared driver (vecenv.pxi)
# cimports it, so an env's binding.pyx declares only its own settings.
#
# `Env` is the struct the env header names with `#define PUFFER_ENV MyEnv`, seen through the
# contract's fields (PUFFER_ENV_FIELDS); `Log` is its log, whose field names the driver reads
# from puffer_log_names. The five c_* functions are the env header's.

from libc.stdint cimport int32_t, int64_t, uint64_t


cdef extern from "puffer_env.h":
    uint64_t puffer_seed(uint64_t seed, uint64_t index) nogil
    void puffer_log_add(float* dst, const float* src, int nfields) nogil
    void puffer_log_zero(float* log, int nfields) nogil
    void puffer_log_average(float* log, int nfields) nogil
    int64_t puffer_check_discrete(const int32_t* actions, int64_t n, const int32_t* nvec, int k) nogil
    int64_t puffer_check_finite(const float* actions, int64_t n) nogil
    ctypedef struct PufferHeap:
        size_t offset
        size_t bytes
    enum: PUFFER_MAX_HEAP

    ctypedef struct Log:
        pass
    const char* puffer_log_name(int index)

    ctypedef struct Env "PUFFER_ENV":
        void* observations
        void* actions
        float* rewards
        unsigned char* terminals
        unsigned char* truncations
        unsigned char* masks
        void* final_observations
        Log log
        uint64_t rng

    void c_init(Env* env) nogil
    void c_reset(Env* env) nogil
    void c_step(Env* env) nogil
    void c_frame(Env* env, unsigned char* tiles) nogil
    void c_close(Env* env) nogil
