/* cpr: a common-pool-resource grid world (multi-agent: one row per agent).
 *
 * Agents walk a width x height field with random walls (actions up/down/left/right/stay),
 * surrounded by a wall border `vision` cells thick so that every observation window lies
 * inside the stored grid. Agents move in index order; walls, agents and yellow food block.
 *   - grey food is collected by stepping onto it;
 *   - yellow food is collected when, after the moves, two or more agents stand in its
 *     4-neighbourhood; every one of them is rewarded.
 * Each step every food spawns, with its kind's rate, a food of its kind on one of its 8
 * neighbours chosen at random (if that cell is empty), and with `random_spawn_rate` a food
 * appears on a random empty cell (yellow in proportion to the two rates), so a depleted map can
 * recover. Food lives in one list per kind (with each cell's slot in it, for O(1) removal), and
 * the spawn pass draws the geometric gap to the next food whose roll succeeds, so its work is
 * proportional to food count times rate, never to the grid's area.
 *
 * Agents lose hp_loss HP per step (after eating) and gain HP from food, up to max_hp. An agent
 * at 0 HP dies: its row reports `terminal` and death_reward that step, and from that step until
 * the episode resets its mask is 0 and its observation zeros. The episode ends (terminal) when
 * every agent is dead, or is truncated after max_ticks steps (truncation on the live agents).
 *
 * Observation: the (2*vision+1)^2 tiles around the agent (uint8 tile ids below), then the
 * agent's HP level: ceil(CPR_HP_LEVELS * hp / max_hp), 1 (starving) to CPR_HP_LEVELS (full).
 * Levels stay within the tile ids' range so that a policy can one-hot every byte alike.
 */
#include <math.h>
#include <stdlib.h>
#include "puffer_env.h"

enum { CPR_EMPTY = 0, CPR_GREY = 1, CPR_YELLOW = 2, CPR_WALL = 3, CPR_AGENT = 4 };
enum { CPR_UP = 0, CPR_DOWN = 1, CPR_LEFT = 2, CPR_RIGHT = 3, CPR_STAY = 4 };

#define CPR_NO_SLOT 0xFFFFu
#define CPR_PLACE_TRIES 16
#define CPR_HP_LEVELS 4

/* The log: episode_return: mean over agents; score: mean fraction of the episode the agents
 * stayed alive; food_left: food on the map when the episode ended; food_mean: food on the map,
 * averaged over the episode's steps; agents_alive: alive when the episode ended. */
#define CPR_LOG(F)                                                                              \
    PUFFER_STANDARD_LOG(F) F(food_left) F(food_mean) F(grey_eaten) F(yellow_eaten)              \
    F(agents_alive)
PUFFER_LOG(CPR_LOG);

typedef struct {
    int* cells;            /* grid indices of this kind's food */
    int count;
} FoodList;

typedef struct {
    PUFFER_ENV_FIELDS(unsigned char, int32_t);
    /* settings */
    int width;
    int height;
    int num_agents;
    int vision;
    int max_ticks;
    int initial_grey;
    int initial_yellow;
    float wall_density;
    float grey_spawn_rate;
    float yellow_spawn_rate;
    float random_spawn_rate;
    int max_hp;
    int hp_loss;
    int grey_hp;
    int yellow_hp;
    float grey_reward;
    float yellow_reward;
    float death_reward;
    /* derived */
    int stride;
    int rows;
    int window;
    int obs_size;
    int delta[5];          /* cell offset of each action */
    int around[8];         /* offsets of the 8 neighbours */
    /* state */
    unsigned char* grid;
    uint16_t* food_slot;   /* index of a food cell in its kind's list, CPR_NO_SLOT otherwise */
    FoodList food[3];      /* indexed by CPR_GREY, CPR_YELLOW (0 unused) */
    unsigned char* touch;  /* agents next to each yellow food, during one step */
    int* touched;          /* the yellow cells touched this step */
    int* agent_cell;
    int* agent_hp;
    int* agent_life;       /* steps alive this episode */
    float* agent_return;
    unsigned char* alive;
    int alive_count;
    int tick;
    int grey_eaten;
    int yellow_eaten;
    double food_sum;
    int64_t spawn_work;    /* random draws of the last spawn pass (tests check its scaling) */
} CPR;
#define PUFFER_ENV CPR

