/* The one-hot grid layer as sums of table rows (engine/one_hot_sum.py), forward and backward.
 *
 * cells: [n, C] uint8, row-major. A cell c holding value v > 0 selects table row
 * (v - 1) * C + c of a [C * values, width] float32 table (value 0 has no row: the layer's bias
 * stands for it).
 *   forward:  rows[r] += table[(v - 1) * C + c]   for each non-zero cell of row r
 *   backward: table[(v - 1) * C + c] += rows[r]   (rows holds the output's gradient)
 * Grids are mostly zeros: cells are read 8 at a time as one word and only its non-zero bytes
 * are visited, so the cost is one row add per non-zero cell. Returns the flat position of the first cell whose value exceeds `values`
 * (nothing is added for it or after it), else -1.
 *
 * The row add is compiled for AVX-512, AVX2 and plain x86-64, picked when the library loads
 * (GCC's target_clones), so one build runs everywhere and uses the widest vectors the CPU has:
 * the widest clone makes a pass clearly faster than SSE2 alone (the figures: docs/architecture.md,
 * "Figures that shaped the code").
 */
#ifndef PUFFER_ONE_HOT_H
#define PUFFER_ONE_HOT_H

#include <stdint.h>
#include <string.h>

/* ifunc-based clones need GCC and glibc's loader (not clang's, musl's or macOS's) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define PUFFER_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PUFFER_VECTOR_CLONES
#endif

/* Adds one row of width floats; the caller's restrict promise lets it vectorize. */
static inline void puffer_add_row(float* restrict dst, const float* restrict src, int64_t width)
{
    for (int64_t j = 0; j < width; j++) dst[j] += src[j];
}

PUFFER_VECTOR_CLONES
static int64_t puffer_one_hot_sums(const uint8_t* cells, int64_t n, int64_t C,
                                   float* rows, float* table, int64_t width,
                                   int64_t values, int backward)
{
    for (int64_t r = 0; r < n; r++) {
        const uint8_t* row_cells = cells + r * C;
        float* row = rows + r * width;
        for (int64_t base = 0; base < C; base += 8) {
            /* The next 8 cells as one word (zero-padded past the row's end); each set byte is
             * a non-zero cell, visited lowest address first (little-endian byte order). */
            uint64_t word = 0;
            memcpy(&word, row_cells + base, C - base < 8 ? (size_t)(C - base) : 8);
            while (word) {
                int byte = __builtin_ctzll(word) >> 3;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
                int64_t c = base + 7 - byte;
#else
                int64_t c = base + byte;
#endif
                word &= ~((uint64_t)0xff << (byte * 8));
                uint8_t v = row_cells[c];
                if (v > values) return r * C + c;
                float* entry = table + ((int64_t)(v - 1) * C + c) * width;
                if (backward) puffer_add_row(entry, row, width);
                else puffer_add_row(row, entry, width);
            }
        }
    }
    return -1;
}

#endif
