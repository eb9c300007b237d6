"""Frames of any env, engine side: the bounds (engine/native/frames.py), the wire form of rgb and
text frames (engine/shared/protocol.py), Gymnasium envs' frame() through the serial and multiprocessing
backends, the observation view, and FrameSource capturing only what is wanted."""

import json

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from puffer_tui.engine.native import frames
from puffer_tui.engine.runtime.frame_source import FrameSource, frame_key
from puffer_tui.engine.shared import protocol
from puffer_tui.engine.shared.protocol import (
    FrameKind,
    RequestError,
    decode_frame,
    encode,
    frame_message,
)
from puffer_tui.engine.vec import make
from puffer_tui.envs import GymnasiumPufferEnv, from_gymnasium


def over_the_wire(message: dict) -> dict:
    return json.loads(encode(message))


# ---- bounds -------------------------------------------------------------------------------

def test_frame_kinds_match_the_protocol_vocabulary():
    assert frames.FRAME_KINDS == tuple(FrameKind)


def test_a_big_image_is_area_averaged_down_to_the_bounds_keeping_its_aspect():
    image = np.zeros((400, 600, 3), np.uint8)
    image[:, 300:] = 200  # right half grey
    small = frames.bound_frame(image)
    assert small.shape == (100, 150, 3) and small.dtype == np.uint8, "4 x 4 blocks averaged"
    assert small[:, :75].max() == 0 and small[:, 75:].min() == 200
    tall = frames.bound_frame(np.zeros((1000, 50, 4), np.uint8))  # RGBA: alpha dropped
    assert tall.shape == (111, 5, 3), "9 x 9 blocks, the last row cut"
    sliver = frames.bound_frame(np.full((1, 10000, 3), 7, np.uint8))
    assert sliver.shape == (1, 160, 3) and sliver.max() == 7
    kept = np.arange(30, dtype=np.uint8).reshape(2, 5, 3)
    out = frames.bound_frame(kept)
    assert np.array_equal(out, kept) and out is not kept, "small images are copied as they are"


def test_the_engine_averages_whole_blocks():
    image = np.zeros((359, 480, 3), np.uint8)
    image[0::3, :, 0] = 255  # every third row red: one row of each 3 x 3 block
    image[:, 0::3, 2] = 90  # every third column a little blue
    small = frames.bound_frame(image)
    assert small.shape == (119, 160, 3), "3 x 3 blocks; the last 2 rows are cut"
    assert np.all(small == [85, 0, 30])


def test_area_averaging_is_the_mean_of_the_covered_pixels():
    a = np.arange(16, dtype=np.uint8).reshape(4, 4)
    assert frames.area_resize(a, 2, 2).tolist() == [[3, 5], [11, 13]]  # 2.5 rounds half up
    assert frames.area_resize(np.array([[0, 255, 255]], np.uint8), 1, 1).tolist() == [[170]]
    grown = frames.area_resize(np.array([[1, 2]], np.uint8), 2, 4)
    assert grown.tolist() == [[1, 1, 2, 2], [1, 1, 2, 2]]
    thin = np.zeros((8, 8), np.uint8)
    thin[:, 3] = 255  # a one-pixel pole: averaging keeps it, as a blend
    assert frames.area_resize(thin, 4, 4)[:, 1].tolist() == [128] * 4


def test_float_images_are_scaled_to_bytes():
    image = np.full((2, 2, 3), 0.5, np.float32)
    assert frames.bound_frame(image).tolist() == np.full((2, 2, 3), 127).tolist()


def test_text_keeps_colours_and_loses_other_escapes_and_controls():
    raw = "\x1b[41mS\x1b[0mFF\x1b]0;title\x07\x1b[2J\r\tH\x9b\x00\n"
    assert frames.clean_text(raw) == "\x1b[41mS\x1b[0mFF    H\n"
    wide = frames.clean_text("\x1b[31m" + "x" * 500)
    assert frames.strip_colour(wide) == "x" * frames.MAX_TEXT_COLS
    assert wide.endswith("\x1b[0m"), "a cut colour is reset"
    assert frames.clean_text("a\n" * 500).count("\n") == frames.MAX_TEXT_ROWS - 1


def test_what_is_not_a_frame_is_refused():
    assert frames.bound_frame(np.zeros((2, 2, 2, 2))) is None
    assert frames.bound_frame(42) is None
    with pytest.raises(ValueError, match="tile grid"):
        frame_message(0, np.zeros(5))


# ---- the wire -----------------------------------------------------------------------------

