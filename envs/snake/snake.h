/* snake: many snakes share one grid (one agent row per snake).
 *
 * The playing field is width x height cells, surrounded by a wall border `vision` cells thick
 * so that every window around a head lies inside the stored grid (no bounds checks). Each
 * step the snakes move in index order: a snake whose head enters a wall or any snake cell
 * (its own included) dies; entering food or a corpse earns a reward and grows the snake by one
 * (up to max_length, after which the tail keeps moving). Eaten food reappears on a random
 * empty cell, so the field always holds `num_food` food when there is room for it. A dead
 * snake leaves each body cell as a corpse with probability `corpse_rate` and respawns at once
 * with length 1 on a random empty cell; its row reports `terminal` that step. An episode of a
 * snake is truncated after `max_steps` of its steps (0: never); the snake is then removed and
 * respawned. When no empty cell can be found for a respawn, the snake waits, masked out
 * (mask 0, observation zeros), and tries again on its next turn.
 *
 * Observation: the (2*vision+1)^2 tiles around the snake's head (uint8 tile ids below), copied
 * row by row from the grid after all snakes moved.
 */
#include <stdlib.h>
#include "puffer_env.h"

enum { SN_EMPTY = 0, SN_FOOD = 1, SN_CORPSE = 2, SN_WALL = 3, SN_BODY = 4, SN_HEAD = 5 };
enum { SN_UP = 0, SN_DOWN = 1, SN_LEFT = 2, SN_RIGHT = 3 };

/* Random cells tried before giving up on a placement until the next step. */
#define SN_PLACE_TRIES 16

/* The log: score: final length / max_length; snake_length: final length; died: 1 if the episode
 * ended by death, 0 if truncated. */
#define SNAKE_LOG(F) PUFFER_STANDARD_LOG(F) F(snake_length) F(food_eaten) F(corpses_eaten) F(died)
PUFFER_LOG(SNAKE_LOG);

typedef struct {
    int head;              /* index of the head in this snake's ring of body cells */
    int length;
    int ticks;
    int food;
    int corpses;
    int alive;
    float episode_return;
} SnakeState;

typedef struct {
    PUFFER_ENV_FIELDS(unsigned char, int32_t);
    /* settings */
    int width;
    int height;
    int num_snakes;
    int num_food;
    int vision;
    int max_length;
    int max_steps;
    float food_reward;
    float corpse_reward;
    float death_reward;
    float corpse_rate;
    /* derived */
    int stride;            /* columns of the stored (padded) grid */
    int rows;
    int window;            /* 2 * vision + 1 */
    int obs_size;
    int delta[4];          /* cell offset of each move */
    /* state */
    unsigned char* grid;
    int* bodies;           /* num_snakes rings of max_length cell indices */
    SnakeState* snakes;
    int food_missing;      /* eaten food not yet placed again (no room found) */
} Snake;
#define PUFFER_ENV Snake

static inline void c_init(Snake* env) {
    env->window = 2 * env->vision + 1;
    env->obs_size = env->window * env->window;
    env->stride = env->width + 2 * env->vision;
    env->rows = env->height + 2 * env->vision;
    env->delta[SN_UP] = -env->stride;
    env->delta[SN_DOWN] = env->stride;
    env->delta[SN_LEFT] = -1;
    env->delta[SN_RIGHT] = 1;
    env->grid = (unsigned char*)calloc((size_t)env->stride * env->rows, 1);
    env->bodies = (int*)calloc((size_t)env->num_snakes * env->max_length, sizeof(int));
    env->snakes = (SnakeState*)calloc((size_t)env->num_snakes, sizeof(SnakeState));
}

static inline int sn_random_cell(Snake* env) {
    int r = env->vision + puffer_rand_int(&env->rng, env->height);
    int c = env->vision + puffer_rand_int(&env->rng, env->width);
    return r * env->stride + c;
}

/* A random empty cell, or -1 after SN_PLACE_TRIES misses. With `scan`, fall back to a walk
 * over the field from a random cell, which finds one whenever one exists (used at reset). */
