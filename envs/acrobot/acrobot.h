/* acrobot: Gymnasium's Acrobot-v1 in C, the same arithmetic in double precision.
 *
 * Two links hang from a pivot; the action applies a torque of -1, 0 or +1 at the joint between
 * them. State (theta1, theta2, dtheta1, dtheta2) advances by one 4th-order Runge-Kutta step of
 * dt = 0.2 s over the "book" equations of motion (Gymnasium's default), the angles wrapped to
 * [-pi, pi] and the velocities bounded by 4 pi and 9 pi. The episode terminates once the tip
 * is more than one link above the pivot (-cos(theta1) - cos(theta1 + theta2) > 1) and is
 * truncated after `max_steps` steps (Acrobot-v1: 500). Reward: -1 a step, 0 on the step that
 * reaches the goal. Each episode starts from a state drawn uniformly from [-0.1, 0.1)^4, in
 * float32 as Gymnasium draws it.
 *
 * Every expression keeps Gymnasium's operand order, so a step agrees with Gymnasium's to the
 * last bit wherever the C library's sin/cos agree with numpy's (tests/envs/test_env_acrobot.py
 * compares them). What differs: the random stream of the start states, and the autoreset,
 * which is same-step, as in every native env.
 *
 * Observation: (cos theta1, sin theta1, cos theta2, sin theta2, dtheta1, dtheta2) as float32.
 * Score: the episode return (what Gymnasium's Acrobot-v1 reports through puffer-tui), so that
 * `train.stop-at-score` means the same for gym:Acrobot-v1 whichever implementation steps it.
 */
#include <math.h>
#include "puffer_env.h"

#define AC_PI 3.141592653589793
#define AC_DT 0.2
#define AC_LINK_LENGTH_1 1.0
#define AC_LINK_MASS_1 1.0
#define AC_LINK_MASS_2 1.0
#define AC_LINK_COM_POS_1 0.5
#define AC_LINK_COM_POS_2 0.5
#define AC_LINK_MOI 1.0
#define AC_MAX_VEL_1 (4 * AC_PI)
#define AC_MAX_VEL_2 (9 * AC_PI)
#define AC_GRAVITY 9.8

/* Frame: the two links seen from the front, the goal height as a dotted line. */
enum { AC_EMPTY = 0, AC_PIVOT = 1, AC_LINK1 = 2, AC_LINK2 = 3, AC_GOAL = 4 };
#define AC_FRAME_ROWS 13
#define AC_FRAME_COLS 27
/* One link length is 3 rows or 6 columns (a terminal cell is about twice as tall as wide):
 * the arm reaches 2 lengths from the pivot at the centre. */
#define AC_ROWS_PER_LINK 3
#define AC_COLS_PER_LINK 6

/* The log: reached: fraction of episodes that ended at the goal (not by the time limit). */
#define ACROBOT_LOG(F) F(episode_return) F(episode_length) F(reached) F(score)
PUFFER_LOG(ACROBOT_LOG);

typedef struct {
    PUFFER_ENV_FIELDS(float, int32_t);
    /* settings */
    int max_steps;
    /* state */
    double s[4];
    float episode_return;
    int tick;
} Acrobot;
#define PUFFER_ENV Acrobot

static inline void c_init(Acrobot* env) { (void)env; }

static inline void ac_write_obs(Acrobot* env) {
    float* obs = env->observations;
    obs[0] = (float)cos(env->s[0]);
    obs[1] = (float)sin(env->s[0]);
    obs[2] = (float)cos(env->s[1]);
    obs[3] = (float)sin(env->s[1]);
    obs[4] = (float)env->s[2];
    obs[5] = (float)env->s[3];
}

static inline void c_reset(Acrobot* env) {
    for (int i = 0; i < 4; i++) env->s[i] = (double)puffer_rand_range(&env->rng, -0.1f, 0.1f);
    env->episode_return = 0.0f;
    env->tick = 0;
    ac_write_obs(env);
}

/* Gymnasium's _dsdt ("book" dynamics), term by term in its order. */
static inline void ac_dsdt(const double y[5], double out[5]) {
    const double m1 = AC_LINK_MASS_1, m2 = AC_LINK_MASS_2, l1 = AC_LINK_LENGTH_1;
    const double lc1 = AC_LINK_COM_POS_1, lc2 = AC_LINK_COM_POS_2;
    const double I1 = AC_LINK_MOI, I2 = AC_LINK_MOI, g = AC_GRAVITY;
    double a = y[4], theta1 = y[0], theta2 = y[1], dtheta1 = y[2], dtheta2 = y[3];
    double d1 = m1 * (lc1 * lc1) + m2 * ((l1 * l1) + (lc2 * lc2) + 2 * l1 * lc2 * cos(theta2))
        + I1 + I2;
    double d2 = m2 * ((lc2 * lc2) + l1 * lc2 * cos(theta2)) + I2;
    double phi2 = m2 * lc2 * g * cos(theta1 + theta2 - AC_PI / 2.0);
    double phi1 = -m2 * l1 * lc2 * (dtheta2 * dtheta2) * sin(theta2)
        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin(theta2)
        + (m1 * lc1 + m2 * l1) * g * cos(theta1 - AC_PI / 2)
        + phi2;
    double ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * sin(theta2)
                       - phi2)
        / (m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1);
    double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    out[0] = dtheta1;
    out[1] = dtheta2;
    out[2] = ddtheta1;
    out[3] = ddtheta2;
    out[4] = 0.0;
}

