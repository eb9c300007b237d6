# The generic Cython driver shared by every native environment.
#
# An env's binding.pyx declares, from its C header, the fields it sets as a struct `Settings`
# (`ctypedef struct Settings "MyEnv": int size ...`), defines
# `cdef int configure(Settings* env, dict settings) except -1` to copy settings into a fresh
# struct, and then does `include "vecenv.pxi"`. The contract itself (the struct's shared
# fields, the log, the five c_* functions) is declared once in puffer_env.pxd. This file adds
# the `Binding` class that owns N env structs pointing into caller-owned numpy buffers and
# steps them all in one call with the GIL released, plus log aggregation, seeding and action
# validation.

from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy

from puffer_env cimport *


# The env's heap blocks (puffer_env.h): its c_heap if it defines PUFFER_ENV_HEAP, else none.
# Placed after the env header (the binding declares it before including this file); the
# #error keeps a binding that does otherwise from silently saving no heap.
cdef extern from *:
    """
    #ifndef PUFFER_ENV
    #error "the env header must #define PUFFER_ENV and come before vecenv.pxi"
    #endif
    #ifdef PUFFER_ENV_HEAP
    #define puffer_env_heap(env, blocks) PUFFER_ENV_HEAP(env, blocks)
    #else
    #define puffer_env_heap(env, blocks) ((void)(env), (void)(blocks), 0)
    #endif
    """
    int puffer_env_heap(Env* env, PufferHeap* blocks) nogil


