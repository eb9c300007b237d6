/* squared: reach the targets around the edges of a grid.
 *
 * The agent starts at the centre of a size x size grid; `num_targets` targets spawn on
 * distinct edge cells. Reaching a target gives +1, removes it and teleports the agent back to
 * the centre. The episode ends (terminal) when every target is reached, or is truncated after
 * `max_ticks` steps. Several moves are often equally good (a target up and to the right), so
 * an optimal policy is stochastic in those states.
 *
 * Observation: the grid as bytes (EMPTY, AGENT, TARGET), updated incrementally: a step writes
 * at most the two cells the agent leaves and enters.
 */
#include "puffer_env.h"

enum { SQ_EMPTY = 0, SQ_AGENT = 1, SQ_TARGET = 2 };
enum { SQ_NOOP = 0, SQ_DOWN = 1, SQ_UP = 2, SQ_LEFT = 3, SQ_RIGHT = 4 };

PUFFER_LOG(PUFFER_STANDARD_LOG);  /* score: the fraction of the targets reached */

typedef struct {
    PUFFER_ENV_FIELDS(unsigned char, int32_t);
    /* settings */
    int size;
    int num_targets;
    int max_ticks;
    /* state */
    int pos;               /* agent cell index */
    int centre;
    int tick;
    int targets_left;
    float episode_return;
} Squared;
#define PUFFER_ENV Squared

static inline void c_init(Squared* env) {
    env->centre = (env->size / 2) * env->size + env->size / 2;
}

/* Edge cell number k in [0, 4*(size-1)), walking the border clockwise from the top-left. */
static inline int sq_edge_cell(const Squared* env, int k) {
    int side = env->size - 1;
    if (k < side) return k;                                   /* top row, left to right */
    k -= side;
    if (k < side) return k * env->size + side;                /* right column, downward */
    k -= side;
    if (k < side) return side * env->size + (side - k);       /* bottom row, right to left */
    k -= side;
    return (side - k) * env->size;                            /* left column, upward */
}

static inline void c_reset(Squared* env) {
    unsigned char* obs = env->observations;
    memset(obs, SQ_EMPTY, (size_t)env->size * env->size);
    int edges = 4 * (env->size - 1);
    for (int placed = 0; placed < env->num_targets;) {
        int cell = sq_edge_cell(env, puffer_rand_int(&env->rng, edges));
        if (obs[cell] == SQ_EMPTY) {
            obs[cell] = SQ_TARGET;
            placed++;
        }
    }
    env->pos = env->centre;
    obs[env->pos] = SQ_AGENT;
    env->tick = 0;
    env->targets_left = env->num_targets;
    env->episode_return = 0.0f;
}

static inline void sq_end_episode(Squared* env) {
    PUFFER_LOG_EPISODE(env->log, env->episode_return, (float)env->tick,
                       (float)(env->num_targets - env->targets_left) / (float)env->num_targets);
    c_reset(env);
}

static inline void c_step(Squared* env) {
    unsigned char* obs = env->observations;
    const int size = env->size;
    int pos = env->pos;
    int row = pos / size, col = pos - row * size;
    switch (env->actions[0]) {
        case SQ_DOWN:  row += row < size - 1; break;
        case SQ_UP:    row -= row > 0; break;
        case SQ_LEFT:  col -= col > 0; break;
        case SQ_RIGHT: col += col < size - 1; break;
        default: break;
    }
    int next = row * size + col;
    float reward = 0.0f;
    obs[pos] = SQ_EMPTY;
    if (obs[next] == SQ_TARGET) {
        obs[next] = SQ_EMPTY;
        reward = 1.0f;
        env->targets_left -= 1;
        next = env->centre;
    }
    obs[next] = SQ_AGENT;
    env->pos = next;
    env->tick += 1;
    env->episode_return += reward;
    env->rewards[0] = reward;
    int done = env->targets_left == 0;
    int timeout = !done && env->tick >= env->max_ticks;
    env->terminals[0] = (unsigned char)done;
    env->truncations[0] = (unsigned char)timeout;
    if (timeout) PUFFER_KEEP_FINAL(env, 0, 1, (size_t)size * size);
    if (done | timeout) sq_end_episode(env);
}

static inline void c_frame(const Squared* env, unsigned char* tiles) {
    memcpy(tiles, env->observations, (size_t)env->size * env->size);
}

static inline void c_close(Squared* env) { (void)env; }
