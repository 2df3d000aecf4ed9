"""Helpers on views shared by the games' determinizers."""

from __future__ import annotations

from typing import Any


def view_agrees(sample: Any, given: Any) -> bool:
    """True when ``sample`` (a view the engine just produced) says everything ``given`` says.

    Dicts agree when every key of ``given`` agrees in ``sample``; lists and tuples element by
    element with equal lengths; anything else by equality. A view rebuilt from the wire (a
    remote bot's) may lack derived fields such as a trick's points: what it does not say does
    not constrain the sample, what it says must hold exactly.
    """
    if isinstance(given, dict):
        if not isinstance(sample, dict):
            return False
        for key, value in given.items():
            if key not in sample or not view_agrees(sample[key], value):
                return False
        return True
    if isinstance(given, (list, tuple)):
        if not isinstance(sample, (list, tuple)) or len(sample) != len(given):
            return False
        return all(view_agrees(s, g) for s, g in zip(sample, given))
    return sample == given
