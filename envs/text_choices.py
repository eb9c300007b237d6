"""A text observation that is always one of a known set of texts, each one choice per slot.

    space = TextChoices(slots=(("red", "green", "blue"),),
                        texts={"go to the red door": (0,), "go to the green door": (1,), ...})
    space.size                      # inputs it takes in a flat row: one one-hot per slot (3)
    space.one_hots(text)            # -> indices of the row's 1s, relative to the leaf (e.g. (1,))
    space.text_of((1,))             # -> "go to the green door"

MiniGrid's `mission` is text ("go to the green door"), which no flat row can hold, so it was
dropped, and on envs whose mission names the goal (GoToDoor, Fetch, PutNear, LockedRoom) the
policy could not know which door or object it was sent to. Their MissionSpace lists the words
that fill its template (`ordered_placeholders`), so each mission is a choice per slot, and a
one-hot per slot says it exactly (envs/minigrid_mission.py builds the space; envs/gym_spaces.py
flattens it). A slot with one word carries nothing and is left out.

Tested in: tests/envs/test_minigrid_mission.py
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces


class TextChoices(spaces.Space):
    """Texts, each made of one choice per slot: `texts` maps a text to its choice indices."""

    def __init__(self, slots, texts: dict, seed=None):
        self.slots = tuple(tuple(str(word) for word in slot) for slot in slots)
        self.texts = {str(text): tuple(int(i) for i in choice) for text, choice in texts.items()}
        if not self.slots or any(len(slot) < 2 for slot in self.slots):
            raise ValueError(f"TextChoices needs slots of two or more choices, got {self.slots}")
        for text, choice in self.texts.items():
            if len(choice) != len(self.slots) or not all(
                    0 <= i < len(slot) for i, slot in zip(choice, self.slots, strict=True)):
                raise ValueError(f"TextChoices: {text!r} has choices {choice}, which do not fit "
                                 f"the slots {[len(slot) for slot in self.slots]}")
        self._by_choice = {choice: text for text, choice in self.texts.items()}
        # where each slot's one-hot starts in the leaf's part of a row
        self.starts = tuple(np.cumsum([0, *map(len, self.slots)])[:-1].tolist())
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def size(self) -> int:
        return sum(len(slot) for slot in self.slots)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def one_hots(self, text) -> tuple[int, ...]:
        """Where `text`'s 1s go in the leaf's part of a row; ValueError for a text not listed."""
        choice = self.texts.get(str(text))
        if choice is None:
            raise ValueError(f"text {text!r} is none of the {len(self.texts)} this space lists "
                             f"(e.g. {next(iter(self.texts))!r})")
        return tuple(start + i for start, i in zip(self.starts, choice, strict=True))

    def text_of(self, choice) -> str:
        """The text of one choice per slot (KeyError for a combination no text has)."""
        return self._by_choice[tuple(int(i) for i in choice)]

    def sample(self, mask=None, probability=None) -> str:
        texts = list(self.texts)
        return texts[int(self.np_random.integers(len(texts)))]

    def contains(self, x) -> bool:
        return isinstance(x, str) and x in self.texts

    def __eq__(self, other) -> bool:
        return isinstance(other, TextChoices) and other.slots == self.slots and \
            other.texts == self.texts

    def __hash__(self) -> int:
        return hash((self.slots, tuple(sorted(self.texts.items()))))

    def __repr__(self) -> str:
        sizes = " x ".join(str(len(slot)) for slot in self.slots)
        return f"TextChoices({len(self.texts)} texts, slots {sizes})"
