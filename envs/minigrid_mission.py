"""MiniGrid's `mission` text as choices the policy can read.

    space = with_mission_choices(observation_space)   # Dict with `mission` a TextChoices

A MiniGrid mission is a template filled with words: "go to the {color} door" (GoToDoor),
"{phrase} {color} {type}" (Fetch), "put the {color} {type} near the {color} {type}" (PutNear).
Its MissionSpace lists those words (`ordered_placeholders`), so the texts an env can give are
known before it runs: every combination is put through the template once, here, and each text
becomes one one-hot per slot (envs/text_choices.py). Slots with one word (KeyCorridor's "ball")
carry nothing and are left out. A mission with one text (DoorKey, RedBlueDoors: no
placeholders, or one word in each) is taken out of the space: the same text every episode,
nothing is lost, so no note says something was. Left as they are (and so dropped, with the
note that says so, envs/gym_spaces.py): BabyAI's grammar of missions (not a list) and
templates of more than MAX_TEXTS combinations.

Tested in: tests/envs/test_minigrid_mission.py
"""

from __future__ import annotations

import itertools
import math

from gymnasium import spaces

from puffer_tui.envs.text_choices import TextChoices

MISSION_KEY = "mission"
MAX_TEXTS = 10_000  # PutNear's template, the largest of MiniGrid's, has 324


def with_mission_choices(space: spaces.Space) -> spaces.Space:
    """`space` with a MiniGrid mission it can enumerate as TextChoices; else `space` itself."""
    if not isinstance(space, spaces.Dict) or MISSION_KEY not in space.spaces:
        return space
    mission = space.spaces[MISSION_KEY]
    if _one_text(mission):
        return spaces.Dict({key: sub for key, sub in space.spaces.items() if key != MISSION_KEY})
    choices = mission_choices(mission)
    if choices is None:
        return space
    return spaces.Dict({**space.spaces, MISSION_KEY: choices})


def _one_text(mission: spaces.Space) -> bool:
    """A MiniGrid MissionSpace whose template has no placeholders, or one word in each."""
    if type(mission).__name__ != "MissionSpace":
        return False
    placeholders = getattr(mission, "ordered_placeholders", None)
    return not placeholders or all(len(slot) == 1 for slot in placeholders)


def mission_choices(mission: spaces.Space) -> TextChoices | None:
    """The TextChoices of a MiniGrid MissionSpace with placeholders, or None."""
    placeholders = getattr(mission, "ordered_placeholders", None)
    template = getattr(mission, "mission_func", None)
    if type(mission).__name__ != "MissionSpace" or not placeholders or template is None:
        return None
    words = [list(slot) for slot in placeholders]
    if not all(words) or math.prod(map(len, words)) > MAX_TEXTS:
        return None
    kept = [i for i, slot in enumerate(words) if len(slot) > 1]
    if not kept:
        return None  # every slot has one word: one text
    texts = {}
    for choice in itertools.product(*(range(len(slot)) for slot in words)):
        text = template(*(words[slot][i] for slot, i in enumerate(choice)))
        texts.setdefault(str(text), tuple(choice[slot] for slot in kept))
    return TextChoices([words[slot] for slot in kept], texts)
