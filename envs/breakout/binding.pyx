# Cython binding of breakout.h: declares the contract fields and settings, then includes the
# shared driver.
from libc.stdint cimport int32_t, uint64_t

cdef extern from "breakout.h":
    ctypedef struct Log:
        float episode_return
        float episode_length
        float score
        float bricks_broken
        float lives_lost
        float n

    ctypedef struct Env "Breakout":
        void* observations
        void* actions
        float* rewards
        unsigned char* terminals
        unsigned char* truncations
        unsigned char* masks
        void* final_observations
        Log log
        uint64_t rng
        int brick_rows
        int brick_cols
        int brick_width
        int paddle_width
        int lives
        int max_ticks
        float ball_speed
        float paddle_speed
        float life_reward



cdef int configure(Env* env, dict settings) except -1:
    env.brick_rows = settings["brick_rows"]
    env.brick_cols = settings["brick_cols"]
    env.brick_width = settings["brick_width"]
    env.paddle_width = settings["paddle_width"]
    env.lives = settings["lives"]
    env.max_ticks = settings["max_ticks"]
    env.ball_speed = settings["ball_speed"]
    env.paddle_speed = settings["paddle_speed"]
    env.life_reward = settings["life_reward"]
    return 0


include "vecenv.pxi"
