# Cython binding of cpr.h: declares its settings, includes the shared driver (the contract is
# declared once, in engine/native/puffer_env.pxd), and adds inspection helpers (the food
# lists, HP, a layout loader) for tests and tools, which read the struct as `CPRState`.
from libc.stdint cimport int64_t

cdef extern from "cpr.h":
    ctypedef struct FoodList:
        int* cells
        int count

    ctypedef struct Settings "CPR":
        int width
        int height
        int num_agents
        int vision
        int max_ticks
        int initial_grey
        int initial_yellow
        float wall_density
        float grey_spawn_rate
        float yellow_spawn_rate
        float random_spawn_rate
        int max_hp
        int hp_loss
        int grey_hp
        int yellow_hp
        float grey_reward
        float yellow_reward
        float death_reward

    ctypedef struct CPRState "CPR":
        int width
        int height
        int num_agents
        int vision
        int stride
        FoodList food[3]
        int* agent_hp
        unsigned char* alive
        int tick
        int64_t spawn_work

    void cpr_load(CPRState* env, const unsigned char* tiles) nogil


cdef int configure(Settings* env, dict settings) except -1:
    env.width = settings["width"]
    env.height = settings["height"]
    env.num_agents = settings["num_agents"]
    env.vision = settings["vision"]
    env.max_ticks = settings["max_ticks"]
    env.initial_grey = settings["initial_grey"]
    env.initial_yellow = settings["initial_yellow"]
    env.wall_density = settings["wall_density"]
    env.grey_spawn_rate = settings["grey_spawn_rate"]
    env.yellow_spawn_rate = settings["yellow_spawn_rate"]
    env.random_spawn_rate = settings["random_spawn_rate"]
    env.max_hp = settings["max_hp"]
    env.hp_loss = settings["hp_loss"]
    env.grey_hp = settings["grey_hp"]
    env.yellow_hp = settings["yellow_hp"]
    env.grey_reward = settings["grey_reward"]
    env.yellow_reward = settings["yellow_reward"]
    env.death_reward = settings["death_reward"]
    return 0


include "vecenv.pxi"


cdef CPRState* _env(Binding binding, int index) except NULL:
    if not 0 <= index < binding.num_envs:
        raise IndexError(f"env index {index} out of range [0, {binding.num_envs})")
    return <CPRState*>&binding.envs[index]


def load_layout(Binding binding, int index, object tiles):
    """Start an episode of env `index` on `tiles`, a C-contiguous uint8 (height, width) grid."""
    cdef CPRState* env = _env(binding, index)
    if tiles.dtype.itemsize != 1 or tiles.shape != (env.height, env.width) or not tiles.flags.c_contiguous:
        raise ValueError(f"tiles must be a C-contiguous uint8 array of shape {(env.height, env.width)}")
    cpr_load(env, <const unsigned char*>_data(tiles))


def food_cells(Binding binding, int index, int kind):
    """(row, col) of every food of `kind` (1 grey, 2 yellow) in env `index`, in list order."""
    cdef CPRState* env = _env(binding, index)
    if kind not in (1, 2):
        raise ValueError(f"food kind must be 1 (grey) or 2 (yellow), got {kind}")
    cdef FoodList* foods = &env.food[kind]
    cdef int k, cell
    out = []
    for k in range(foods.count):
        cell = foods.cells[k]
        out.append((cell // env.stride - env.vision, cell % env.stride - env.vision))
    return out


def agent_hp(Binding binding, int index):
    """HP of each agent of env `index` (0 for dead ones)."""
    cdef CPRState* env = _env(binding, index)
    return [env.agent_hp[i] for i in range(env.num_agents)]


def spawn_work(Binding binding, int index):
    """Random draws made by env `index`'s last food-spawn pass."""
    return _env(binding, index).spawn_work


def tick(Binding binding, int index):
    """Steps taken in env `index`'s current episode."""
    return _env(binding, index).tick