static inline double ac_wrap(double x, double lo, double hi) {
    double diff = hi - lo;
    while (x > hi) x = x - diff;
    while (x < lo) x = x + diff;
    return x;
}

static inline double ac_bound(double x, double lo, double hi) {
    return fmin(fmax(x, lo), hi);
}

/* One step of Gymnasium's rk4 over [0, dt] on the state with the torque appended. */
static inline void ac_rk4(double y0[5]) {
    const double dt = AC_DT - 0.0, dt2 = dt / 2.0;
    double k1[5], k2[5], k3[5], k4[5], y[5];
    ac_dsdt(y0, k1);
    for (int i = 0; i < 5; i++) y[i] = y0[i] + dt2 * k1[i];
    ac_dsdt(y, k2);
    for (int i = 0; i < 5; i++) y[i] = y0[i] + dt2 * k2[i];
    ac_dsdt(y, k3);
    for (int i = 0; i < 5; i++) y[i] = y0[i] + dt * k3[i];
    ac_dsdt(y, k4);
    for (int i = 0; i < 5; i++) y0[i] = y0[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
}

static inline void c_step(Acrobot* env) {
    static const double torques[3] = {-1.0, 0.0, 1.0};
    double y[5] = {env->s[0], env->s[1], env->s[2], env->s[3], torques[env->actions[0]]};
    ac_rk4(y);
    env->s[0] = ac_wrap(y[0], -AC_PI, AC_PI);
    env->s[1] = ac_wrap(y[1], -AC_PI, AC_PI);
    env->s[2] = ac_bound(y[2], -AC_MAX_VEL_1, AC_MAX_VEL_1);
    env->s[3] = ac_bound(y[3], -AC_MAX_VEL_2, AC_MAX_VEL_2);
    env->tick += 1;
    int reached = -cos(env->s[0]) - cos(env->s[1] + env->s[0]) > 1.0;
    float reward = reached ? 0.0f : -1.0f;
    env->rewards[0] = reward;
    env->episode_return += reward;
    int timeout = !reached & (env->tick >= env->max_steps);
    env->terminals[0] = (unsigned char)reached;
    env->truncations[0] = (unsigned char)timeout;
    ac_write_obs(env);
    if (timeout) PUFFER_KEEP_FINAL(env, 0, 1, 6 * sizeof(float));
    if (reached | timeout) {
        env->log.reached += (float)reached;
        PUFFER_LOG_EPISODE(env->log, env->episode_return, (float)env->tick,
                           env->episode_return);
        c_reset(env);
    }
}

static inline void ac_plot(unsigned char* tiles, double x, double y, unsigned char tile) {
    puffer_plot(tiles, AC_FRAME_ROWS, AC_FRAME_COLS, AC_ROWS_PER_LINK, AC_COLS_PER_LINK, x, y,
                tile);
}

static inline void c_frame(const Acrobot* env, unsigned char* tiles) {
    if (tiles == NULL) return;
    memset(tiles, AC_EMPTY, (size_t)AC_FRAME_ROWS * AC_FRAME_COLS);
    int goal_row = AC_FRAME_ROWS / 2 - AC_ROWS_PER_LINK;  /* one link above the pivot */
    for (int c = 0; c < AC_FRAME_COLS; c += 2) tiles[goal_row * AC_FRAME_COLS + c] = AC_GOAL;
    double x1 = sin(env->s[0]), y1 = -cos(env->s[0]);
    double x2 = x1 + sin(env->s[0] + env->s[1]), y2 = y1 - cos(env->s[0] + env->s[1]);
    const int steps = 2 * AC_COLS_PER_LINK;
    for (int k = 1; k <= steps; k++) {
        double f = (double)k / steps;
        ac_plot(tiles, f * x1, f * y1, AC_LINK1);
        ac_plot(tiles, x1 + f * (x2 - x1), y1 + f * (y2 - y1), AC_LINK2);
    }
    ac_plot(tiles, 0.0, 0.0, AC_PIVOT);
}

static inline void c_close(Acrobot* env) { (void)env; }
