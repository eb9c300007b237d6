/* cartpole: balance a pole on a cart, with the dynamics of gymnasium's CartPole-v1.
 *
 * State (x, x_dot, theta, theta_dot) advances by explicit Euler with tau = 0.02 s under a
 * force of +-10 N (action 1 pushes right, 0 left). Constants, equations, bounds and the
 * termination test are CartPole-v1's: the episode terminates once |x| > 2.4 or
 * |theta| > 12 degrees, and is truncated (not terminated) after `max_steps` steps.
 * Reward is 1 on every step, the last one included. Each episode starts from a state drawn
 * uniformly from [-0.05, 0.05)^4. Math is float32 (gymnasium uses float64); one step agrees
 * with gymnasium's to float32 rounding.
 *
 * Observation: the state as 4 floats. Because of same-step autoreset an observation always
 * comes from a live state, so |x| <= 2.4 and |theta| <= 12 degrees in every one of them.
 * Score: episode_length / max_steps (1.0 = balanced for the whole episode).
 */
#include <math.h>
#include "puffer_env.h"

#define CP_GRAVITY 9.8f
#define CP_MASSCART 1.0f
#define CP_MASSPOLE 0.1f
#define CP_TOTAL_MASS (CP_MASSCART + CP_MASSPOLE)
#define CP_LENGTH 0.5f                       /* half the pole's length */
#define CP_POLEMASS_LENGTH (CP_MASSPOLE * CP_LENGTH)
#define CP_FORCE_MAG 10.0f
#define CP_TAU 0.02f
#define CP_X_THRESHOLD 2.4f
#define CP_THETA_THRESHOLD 0.20943951023931953f   /* 12 degrees in radians */

/* Frame: a side view (cartpole_frame.h). */
#include "cartpole_frame.h"

/* The log: cart_out: fraction of episodes ended by |x| > 2.4; pole_fell: fraction of episodes
 * ended by |theta| > 12 degrees; score: episode_length / max_steps. */
#define CARTPOLE_LOG(F) F(episode_return) F(episode_length) F(cart_out) F(pole_fell) F(score)
PUFFER_LOG(CARTPOLE_LOG);

typedef struct {
    PUFFER_ENV_FIELDS(float, int32_t);
    /* settings */
    int max_steps;
    /* state */
    float x, x_dot, theta, theta_dot;
    int tick;
} CartPole;
#define PUFFER_ENV CartPole

static inline void c_init(CartPole* env) { (void)env; }

static inline void cp_write_obs(CartPole* env) {
    float* obs = env->observations;
    obs[0] = env->x;
    obs[1] = env->x_dot;
    obs[2] = env->theta;
    obs[3] = env->theta_dot;
}

static inline void c_reset(CartPole* env) {
    env->x = puffer_rand_range(&env->rng, -0.05f, 0.05f);
    env->x_dot = puffer_rand_range(&env->rng, -0.05f, 0.05f);
    env->theta = puffer_rand_range(&env->rng, -0.05f, 0.05f);
    env->theta_dot = puffer_rand_range(&env->rng, -0.05f, 0.05f);
    env->tick = 0;
    cp_write_obs(env);
}

static inline void cp_end_episode(CartPole* env, int cart_out, int pole_fell) {
    float length = (float)env->tick;
    env->log.cart_out += (float)cart_out;
    env->log.pole_fell += (float)pole_fell;
    PUFFER_LOG_EPISODE(env->log, length, length, length / (float)env->max_steps);  /* reward 1 a step */
    c_reset(env);
}

static inline void c_step(CartPole* env) {
    float x = env->x, x_dot = env->x_dot, theta = env->theta, theta_dot = env->theta_dot;
    float force = env->actions[0] == 1 ? CP_FORCE_MAG : -CP_FORCE_MAG;
    float costheta = cosf(theta);
    float sintheta = sinf(theta);
    /* Same expression order as gymnasium, so both round alike as far as float32 allows. */
    float temp = (force + CP_POLEMASS_LENGTH * (theta_dot * theta_dot) * sintheta) / CP_TOTAL_MASS;
    float thetaacc = (CP_GRAVITY * sintheta - costheta * temp)
        / (CP_LENGTH * (4.0f / 3.0f - CP_MASSPOLE * (costheta * costheta) / CP_TOTAL_MASS));
    float xacc = temp - CP_POLEMASS_LENGTH * thetaacc * costheta / CP_TOTAL_MASS;
    x = x + CP_TAU * x_dot;
    x_dot = x_dot + CP_TAU * xacc;
    theta = theta + CP_TAU * theta_dot;
    theta_dot = theta_dot + CP_TAU * thetaacc;
    env->x = x;
    env->x_dot = x_dot;
    env->theta = theta;
    env->theta_dot = theta_dot;
    env->tick += 1;
    env->rewards[0] = 1.0f;

    int cart_out = (x < -CP_X_THRESHOLD) | (x > CP_X_THRESHOLD);
    int pole_fell = (theta < -CP_THETA_THRESHOLD) | (theta > CP_THETA_THRESHOLD);
    int done = cart_out | pole_fell;
    int timeout = !done & (env->tick >= env->max_steps);
    env->terminals[0] = (unsigned char)done;
    env->truncations[0] = (unsigned char)timeout;
    if (timeout) {  /* keep the last observation before the autoreset replaces it */
        cp_write_obs(env);
        PUFFER_KEEP_FINAL(env, 0, 1, 4 * sizeof(float));
    }
    if (done | timeout) cp_end_episode(env, cart_out, pole_fell);
    else cp_write_obs(env);
}

static inline void c_frame(const CartPole* env, unsigned char* tiles) {
    cartpole_frame(env->x, env->theta, tiles);
}

static inline void c_close(CartPole* env) { (void)env; }
