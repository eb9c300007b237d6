"""A runs folder that cannot hold runs is a RunDirError naming it, not an OSError."""

import os
from pathlib import Path

import pytest

from puffer_tui.engine.shared import run_dir as rd


def test_a_file_as_the_runs_folder(tmp_path):
    file = tmp_path / "runs"
    file.write_text("")
    with pytest.raises(rd.RunDirError, match="is a file, not a folder.*--runs-dir"):
        rd.create_run_dir("squared", file)
    with pytest.raises(rd.RunDirError, match="part of its path is a file|cannot be made"):
        rd.create_run_dir("squared", file / "below")


def test_an_unwritable_runs_folder_named_by_the_env_var(tmp_path, monkeypatch):
    root = tmp_path / "shared"
    root.mkdir()
    monkeypatch.setenv(rd.RUNS_ENV_VAR, str(root))
    real_access = os.access
    # the tests may run as root, whom permissions do not stop: the folder reads unwritable
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == root
                        else real_access(p, mode))
    with pytest.raises(rd.RunDirError, match=r"\$PUFFER_TUI_RUNS\) is not writable"):
        rd.create_run_dir("squared", rd.runs_root())


def test_mkdir_refused_is_a_run_dir_error(tmp_path, monkeypatch):
    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(rd.RunDirError, match="Permission denied"):
        rd.create_run_dir("squared", tmp_path / "new")
