/* GAE with V-trace importance clipping, one [horizon] row of a [segments, horizon] buffer.
 *
 * Step t of a row holds the observation, the action taken from it, its value V[t], and the
 * reward / terminal / truncation that arrived WITH observation t (i.e. caused by action t-1).
 * So the transition of action t is (V[t], r[t+1], done[t+1], V[t+1]):
 *
 *   rho_t = min(ratio[t], rho_clip)       c_t = min(ratio[t], c_clip)
 *   terminal[t+1]:   bootstrap 0,               trace cut
 *   truncation[t+1]: bootstrap V[t] (see below), trace cut
 *   otherwise:       bootstrap V[t+1],           trace continues
 *   delta_t = rho_t * (r[t+1] + gamma * bootstrap - V[t])
 *   adv[t]  = delta_t + gamma * lambda * c_t * continues * adv[t+1]
 *
 * Truncation is not termination, but with same-step autoreset the observation that ended a
 * truncated episode is gone (observation t+1 is already the next episode's first), so its
 * value cannot be computed. We bootstrap with V[t], the value of the episode's last observed
 * state, one step earlier: unbiased for time-agnostic values up to one step of drift, and far
 * closer than 0 (which would teach the critic that time-outs are failures).
 *
 * The last step of a row has no successor inside the row: adv[horizon-1] = 0 (that step adds
 * nothing to the policy loss; the next segment of the same agent starts there).
 */
#ifndef PUFFER_ADVANTAGE_H
#define PUFFER_ADVANTAGE_H

#include <stdint.h>

static inline void puffer_advantage_row(
    const float* values, const float* rewards, const float* terminals,
    const float* truncations, const float* ratio, float* advantages, int horizon,
    float gamma, float lambda, float rho_clip, float c_clip)
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
            bootstrap = values[t];
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
    const float* truncations, const float* ratio, float* advantages, int64_t rows,
    int horizon, float gamma, float lambda, float rho_clip, float c_clip)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t o = r * (int64_t)horizon;
        puffer_advantage_row(values + o, rewards + o, terminals + o, truncations + o,
                             ratio + o, advantages + o, horizon, gamma, lambda,
                             rho_clip, c_clip);
    }
}

#endif
