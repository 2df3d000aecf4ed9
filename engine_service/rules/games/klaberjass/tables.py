"""Precomputed Klaberjass tables: card orders, card values, runs, action ids.

Everything the hot path (``legal_ids`` / ``_apply``) needs is a tuple indexed by a card id or
a 9-bit suit pattern, built once at import, so that legal-move generation and trick resolution
are a handful of lookups and bit operations (ARCHITECTURE.md section 3, "speed matters").

Card ids follow :mod:`engine_service.rules.cards`: ``suit * 9 + rank`` with the natural rank
order ``A K Q J T 9 8 7`` (rank ids 0..7; the six, rank 8, is not in the 32-card pack, KL-1.1).
"""

from __future__ import annotations

from ...cards import PACK32, PACK32_MASK, RANKS, SUIT_MASK, SUITS, order_table
from ...melds import RUNS  # noqa: F401  (re-exported: KL-5.2 maximal runs)

# ---- ranks ---------------------------------------------------------------------------------

ACE, KING, QUEEN, JACK, TEN, NINE, EIGHT, SEVEN = range(8)

#: KL-1.2: trump trick order J 9 A T K Q 8 7 (strength per natural rank, larger wins).
TRUMP_ORDER = order_table("J9ATKQ87")
#: KL-1.3: plain-suit trick order A T K Q J 9 8 7.
PLAIN_ORDER = order_table("ATKQJ987")

PACK = PACK32
PACK_MASK = PACK32_MASK
BIT = tuple(1 << i for i in range(40))

#: Suit mask of the suit of each card id (card -> 9-bit mask of its suit).
SUIT_MASK_OF = tuple(SUIT_MASK[c // 9] if c < 36 else 0 for c in range(40))

#: For a card taken as a trump, the mask of the cards of its suit that beat it (KL-1.2, KL-6.4).
BEATS_AS_TRUMP = tuple(
    sum(1 << (c - c % 9 + r) for r in range(8) if TRUMP_ORDER[r] > TRUMP_ORDER[c % 9]) if c < 36 else 0
    for c in range(40)
)

#: Per trump suit: the trick strength of each card id (KL-6.8; the leader's and follower's
#: cards are compared only when they share a suit, so plain and trump scales never mix).
STRENGTH = tuple(
    tuple((TRUMP_ORDER if c // 9 == t else PLAIN_ORDER)[c % 9] if c < 36 else 0 for c in range(40))
    for t in range(4)
)


def card_values(ten_value: int) -> tuple[tuple[int, ...], ...]:
    """Per trump suit: the card points of each card id (KL-8.1; ``kl_ten_value``, KL-A16). With
    the default ten the pack holds 152 card points under every trump, 162 with the last trick
    (KL-8.3)."""
    plain = {ACE: 11, KING: 4, QUEEN: 3, JACK: 2, TEN: ten_value, NINE: 0, EIGHT: 0, SEVEN: 0}
    trump = {**plain, JACK: 20, NINE: 14}
    return tuple(
        tuple((trump if c // 9 == t else plain).get(c % 9, 0) if c < 36 else 0 for c in range(40))
        for t in range(4)
    )


VALUES = {10: card_values(10), 0: card_values(0)}

#: KL-1.5 draw orders (``kl_draw_order``): strength per natural rank, larger = higher card.
DRAW_ORDER = {"plain": PLAIN_ORDER, "natural": order_table("AKQJT987")}

# ---- cards-of-a-mask -----------------------------------------------------------------------

#: ``IDS[s][bits]``: the card ids of suit ``s`` present in a 9-bit pattern, ascending id
#: (natural rank order). ``legal_ids`` concatenates four of these.
IDS = tuple(
    tuple(tuple(s * 9 + r for r in range(9) if bits >> r & 1) for bits in range(512)) for s in range(4)
)


def ids_of(mask: int) -> tuple[int, ...]:
    """Card ids of a mask, ascending (suit order S H D C, then A K Q J T 9 8 7)."""
    return IDS[0][mask & 0x1FF] + IDS[1][mask >> 9 & 0x1FF] + IDS[2][mask >> 18 & 0x1FF] + IDS[3][mask >> 27 & 0x1FF]


# ---- sequences (KL-5) ----------------------------------------------------------------------

def piece_points(length: int) -> int:
    """KL-5.3: a sequence of 3 cards is worth 20, of 4 or more 50."""
    return 20 if length == 3 else 50


def _best_split(top: int, length: int) -> tuple[tuple[int, int], ...]:
    """``kl_split_runs`` (KL-A10): cut a run into at most two pieces of >= 3 cards, choosing the
    cut that maximises the points; among equal points the longest top piece (so the best
    sequence stays as high as possible)."""
    options = [((top, length),)]
    for first in range(3, length - 2):
        options.append(((top, first), (top + first, length - first)))
    return max(options, key=lambda pieces: (sum(piece_points(n) for _, n in pieces), pieces[0][1]))


RUNS_SPLIT = tuple(tuple(p for t, n in RUNS[bits] for p in _best_split(t, n)) for bits in range(512))

# ---- action ids ----------------------------------------------------------------------------
# 0..35: play the card with that id; 36..71: play card (id - 36) announcing bella
# (``kl_bella_announcement = required``); then the calls.

BELLA = 36
TAKE = 72
PASS = 73
NAME = 74  # NAME + suit
EXCHANGE = 78
KEEP = 79
SCHMEISS = 80
ACCEPT = 81
REFUSE = 82
DECLARE = 83
CONCEAL = 84
NUM_ACTIONS = 85

WORDS = {TAKE: "take", PASS: "pass", EXCHANGE: "exchange", KEEP: "keep", SCHMEISS: "schmeiss",
         ACCEPT: "accept", REFUSE: "refuse", DECLARE: "declare", CONCEAL: "conceal"}

#: Round-2 calls per turn-up suit: ``name`` for every other suit in the order S H D C (KL-3.3).
NAMES_EXCEPT = tuple(tuple(NAME + s for s in range(4) if s != t) for t in range(4))

SUIT_CODES = SUITS
RANK_CODES = RANKS