def test_tile_frames_are_byte_identical_to_the_original_form():
    tiles = np.arange(6, dtype=np.uint8).reshape(2, 3)
    assert encode(frame_message(1, tiles)) == (
        b'{"type":"frame","env":1,"height":2,"width":3,"tiles":"AAECAwQF"}\n')
    frame = decode_frame(over_the_wire(frame_message(1, tiles)))
    assert (frame.kind, frame.env, frame.height, frame.width, frame.tiles) == (
        FrameKind.TILES, 1, 2, 3, bytes(range(6)))


def test_rgb_frames_round_trip_within_the_bounds():
    image = np.random.default_rng(0).integers(0, 256, (400, 600, 3), dtype=np.uint8)
    message = over_the_wire(frame_message(3, image, view="obs"))
    assert message["kind"] == "rgb" and message["view"] == "obs"
    assert len(encode(message)) < protocol.MAX_MESSAGE // 8
    frame = decode_frame(message)
    assert (frame.env, frame.kind, frame.view, frame.height, frame.width) == (
        3, FrameKind.RGB, "obs", 100, 150)
    assert frame.data == frames.bound_frame(image).tobytes()
    small = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    assert decode_frame(over_the_wire(frame_message(0, small))).data == small.tobytes()


def test_text_frames_round_trip_with_their_size():
    frame = decode_frame(over_the_wire(frame_message(0, "\n\x1b[41mS\x1b[0mFFF\nFHFH\n")))
    assert frame.kind == FrameKind.TEXT and frame.view == "env"
    assert frame.data == "\n\x1b[41mS\x1b[0mFFF\nFHFH\n"
    assert (frame.height, frame.width) == (4, 4)


def test_bad_frames_are_dropped():
    rgb = over_the_wire(frame_message(0, np.zeros((4, 5, 3), np.uint8)))
    text = over_the_wire(frame_message(0, "hi"))
    big = {"type": "frame", "env": 0, "kind": "rgb", "height": 121, "width": 1,
           "rgb": "AAAA" * 121}
    for bad in (
        {**rgb, "width": 6},  # bytes do not fill it
        {**rgb, "rgb": "%%%"},  # not base64
        {**rgb, "kind": "hologram"},
        {**rgb, "view": "dreams"},
        {**rgb, "height": 0},
        big,  # over the bounds even though the bytes fill it
        {**text, "text": 42},
        {**text, "text": "x" * (frames.MAX_TEXT_CHARS + 1)},
        {"type": "frame", "kind": "text"},
    ):
        assert decode_frame(bad) is None, bad


def test_a_render_request_may_name_a_view():
    _, cmd, args = protocol.parse_request(b'{"id": 1, "cmd": "render", '
                                          b'"args": {"env": 0, "view": "obs"}}')
    assert protocol.check_render_view(args) == "obs"
    assert protocol.check_render_view({"env": 0}) == "env"
    with pytest.raises(RequestError, match="view.*'env', 'obs'"):
        protocol.check_render_view({"view": "pixels"})


# ---- Gymnasium envs' frames through the vec backends ----------------------------------------

class StackedImageEnv(gymnasium.Env):
    """Observations are a 4 x 16 x 16 uint8 frame stack, the k-th frame all k * 60."""

    metadata = {"render_modes": []}
    observation_space = spaces.Box(0, 255, (4, 16, 16), np.uint8)
    action_space = spaces.Discrete(2)

    def _obs(self):
        return np.stack([np.full((16, 16), k * 60, np.uint8) for k in range(4)])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self._obs(), {}

    def step(self, action):
        return self._obs(), 0.0, False, False, {}


class BrokenRenderEnv(StackedImageEnv):
    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, render_mode=None):
        self.render_mode = render_mode

    def render(self):
        raise RuntimeError("no screen here")


@pytest.mark.parametrize("backend", ["serial", "multiprocessing"])
def test_cartpole_draws_images_and_frozenlake_text_through_the_backend(backend):
    options = {"num_workers": 2} if backend == "multiprocessing" else {}
    with make(from_gymnasium("CartPole-v1"), num_envs=2, seed=0, backend=backend,
              **options) as vec:
        vec.async_reset(0)
        vec.recv()
        image = vec.frame(1)
        assert image.shape == (100, 150, 3) and image.dtype == np.uint8
        assert len(np.unique(image.reshape(-1, 3), axis=0)) > 2, "a blank picture"
        message = over_the_wire(frame_message(1, image))
        assert decode_frame(message).kind == FrameKind.RGB
    with make(from_gymnasium("FrozenLake-v1"), num_envs=2, seed=0, backend=backend,
              **options) as vec:
        vec.async_reset(0)
        vec.recv()
        text = vec.frame(1)
        assert frames.strip_colour(text).split() == ["SFFF", "FHFH", "FFFH", "HFFG"]
        assert "\x1b[41m" in text, "the agent's square is coloured"


