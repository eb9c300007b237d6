/* The native environment contract of puffer-tui.
 *
 * An environment is plain C in envs/NAME/NAME.h (or a plugin package's header). It includes
 * this file and declares, with the two macros below, its log and its struct:
 *
 *   PUFFER_LOG(PUFFER_STANDARD_LOG);          // or its own list, see PUFFER_LOG
 *   typedef struct {
 *       PUFFER_ENV_FIELDS(OBS_T, ACT_T);      // the contract's fields, always first
 *       ...settings and game state...
 *   } MyEnv;
 *   #define PUFFER_ENV MyEnv                  // the struct the driver allocates
 *
 * The contract's fields (PUFFER_ENV_FIELDS) are:
 *       OBS_T* observations;        // this env's rows of the shared observation buffer
 *       ACT_T* actions;             // its rows of the action buffer (int32_t for discrete spaces)
 *       float* rewards;
 *       unsigned char* terminals;
 *       unsigned char* truncations;
 *       unsigned char* masks;       // 1 = the agent acts this step (multi-agent envs)
 *       void* final_observations;   // rows shaped like `observations`: see truncation below
 *       Log log;                    // summed over the episodes this env finished
 *       uint64_t rng;               // per-env random state, seeded by the binding
 *
 * The Cython side of the contract is declared once, in puffer_env.pxd: an env's binding.pyx
 * declares only its own settings and copies them in (see envs/squared/binding.pyx).
 *
 * The env defines five functions:
 *
 *   void c_init(Env*)               allocate what the settings ask for (called once)
 *   void c_reset(Env*)              start an episode, write the first observation
 *   void c_step(Env*)               apply actions, write rewards/terminals/truncations and the
 *                                   next observation; at an episode's end add to `log`, reset
 *                                   in place (same-step autoreset) so the observation written
 *                                   is the first of the next episode
 *   void c_frame(Env*, unsigned char* tiles)   write the H x W tile grid used for rendering
 *   void c_close(Env*)              free what c_init allocated
 *
 * Truncation: an env that truncates an episode writes that episode's last observation into
 * its observations rows, keeps them with PUFFER_KEEP_FINAL, and only then resets. The trainer
 * bootstraps the truncated step from the value of that kept observation (rows of untruncated
 * agents are never read, so nothing is copied on ordinary steps).
 *
 * Saving and restoring (exact resume): the driver copies each Env struct byte for byte and, on
 * restore, puts back the pointer fields of the contract. An env whose c_init allocates memory
 * also defines `int c_heap(const Env*, PufferHeap* blocks)`, filling in up to PUFFER_MAX_HEAP
 * (offset of the pointer field, bytes it points to) pairs and returning how many, and says so
 * with `#define PUFFER_ENV_HEAP c_heap` after it; those blocks are saved and restored too and
 * their pointers kept. Everything else in the struct must be plain values (no pointers).
 *
 * The shared pieces below (random numbers, log arithmetic, action validation) are what every
 * env would otherwise repeat; the generic Cython driver (vecenv.pxi) steps N envs per call with
 * the GIL released.
 */
#ifndef PUFFER_ENV_H
#define PUFFER_ENV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- the contract's helpers for truncation and saved state ---- */

/* Copy agent rows [first, first + count) of the observations to final_observations;
 * `row_bytes` is one agent's observation size in bytes. */
#define PUFFER_KEEP_FINAL(env, first, count, row_bytes)                                   \
    memcpy((char*)(env)->final_observations + (size_t)(first) * (size_t)(row_bytes),      \
           (const char*)(env)->observations + (size_t)(first) * (size_t)(row_bytes),      \
           (size_t)(count) * (size_t)(row_bytes))

#define PUFFER_MAX_HEAP 16

/* One heap block of an env: where in the struct its pointer lives, and its size. */
typedef struct {
    size_t offset;
    size_t bytes;
} PufferHeap;

/* ---- the log and the contract's fields ---- */

/* A Log holds floats only, summed over finished episodes: episode_return, episode_length,
 * score (normalised so that 1.0 is optimal) and any fields of the env's own, then `n`, the
 * number of episodes summed. An env lists its fields in an X-macro, F(name) each, and the
 * driver reports them under those names:
 *
 *   #define SNAKE_LOG(F) PUFFER_STANDARD_LOG(F) F(snake_length) F(died)
 *   PUFFER_LOG(SNAKE_LOG);
 *
 * `n` is added last. Leaving out one of the standard three fails to compile. */
#define PUFFER_STANDARD_LOG(F) F(episode_return) F(episode_length) F(score)
#define PUFFER_LOG_FLOAT_(name) float name;
#define PUFFER_LOG_NAME_(name) #name,
#define PUFFER_LOG(FIELDS)                                                                \
    typedef struct {                                                                      \
        FIELDS(PUFFER_LOG_FLOAT_)                                                         \
        float n;                                                                          \
    } Log;                                                                                \
    static const char* const puffer_log_names[] = {FIELDS(PUFFER_LOG_NAME_) "n"};        \
    _Static_assert(offsetof(Log, episode_return) + offsetof(Log, episode_length)          \
                   + offsetof(Log, score) < sizeof(Log) * 3, "every Log has the standard fields")

/* The name of log field i, for the driver. */
#define puffer_log_name(i) (puffer_log_names[(i)])

