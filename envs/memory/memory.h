/* memory: recite a random binary sequence after a delay (needs a recurrent policy).
 *
 * An episode has three phases. Show: for `length` steps the observation shows bit i of a
 * sequence drawn fresh each episode. Wait: `delay` steps of blank observations. Recite: for
 * `length` steps the agent outputs bit i (action 0 or 1); each correct bit gives +1/length.
 * Actions outside the recite phase are ignored. The episode ends (terminal) after the last
 * recite step, so it always lasts 2 * length + delay steps. A memoryless policy can only
 * guess (score ~0.5); one that remembers the bits scores 1.0.
 *
 * Observation (float32 x 4): [bit shown (+1 / -1, 0 when nothing is shown), show, wait,
 * recite] with the last three a one-hot of the phase. A step writes only what changes: the
 * bit cell while showing, and the phase flags at the two phase boundaries.
 */
#include "puffer_env.h"

enum { MEM_OBS_BIT = 0, MEM_OBS_SHOW = 1, MEM_OBS_WAIT = 2, MEM_OBS_RECITE = 3, MEM_OBS_SIZE = 4 };

/* Frame tiles: 4 rows x `length` columns (shown bits, recited bits, cursor, last episode). */
enum {
    MEM_T_EMPTY = 0,
    MEM_T_BIT0 = 1, MEM_T_BIT1 = 2,        /* a bit that has been shown */
    MEM_T_GOOD0 = 3, MEM_T_GOOD1 = 4,      /* a recited bit that was right */
    MEM_T_BAD0 = 5, MEM_T_BAD1 = 6,        /* a recited bit that was wrong */
    MEM_T_SHOWING = 7,                     /* cursor: this bit is being shown */
    MEM_T_RECITING = 8,                    /* cursor: this bit is to be recited */
    MEM_T_WAITING = 9,                     /* the wait phase */
};
enum { MEM_FRAME_ROWS = 4 };

/* The log: score: fraction of the bits recited correctly. */
PUFFER_LOG(PUFFER_STANDARD_LOG);

typedef struct {
    PUFFER_ENV_FIELDS(float, int32_t);
    /* settings */
    int length;
    int delay;
    /* derived */
    int recite_at;         /* first tick of the recite phase: length + delay */
    int episode_ticks;     /* 2 * length + delay */
    float bit_reward;      /* 1 / length */
    /* state */
    int tick;
    int correct;
    uint64_t bits;         /* bit i of the sequence to remember */
    uint64_t recited;      /* bit i: what the agent recited for bit i */
    float episode_return;
    /* the last finished episode, kept for the frame */
    uint64_t last_bits;
    uint64_t last_recited;
    int has_last;
} Memory;
#define PUFFER_ENV Memory

static inline void c_init(Memory* env) {
    env->recite_at = env->length + env->delay;
    env->episode_ticks = 2 * env->length + env->delay;
    env->bit_reward = 1.0f / (float)env->length;
    env->has_last = 0;
}

static inline uint64_t mem_mask(int length) {
    return length >= 64 ? ~0ULL : (1ULL << length) - 1ULL;
}

static inline void c_reset(Memory* env) {
    float* obs = env->observations;
    env->bits = puffer_rand(&env->rng) & mem_mask(env->length);
    env->recited = 0;
    env->correct = 0;
    env->tick = 0;
    env->episode_return = 0.0f;
    obs[MEM_OBS_BIT] = (env->bits & 1ULL) ? 1.0f : -1.0f;
    obs[MEM_OBS_SHOW] = 1.0f;
    obs[MEM_OBS_WAIT] = 0.0f;
    obs[MEM_OBS_RECITE] = 0.0f;
}

static inline void mem_end_episode(Memory* env) {
    PUFFER_LOG_EPISODE(env->log, env->episode_return, (float)env->episode_ticks,
                       (float)env->correct / (float)env->length);
    env->last_bits = env->bits;
    env->last_recited = env->recited;
    env->has_last = 1;
    c_reset(env);
}

static inline void c_step(Memory* env) {
    float* obs = env->observations;
    int tick = env->tick;
    float reward = 0.0f;
    if (tick >= env->recite_at) {
        int i = tick - env->recite_at;
        uint64_t said = (uint64_t)(env->actions[0] & 1);   /* actions are validated 0 or 1 */
        env->recited |= said << i;
        if (said == ((env->bits >> i) & 1ULL)) {
            reward = env->bit_reward;
            env->correct += 1;
        }
    }
    tick += 1;
    env->tick = tick;
    env->rewards[0] = reward;
    env->episode_return += reward;
    env->truncations[0] = 0;
    if (tick >= env->episode_ticks) {
        env->terminals[0] = 1;
        mem_end_episode(env);
        return;
    }
    env->terminals[0] = 0;
    if (tick < env->length) {
        obs[MEM_OBS_BIT] = ((env->bits >> tick) & 1ULL) ? 1.0f : -1.0f;
    } else if (tick == env->length) {
        /* showing is over: wait, or recite at once when there is no delay */
        obs[MEM_OBS_BIT] = 0.0f;
        obs[MEM_OBS_SHOW] = 0.0f;
        obs[env->delay > 0 ? MEM_OBS_WAIT : MEM_OBS_RECITE] = 1.0f;
    } else if (tick == env->recite_at) {
        obs[MEM_OBS_WAIT] = 0.0f;
        obs[MEM_OBS_RECITE] = 1.0f;
    }
}

static inline unsigned char mem_recited_tile(uint64_t bits, uint64_t recited, int i) {
    int said = (int)((recited >> i) & 1ULL);
    int right = said == (int)((bits >> i) & 1ULL);
    return (unsigned char)(right ? MEM_T_GOOD0 + said : MEM_T_BAD0 + said);
}

/* Rows: 0 the bits shown so far, 1 the bits recited so far (right / wrong), 2 a cursor at the
 * bit being shown or recited (or the wait marker across the row), 3 the last finished
 * episode's recitation (an episode's end is never on screen: the env resets in that step). */
static inline void c_frame(const Memory* env, unsigned char* tiles) {
    const int w = env->length;
    const int tick = env->tick;
    memset(tiles, MEM_T_EMPTY, (size_t)MEM_FRAME_ROWS * w);
    unsigned char* shown = tiles;
    unsigned char* recited = tiles + w;
    unsigned char* cursor = tiles + 2 * w;
    unsigned char* last = tiles + 3 * w;
    int num_shown = tick < w ? tick + 1 : w;
    for (int i = 0; i < num_shown; i++)
        shown[i] = (unsigned char)(MEM_T_BIT0 + (int)((env->bits >> i) & 1ULL));
    int num_recited = tick > env->recite_at ? tick - env->recite_at : 0;
    for (int i = 0; i < num_recited; i++)
        recited[i] = mem_recited_tile(env->bits, env->recited, i);
    if (tick < w) {
        cursor[tick] = MEM_T_SHOWING;
    } else if (tick < env->recite_at) {
        memset(cursor, MEM_T_WAITING, (size_t)w);
    } else {
        cursor[tick - env->recite_at] = MEM_T_RECITING;
    }
    if (env->has_last)
        for (int i = 0; i < w; i++)
            last[i] = mem_recited_tile(env->last_bits, env->last_recited, i);
}

static inline void c_close(Memory* env) { (void)env; }
