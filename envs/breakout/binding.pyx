# Cython binding of breakout.h: declares its settings, then includes the shared driver
# (the contract is declared once, in engine/native/puffer_env.pxd).

cdef extern from "breakout.h":
    ctypedef struct Settings "Breakout":
        int brick_rows
        int brick_cols
        int brick_width
        int paddle_width
        int lives
        int max_ticks
        float ball_speed
        float paddle_speed
        float life_reward


cdef int configure(Settings* env, dict settings) except -1:
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