static inline void c_init(CPR* env) {
    const int v = env->vision;
    env->window = 2 * v + 1;
    env->obs_size = env->window * env->window + 1;
    env->stride = env->width + 2 * v;
    env->rows = env->height + 2 * v;
    const int s = env->stride;
    env->delta[CPR_UP] = -s;
    env->delta[CPR_DOWN] = s;
    env->delta[CPR_LEFT] = -1;
    env->delta[CPR_RIGHT] = 1;
    env->delta[CPR_STAY] = 0;
    const int around[8] = {-s - 1, -s, -s + 1, -1, 1, s - 1, s, s + 1};
    memcpy(env->around, around, sizeof(around));
    size_t cells = (size_t)env->stride * env->rows;
    size_t field = (size_t)env->width * env->height;
    env->grid = (unsigned char*)calloc(cells, 1);
    env->food_slot = (uint16_t*)malloc(cells * sizeof(uint16_t));
    env->food[CPR_GREY].cells = (int*)calloc(field, sizeof(int));
    env->food[CPR_YELLOW].cells = (int*)calloc(field, sizeof(int));
    env->touch = (unsigned char*)calloc(cells, 1);
    env->touched = (int*)calloc((size_t)4 * env->num_agents, sizeof(int));
    env->agent_cell = (int*)calloc((size_t)env->num_agents, sizeof(int));
    env->agent_hp = (int*)calloc((size_t)env->num_agents, sizeof(int));
    env->agent_life = (int*)calloc((size_t)env->num_agents, sizeof(int));
    env->agent_return = (float*)calloc((size_t)env->num_agents, sizeof(float));
    env->alive = (unsigned char*)calloc((size_t)env->num_agents, 1);
}

/* ---- food lists ---- */

static inline void cpr_add_food(CPR* env, int cell, int kind) {
    FoodList* list = &env->food[kind];
    env->grid[cell] = (unsigned char)kind;
    env->food_slot[cell] = (uint16_t)list->count;
    list->cells[list->count++] = cell;
}

static inline void cpr_remove_food(CPR* env, int cell) {
    FoodList* list = &env->food[env->grid[cell]];
    int slot = env->food_slot[cell];
    int last = list->cells[--list->count];
    list->cells[slot] = last;
    env->food_slot[last] = (uint16_t)slot;
    env->food_slot[cell] = CPR_NO_SLOT;
    env->grid[cell] = CPR_EMPTY;
}

static inline int cpr_food_count(const CPR* env) {
    return env->food[CPR_GREY].count + env->food[CPR_YELLOW].count;
}

/* ---- placement ---- */

static inline int cpr_random_cell(CPR* env) {
    int r = env->vision + puffer_rand_int(&env->rng, env->height);
    int c = env->vision + puffer_rand_int(&env->rng, env->width);
    return r * env->stride + c;
}

/* A random empty cell; after a few misses, a walk over the field from a random cell (used at
 * reset only). -1 if the field has no empty cell. */
static inline int cpr_find_empty(CPR* env) {
    for (int t = 0; t < CPR_PLACE_TRIES; t++) {
        int cell = cpr_random_cell(env);
        if (env->grid[cell] == CPR_EMPTY) return cell;
    }
    int total = env->width * env->height;
    int start = puffer_rand_int(&env->rng, total);
    for (int k = 0; k < total; k++) {
        int i = (start + k) % total;
        int cell = (env->vision + i / env->width) * env->stride + env->vision + i % env->width;
        if (env->grid[cell] == CPR_EMPTY) return cell;
    }
    return -1;
}

/* ---- observations ---- */

static inline void cpr_write_obs(CPR* env, int i) {
    unsigned char* obs = env->observations + (size_t)i * env->obs_size;
    const unsigned char* src = env->grid + env->agent_cell[i] - env->vision * env->stride - env->vision;
    const int w = env->window;
    for (int r = 0; r < w; r++) memcpy(obs + r * w, src + r * env->stride, (size_t)w);
    obs[w * w] = (unsigned char)((env->agent_hp[i] * CPR_HP_LEVELS + env->max_hp - 1) / env->max_hp);
}

