/* password: guess a fixed binary password one bit per step (tests exploration).
 *
 * The password is `length` bits derived from `password_seed` alone, so it is the same for
 * every env and every episode. Each step the agent guesses the next bit (action 0 or 1). After
 * `length` steps the episode ends (terminal) with reward 1 if every bit matched, else 0: the
 * only signal is the full password, found by random guessing once in 2^length episodes.
 *
 * Observation (float32 x length): the guesses so far, +1 for a 1 and -1 for a 0, 0 for bits
 * not guessed yet. A step writes the one cell it guesses; the reset at an episode's end clears
 * the row.
 */
#include "puffer_env.h"

/* Frame tiles: 2 rows x `length` columns (this episode's guesses, the last episode's). */
enum {
    PW_T_EMPTY = 0,
    PW_T_GUESS0 = 1, PW_T_GUESS1 = 2,      /* a guess of this episode (not judged yet) */
    PW_T_GOOD0 = 3, PW_T_GOOD1 = 4,        /* a guess of the last episode that was right */
    PW_T_BAD0 = 5, PW_T_BAD1 = 6,          /* ... that was wrong */
};
enum { PW_FRAME_ROWS = 2 };

/* The log: bits_correct: fraction of the password's bits guessed right; score: 1 if the whole
 * password was guessed. */
#define PASSWORD_LOG(F) F(episode_return) F(episode_length) F(bits_correct) F(score)
PUFFER_LOG(PASSWORD_LOG);

typedef struct {
    PUFFER_ENV_FIELDS(float, int32_t);
    /* settings */
    int length;
    uint64_t password_seed;
    /* derived */
    uint32_t password;     /* bit i: the i-th bit of the password */
    uint32_t mask;         /* the low `length` bits */
    /* state */
    int tick;
    uint32_t guess;        /* bit i: the i-th guess of this episode */
    /* the last finished episode, kept for the frame */
    uint32_t last_guess;
    int has_last;
} Password;
#define PUFFER_ENV Password

static inline uint32_t pw_mask(int length) {
    return length >= 32 ? 0xFFFFFFFFu : (1u << length) - 1u;
}

/* The password for a seed: a stream of its own, independent of the envs' rngs. */
static inline uint32_t pw_make_password(uint64_t seed, int length) {
    uint64_t state = puffer_seed(seed, 0);
    return (uint32_t)(puffer_rand(&state) >> 32) & pw_mask(length);
}

static inline void c_init(Password* env) {
    env->password = pw_make_password(env->password_seed, env->length);
    env->mask = pw_mask(env->length);
    env->has_last = 0;
}

static inline void c_reset(Password* env) {
    memset(env->observations, 0, (size_t)env->length * sizeof(float));
    env->tick = 0;
    env->guess = 0;
}

static inline void pw_end_episode(Password* env, float reward) {
    uint32_t right = ~(env->guess ^ env->password) & env->mask;
    env->log.bits_correct += (float)__builtin_popcount(right) / (float)env->length;
    PUFFER_LOG_EPISODE(env->log, reward, (float)env->length, reward);
    env->last_guess = env->guess;
    env->has_last = 1;
    c_reset(env);
}

static inline void c_step(Password* env) {
    int tick = env->tick;
    uint32_t bit = (uint32_t)(env->actions[0] & 1);   /* actions are validated 0 or 1 */
    env->observations[tick] = bit ? 1.0f : -1.0f;
    env->guess |= bit << tick;
    tick += 1;
    env->tick = tick;
    env->truncations[0] = 0;
    if (tick >= env->length) {
        float reward = env->guess == env->password ? 1.0f : 0.0f;
        env->rewards[0] = reward;
        env->terminals[0] = 1;
        pw_end_episode(env, reward);
        return;
    }
    env->rewards[0] = 0.0f;
    env->terminals[0] = 0;
}

/* Rows: 0 this episode's guesses so far, 1 the last finished episode's guesses judged right or
 * wrong (an episode's end is never on screen: the env resets in that step). */
static inline void c_frame(const Password* env, unsigned char* tiles) {
    const int w = env->length;
    memset(tiles, PW_T_EMPTY, (size_t)PW_FRAME_ROWS * w);
    for (int i = 0; i < env->tick; i++)
        tiles[i] = (unsigned char)(PW_T_GUESS0 + (int)((env->guess >> i) & 1u));
    if (!env->has_last) return;
    for (int i = 0; i < w; i++) {
        int said = (int)((env->last_guess >> i) & 1u);
        int right = said == (int)((env->password >> i) & 1u);
        tiles[w + i] = (unsigned char)((right ? PW_T_GOOD0 : PW_T_BAD0) + said);
    }
}

static inline void c_close(Password* env) { (void)env; }