static inline int sn_find_empty(Snake* env, int scan) {
    for (int t = 0; t < SN_PLACE_TRIES; t++) {
        int cell = sn_random_cell(env);
        if (env->grid[cell] == SN_EMPTY) return cell;
    }
    if (!scan) return -1;
    int total = env->width * env->height;
    int start = puffer_rand_int(&env->rng, total);
    for (int k = 0; k < total; k++) {
        int i = (start + k) % total;
        int cell = (env->vision + i / env->width) * env->stride + env->vision + i % env->width;
        if (env->grid[cell] == SN_EMPTY) return cell;
    }
    return -1;
}

static inline int* sn_body(Snake* env, int s) { return env->bodies + (size_t)s * env->max_length; }

static inline void sn_write_obs(Snake* env, int s) {
    unsigned char* obs = env->observations + (size_t)s * env->obs_size;
    const SnakeState* sn = &env->snakes[s];
    if (!sn->alive) return;  /* zeroed when it went missing */
    const unsigned char* src =
        env->grid + sn_body(env, s)[sn->head] - env->vision * env->stride - env->vision;
    const int w = env->window;
    for (int r = 0; r < w; r++) memcpy(obs + r * w, src + r * env->stride, (size_t)w);
}

/* Put snake s, length 1, on an empty cell; on failure it waits masked out. */
static inline void sn_spawn(Snake* env, int s, int scan) {
    SnakeState* sn = &env->snakes[s];
    int cell = sn_find_empty(env, scan);
    sn->head = 0;
    sn->length = 1;
    sn->ticks = 0;
    sn->food = 0;
    sn->corpses = 0;
    sn->episode_return = 0.0f;
    if (cell < 0) {
        sn->alive = 0;
        env->masks[s] = 0;
        memset(env->observations + (size_t)s * env->obs_size, 0, (size_t)env->obs_size);
        return;
    }
    sn->alive = 1;
    env->masks[s] = 1;
    sn_body(env, s)[0] = cell;
    env->grid[cell] = SN_HEAD;
}

static inline void sn_place_missing_food(Snake* env, int scan) {
    while (env->food_missing > 0) {
        int cell = sn_find_empty(env, scan);
        if (cell < 0) return;
        env->grid[cell] = SN_FOOD;
        env->food_missing -= 1;
    }
}

static inline void c_reset(Snake* env) {
    memset(env->grid, SN_WALL, (size_t)env->stride * env->rows);
    for (int r = 0; r < env->height; r++)
        memset(env->grid + (size_t)(r + env->vision) * env->stride + env->vision, SN_EMPTY,
               (size_t)env->width);
    for (int s = 0; s < env->num_snakes; s++) sn_spawn(env, s, 1);
    env->food_missing = env->num_food;
    sn_place_missing_food(env, 1);
    for (int s = 0; s < env->num_snakes; s++) {
        env->rewards[s] = 0.0f;
        env->terminals[s] = 0;
        env->truncations[s] = 0;
        sn_write_obs(env, s);
    }
}

/* Add snake s's finished episode to the log. */
static inline void sn_log_episode(Snake* env, int s, int died) {
    const SnakeState* sn = &env->snakes[s];
    float score = (float)sn->length / (float)env->max_length;
    env->log.snake_length += (float)sn->length;
    env->log.food_eaten += (float)sn->food;
    env->log.corpses_eaten += (float)sn->corpses;
    env->log.died += (float)died;
    PUFFER_LOG_EPISODE(env->log, sn->episode_return, (float)sn->ticks, score < 1.0f ? score : 1.0f);
}

/* Clear snake s's cells from the grid; each becomes a corpse with probability `corpse_rate`. */
static inline void sn_remove_body(Snake* env, int s, float corpse_rate) {
    const SnakeState* sn = &env->snakes[s];
    const int* body = sn_body(env, s);
    int k = sn->head;
    for (int i = 0; i < sn->length; i++) {
        int leave_corpse = corpse_rate > 0.0f && puffer_rand_float(&env->rng) < corpse_rate;
        env->grid[body[k]] = leave_corpse ? SN_CORPSE : SN_EMPTY;
        k = k == 0 ? env->max_length - 1 : k - 1;
    }
}