# The names of the log's fields, in order (n last), from the env header's PUFFER_LOG.
LOG_FIELDS = tuple(puffer_log_name(i).decode() for i in range(sizeof(Log) // sizeof(float)))


cdef inline char* _data(object array):
    return <char*><size_t>array.ctypes.data


cdef class Binding:
    """N C envs whose contract pointers are rows of the given (contiguous) numpy buffers."""

    cdef Env* envs
    cdef int num_envs
    cdef int agents_per_env
    cdef int initialized
    cdef object buffers    # keeps the numpy buffers alive as long as the C envs point into them
    cdef object nvec       # int32 sizes of the discrete action components, or None if continuous
    cdef int32_t* nvec_data
    cdef int nvec_len
    cdef char* actions
    cdef int64_t num_actions

    def __cinit__(self, dict buffers, int num_envs, int agents_per_env, dict settings,
                  object nvec=None, uint64_t seed=0):
        cdef int i
        cdef Py_ssize_t obs_row, act_row
        cdef char* obs = _data(buffers["observations"])
        cdef char* act = _data(buffers["actions"])
        cdef char* rew = _data(buffers["rewards"])
        cdef char* term = _data(buffers["terminals"])
        cdef char* trunc = _data(buffers["truncations"])
        cdef char* mask = _data(buffers["masks"])
        cdef char* final = _data(buffers["final_observations"])
        self.envs = NULL
        self.initialized = 0
        if num_envs < 1 or agents_per_env < 1:
            raise ValueError(f"num_envs ({num_envs}) and agents_per_env ({agents_per_env}) must be >= 1")
        self.buffers = buffers
        self.nvec = nvec
        self.nvec_len = 0 if nvec is None else len(nvec)
        self.nvec_data = NULL
        if nvec is not None:
            self.nvec_data = <int32_t*>_data(nvec)
        self.actions = act
        self.num_actions = buffers["actions"].size
        self.num_envs = num_envs
        self.agents_per_env = agents_per_env
        obs_row = buffers["observations"].strides[0] * agents_per_env
        act_row = buffers["actions"].strides[0] * agents_per_env
        self.envs = <Env*>calloc(num_envs, sizeof(Env))
        if self.envs == NULL:
            raise MemoryError(f"cannot allocate {num_envs} environments")
        for i in range(num_envs):
            configure(<Settings*>&self.envs[i], settings)
            self.envs[i].observations = <void*>(obs + i * obs_row)
            self.envs[i].actions = <void*>(act + i * act_row)
            self.envs[i].rewards = <float*>(rew + i * agents_per_env * sizeof(float))
            self.envs[i].terminals = <unsigned char*>(term + i * agents_per_env)
            self.envs[i].truncations = <unsigned char*>(trunc + i * agents_per_env)
            self.envs[i].masks = <unsigned char*>(mask + i * agents_per_env)
            self.envs[i].final_observations = <void*>(final + i * obs_row)
            self.envs[i].rng = puffer_seed(seed, i)
            c_init(&self.envs[i])
        self.initialized = 1

    def __dealloc__(self):
        cdef int i
        if self.envs != NULL:
            if self.initialized:
                for i in range(self.num_envs):
                    c_close(&self.envs[i])
            free(self.envs)
            self.envs = NULL

    def reset(self, uint64_t seed):
        """Seed env i with puffer_seed(seed, i), clear its log and start an episode."""
        cdef int i
        cdef int nfields = sizeof(Log) // sizeof(float)
        with nogil:
            for i in range(self.num_envs):
                self.envs[i].rng = puffer_seed(seed, i)
                puffer_log_zero(<float*>&self.envs[i].log, nfields)
                c_reset(&self.envs[i])

    def step(self):
        """Validate the action buffer, then step every env once, writing the other buffers in
        place. Returns -1, or the flat index of the first invalid action (nothing is stepped)."""
        cdef int i
        cdef int64_t bad
        with nogil:
            if self.nvec_len > 0:
                bad = puffer_check_discrete(<const int32_t*>self.actions, self.num_actions,
                                            self.nvec_data, self.nvec_len)
            else:
                bad = puffer_check_finite(<const float*>self.actions, self.num_actions)
            if bad < 0:
                for i in range(self.num_envs):
                    c_step(&self.envs[i])
        return bad

    def log(self):
        """Sum the logs of all envs, zero them, and return field averages (n = episode count)."""
        cdef int i
        cdef Log total
        cdef int nfields = sizeof(Log) // sizeof(float)
        cdef float* values = <float*>&total
        puffer_log_zero(values, nfields)
        with nogil:
            for i in range(self.num_envs):
                puffer_log_add(values, <float*>&self.envs[i].log, nfields)
                puffer_log_zero(<float*>&self.envs[i].log, nfields)
            puffer_log_average(values, nfields)
        return {LOG_FIELDS[i]: values[i] for i in range(nfields)}

    def frame(self, int index, object tiles):
        """Write env `index`'s tile grid into the uint8 array `tiles`."""
        if not 0 <= index < self.num_envs:
            raise IndexError(f"env index {index} out of range [0, {self.num_envs})")
        c_frame(&self.envs[index], <unsigned char*>_data(tiles))


    cdef Py_ssize_t _state_size(self, int i):
        cdef PufferHeap blocks[PUFFER_MAX_HEAP]
        cdef int k, count = puffer_env_heap(&self.envs[i], blocks)
        cdef Py_ssize_t size = sizeof(Env)
        for k in range(count):
            size += blocks[k].bytes
        return size

    def get_state(self):
        """Every env's state as bytes: its struct (pointer fields included but meaningless)
        followed by its heap blocks, env after env. Same settings give the same size per env."""
        cdef PufferHeap blocks[PUFFER_MAX_HEAP]
        cdef int i, k, count
        cdef Py_ssize_t total = 0, at = 0
        for i in range(self.num_envs):
            total += self._state_size(i)
        out = bytearray(total)
        cdef char* dst = out
        for i in range(self.num_envs):
            memcpy(dst + at, &self.envs[i], sizeof(Env))
            at += sizeof(Env)
            count = puffer_env_heap(&self.envs[i], blocks)
            for k in range(count):
                memcpy(dst + at, (<void**>((<char*>&self.envs[i]) + blocks[k].offset))[0],
                       blocks[k].bytes)
                at += blocks[k].bytes
        return bytes(out)

    def set_state(self, const unsigned char[::1] state):
        """Restore what get_state() returned (from envs built with the same settings): the
        struct bytes, then the heap blocks, keeping this binding's buffer and heap pointers."""
        cdef PufferHeap blocks[PUFFER_MAX_HEAP]
        cdef int i, k, count
        cdef Py_ssize_t total = 0, at = 0
        cdef Env live
        cdef void* pointer
        for i in range(self.num_envs):
            total += self._state_size(i)
        if state.shape[0] != total:
            raise ValueError(f"env state has {state.shape[0]} bytes, these {self.num_envs} envs "
                             f"need {total}: it was saved with other settings or env counts")
        cdef const unsigned char* src = &state[0] if total else NULL
        for i in range(self.num_envs):
            live = self.envs[i]
            count = puffer_env_heap(&live, blocks)
            memcpy(&self.envs[i], src + at, sizeof(Env))
            at += sizeof(Env)
            self.envs[i].observations = live.observations
            self.envs[i].actions = live.actions
            self.envs[i].rewards = live.rewards
            self.envs[i].terminals = live.terminals
            self.envs[i].truncations = live.truncations
            self.envs[i].masks = live.masks
            self.envs[i].final_observations = live.final_observations
            for k in range(count):
                pointer = (<void**>((<char*>&live) + blocks[k].offset))[0]
                (<void**>((<char*>&self.envs[i]) + blocks[k].offset))[0] = pointer
                memcpy(pointer, src + at, blocks[k].bytes)
                at += blocks[k].bytes
