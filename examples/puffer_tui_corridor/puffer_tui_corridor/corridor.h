/* corridor: walk right to the end of a corridor (an example plugin env for puffer-tui).
 *
 * The agent starts in cell 0 of a corridor of `length` cells; the goal is the last cell.
 * Actions: 0 left, 1 right. Reaching the goal gives +1 and ends the episode (terminal);
 * after `max_ticks` steps it is truncated. Observation: the cells as bytes (EMPTY, AGENT, GOAL).
 * The contract (puffer_env.h, shipped with puffer-tui): the standard log, the contract's
 * fields first in the struct, PUFFER_ENV naming it, then c_init, c_reset, c_step, c_frame,
 * c_close.
 */
#include <string.h>

#include "puffer_env.h"

enum { CORRIDOR_EMPTY = 0, CORRIDOR_AGENT = 1, CORRIDOR_GOAL = 2 };

PUFFER_LOG(PUFFER_STANDARD_LOG);  /* score: 1 when the goal was reached */

typedef struct {
    PUFFER_ENV_FIELDS(unsigned char, int32_t);
    /* settings */
    int length;
    int max_ticks;
    /* state */
    int pos;
    int tick;
} Corridor;
#define PUFFER_ENV Corridor

static inline void c_init(Corridor* env) { (void)env; }

static inline void c_reset(Corridor* env) {
    memset(env->observations, CORRIDOR_EMPTY, (size_t)env->length);
    env->observations[env->length - 1] = CORRIDOR_GOAL;
    env->pos = 0;
    env->observations[0] = CORRIDOR_AGENT;
    env->tick = 0;
}

static inline void c_step(Corridor* env) {
    unsigned char* obs = env->observations;
    int next = env->pos + (env->actions[0] == 1 ? 1 : -1);
    if (next < 0) next = 0;
    obs[env->pos] = CORRIDOR_EMPTY;
    obs[next] = CORRIDOR_AGENT;
    env->pos = next;
    env->tick += 1;
    int done = next == env->length - 1;
    int timeout = !done && env->tick >= env->max_ticks;
    env->rewards[0] = done ? 1.0f : 0.0f;
    env->terminals[0] = (unsigned char)done;
    env->truncations[0] = (unsigned char)timeout;
    if (timeout) PUFFER_KEEP_FINAL(env, 0, 1, (size_t)env->length);
    if (done | timeout) {
        PUFFER_LOG_EPISODE(env->log, done ? 1.0f : 0.0f, (float)env->tick, done ? 1.0f : 0.0f);
        c_reset(env);
    }
}

static inline void c_frame(const Corridor* env, unsigned char* tiles) {
    memcpy(tiles, env->observations, (size_t)env->length);
}

static inline void c_close(Corridor* env) { (void)env; }