def test_the_render_mode_is_chosen_from_the_env_or_given():
    assert from_gymnasium("CartPole-v1")(num_envs=1).render_mode == "rgb_array"
    assert from_gymnasium("Taxi-v4")(num_envs=1).render_mode == "ansi", "ansi is listed first"
    silent = from_gymnasium("CartPole-v1", render_mode=None)(num_envs=1)
    silent.reset()
    assert silent.render_mode is None and silent.frame(0) is None
    chosen = from_gymnasium("FrozenLake-v1", render_mode="rgb_array")(num_envs=1)
    chosen.reset()
    assert chosen.frame(0).ndim == 3
    assert from_gymnasium(StackedImageEnv)(num_envs=1).frame(0) is None, "renders nothing"
    # None passes no render_mode: a creator without the argument still builds
    assert from_gymnasium(StackedImageEnv, render_mode=None)(num_envs=1).frame(0) is None


def test_a_failing_render_says_why_as_text_once():
    env = from_gymnasium(BrokenRenderEnv)(num_envs=1)
    env.reset()
    assert env.render_mode == "rgb_array"
    first = env.frame(0)
    assert "render() failed: RuntimeError: no screen here" in first
    assert env.frame(0) is first


def test_the_obs_view_draws_a_frame_stack_side_by_side():
    with make(from_gymnasium(StackedImageEnv), num_envs=2, seed=0, backend="serial") as vec:
        vec.async_reset(0)
        vec.recv()
        image = vec.frame(1, "obs")
    assert image.shape == (33, 33, 3), "4 frames of 16 x 16 in a 2 x 2 grid, 1 pixel apart"
    assert image[0, 0, 0] == 0 and image[0, 17, 0] == 60 and image[17, 0, 0] == 120
    assert image[32, 32].tolist() == [180] * 3
    assert tuple(image[16, 0]) == frames.GAP_COLOUR, "the gap between frames"


def test_the_obs_view_of_vectors_says_there_is_no_image():
    with make(from_gymnasium("CartPole-v1"), num_envs=1, backend="serial") as vec:
        vec.async_reset(0)
        vec.recv()
        assert "no image in this env's observations" in vec.frame(0, "obs")


def test_the_multiprocessing_worker_answers_the_obs_view():
    with make(from_gymnasium(StackedImageEnv), num_envs=4, seed=0, backend="multiprocessing",
              num_workers=2) as vec:
        vec.async_reset(0)
        vec.recv()
        image = vec.frame(3, "obs")  # worker 1's second env, through the public frame()
        assert image.shape == (33, 33, 3)
        assert vec.frame(3) is None, "the env view of a renderless env"


class ObsFrameFails(GymnasiumPufferEnv):
    def observation_frame(self, env_index=0):
        raise RuntimeError("cannot draw this")


def obs_frame_fails(num_envs=1, seed=0, buf=None):
    return ObsFrameFails(StackedImageEnv, num_envs=num_envs, seed=seed, buf=buf)


def test_a_frame_that_fails_in_a_worker_says_why_and_training_goes_on():
    with make(obs_frame_fails, num_envs=2, seed=0, backend="multiprocessing",
              num_workers=2) as vec:
        vec.async_reset(0)
        vec.recv()
        assert vec._frame(1, 0, "obs") == ("frame of env 0 failed: RuntimeError: "
                                           "cannot draw this")
        vec.send(np.zeros(vec.actions.shape, vec.actions.dtype))
        assert vec.recv()[0].shape == (2, 4, 16, 16), "the workers still step"


def test_observation_images_of_common_layouts():
    grey = (np.arange(25) * 10).astype(np.uint8).reshape(5, 5)
    assert frames.observation_image(grey)[:, :, 0].tolist() == grey.tolist()
    rgb_last = np.zeros((7, 7, 3), np.uint8)
    rgb_last[..., 2] = 90
    assert frames.observation_image(rgb_last)[0, 0].tolist() == [0, 0, 90]
    codes = np.zeros((7, 7, 3), np.uint8)  # MiniGrid: object, colour and state ids up to 10
    codes[0, 0] = (10, 5, 0)
    assert frames.observation_image(codes)[0, 0].tolist() == [255, 127, 0], "stretched"
    floats = np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)
    scaled = frames.observation_image(floats, -1.0, 1.0)[:, :, 0]
    assert scaled[0, 0] == 0 and scaled[2, 2] == 255
    assert frames.observation_image(np.zeros(16)) is None
    assert frames.observation_image(np.zeros((2, 40))) is None


