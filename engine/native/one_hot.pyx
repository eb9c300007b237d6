# The one-hot grid encoder's layer as row sums (engine/algo/encoders.py), forward and backward, for
# CPU uint8 cells and float32 tables; the GIL is released.
#
# The kernel and its layout: engine/native/one_hot.h.

from libc.stdint cimport int64_t, uint8_t


cdef extern from "one_hot.h":
    int64_t puffer_one_hot_sums(const uint8_t* cells, int64_t n, int64_t C, float* rows,
                                float* table, int64_t width, int64_t values,
                                int backward) nogil


cdef _run(const uint8_t[:, ::1] cells, float[:, ::1] rows, float[:, ::1] table, bint backward):
    cdef int64_t n = cells.shape[0], C = cells.shape[1], width = table.shape[1]
    if C == 0 or table.shape[0] % C:
        raise ValueError(f"the table has {table.shape[0]} rows, not a multiple of {C} cells")
    if rows.shape[0] != n or rows.shape[1] != width:
        raise ValueError(f"rows have shape ({rows.shape[0]}, {rows.shape[1]}), "
                         f"expected ({n}, {width})")
    cdef int64_t values = table.shape[0] // C, bad = -1
    if n and width:
        with nogil:
            bad = puffer_one_hot_sums(&cells[0, 0], n, C, &rows[0, 0], &table[0, 0], width,
                                          values, backward)
    if bad >= 0:
        raise ValueError(f"observation value {cells[bad // C, bad % C]} (row {bad // C}, cell "
                         f"{bad % C}) is above the observation space's high of {values}: the "
                         f"env returned a value outside its space")


def one_hot_sum(const uint8_t[:, ::1] cells, float[:, ::1] table, float[:, ::1] out):
    """out[r] += table[(v - 1) * C + c] for every cell c of row r that holds a value v > 0.
    (`table` is only read.)"""
    _run(cells, out, table, False)


def one_hot_sum_backward(const uint8_t[:, ::1] cells, float[:, ::1] grad,
                         float[:, ::1] grad_table):
    """grad_table[(v - 1) * C + c] += grad[r] for every cell c of row r holding v > 0.
    (`grad` is only read.)"""
    _run(cells, grad, grad_table, True)
