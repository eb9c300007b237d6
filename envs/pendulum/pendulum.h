/* pendulum: Gymnasium's Pendulum-v1 in C, the same arithmetic, precision by precision.
 *
 * A pendulum swings about a pivot; the action is the torque at the pivot, clipped to [-2, 2].
 * theta (0 = upright) and its velocity advance by semi-implicit Euler with dt = 0.05 s under
 * gravity `g` (Pendulum-v1: 10), the velocity clipped to [-8, 8]. Reward: -(angle^2 + 0.1
 * velocity^2 + 0.001 torque^2), the angle normalized to [-pi, pi). The episode never
 * terminates; it is truncated after `max_steps` steps (Pendulum-v1: 200). Each episode starts
 * from theta uniform in [-pi, pi) and velocity uniform in [-1, 1).
 *
 * The state is double as Gymnasium's; the torque stays float32 where numpy keeps it so (its
 * clip, its square and its product with 3.0 are float32 operations under numpy 2's promotion
 * rules), so a step agrees with Gymnasium's to the last bit wherever the C library's sin/cos
 * agree with numpy's (tests/envs/test_env_pendulum.py compares them). What differs: the random
 * stream of the start states, and the autoreset, which is same-step as in every native env.
 *
 * Observation: (cos theta, sin theta, velocity) as float32.
 * Score: the episode return (what Gymnasium's Pendulum-v1 reports through puffer-tui).
 */
#include <math.h>
#include "puffer_env.h"

#define PD_PI 3.141592653589793
#define PD_MAX_SPEED 8.0
#define PD_MAX_TORQUE 2.0f
#define PD_DT 0.05
#define PD_MASS 1.0
#define PD_LENGTH 1.0

/* Frame: the pendulum from the front, upright being up. */
enum { PD_EMPTY = 0, PD_PIVOT = 1, PD_ROD = 2, PD_BOB = 3 };
#define PD_FRAME_ROWS 9
#define PD_FRAME_COLS 19
#define PD_ROWS_PER_LENGTH 4   /* a terminal cell is about twice as tall as wide */
#define PD_COLS_PER_LENGTH 8

PUFFER_LOG(PUFFER_STANDARD_LOG);

typedef struct {
    PUFFER_ENV_FIELDS(float, float);
    /* settings */
    int max_steps;
    double g;
    /* state */
    double theta, theta_dot;
    float episode_return;
    int tick;
} Pendulum;
#define PUFFER_ENV Pendulum

static inline void c_init(Pendulum* env) { (void)env; }

/* Uniform double in [lo, hi), from the top 53 bits. */
static inline double pd_uniform(uint64_t* rng, double lo, double hi) {
    return lo + (hi - lo) * ((double)(puffer_rand(rng) >> 11) * (1.0 / 9007199254740992.0));
}

static inline void pd_write_obs(Pendulum* env) {
    float* obs = env->observations;
    obs[0] = (float)cos(env->theta);
    obs[1] = (float)sin(env->theta);
    obs[2] = (float)env->theta_dot;
}

static inline void c_reset(Pendulum* env) {
    env->theta = pd_uniform(&env->rng, -PD_PI, PD_PI);
    env->theta_dot = pd_uniform(&env->rng, -1.0, 1.0);
    env->episode_return = 0.0f;
    env->tick = 0;
    pd_write_obs(env);
}

/* numpy's ((x + pi) % (2 pi)) - pi: the remainder takes the divisor's sign. */
static inline double pd_angle_normalize(double x) {
    double period = 2 * PD_PI;
    double r = fmod(x + PD_PI, period);
    if (r != 0.0 && r < 0.0) r += period;
    return r - PD_PI;
}

static inline void c_step(Pendulum* env) {
    float u = fminf(fmaxf(env->actions[0], -PD_MAX_TORQUE), PD_MAX_TORQUE);
    double th = env->theta, thdot = env->theta_dot;
    double angle = pd_angle_normalize(th);
    float torque_cost = 0.001f * (u * u);
    double costs = angle * angle + 0.1 * (thdot * thdot) + (double)torque_cost;
    float torque_term = 3.0f * u;   /* 3.0 / (m * l**2) * u, with m = l = 1 */
    double newthdot = thdot + (3 * env->g / (2 * PD_LENGTH) * sin(th) + (double)torque_term)
        * PD_DT;
    newthdot = fmin(fmax(newthdot, -PD_MAX_SPEED), PD_MAX_SPEED);
    env->theta = th + newthdot * PD_DT;
    env->theta_dot = newthdot;
    env->tick += 1;
    float reward = (float)(-costs);
    env->rewards[0] = reward;
    env->episode_return += reward;
    int timeout = env->tick >= env->max_steps;
    env->terminals[0] = 0;
    env->truncations[0] = (unsigned char)timeout;
    pd_write_obs(env);
    if (timeout) {
        PUFFER_KEEP_FINAL(env, 0, 1, 3 * sizeof(float));
        PUFFER_LOG_EPISODE(env->log, env->episode_return, (float)env->tick,
                           env->episode_return);
        c_reset(env);
    }
}

static inline void pd_plot(unsigned char* tiles, double x, double y, unsigned char tile) {
    puffer_plot(tiles, PD_FRAME_ROWS, PD_FRAME_COLS, PD_ROWS_PER_LENGTH, PD_COLS_PER_LENGTH, x,
                y, tile);
}

static inline void c_frame(const Pendulum* env, unsigned char* tiles) {
    if (tiles == NULL) return;
    memset(tiles, PD_EMPTY, (size_t)PD_FRAME_ROWS * PD_FRAME_COLS);
    double x = sin(env->theta), y = cos(env->theta);
    const int steps = 2 * PD_COLS_PER_LENGTH;
    for (int k = 1; k < steps; k++) {
        double f = (double)k / steps;
        pd_plot(tiles, f * x, f * y, PD_ROD);
    }
    pd_plot(tiles, x, y, PD_BOB);
    pd_plot(tiles, 0.0, 0.0, PD_PIVOT);
}

static inline void c_close(Pendulum* env) { (void)env; }
