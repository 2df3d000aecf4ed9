"""Precomputed tables of Japanese Joker: action ids, their strings, mask-to-id lists, and the
trick-winner table (JJK-6), built once at import so that ``legal_ids`` and ``_apply`` are a
handful of int operations.

Action ids (one small int per action; NOTATION.md section 2):

* ``0 .. 35``  ``play:<card>`` of a normal card (the card id itself, ``cards.py`` layout);
* ``36, 37``   ``play:X1`` / ``play:X2``: a joker that follows (no declaration, JJK-5.5);
* ``38 .. 45`` ``play:X1:S`` ... ``play:X2:C``: a joker that leads, naming a suit (JJK-5.2),
  ``38 + 4 * (joker - 36) + suit``;
* ``46 .. 50`` ``trump:S`` ... ``trump:NT`` (JJK-3.3), ``46 + strain``.

Every legal list is ascending by id, which is the documented order: normal cards by suit
``S H D C`` and rank ``A .. 6``, then the jokers (``X1`` before ``X2``; a leading joker's
named suits in the order ``S H D C``); trump choices ``S H D C NT``.
"""

from __future__ import annotations

from ...cards import CODES, NO_TRUMP, PACK36_JOKERS, STRAINS, SUIT_MASK, SUITS

JOKER_LEAD_BASE = 38
TRUMP_BASE = 46

#: lead key of a trick: the lead card id for a normal card, ``36 + named suit`` for a joker.
NUM_LEAD_KEYS = 40


def _action_strings() -> tuple[str, ...]:
    out = [f"play:{CODES[c]}" for c in range(38)]
    out += [f"play:{CODES[36 + j]}:{SUITS[q]}" for j in range(2) for q in range(4)]
    out += [f"trump:{s}" for s in STRAINS]
    return tuple(out)


ACTION_STR: tuple[str, ...] = _action_strings()
#: notation -> id for the actions of this pack (no ``play:6S`` / ``play:6C``, JJK-1.1).
ACTION_ID: dict[str, int] = {s: i for i, s in enumerate(ACTION_STR)
                             if i >= 36 or i in PACK36_JOKERS}

#: card played by each play action id (< 46).
ACTION_CARD: tuple[int, ...] = tuple(range(38)) + tuple(36 + (a - 38) // 4 for a in range(38, 46))
#: lead key of each play action id when it leads (the card, or 36 + the named suit).
ACTION_LEAD_KEY: tuple[int, ...] = tuple(range(38)) + tuple(36 + (a - 38) % 4 for a in range(38, 46))


def _chunk_table(offset: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(offset + b for b in range(12) if m >> b & 1) for m in range(1 << 12))


#: ids of the cards in a 12-bit chunk of a mask (cards 0-11, 12-23, 24-35).
CHUNK0 = _chunk_table(0)
CHUNK1 = _chunk_table(12)
CHUNK2 = _chunk_table(24)
#: joker ids by ``mask >> 36`` when following (36, 37) and when leading (38 .. 45).
FOLLOW_JOKERS: tuple[tuple[int, ...], ...] = ((), (36,), (37,), (36, 37))
LEAD_JOKERS: tuple[tuple[int, ...], ...] = (
    (), (38, 39, 40, 41), (42, 43, 44, 45), (38, 39, 40, 41, 42, 43, 44, 45))

#: suit mask of each lead key (the led suit of a normal card, the named suit of a joker).
LEAD_SUIT_MASK: tuple[int, ...] = tuple(SUIT_MASK[k // 9] for k in range(36)) + tuple(SUIT_MASK)
#: trump suit mask per strain (0 for no trump).
TRUMP_MASK: tuple[int, ...] = tuple(SUIT_MASK) + (0,)


def follower_wins(trump: int, lead_key: int, card: int) -> bool:
    """JJK-6.1 - 6.3: does the follower's ``card`` beat the lead described by ``lead_key``?"""
    if card >= 36:
        return True  # JJK-6.1: a following joker always takes
    fs = card // 9
    if lead_key >= 36:  # JJK-6.3: joker lead naming q
        q = lead_key - 36
        return trump != NO_TRUMP and q != trump and fs == trump
    ls = lead_key // 9  # JJK-6.2: both normal
    if fs == ls:
        return card < lead_key  # lower id = higher rank in the same suit
    return fs == trump  # JJK-1.4: no suit outranks another except the trump


def _win_table() -> bytes:
    out = bytearray(5 * NUM_LEAD_KEYS * 38)
    for t in range(5):
        for k in range(NUM_LEAD_KEYS):
            for c in range(38):
                out[(t * NUM_LEAD_KEYS + k) * 38 + c] = follower_wins(t, k, c)
    return bytes(out)


#: ``FOLLOWER_WINS[(trump * 40 + lead_key) * 38 + card]``: 1 if the follower takes the trick.
FOLLOWER_WINS: bytes = _win_table()


def deal_scores(taken: tuple[int, int] | list[int]) -> tuple[int, int]:
    """JJK-7.1: the player with more tricks scores the difference, the other 0; 9:9 scores 0:0."""
    a, b = taken
    return (a - b, 0) if a > b else (0, b - a)
