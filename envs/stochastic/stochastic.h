/* stochastic: the optimal policy is a fixed random choice between two actions.
 *
 * The observation is the constant 1.0, so a memoryless policy cannot tell steps apart. An
 * episode lasts `horizon` steps. Only its last step is rewarded, with
 *
 *     f   = (number of action-0 choices in the episode) / horizon
 *     tol = 2 * sqrt(p * (1 - p) / horizon)
 *     r   = 1 - max(0, |f - p| - tol) / max(p, 1 - p)
 *
 * tol is two standard deviations of f under the optimal memoryless policy (action 0 with
 * probability p), so that policy scores ~1.0, while the best deterministic one (always action
 * 0) scores 1 - (1 - p - tol) / p, e.g. 0.78 for p = 0.75 and horizon = 100. r lies in
 * [tol / max(p, 1-p), 1]. The last step is terminal (the episode has a fixed length, it is
 * not cut short), every other step gives reward 0. Score: r.
 */
#include <math.h>
#include "puffer_env.h"

/* Frame: the action-0 fraction of the episode in progress (row 0) and of the last finished
 * episode (row 1) as bars, above the target p with its tolerance band (row 2). */
enum { ST_EMPTY = 0, ST_BAR_NOW = 1, ST_BAR_LAST = 2, ST_BAND = 3, ST_TARGET = 4 };
#define ST_FRAME_ROWS 3
#define ST_FRAME_COLS 40

/* The log: action0_fraction: f of the episode; score: r. */
#define STOCHASTIC_LOG(F) F(episode_return) F(episode_length) F(action0_fraction) F(score)
PUFFER_LOG(STOCHASTIC_LOG);

typedef struct {
    PUFFER_ENV_FIELDS(float, int32_t);
    /* settings */
    float p;
    int horizon;
    /* derived from the settings */
    float tol;
    float inv_horizon;
    float inv_norm;            /* 1 / max(p, 1 - p) */
    /* state */
    int tick;
    int zeros;                 /* action-0 choices so far this episode */
    float last_fraction;       /* f of the last finished episode; -1 before the first */
} Stochastic;
#define PUFFER_ENV Stochastic

static inline void c_init(Stochastic* env) {
    float p = env->p;
    env->tol = 2.0f * sqrtf(p * (1.0f - p) / (float)env->horizon);
    env->inv_horizon = 1.0f / (float)env->horizon;
    env->inv_norm = 1.0f / (p > 1.0f - p ? p : 1.0f - p);
    env->last_fraction = -1.0f;
}

static inline void c_reset(Stochastic* env) {
    env->observations[0] = 1.0f;
    env->tick = 0;
    env->zeros = 0;
}

/* r for an episode whose action-0 fraction was f. */
static inline float st_reward(const Stochastic* env, float f) {
    float miss = fabsf(f - env->p) - env->tol;
    return 1.0f - (miss > 0.0f ? miss : 0.0f) * env->inv_norm;
}

static inline void c_step(Stochastic* env) {
    env->zeros += env->actions[0] == 0;
    env->tick += 1;
    env->truncations[0] = 0;
    if (env->tick < env->horizon) {
        env->rewards[0] = 0.0f;
        env->terminals[0] = 0;
        return;
    }
    float f = (float)env->zeros * env->inv_horizon;
    float r = st_reward(env, f);
    env->rewards[0] = r;
    env->terminals[0] = 1;
    env->log.action0_fraction += f;
    PUFFER_LOG_EPISODE(env->log, r, (float)env->tick, r);
    env->last_fraction = f;
    c_reset(env);
}

/* Columns [0, round(f * cols)) of a row get `tile`. */
static inline void st_bar(unsigned char* row, float f, unsigned char tile) {
    int filled = (int)lroundf(f * (float)ST_FRAME_COLS);
    if (filled > ST_FRAME_COLS) filled = ST_FRAME_COLS;
    for (int c = 0; c < filled; c++) row[c] = tile;
}

static inline int st_column(float f) {
    int c = (int)(f * (float)ST_FRAME_COLS);
    return c < 0 ? 0 : (c >= ST_FRAME_COLS ? ST_FRAME_COLS - 1 : c);
}

static inline void c_frame(const Stochastic* env, unsigned char* tiles) {
    if (tiles == NULL) return;
    memset(tiles, ST_EMPTY, (size_t)ST_FRAME_ROWS * ST_FRAME_COLS);
    if (env->tick > 0) st_bar(tiles, (float)env->zeros / (float)env->tick, ST_BAR_NOW);
    if (env->last_fraction >= 0.0f) st_bar(tiles + ST_FRAME_COLS, env->last_fraction, ST_BAR_LAST);
    unsigned char* target = tiles + 2 * ST_FRAME_COLS;
    for (int c = st_column(env->p - env->tol); c <= st_column(env->p + env->tol); c++)
        target[c] = ST_BAND;
    target[st_column(env->p)] = ST_TARGET;
}

static inline void c_close(Stochastic* env) { (void)env; }
