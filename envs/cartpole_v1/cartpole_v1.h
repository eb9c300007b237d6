/* cartpole_v1: Gymnasium's CartPole-v1 in C, the same float64 arithmetic in its operand order.
 *
 * A pole is hinged on a cart on a track; action 1 pushes the cart right with 10 N, 0 left.
 * (x, x_dot, theta, theta_dot) advances by explicit Euler with tau = 0.02 s. The episode
 * terminates once |x| > 2.4 or |theta| > 12 degrees, and is truncated after `max_steps` steps
 * (CartPole-v1: 500). Reward 1 on every step, the terminal one included. Each episode starts
 * from a state drawn uniformly from [-0.05, 0.05)^4.
 *
 * The state is double as Gymnasium's and every expression keeps its operand order, so a step
 * agrees with Gymnasium's to the last bit wherever the C library's sin/cos agree with numpy's
 * (tests/envs/test_env_cartpole_v1.py compares them). The built-in `cartpole` (envs/cartpole)
 * is a float32 variant with another score. What differs from Gymnasium: the random stream of
 * the start states, the autoreset (same-step, as every native env), and a step that both
 * terminates and reaches the time limit is terminal only.
 *
 * Observation: the state as float32. Score: the episode return, as Gymnasium ids report it.
 */
#include <math.h>
#include "puffer_env.h"

#define CV_GRAVITY 9.8
#define CV_MASSCART 1.0
#define CV_MASSPOLE 0.1
#define CV_LENGTH 0.5            /* half the pole's length */
#define CV_FORCE_MAG 10.0
#define CV_TAU 0.02
#define CV_X_THRESHOLD 2.4
#define CV_PI 3.141592653589793  /* math.pi */

/* Frame: the built-in cartpole's side view, the same tiles and palette. */
#include "../cartpole/cartpole_frame.h"

PUFFER_LOG(PUFFER_STANDARD_LOG);

typedef struct {
    PUFFER_ENV_FIELDS(float, int32_t);
    /* settings */
    int max_steps;
    /* state */
    double x, x_dot, theta, theta_dot;
    float episode_return;
    int tick;
} CartPoleV1;
#define PUFFER_ENV CartPoleV1

static inline void c_init(CartPoleV1* env) { (void)env; }

/* Uniform double in [lo, hi), from the top 53 bits. */
static inline double cv_uniform(uint64_t* rng, double lo, double hi) {
    return lo + (hi - lo) * ((double)(puffer_rand(rng) >> 11) * (1.0 / 9007199254740992.0));
}

static inline void cv_write_obs(CartPoleV1* env) {
    float* obs = env->observations;
    obs[0] = (float)env->x;
    obs[1] = (float)env->x_dot;
    obs[2] = (float)env->theta;
    obs[3] = (float)env->theta_dot;
}

static inline void c_reset(CartPoleV1* env) {
    env->x = cv_uniform(&env->rng, -0.05, 0.05);
    env->x_dot = cv_uniform(&env->rng, -0.05, 0.05);
    env->theta = cv_uniform(&env->rng, -0.05, 0.05);
    env->theta_dot = cv_uniform(&env->rng, -0.05, 0.05);
    env->episode_return = 0.0f;
    env->tick = 0;
    cv_write_obs(env);
}

static inline void c_step(CartPoleV1* env) {
    const double total_mass = CV_MASSPOLE + CV_MASSCART;
    const double polemass_length = CV_MASSPOLE * CV_LENGTH;
    const double theta_threshold = 12 * 2 * CV_PI / 360;
    double x = env->x, x_dot = env->x_dot, theta = env->theta, theta_dot = env->theta_dot;
    double force = env->actions[0] == 1 ? CV_FORCE_MAG : -CV_FORCE_MAG;
    double costheta = cos(theta);
    double sintheta = sin(theta);
    double temp = (force + polemass_length * (theta_dot * theta_dot) * sintheta) / total_mass;
    double thetaacc = (CV_GRAVITY * sintheta - costheta * temp)
        / (CV_LENGTH * (4.0 / 3.0 - CV_MASSPOLE * (costheta * costheta) / total_mass));
    double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
    x = x + CV_TAU * x_dot;
    x_dot = x_dot + CV_TAU * xacc;
    theta = theta + CV_TAU * theta_dot;
    theta_dot = theta_dot + CV_TAU * thetaacc;
    env->x = x;
    env->x_dot = x_dot;
    env->theta = theta;
    env->theta_dot = theta_dot;
    env->tick += 1;
    env->rewards[0] = 1.0f;
    env->episode_return += 1.0f;

    int done = x < -CV_X_THRESHOLD || x > CV_X_THRESHOLD || theta < -theta_threshold
        || theta > theta_threshold;
    int timeout = !done & (env->tick >= env->max_steps);
    env->terminals[0] = (unsigned char)done;
    env->truncations[0] = (unsigned char)timeout;
    cv_write_obs(env);
    if (timeout) PUFFER_KEEP_FINAL(env, 0, 1, 4 * sizeof(float));
    if (done | timeout) {
        PUFFER_LOG_EPISODE(env->log, env->episode_return, (float)env->tick,
                           env->episode_return);
        c_reset(env);
    }
}

static inline void c_frame(const CartPoleV1* env, unsigned char* tiles) {
    cartpole_frame((float)env->x, (float)env->theta, tiles);
}

static inline void c_close(CartPoleV1* env) { (void)env; }
