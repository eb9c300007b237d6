/* bandit: a multi-armed bandit; every pull is a whole episode.
 *
 * `num_arms` arms pay 1 with fixed probabilities, the same in every env: they are drawn once
 * from `arm_seed` (not from the env's seed), so envs with different seeds face the same
 * bandit. One arm, chosen by the draw, pays with probability BANDIT_BEST_P; the others pay
 * with probabilities uniform in [BANDIT_LOW_P, BANDIT_HIGH_P), so the best arm is clearly best.
 *
 * Action: the arm to pull. Reward: Bernoulli(p[arm]). Every step is terminal.
 * Observation: the constant 1.0 (the agent learns from rewards alone).
 * Score of an episode: p[arm] / p[best], exactly 1.0 for the best arm.
 */
#include "puffer_env.h"

#define BANDIT_MAX_ARMS 64
#define BANDIT_BEST_P 0.9f
#define BANDIT_LOW_P 0.1f
#define BANDIT_HIGH_P 0.6f
/* Stream id that turns arm_seed into the arm-probability RNG, kept apart from env seeds. */
#define BANDIT_ARM_STREAM 0xA53ULL

/* Frame: one tile per arm. */
enum { BANDIT_ARM = 0, BANDIT_BEST = 1, BANDIT_PAID = 2, BANDIT_UNPAID = 3 };

/* The log: best_arm_rate: fraction of pulls of the best arm; score: p[arm] / p[best]. */
#define BANDIT_LOG(F) F(episode_return) F(episode_length) F(best_arm_rate) F(score)
PUFFER_LOG(BANDIT_LOG);

typedef struct {
    PUFFER_ENV_FIELDS(float, int32_t);
    /* settings */
    int num_arms;
    uint64_t arm_seed;
    /* derived from the settings */
    int best_arm;
    float probs[BANDIT_MAX_ARMS];
    float relative[BANDIT_MAX_ARMS];   /* probs[k] / probs[best_arm]; 1.0 exactly at best */
    /* state, for the frame */
    int last_arm;                      /* -1 before the first pull */
    float last_reward;
} Bandit;
#define PUFFER_ENV Bandit

static inline void c_init(Bandit* env) {
    uint64_t arm_rng = puffer_seed(env->arm_seed, BANDIT_ARM_STREAM);
    env->best_arm = puffer_rand_int(&arm_rng, env->num_arms);
    for (int k = 0; k < env->num_arms; k++)
        env->probs[k] = k == env->best_arm
            ? BANDIT_BEST_P : puffer_rand_range(&arm_rng, BANDIT_LOW_P, BANDIT_HIGH_P);
    for (int k = 0; k < env->num_arms; k++)
        env->relative[k] = env->probs[k] / env->probs[env->best_arm];
    env->last_arm = -1;
}

static inline void c_reset(Bandit* env) {
    env->observations[0] = 1.0f;
    env->last_arm = -1;
    env->last_reward = 0.0f;
}

static inline void c_step(Bandit* env) {
    int arm = env->actions[0];
    float reward = puffer_rand_float(&env->rng) < env->probs[arm] ? 1.0f : 0.0f;
    env->rewards[0] = reward;
    env->terminals[0] = 1;
    env->truncations[0] = 0;
    env->log.best_arm_rate += (float)(arm == env->best_arm);
    PUFFER_LOG_EPISODE(env->log, reward, 1.0f, env->relative[arm]);
    env->last_arm = arm;
    env->last_reward = reward;
    /* The next episode's first observation; the rest of a reset is nothing to do. */
    env->observations[0] = 1.0f;
}

static inline void c_frame(const Bandit* env, unsigned char* tiles) {
    if (tiles == NULL) return;
    for (int k = 0; k < env->num_arms; k++)
        tiles[k] = k == env->best_arm ? BANDIT_BEST : BANDIT_ARM;
    if (env->last_arm >= 0)
        tiles[env->last_arm] = env->last_reward > 0.0f ? BANDIT_PAID : BANDIT_UNPAID;
}

static inline void c_close(Bandit* env) { (void)env; }