static inline void cpr_write_all_obs(CPR* env) {
    for (int i = 0; i < env->num_agents; i++) {
        if (env->alive[i]) cpr_write_obs(env, i);
        else memset(env->observations + (size_t)i * env->obs_size, 0, (size_t)env->obs_size);
    }
}

/* ---- episodes ---- */

/* Clear the per-episode counters and agent state; the grid is set up by the caller. */
static inline void cpr_begin_episode(CPR* env) {
    env->tick = 0;
    env->grey_eaten = 0;
    env->yellow_eaten = 0;
    env->food_sum = 0.0;
    env->alive_count = 0;
    for (int i = 0; i < env->num_agents; i++) {
        env->agent_hp[i] = env->max_hp;
        env->agent_life[i] = 0;
        env->agent_return[i] = 0.0f;
        env->masks[i] = env->alive[i];
        env->alive_count += env->alive[i];
    }
    cpr_write_all_obs(env);
}

static inline void cpr_clear_food(CPR* env) {
    memset(env->food_slot, 0xFF, (size_t)env->stride * env->rows * sizeof(uint16_t));
    env->food[CPR_GREY].count = 0;
    env->food[CPR_YELLOW].count = 0;
}

static inline void c_reset(CPR* env) {
    memset(env->grid, CPR_WALL, (size_t)env->stride * env->rows);
    cpr_clear_food(env);
    for (int r = 0; r < env->height; r++) {
        unsigned char* row = env->grid + (size_t)(r + env->vision) * env->stride + env->vision;
        for (int c = 0; c < env->width; c++)
            row[c] = puffer_rand_float(&env->rng) < env->wall_density ? CPR_WALL : CPR_EMPTY;
    }
    for (int i = 0; i < env->num_agents; i++) {
        int cell = cpr_find_empty(env);
        env->alive[i] = cell >= 0;
        if (cell < 0) continue;  /* no room: this agent sits the episode out, masked */
        env->agent_cell[i] = cell;
        env->grid[cell] = CPR_AGENT;
    }
    for (int k = 0; k < env->initial_grey + env->initial_yellow; k++) {
        int cell = cpr_find_empty(env);
        if (cell < 0) break;
        cpr_add_food(env, cell, k < env->initial_grey ? CPR_GREY : CPR_YELLOW);
    }
    cpr_begin_episode(env);
}

static inline void cpr_end_episode(CPR* env) {
    float ret = 0.0f, life = 0.0f;
    for (int i = 0; i < env->num_agents; i++) {
        ret += env->agent_return[i];
        life += (float)env->agent_life[i];
    }
    float agents = (float)env->num_agents;
    float score = life / (agents * (float)env->max_ticks);
    env->log.food_left += (float)cpr_food_count(env);
    env->log.food_mean += (float)(env->food_sum / (double)env->tick);
    env->log.grey_eaten += (float)env->grey_eaten;
    env->log.yellow_eaten += (float)env->yellow_eaten;
    env->log.agents_alive += (float)env->alive_count;
    PUFFER_LOG_EPISODE(env->log, ret / agents, (float)env->tick, score < 1.0f ? score : 1.0f);
}

/* ---- one step ---- */

static inline void cpr_feed(CPR* env, int i, float reward, int hp) {
    env->rewards[i] += reward;
    int total = env->agent_hp[i] + hp;
    env->agent_hp[i] = total < env->max_hp ? total : env->max_hp;
}

static inline void cpr_move_agents(CPR* env) {
    for (int i = 0; i < env->num_agents; i++) {
        if (!env->alive[i]) continue;
        int cell = env->agent_cell[i];
        int next = cell + env->delta[env->actions[i]];
        unsigned char tile = env->grid[next];
        if (tile != CPR_EMPTY && tile != CPR_GREY) continue;  /* blocked (or staying) */
        if (tile == CPR_GREY) {
            cpr_remove_food(env, next);
            cpr_feed(env, i, env->grey_reward, env->grey_hp);
            env->grey_eaten += 1;
        }
        env->grid[cell] = CPR_EMPTY;
        env->grid[next] = CPR_AGENT;
        env->agent_cell[i] = next;
    }
}

