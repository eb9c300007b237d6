# Cython binding of snake.h: declares its settings, then includes the shared driver
# (the contract is declared once, in engine/native/puffer_env.pxd).

cdef extern from "snake.h":
    ctypedef struct Settings "Snake":
        int width
        int height
        int num_snakes
        int num_food
        int vision
        int max_length
        int max_steps
        float food_reward
        float corpse_reward
        float death_reward
        float corpse_rate


cdef int configure(Settings* env, dict settings) except -1:
    env.width = settings["width"]
    env.height = settings["height"]
    env.num_snakes = settings["num_snakes"]
    env.num_food = settings["num_food"]
    env.vision = settings["vision"]
    env.max_length = settings["max_length"]
    env.max_steps = settings["max_steps"]
    env.food_reward = settings["food_reward"]
    env.corpse_reward = settings["corpse_reward"]
    env.death_reward = settings["death_reward"]
    env.corpse_rate = settings["corpse_rate"]
    return 0


include "vecenv.pxi"