/* The contract's fields, first in every env struct (the driver points them into the shared
 * buffers, and a checkpoint restores them). OBS_T and ACT_T are the element types of the
 * env's observation and action rows. */
#define PUFFER_ENV_FIELDS(OBS_T, ACT_T)                                                   \
    OBS_T* observations;                                                                  \
    ACT_T* actions;                                                                       \
    float* rewards;                                                                       \
    unsigned char* terminals;                                                             \
    unsigned char* truncations;                                                           \
    unsigned char* masks;                                                                 \
    void* final_observations;                                                             \
    Log log;                                                                              \
    uint64_t rng

/* An episode's standard log entries (the env adds its own fields beside this call). */
#define PUFFER_LOG_EPISODE(log, ret, length, sc)                                          \
    do {                                                                                  \
        (log).episode_return += (ret);                                                    \
        (log).episode_length += (length);                                                 \
        (log).score += (sc);                                                              \
        (log).n += 1.0f;                                                                  \
    } while (0)

/* ---- frames ---- */

/* Put `tile` on the cell of point (x, y) in a rows x cols tile grid whose centre cell is the
 * origin, x to the right and y up, at `rows_per_unit` and `cols_per_unit` cells per unit of
 * length (about twice as many columns as rows: a terminal cell is twice as tall as wide).
 * Points off the grid are left out. For envs that draw a mechanism (acrobot, pendulum). */
static inline void puffer_plot(unsigned char* tiles, int rows, int cols, double rows_per_unit,
                               double cols_per_unit, double x, double y, unsigned char tile) {
    double c = x * cols_per_unit, r = y * rows_per_unit;
    int col = cols / 2 + (int)(c < 0 ? c - 0.5 : c + 0.5);   /* rounded half away from 0 */
    int row = rows / 2 - (int)(r < 0 ? r - 0.5 : r + 0.5);
    if (row >= 0 && row < rows && col >= 0 && col < cols) tiles[row * cols + col] = tile;
}

/* ---- random numbers: splitmix64 for seeding, xorshift64* for the stream ---- */

static inline uint64_t puffer_splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* Seed for env `index` of a vector seeded with `seed`: a function of seed + index only, so env i
 * of a vector seeded s gets the same stream as env 0 of one seeded s + i. That is what lets a
 * vectorizer split envs across workers (worker w seeded s + w * envs_per_worker) and still
 * reproduce Serial exactly. Never zero (xorshift's fixed point). */
static inline uint64_t puffer_seed(uint64_t seed, uint64_t index) {
    uint64_t s = puffer_splitmix64(puffer_splitmix64(seed + index));
    return s ? s : 0x2545F4914F6CDD1DULL;
}

static inline uint64_t puffer_rand(uint64_t* state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform integer in [0, n). Lemire's multiply-shift: no division, negligible bias. */
static inline int puffer_rand_int(uint64_t* state, int n) {
    return (int)(((puffer_rand(state) >> 32) * (uint64_t)n) >> 32);
}

/* Uniform float in [0, 1). */
static inline float puffer_rand_float(uint64_t* state) {
    return (float)(puffer_rand(state) >> 40) * (1.0f / 16777216.0f);
}

/* Uniform float in [lo, hi). */
static inline float puffer_rand_range(uint64_t* state, float lo, float hi) {
    return lo + (hi - lo) * puffer_rand_float(state);
}

/* ---- logs: a Log is an array of `nfields` floats, `n` last ---- */

static inline void puffer_log_add(float* dst, const float* src, int nfields) {
    for (int i = 0; i < nfields; i++) dst[i] += src[i];
}

static inline void puffer_log_zero(float* log, int nfields) {
    memset(log, 0, (size_t)nfields * sizeof(float));
}

/* Divide every field by n (the last field), leaving n itself as the episode count. */
static inline void puffer_log_average(float* log, int nfields) {
    float n = log[nfields - 1];
    if (n <= 0.0f) return;
    for (int i = 0; i < nfields - 1; i++) log[i] /= n;
}

/* ---- action validation ---- */

/* Index of the first action outside [0, nvec[j]) where j is the component (k per row), or -1.
 * Written as a branch-free OR-reduction over blocks so the common all-valid case vectorises. */
static inline int64_t puffer_check_discrete(const int32_t* actions, int64_t n, const int32_t* nvec, int k) {
    if (k == 1) {
        const uint32_t limit = (uint32_t)nvec[0];
        for (int64_t start = 0; start < n; start += 256) {
            int64_t end = start + 256 < n ? start + 256 : n;
            int bad = 0;
            for (int64_t i = start; i < end; i++) bad |= (uint32_t)actions[i] >= limit;
            if (bad) {
                for (int64_t i = start; i < end; i++)
                    if ((uint32_t)actions[i] >= limit) return i;
            }
        }
        return -1;
    }
    for (int64_t row = 0; row < n; row += k)
        for (int j = 0; j < k && row + j < n; j++)
            if ((uint32_t)actions[row + j] >= (uint32_t)nvec[j]) return row + j;
    return -1;
}

/* Index of the first non-finite continuous action, or -1. */
static inline int64_t puffer_check_finite(const float* actions, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float a = actions[i];
        if (!(a - a == 0.0f)) return i;
    }
    return -1;
}

#endif
