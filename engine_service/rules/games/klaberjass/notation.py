"""Klaberjass action notation (NOTATION.md section 2): action id <-> string.

Vocabulary (every string is well-formed whatever the table options; whether it is legal is a
separate question, answered by ``legal_ids``):

* ``take``, ``pass``, ``name:S`` ``name:H`` ``name:D`` ``name:C`` (KL-3.1);
* ``exchange``, ``keep`` (the dix, KL-4.2, NOTATION 2.1);
* ``play:JS`` for each of the 32 cards (KL-6);
* added by options (NOTATION 2.3): ``schmeiss``, ``accept``, ``refuse`` (``kl_schmeiss``,
  KL-A7), ``declare``, ``conceal`` (``kl_meld_declaration = optional``, KL-A20) and
  ``play:KS:bella`` ... ``play:KC:bella`` (``kl_bella_announcement = required``, KL-A23; only a
  king can carry the announcement, so ``play:AS:bella`` is malformed).
"""

from __future__ import annotations

from ...cards import CODES, SUITS
from ...errors import MalformedAction
from .tables import BELLA, KING, NAME, NUM_ACTIONS, PACK, WORDS


def _build() -> tuple[tuple[str | None, ...], dict[str, int]]:
    strings: list[str | None] = [None] * NUM_ACTIONS
    for c in PACK:
        strings[c] = "play:" + CODES[c]
        if c % 9 == KING:
            strings[BELLA + c] = "play:" + CODES[c] + ":bella"
    for s in range(4):
        strings[NAME + s] = "name:" + SUITS[s]
    for a, w in WORDS.items():
        strings[a] = w
    ids = {s: a for a, s in enumerate(strings) if s is not None}
    return tuple(strings), ids


ACTION_STRINGS, ACTION_IDS = _build()


def action_str(action: int) -> str:
    """The notation string of an action id."""
    try:
        s = ACTION_STRINGS[action]
    except (IndexError, TypeError):
        s = None
    if s is None or (isinstance(action, int) and action < 0):  # -1 would index from the end
        raise MalformedAction(f"not a klaberjass action id: {action!r}")
    return s


def parse_action(text: str) -> int:
    """The action id of a notation string; MalformedAction for any string outside the
    vocabulary (``State.parse_action``, the way in, refuses a non-string first)."""
    try:
        return ACTION_IDS[text]
    except KeyError:
        raise MalformedAction(
            f"not a klaberjass action: {text!r} (expected take, pass, name:<S|H|D|C>, exchange, keep, "
            "play:<card>, play:<king>:bella, schmeiss, accept, refuse, declare or conceal)",
            action=str(text)) from None