# ---- FrameSource --------------------------------------------------------------------------

def test_frame_source_grabs_only_what_is_wanted_and_bounds_it():
    grabs = []

    def grab(env, view="env"):
        grabs.append((env, view))
        return np.zeros((480, 640, 3), np.uint8) if view == "env" else "obs"

    source = FrameSource(grab)
    assert not source.due()
    source.capture()
    assert grabs == [], "nobody watches: nothing is drawn"
    source.want(frozenset({frame_key(2), frame_key(5, "obs")}))
    assert source.due()
    source.capture()
    assert sorted(grabs) == [(2, "env"), (5, "obs")]
    assert source.frames[2][1].shape == (120, 160, 3)
    assert source.frames[(5, "obs")][1] == "obs"
    assert not source.due(), "at most one capture per FRAME_INTERVAL"


def test_frame_source_grabs_the_env_view_with_the_one_argument_grab():
    source = FrameSource(lambda env: np.full((2, 2), env, np.uint8))
    source.want(frozenset({frame_key(1), frame_key(1, "obs")}))
    source.capture()  # grab(env, "obs") raises TypeError: no frame, no crash
    assert list(source.frames) == [1]


def test_drawing_cartpole_without_a_display_prints_no_sdl_errors():
    import os
    import subprocess
    import sys

    code = ("from puffer_tui.envs import from_gymnasium; "
            "env = from_gymnasium('CartPole-v1')(num_envs=1); env.reset(); "
            "print(env.frame(0).shape)")
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "SDL_VIDEODRIVER")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0 and "(100, 150, 3)" in out.stdout, out.stderr
    assert "error" not in out.stderr.lower(), out.stderr


def test_without_a_display_mujoco_renders_through_egl_unless_told_otherwise(monkeypatch):
    from puffer_tui.envs import gym_emulation

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.delenv("PYOPENGL_PLATFORM", raising=False)
    monkeypatch.delenv("SDL_VIDEODRIVER", raising=False)  # restored afterwards, as it was
    monkeypatch.setattr(gym_emulation, "_has_library", lambda name: name == "EGL")
    gym_emulation._quiet_headless_sdl()
    assert gym_emulation.os.environ["MUJOCO_GL"] == "egl"
    monkeypatch.setenv("MUJOCO_GL", "osmesa")  # the user's own choice is kept
    gym_emulation._quiet_headless_sdl()
    assert gym_emulation.os.environ["MUJOCO_GL"] == "osmesa"
    monkeypatch.delenv("MUJOCO_GL")
    monkeypatch.setenv("PYOPENGL_PLATFORM", "osmesa")  # EGL would be refused under it
    gym_emulation._quiet_headless_sdl()
    assert "MUJOCO_GL" not in gym_emulation.os.environ
    monkeypatch.delenv("PYOPENGL_PLATFORM")
    monkeypatch.setenv("DISPLAY", ":0")  # a display: GLFW's window context works there
    gym_emulation._quiet_headless_sdl()
    assert "MUJOCO_GL" not in gym_emulation.os.environ


def test_a_mujoco_env_draws_its_frame_on_a_machine_without_a_display():
    """A fresh process as a worker is: its first render picks the GL backend."""
    import subprocess
    import sys

    pytest.importorskip("mujoco", reason='pip install "puffer-tui[mujoco]"')
    import ctypes.util

    if ctypes.util.find_library("EGL") is None:
        pytest.skip("no libEGL (apt-get install libegl1 libegl-mesa0)")
    usable = subprocess.run([sys.executable, "-c", "from mujoco.egl import GLContext; "
                             "GLContext(8, 8).make_current()"], capture_output=True,
                            env={**__import__("os").environ, "MUJOCO_GL": "egl",
                                 "PYOPENGL_PLATFORM": "egl"}, timeout=120)
    if usable.returncode != 0:
        pytest.skip("libEGL is there but no EGL device works (apt-get install libegl-mesa0)")
    code = ("from puffer_tui.envs import from_gymnasium\n"
            "env = from_gymnasium('InvertedPendulum-v5')(num_envs=1)\n"
            "env.reset(0)\n"
            "frame = env.frame(0)\n"
            "print(type(frame).__name__, getattr(frame, 'shape', frame))\n")
    clean = {k: v for k, v in __import__("os").environ.items()
             if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MUJOCO_GL", "PYOPENGL_PLATFORM")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=clean, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ndarray"), done.stdout  # not "render() failed: ..."
