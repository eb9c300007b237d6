# Cython binding of password.h: declares its settings, then includes the shared driver
# (the contract is declared once, in engine/native/puffer_env.pxd). `password_bits` exposes
# the password a seed gives (for tests and renders).
from libc.stdint cimport uint32_t, uint64_t

cdef extern from "password.h":
    ctypedef struct Settings "Password":
        int length
        uint64_t password_seed

    uint32_t pw_make_password(uint64_t seed, int length) nogil


cdef int configure(Settings* env, dict settings) except -1:
    env.length = settings["length"]
    env.password_seed = settings["password_seed"]
    return 0


def password_bits(uint64_t seed, int length):
    """The password `seed` gives, as a list of `length` bits (0 or 1)."""
    if not 1 <= length <= 32:
        raise ValueError(f"password length must be in [1, 32], got {length}")
    cdef uint32_t word = pw_make_password(seed, length)
    return [(word >> i) & 1 for i in range(length)]


include "vecenv.pxi"
