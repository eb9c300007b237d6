# GAE + V-trace advantages for CPU float32 arrays (the C kernel in advantage.h), GIL released.

from libc.stdint cimport int64_t

cdef extern from "advantage.h":
    void puffer_advantage(const float* values, const float* rewards, const float* terminals,
                          const float* truncations, const float* final_values,
                          const float* ratio, float* advantages,
                          int64_t rows, int horizon, float gamma, float lambda_,
                          float rho_clip, float c_clip) nogil


def compute_advantage(const float[:, ::1] values, const float[:, ::1] rewards,
                      const float[:, ::1] terminals, const float[:, ::1] truncations,
                      const float[:, ::1] final_values, const float[:, ::1] ratio,
                      float[:, ::1] advantages,
                      float gamma, float gae_lambda, float rho_clip, float c_clip):
    """Write advantages[rows, horizon] in place; every array contiguous float32 of that shape."""
    cdef int64_t rows = values.shape[0]
    cdef int horizon = <int>values.shape[1]
    for name, array in (("rewards", rewards), ("terminals", terminals),
                        ("truncations", truncations), ("final_values", final_values),
                        ("ratio", ratio),
                        ("advantages", advantages)):
        if array.shape[0] != rows or array.shape[1] != horizon:
            raise ValueError(
                f"{name} has shape ({array.shape[0]}, {array.shape[1]}), "
                f"expected ({rows}, {horizon}) like values"
            )
    with nogil:
        puffer_advantage(&values[0, 0] if rows and horizon else NULL,
                         &rewards[0, 0] if rows and horizon else NULL,
                         &terminals[0, 0] if rows and horizon else NULL,
                         &truncations[0, 0] if rows and horizon else NULL,
                         &final_values[0, 0] if rows and horizon else NULL,
                         &ratio[0, 0] if rows and horizon else NULL,
                         &advantages[0, 0] if rows and horizon else NULL,
                         rows, horizon, gamma, gae_lambda, rho_clip, c_clip)