static inline void sn_step_snake(Snake* env, int s) {
    SnakeState* sn = &env->snakes[s];
    int* body = sn_body(env, s);
    int cell = body[sn->head];
    int next = cell + env->delta[env->actions[s]];
    unsigned char tile = env->grid[next];
    if (tile >= SN_WALL) {  /* wall or snake */
        sn->episode_return += env->death_reward;
        sn->ticks += 1;
        env->rewards[s] = env->death_reward;
        env->terminals[s] = 1;
        sn_log_episode(env, s, 1);
        sn_remove_body(env, s, env->corpse_rate);
        sn_spawn(env, s, 0);
        return;
    }
    float reward = 0.0f;
    int grow = 0;
    if (tile == SN_FOOD) {
        reward = env->food_reward;
        grow = 1;
        sn->food += 1;
        env->food_missing += 1;
    } else if (tile == SN_CORPSE) {
        reward = env->corpse_reward;
        grow = 1;
        sn->corpses += 1;
    }
    env->grid[cell] = SN_BODY;
    if (grow && sn->length < env->max_length) {
        sn->length += 1;
    } else {
        int tail = sn->head - sn->length + 1;
        if (tail < 0) tail += env->max_length;
        env->grid[body[tail]] = SN_EMPTY;
    }
    sn->head = sn->head + 1 == env->max_length ? 0 : sn->head + 1;
    body[sn->head] = next;
    env->grid[next] = SN_HEAD;
    sn->ticks += 1;
    sn->episode_return += reward;
    env->rewards[s] = reward;
    if (env->max_steps > 0 && sn->ticks >= env->max_steps) {
        env->truncations[s] = 1;
        sn_write_obs(env, s);
        PUFFER_KEEP_FINAL(env, s, 1, env->obs_size);
        sn_log_episode(env, s, 0);
        sn_remove_body(env, s, 0.0f);
        sn_spawn(env, s, 0);
    }
}

static inline void c_step(Snake* env) {
    const int n = env->num_snakes;
    memset(env->terminals, 0, (size_t)n);
    memset(env->truncations, 0, (size_t)n);
    for (int s = 0; s < n; s++) {
        if (!env->snakes[s].alive) {
            env->rewards[s] = 0.0f;
            sn_spawn(env, s, 0);  /* waiting for room: try again */
            continue;
        }
        sn_step_snake(env, s);
    }
    sn_place_missing_food(env, 0);
    for (int s = 0; s < n; s++) sn_write_obs(env, s);
}

/* The playing field without the padding; heads and bodies as in the observation. */
static inline void c_frame(const Snake* env, unsigned char* tiles) {
    for (int r = 0; r < env->height; r++)
        memcpy(tiles + (size_t)r * env->width,
               env->grid + (size_t)(r + env->vision) * env->stride + env->vision,
               (size_t)env->width);
}

/* What c_init allocated, for saving and restoring the env (see puffer_env.h). */
static inline int c_heap(const Snake* env, PufferHeap* blocks) {
    blocks[0] = (PufferHeap){offsetof(Snake, grid), (size_t)env->stride * env->rows};
    blocks[1] = (PufferHeap){offsetof(Snake, bodies),
                             (size_t)env->num_snakes * env->max_length * sizeof(int)};
    blocks[2] = (PufferHeap){offsetof(Snake, snakes), (size_t)env->num_snakes * sizeof(SnakeState)};
    return 3;
}
#define PUFFER_ENV_HEAP c_heap

static inline void c_close(Snake* env) {
    free(env->grid);
    free(env->bodies);
    free(env->snakes);
    env->grid = NULL;
    env->bodies = NULL;
    env->snakes = NULL;
}
