/* breakout: a paddle, a ball and a wall of bricks.
 *
 * Geometry is in tile units, the same units as the rendered frame: the arena is
 * brick_cols * brick_width wide and BO_TOP + brick_rows + BO_GAP rows tall; bricks fill
 * brick_rows rows from row BO_TOP; the paddle's top edge is the line y = height - 2. The ball
 * is a point moving `ball_speed` per step, in sub-steps of at most half a tile so it cannot
 * pass through a brick. It bounces off the side and top walls and off bricks (a brick hit
 * from above or below flips the vertical velocity, from the side the horizontal one, and
 * breaks: reward +1). Off the paddle it leaves at an angle set by where it hit, up to 60
 * degrees from vertical, so the player can aim. A ball past the paddle costs a life (reward
 * `life_reward`, negative by default, so that missing is felt at once rather than only through
 * the bricks it forgoes) and is served again from the paddle at a random angle. The episode ends (terminal) when the last
 * brick or the last life is lost, or is truncated after max_ticks steps.
 *
 * Actions: 0 left, 1 stay, 2 right (the paddle moves paddle_speed per step).
 * Observation (floats): paddle centre / width, ball x / width, ball y / height,
 * ball vx / speed, ball vy / speed, lives / max lives, then one 1/0 per brick (row-major).
 * Only the first six and the bricks that broke are written each step.
 */
#include <math.h>
#include <stdlib.h>
#include "puffer_env.h"

enum { BO_LEFT = 0, BO_STAY = 1, BO_RIGHT = 2 };
enum { BO_EMPTY = 0, BO_BRICK = 1 /* ..6, by row */, BO_PADDLE = 7, BO_BALL = 8 };
#define BO_TOP 3          /* empty rows above the bricks */
#define BO_GAP 14         /* rows from the bricks' bottom to the arena's bottom */
#define BO_STATE_OBS 6    /* observation floats before the bricks */
#define BO_MAX_BOUNCE 1.0471976f  /* 60 degrees */

/* The log: score: fraction of the bricks broken. */
#define BREAKOUT_LOG(F) PUFFER_STANDARD_LOG(F) F(bricks_broken) F(lives_lost)
PUFFER_LOG(BREAKOUT_LOG);

typedef struct {
    PUFFER_ENV_FIELDS(float, int32_t);
    /* settings */
    int brick_rows;
    int brick_cols;
    int brick_width;
    int paddle_width;
    int lives;
    int max_ticks;
    float ball_speed;
    float paddle_speed;
    float life_reward;
    /* derived */
    float width;
    float height;
    float paddle_y;
    int substeps;
    int num_bricks;
    /* state */
    unsigned char* bricks;  /* 1 = standing */
    float paddle_x;         /* left edge */
    float ball_x, ball_y, ball_vx, ball_vy;
    int lives_left;
    int bricks_left;
    int tick;
    float episode_return;
} Breakout;
#define PUFFER_ENV Breakout

static inline void c_init(Breakout* env) {
    env->width = (float)(env->brick_cols * env->brick_width);
    env->height = (float)(BO_TOP + env->brick_rows + BO_GAP);
    env->paddle_y = env->height - 2.0f;
    env->substeps = (int)ceilf(env->ball_speed / 0.5f);
    if (env->substeps < 1) env->substeps = 1;
    env->num_bricks = env->brick_rows * env->brick_cols;
    env->bricks = (unsigned char*)calloc((size_t)env->num_bricks, 1);
}

/* Put the ball just above the paddle's centre, heading up at up to 45 degrees either way. */
static inline void bo_serve(Breakout* env) {
    float angle = puffer_rand_range(&env->rng, -0.7853982f, 0.7853982f);
    env->ball_x = env->paddle_x + 0.5f * (float)env->paddle_width;
    env->ball_y = env->paddle_y - 1.0f;
    env->ball_vx = env->ball_speed * sinf(angle);
    env->ball_vy = -env->ball_speed * cosf(angle);
}

static inline void bo_write_state_obs(Breakout* env) {
    float* obs = env->observations;
    obs[0] = (env->paddle_x + 0.5f * (float)env->paddle_width) / env->width;
    obs[1] = env->ball_x / env->width;
    obs[2] = env->ball_y / env->height;
    obs[3] = env->ball_vx / env->ball_speed;
    obs[4] = env->ball_vy / env->ball_speed;
    obs[5] = (float)env->lives_left / (float)env->lives;
}

static inline void c_reset(Breakout* env) {
    memset(env->bricks, 1, (size_t)env->num_bricks);
    float* brick_obs = env->observations + BO_STATE_OBS;
    for (int i = 0; i < env->num_bricks; i++) brick_obs[i] = 1.0f;
    env->paddle_x = 0.5f * (env->width - (float)env->paddle_width);
    env->lives_left = env->lives;
    env->bricks_left = env->num_bricks;
    env->tick = 0;
    env->episode_return = 0.0f;
    env->masks[0] = 1;
    bo_serve(env);
    bo_write_state_obs(env);
}

/* Index of the standing brick containing point (x, y), or -1. */
static inline int bo_brick_at(const Breakout* env, float x, float y) {
    int row = (int)floorf(y) - BO_TOP;
    int col = (int)floorf(x) / env->brick_width;
    if (y < 0.0f || row < 0 || row >= env->brick_rows || col < 0 || col >= env->brick_cols) return -1;
    int index = row * env->brick_cols + col;
    return env->bricks[index] ? index : -1;
}

