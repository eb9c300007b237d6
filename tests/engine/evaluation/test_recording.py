"""Recordings (`eval --record`, engine/evaluation/recording.py): valid GIF/MP4 files of the frames played,
with the expected frame count, size and palette colours; bad paths and text envs refused
before anything is written; the file appears whole or not at all."""

import json
import os
import sys

import numpy as np
import pytest

pytest.importorskip("imageio", reason='recordings need the record extra: pip install "puffer-tui[record]"')
pytest.importorskip("imageio_ffmpeg", reason='MP4s need the record extra: pip install "puffer-tui[record]"')

from puffer_tui.app.cli import main  # noqa: E402
from puffer_tui.engine.algo.trainer import Trainer  # noqa: E402
from puffer_tui.engine.evaluation import recording  # noqa: E402
from puffer_tui.engine.evaluation.recording import (  # noqa: E402
    RecordingError,
    read_recording,
    record_episodes,
)
from puffer_tui.engine.shared import config as cfg  # noqa: E402
from puffer_tui.engine.shared.checkpoint import save_checkpoint  # noqa: E402

SQUARED = {0: ("·", "grey39"), 1: ("@", "bold bright_cyan"), 2: ("◆", "bold yellow")}
GREY39, CYAN, YELLOW = (98, 98, 98), (0, 255, 255), (255, 255, 0)  # rich's xterm colours


def make_run(root, spec: str, overrides: dict, epochs: int):
    run = root / spec.replace(":", "-")
    (run / "checkpoints").mkdir(parents=True)
    trainer = Trainer(cfg.load_config(spec, {"train.torch_threads": 1, **overrides}))
    try:
        for _ in range(epochs):
            trainer.run_epoch()
        save_checkpoint(run, trainer.state_dict())
    finally:
        trainer.close()
    return run


@pytest.fixture(scope="module")
def squared_run(tmp_path_factory):
    """A squared run trained a few epochs (7 x 7 board)."""
    return make_run(tmp_path_factory.mktemp("runs"), "squared", {
        "vec.num_envs": 32, "train.horizon": 16, "train.minibatch_size": 256,
        "train.hidden_size": 32, "env.size": 7}, epochs=3)


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    # Gymnasium's own CartPole, which draws RGB images (not its C port's tiles)
    return make_run(tmp_path_factory.mktemp("runs"), "gym:CartPole-v1", {
        "env.native": "false", "vec.backend": "serial", "vec.num_envs": 8, "train.horizon": 16,
        "train.minibatch_size": 128, "train.hidden_size": 16}, epochs=1)


def record_cli(capsys, run, *flags):
    capsys.readouterr()
    code = main(["eval", str(run), "--json", *flags])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


def played_frames(result) -> int:
    """The frames an evaluation shows: the first, then one after every step."""
    return 1 + round(result["episodes"] * result["episode_length"])


def colours(image) -> set:
    return {tuple(c) for c in image.reshape(-1, 3)}


# ---- the CLI: native tiles and Gymnasium images, GIF and MP4 ---------------------------------

def test_gif_of_a_native_env_has_every_frame_in_the_palette_colours(capsys, squared_run,
                                                                     tmp_path):
    target = tmp_path / "squared.gif"
    code, result, err = record_cli(capsys, squared_run, "--record", str(target),
                                   "--episodes", "2", "--scale", "10")
    assert code == 0, err
    frames = read_recording(target)
    assert len(frames) == played_frames(result) == result["recording_frames"]
    assert frames[0].shape == (70, 70, 3) and result["recording_size"] == [70, 70]
    for frame in frames:
        assert colours(frame) <= {GREY39, CYAN, YELLOW}
        assert CYAN in colours(frame)  # the agent is on the board in every frame
    # each tile is a 10 x 10 block of one colour
    assert len(colours(frames[0][30:40, 20:30])) == 1


def test_mp4_of_a_native_env_at_the_default_scale(capsys, squared_run, tmp_path):
    target = tmp_path / "squared.mp4"
    code, result, err = record_cli(capsys, squared_run, "--record", str(target),
                                   "--episodes", "1", "--fps", "30")
    assert code == 0, err
    frames = read_recording(target)
    assert len(frames) == played_frames(result)
    assert frames[0].shape == (400, 400, 3)  # 7 tiles of 57 pixels, padded to even sides
    # lossy, but a tile's middle keeps its colour: the board is mostly grey39
    middles = frames[0][28::57, 28::57][:7, :7].reshape(-1, 3).astype(int)
    assert (np.abs(middles - GREY39).max(axis=1) <= 12).sum() >= 40