/* Yellow food with two or more agents in its 4-neighbourhood is eaten by all of them. */
static inline void cpr_collect_yellow(CPR* env) {
    if (env->food[CPR_YELLOW].count == 0) return;
    const int* d = env->delta;
    int touched = 0;
    for (int i = 0; i < env->num_agents; i++) {
        if (!env->alive[i]) continue;
        for (int k = 0; k < 4; k++) {
            int cell = env->agent_cell[i] + d[k];
            if (env->grid[cell] != CPR_YELLOW) continue;
            if (env->touch[cell]++ == 0) env->touched[touched++] = cell;
        }
    }
    for (int t = 0; t < touched; t++) {
        int food = env->touched[t];
        if (env->touch[food] >= 2) {
            for (int i = 0; i < env->num_agents; i++) {
                if (!env->alive[i]) continue;
                int dist = env->agent_cell[i] - food;
                if (dist == d[0] || dist == d[1] || dist == d[2] || dist == d[3])
                    cpr_feed(env, i, env->yellow_reward, env->yellow_hp);
            }
            cpr_remove_food(env, food);
            env->yellow_eaten += 1;
        }
        env->touch[food] = 0;
    }
}

static inline void cpr_drain_hp(CPR* env) {
    for (int i = 0; i < env->num_agents; i++) {
        if (!env->alive[i]) continue;
        env->agent_life[i] += 1;
        env->agent_hp[i] -= env->hp_loss;
        if (env->agent_hp[i] > 0) continue;
        env->agent_hp[i] = 0;
        env->alive[i] = 0;
        env->alive_count -= 1;
        env->grid[env->agent_cell[i]] = CPR_EMPTY;
        env->rewards[i] += env->death_reward;
        env->terminals[i] = 1;
        env->masks[i] = 0;
        memset(env->observations + (size_t)i * env->obs_size, 0, (size_t)env->obs_size);
    }
}

/* Failures before the next success of independent trials with success probability p, given
 * log(1 - p); `limit` when that is `limit` or more. */
static inline int cpr_geometric_gap(CPR* env, float log_fail, int limit) {
    env->spawn_work += 1;
    float u = 1.0f - puffer_rand_float(&env->rng);  /* (0, 1] */
    float gap = logf(u) / log_fail;
    return gap < (float)limit ? (int)gap : limit;
}

/* Each food of `kind` spawns with probability `rate` into one random neighbour. Only the foods
 * present before the pass spawn (new ones are appended past `count`). */
static inline void cpr_spawn_kind(CPR* env, int kind, float rate) {
    FoodList* list = &env->food[kind];
    const int count = list->count;
    if (rate <= 0.0f || count == 0) return;
    const float log_fail = rate < 1.0f ? log1pf(-rate) : -INFINITY;
    int k = rate < 1.0f ? cpr_geometric_gap(env, log_fail, count) : 0;
    while (k < count) {
        int target = list->cells[k] + env->around[puffer_rand_int(&env->rng, 8)];
        env->spawn_work += 1;
        if (env->grid[target] == CPR_EMPTY) cpr_add_food(env, target, kind);
        k += 1;
        if (rate < 1.0f && k < count) k += cpr_geometric_gap(env, log_fail, count - k);
    }
}

static inline void cpr_spawn_food(CPR* env) {
    env->spawn_work = 0;
    cpr_spawn_kind(env, CPR_GREY, env->grey_spawn_rate);
    cpr_spawn_kind(env, CPR_YELLOW, env->yellow_spawn_rate);
    if (env->random_spawn_rate > 0.0f && puffer_rand_float(&env->rng) < env->random_spawn_rate) {
        int cell = cpr_random_cell(env);
        if (env->grid[cell] == CPR_EMPTY) {
            float rates = env->grey_spawn_rate + env->yellow_spawn_rate;
            float yellow_share = rates > 0.0f ? env->yellow_spawn_rate / rates : 0.5f;
            cpr_add_food(env, cell, puffer_rand_float(&env->rng) < yellow_share ? CPR_YELLOW : CPR_GREY);
        }
    }
}

