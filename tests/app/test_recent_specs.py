"""app/services/recent_specs.py: the specs typed lately, newest first and each once, at most
LIMIT of them; a damaged file or a runs root that cannot be written loses only the memory."""

import json

from puffer_tui.app.services.recent_specs import LIMIT, RECENT_FILE, recent, remember


def test_the_newest_comes_first_each_spec_once_and_the_oldest_go(tmp_path):
    assert recent(tmp_path) == []
    remember(tmp_path, "gym:CartPole-v1")
    remember(tmp_path, "gym:Acrobot-v1")
    assert remember(tmp_path, "gym:CartPole-v1") == ["gym:CartPole-v1", "gym:Acrobot-v1"]
    for i in range(LIMIT):
        remember(tmp_path, f"mod:env_{i}")
    assert recent(tmp_path) == [f"mod:env_{i}" for i in reversed(range(LIMIT))]


def test_a_damaged_file_reads_as_no_memory(tmp_path):
    path = tmp_path / RECENT_FILE
    for text in ("{not json", '{"a": 1}', '["gym:X-v0", 3, "", null]'):
        path.write_text(text)
        assert recent(tmp_path) == (["gym:X-v0"] if text.startswith("[") else [])
    assert remember(tmp_path, "gym:Y-v0") == ["gym:Y-v0", "gym:X-v0"]
    assert json.loads(path.read_text()) == ["gym:Y-v0", "gym:X-v0"]


def test_a_root_that_cannot_be_written_still_answers(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert remember(blocked / "runs", "gym:CartPole-v1") == ["gym:CartPole-v1"]
    assert recent(blocked / "runs") == []