@pytest.mark.parametrize("suffix", [".gif", ".mp4"])
def test_gym_rgb_env_records_its_images(capsys, cartpole_run, tmp_path, suffix):
    target = tmp_path / f"cartpole{suffix}"
    code, result, err = record_cli(capsys, cartpole_run, "--record", str(target),
                                   "--episodes", "1")
    assert code == 0, err
    frames = read_recording(target)
    assert len(frames) == played_frames(result)
    assert frames[0].shape == (300, 450, 3)  # CartPole's 100 x 150 frame, 3 pixels a pixel
    sky = frames[0][5, 5].astype(int)  # a corner of CartPole's white sky
    assert (np.abs(sky - 255) <= 6).all(), sky
    assert frames[0].min() < 60  # the black cart


def test_a_bare_name_goes_into_the_runs_recordings_folder(capsys, squared_run, tmp_path,
                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, result, err = record_cli(capsys, squared_run, "--record", "bare.gif", "--episodes", "1")
    assert code == 0, err
    saved = squared_run / "recordings" / "bare.gif"
    assert result["recording"] == str(saved) and saved.is_file()
    assert os.listdir(tmp_path) == []
    assert (saved.parent.stat().st_mode & 0o777) == 0o700  # private like the run dir


# ---- refusals: before anything plays, nothing written ----------------------------------------

@pytest.mark.parametrize("name, message", [
    ("out.png", "must end in .gif or .mp4"),
    ("missing/out.gif", "does not exist"),
])
def test_bad_paths_are_refused_before_playing(capsys, squared_run, tmp_path, name, message):
    before = sorted(os.listdir(squared_run))
    code, _, err = record_cli(capsys, squared_run, "--record", str(tmp_path / name))
    assert code == 2
    assert message in err and err.count("\n") == 1, err
    assert os.listdir(tmp_path) == [] and sorted(os.listdir(squared_run)) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_folder_is_refused(capsys, squared_run, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        code, _, err = record_cli(capsys, squared_run, "--record", str(locked / "out.gif"))
        assert code == 2 and "is not writable" in err
        assert os.listdir(locked) == []
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("flags, message", [
    (["--fps", "60"], "at most 50 for a GIF"),
    (["--scale", "0"], "scale must be in"),
    (["--render", "ascii"], "one at a time"),
    (["--num-envs", "4"], "plays one env"),
])
def test_bad_options_are_refused(capsys, squared_run, tmp_path, flags, message):
    code, _, err = record_cli(capsys, squared_run, "--record", str(tmp_path / "x.gif"), *flags)
    assert code == 2 and message in err, err
    assert os.listdir(tmp_path) == []


def test_scale_needs_record(capsys, squared_run):
    code, _, err = record_cli(capsys, squared_run, "--scale", "3")
    assert code == 2 and "--scale needs --record" in err


def test_a_text_frame_env_is_refused_naming_its_render_mode(capsys, tmp_path_factory, tmp_path):
    run = make_run(tmp_path_factory.mktemp("runs"), "gym:FrozenLake-v1", {
        "vec.backend": "serial", "vec.num_envs": 4, "train.horizon": 16,
        "train.minibatch_size": 64, "train.hidden_size": 16}, epochs=0)
    code, _, err = record_cli(capsys, run, "--record", str(tmp_path / "lake.gif"))
    assert code == 2
    assert "text frames (render_mode 'ansi')" in err and "rgb_array" in err, err
    assert os.listdir(tmp_path) == []


def test_missing_imageio_names_the_extra(capsys, squared_run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # import fails
    code, _, err = record_cli(capsys, squared_run, "--record", str(tmp_path / "out.mp4"))
    assert code == 2 and 'pip install "puffer-tui[record]"' in err
    monkeypatch.setitem(sys.modules, "imageio.v2", None)
    with pytest.raises(RecordingError, match=r'needs imageio: pip install "puffer-tui\[record\]"'):
        recording.check_recording_path(tmp_path / "out.gif")


# ---- record_episodes itself: exact pixels, atomic writes, Ctrl-C, the GIF bound ------------

def tile_frames(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 3, (4, 6)).astype(np.uint8) for _ in range(n)]


def expected_pixels(tiles, scale):
    table = np.array([GREY39, CYAN, YELLOW], np.uint8)
    return np.repeat(np.repeat(table[tiles], scale, axis=0), scale, axis=1)


def test_gif_pixels_are_the_palette_colours_exactly_repeats_included(tmp_path):
    tiles = tile_frames(5)
    tiles[2] = tiles[1].copy()  # identical frames in a row: stored once, read back twice
    made = record_episodes(iter(tiles), tmp_path / "t.gif", fps=20, scale=3, palette=SQUARED)
    assert (made.frames, made.width, made.height, made.cut_short) == (5, 18, 12, False)
    frames = read_recording(tmp_path / "t.gif")
    assert len(frames) == 5
    for tile, frame in zip(tiles, frames):
        assert np.array_equal(frame, expected_pixels(tile, 3))


def test_an_unknown_tile_id_stands_out(tmp_path):
    frame = np.full((2, 2), 9, np.uint8)
    record_episodes([frame], tmp_path / "u.gif", scale=1, palette=SQUARED)
    assert colours(read_recording(tmp_path / "u.gif")[0]) == {recording.UNKNOWN_TILE}


def test_a_failing_encoding_leaves_no_file_and_keeps_the_old_one(tmp_path):
    target = tmp_path / "a.gif"
    target.write_bytes(b"the old recording")

    def broken():
        yield from tile_frames(3)
        raise RuntimeError("the env crashed")

    with pytest.raises(RuntimeError, match="the env crashed"):
        record_episodes(broken(), target, palette=SQUARED)
    assert os.listdir(tmp_path) == ["a.gif"] and target.read_bytes() == b"the old recording"


def test_a_failing_encoder_leaves_no_file(tmp_path, monkeypatch):
    def fail_on_close(self):
        raise OSError("disk full")

    monkeypatch.setattr(recording._Writer, "close", fail_on_close)
    with pytest.raises(OSError, match="disk full"):
        record_episodes(tile_frames(3), tmp_path / "b.mp4", palette=SQUARED)
    assert os.listdir(tmp_path) == []


def test_frames_that_change_size_or_are_text_are_refused(tmp_path):
    frames = [np.zeros((4, 4), np.uint8), np.zeros((5, 4), np.uint8)]
    with pytest.raises(RecordingError, match="changed size"):
        record_episodes(frames, tmp_path / "c.gif", palette=SQUARED)
    with pytest.raises(RecordingError, match="text frames"):
        record_episodes(["FFFH\nHFFG"], tmp_path / "d.mp4")
    assert os.listdir(tmp_path) == []


def test_ctrl_c_keeps_the_frames_played_so_far(tmp_path):
    def interrupted():
        yield from tile_frames(4)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        record_episodes(interrupted(), tmp_path / "e.mp4", scale=4, palette=SQUARED)
    assert len(read_recording(tmp_path / "e.mp4")) == 4
    assert os.listdir(tmp_path) == ["e.mp4"]


def test_a_gif_stops_at_its_memory_bound_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(recording, "GIF_MAX_BYTES", 3 * 24 * 4)  # three 6 x 4 frames at scale 2
    made = record_episodes(tile_frames(10), tmp_path / "f.gif", scale=2, palette=SQUARED)
    assert made.cut_short and made.frames == 3
    assert len(read_recording(tmp_path / "f.gif")) == 3


def test_periodic_recordings_go_into_the_run_dir(tmp_path):
    path = recording.periodic_recording_path(tmp_path, 4096)
    assert path == tmp_path / "recordings" / "eval-4096.gif"
    record_episodes(tile_frames(2), path, palette=SQUARED)
    assert len(read_recording(path)) == 2


def test_the_engine_can_record_a_policy_into_the_run_dir(squared_run):
    """The call the engine makes for a periodic recording (engine/evaluation/recording.py's docstring)."""
    import torch

    from puffer_tui.engine.algo.policy import load_policy
    from puffer_tui.engine.evaluation.evaluate import Evaluator
    from puffer_tui.engine.shared.checkpoint import latest_checkpoint

    checkpoint = latest_checkpoint(squared_run)
    policy, config = load_policy(checkpoint)
    before = torch.get_rng_state()
    with torch.random.fork_rng(devices=[]):
        player = Evaluator(policy, config, checkpoint, 1, 5, True, 1)
        try:
            made = record_episodes(player.recording_frames(),
                                   recording.periodic_recording_path(squared_run, 123), 10,
                                   None, player.envs[0].palette)
        finally:
            player.close()
    assert torch.equal(torch.get_rng_state(), before)  # training's generator untouched
    assert made.path == squared_run / "recordings" / "eval-123.gif"
    assert len(read_recording(made.path)) == made.frames == 1 + player.done_lengths[0]