static inline void c_step(CPR* env) {
    const int n = env->num_agents;
    memset(env->rewards, 0, (size_t)n * sizeof(float));
    memset(env->terminals, 0, (size_t)n);
    memset(env->truncations, 0, (size_t)n);
    env->tick += 1;
    cpr_move_agents(env);
    cpr_collect_yellow(env);
    cpr_drain_hp(env);
    cpr_spawn_food(env);
    env->food_sum += (double)cpr_food_count(env);
    for (int i = 0; i < n; i++) env->agent_return[i] += env->rewards[i];
    if (env->alive_count == 0 || env->tick >= env->max_ticks) {
        for (int i = 0; i < n; i++) {
            env->truncations[i] = env->alive[i];
            if (env->alive[i]) {
                cpr_write_obs(env, i);
                PUFFER_KEEP_FINAL(env, i, 1, env->obs_size);
            }
        }
        cpr_end_episode(env);
        c_reset(env);
        return;
    }
    for (int i = 0; i < n; i++)
        if (env->alive[i]) cpr_write_obs(env, i);
}

/* ---- rendering and test support ---- */

static inline void c_frame(const CPR* env, unsigned char* tiles) {
    for (int r = 0; r < env->height; r++)
        memcpy(tiles + (size_t)r * env->width,
               env->grid + (size_t)(r + env->vision) * env->stride + env->vision,
               (size_t)env->width);
}

/* Replace the field with `tiles` (width x height tile ids; agents are numbered in reading
 * order, agents without a tile sit the episode out) and start an episode on it. */
static inline void cpr_load(CPR* env, const unsigned char* tiles) {
    memset(env->grid, CPR_WALL, (size_t)env->stride * env->rows);
    cpr_clear_food(env);
    memset(env->alive, 0, (size_t)env->num_agents);
    int agent = 0;
    for (int r = 0; r < env->height; r++) {
        for (int c = 0; c < env->width; c++) {
            int cell = (r + env->vision) * env->stride + env->vision + c;
            unsigned char tile = tiles[r * env->width + c];
            if (tile == CPR_GREY || tile == CPR_YELLOW) {
                cpr_add_food(env, cell, tile);
            } else if (tile == CPR_AGENT && agent < env->num_agents) {
                env->grid[cell] = CPR_AGENT;
                env->agent_cell[agent] = cell;
                env->alive[agent++] = 1;
            } else {
                env->grid[cell] = tile == CPR_WALL ? CPR_WALL : CPR_EMPTY;
            }
        }
    }
    cpr_begin_episode(env);
}

/* What c_init allocated, for saving and restoring the env (see puffer_env.h). */
static inline int c_heap(const CPR* env, PufferHeap* blocks) {
    size_t cells = (size_t)env->stride * env->rows;
    size_t field = (size_t)env->width * env->height;
    size_t agents = (size_t)env->num_agents;
    blocks[0] = (PufferHeap){offsetof(CPR, grid), cells};
    blocks[1] = (PufferHeap){offsetof(CPR, food_slot), cells * sizeof(uint16_t)};
    blocks[2] = (PufferHeap){offsetof(CPR, food[CPR_GREY].cells), field * sizeof(int)};
    blocks[3] = (PufferHeap){offsetof(CPR, food[CPR_YELLOW].cells), field * sizeof(int)};
    blocks[4] = (PufferHeap){offsetof(CPR, touch), cells};
    blocks[5] = (PufferHeap){offsetof(CPR, touched), 4 * agents * sizeof(int)};
    blocks[6] = (PufferHeap){offsetof(CPR, agent_cell), agents * sizeof(int)};
    blocks[7] = (PufferHeap){offsetof(CPR, agent_hp), agents * sizeof(int)};
    blocks[8] = (PufferHeap){offsetof(CPR, agent_life), agents * sizeof(int)};
    blocks[9] = (PufferHeap){offsetof(CPR, agent_return), agents * sizeof(float)};
    blocks[10] = (PufferHeap){offsetof(CPR, alive), agents};
    return 11;
}
#define PUFFER_ENV_HEAP c_heap

static inline void c_close(CPR* env) {
    free(env->grid);
    free(env->food_slot);
    free(env->food[CPR_GREY].cells);
    free(env->food[CPR_YELLOW].cells);
    free(env->touch);
    free(env->touched);
    free(env->agent_cell);
    free(env->agent_hp);
    free(env->agent_life);
    free(env->agent_return);
    free(env->alive);
    memset(&env->food, 0, sizeof(env->food));
    env->grid = NULL;
}