/* Move the ball one sub-step. Returns 1 if a brick broke, -1 if the ball was lost, else 0. */
static inline int bo_move_ball(Breakout* env) {
    float step = 1.0f / (float)env->substeps;
    float x = env->ball_x, y = env->ball_y;
    float nx = x + env->ball_vx * step, ny = y + env->ball_vy * step;
    if (nx < 0.0f) { nx = -nx; env->ball_vx = -env->ball_vx; }
    if (nx >= env->width) {
        nx = 2.0f * env->width - nx;
        if (nx >= env->width) nx = env->width - 1e-3f;
        env->ball_vx = -env->ball_vx;
    }
    if (ny < 0.0f) { ny = -ny; env->ball_vy = -env->ball_vy; }
    int brick = bo_brick_at(env, nx, ny);
    if (brick >= 0) {
        env->bricks[brick] = 0;
        env->observations[BO_STATE_OBS + brick] = 0.0f;
        env->bricks_left -= 1;
        if (floorf(ny) != floorf(y)) env->ball_vy = -env->ball_vy;
        else env->ball_vx = -env->ball_vx;
        return 1;  /* the ball stays where it was and leaves with the new velocity */
    }
    if (env->ball_vy > 0.0f && y <= env->paddle_y && ny > env->paddle_y) {
        float xc = x + (nx - x) * (env->paddle_y - y) / (ny - y);
        float half = 0.5f * (float)env->paddle_width;
        float offset = (xc - (env->paddle_x + half)) / (half + 0.5f);
        if (offset >= -1.0f && offset <= 1.0f) {
            float angle = offset * BO_MAX_BOUNCE;
            env->ball_vx = env->ball_speed * sinf(angle);
            env->ball_vy = -env->ball_speed * cosf(angle);
            ny = 2.0f * env->paddle_y - ny;
        }
    }
    if (ny >= env->height) return -1;
    env->ball_x = nx;
    env->ball_y = ny;
    return 0;
}

static inline void bo_end_episode(Breakout* env) {
    int broken = env->num_bricks - env->bricks_left;
    env->log.bricks_broken += (float)broken;
    env->log.lives_lost += (float)(env->lives - env->lives_left);
    PUFFER_LOG_EPISODE(env->log, env->episode_return, (float)env->tick,
                       (float)broken / (float)env->num_bricks);
    c_reset(env);
}

static inline void c_step(Breakout* env) {
    int action = env->actions[0];
    float px = env->paddle_x + (float)(action - BO_STAY) * env->paddle_speed;
    float right = env->width - (float)env->paddle_width;
    env->paddle_x = px < 0.0f ? 0.0f : (px > right ? right : px);
    float reward = 0.0f;
    for (int k = 0; k < env->substeps; k++) {
        int event = bo_move_ball(env);
        if (event > 0) reward += 1.0f;
        if (event < 0) {
            reward += env->life_reward;
            env->lives_left -= 1;
            if (env->lives_left > 0) bo_serve(env);
            break;
        }
    }
    env->tick += 1;
    env->episode_return += reward;
    env->rewards[0] = reward;
    int done = env->bricks_left == 0 || env->lives_left == 0;
    int timeout = !done && env->tick >= env->max_ticks;
    env->terminals[0] = (unsigned char)done;
    env->truncations[0] = (unsigned char)timeout;
    if (timeout) {
        bo_write_state_obs(env);
        PUFFER_KEEP_FINAL(env, 0, 1, (BO_STATE_OBS + env->num_bricks) * sizeof(float));
    }
    if (done | timeout) {
        bo_end_episode(env);
        return;
    }
    bo_write_state_obs(env);
}

static inline void c_frame(const Breakout* env, unsigned char* tiles) {
    const int w = env->brick_cols * env->brick_width;
    const int h = BO_TOP + env->brick_rows + BO_GAP;
    memset(tiles, BO_EMPTY, (size_t)w * h);
    for (int r = 0; r < env->brick_rows; r++)
        for (int c = 0; c < env->brick_cols; c++)
            if (env->bricks[r * env->brick_cols + c])
                memset(tiles + (size_t)(BO_TOP + r) * w + c * env->brick_width,
                       BO_BRICK + r % 6, (size_t)env->brick_width);
    int p0 = (int)floorf(env->paddle_x + 0.5f);
    for (int c = p0; c < p0 + env->paddle_width && c < w; c++)
        tiles[(size_t)(h - 2) * w + c] = BO_PADDLE;
    int br = (int)floorf(env->ball_y), bc = (int)floorf(env->ball_x);
    if (br >= 0 && br < h && bc >= 0 && bc < w) tiles[(size_t)br * w + bc] = BO_BALL;
}

/* What c_init allocated, for saving and restoring the env (see puffer_env.h). */
static inline int c_heap(const Breakout* env, PufferHeap* blocks) {
    blocks[0] = (PufferHeap){offsetof(Breakout, bricks), (size_t)env->num_bricks};
    return 1;
}
#define PUFFER_ENV_HEAP c_heap

static inline void c_close(Breakout* env) {
    free(env->bricks);
    env->bricks = NULL;
}
