/* GAE with V-trace importance clipping, one [horizon] row of a [segments, horizon] buffer.
 *
 * Step t of a row holds the observation, the action taken from it, its value V[t], and the
 * reward / terminal / truncation that arrived WITH observation t (i.e. caused by action t-1).
 * So the transition of action t is (V[t], r[t+1], done[t+1], V[t+1]):
 *
 *   rho_t = min(ratio[t], rho_clip)       c_t = min(ratio[t], c_clip)
 *   terminal[t+1]:   bootstrap 0,               trace cut
 *   truncation[t+1]: bootstrap final[t+1] (see below), trace cut
 *   otherwise:       bootstrap V[t+1],           trace continues
 *   delta_t = rho_t * (r[t+1] + gamma * bootstrap - V[t])
 *   adv[t]  = delta_t + gamma * lambda * c_t * continues * adv[t+1]
 *
 * Truncation is not termination: the episode would have gone on, so the step is bootstrapped
 * with the value of the observation that ended it. With same-step autoreset observation t+1 is
 * already the next episode's first, so envs keep the final one aside (final_observations in
 * engine/native/puffer_env.h) and the trainer evaluates it: final[t+1] is that value, read
 * only where truncation[t+1] is set.
 *
 * The last step of a row has no successor inside the row: adv[horizon-1] = 0 (that step adds
 * nothing to the policy loss; the next segment of the same agent starts there).
 */
#ifndef PUFFER_ADVANTAGE_H
#define PUFFER_ADVANTAGE_H

#include <stdint.h>

static inline void puffer_advantage_row(
    const float* values, const float* rewards, const float* terminals,
    const float* truncations, const float* final_values, const float* ratio,
    float* advantages, int horizon, float gamma, float lambda, float rho_clip, float c_clip)
{
    if (horizon <= 0) return;
    float last = 0.0f;
    advantages[horizon - 1] = 0.0f;
    for (int t = horizon - 2; t >= 0; t--) {
        float rho = ratio[t] < rho_clip ? ratio[t] : rho_clip;
        float c = ratio[t] < c_clip ? ratio[t] : c_clip;
        float bootstrap, cont;
        if (terminals[t + 1] != 0.0f) {
            bootstrap = 0.0f;
            cont = 0.0f;
        } else if (truncations[t + 1] != 0.0f) {
            bootstrap = final_values[t + 1];
            cont = 0.0f;
        } else {
            bootstrap = values[t + 1];
            cont = 1.0f;
        }
        float delta = rho * (rewards[t + 1] + gamma * bootstrap - values[t]);
        last = delta + gamma * lambda * c * cont * last;
        advantages[t] = last;
    }
}

/* Every row of contiguous [rows, horizon] float32 arrays. */
static inline void puffer_advantage(
    const float* values, const float* rewards, const float* terminals,
    const float* truncations, const float* final_values, const float* ratio,
    float* advantages, int64_t rows, int horizon, float gamma, float lambda, float rho_clip,
    float c_clip)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t o = r * (int64_t)horizon;
        puffer_advantage_row(values + o, rewards + o, terminals + o, truncations + o,
                             final_values + o, ratio + o, advantages + o, horizon, gamma,
                             lambda, rho_clip, c_clip);
    }
}

#endif
