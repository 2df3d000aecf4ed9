"""The pure rules of Georgian Joker: schedule, legal cards, trick values, scoring, pulka.

These functions and tables *are* the rules: the match state (:mod:`.state`) calls them on its
fast path, the views rebuild tricks with them, and the vector tests check them directly (a
trick case of the vector files names hands of different sizes, which no real deal can hold).
The one exception is :func:`follow_mask`: the state computes a follower's legal cards inline
on its own bit fields, and a test checks it gives the same cards at every follower decision.
Cards are ids and sets of cards are bitmasks (:mod:`engine_service.rules.cards`).
"""

from __future__ import annotations

from typing import Sequence

from ...cards import JOKER_MASK, NO_TRUMP, SUIT_MASK

# ---- schedule (GJ-2.4, GJ-2.5) -------------------------------------------------------------

#: Cards per player of each deal, and the 1-based pulka of each deal, per ``deal_schedule``.
SCHEDULES: dict[str, tuple[int, ...]] = {
    "standard": (1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 8, 7, 6, 5, 4, 3, 2, 1, 9, 9, 9, 9),
    "nines": (9,) * 16,
}
PULKAS: dict[str, tuple[int, ...]] = {
    "standard": (1,) * 8 + (2,) * 4 + (3,) * 8 + (4,) * 4,
    "nines": tuple(k // 4 + 1 for k in range(16)),
}


def pulka_ends(schedule: str) -> tuple[bool, ...]:
    """Per deal: is it the last deal of its pulka (GJ-8: settle right after it)."""
    p = PULKAS[schedule]
    return tuple(k == len(p) - 1 or p[k + 1] != p[k] for k in range(len(p)))


# ---- bidding (GJ-4.3) ----------------------------------------------------------------------

def forbidden_bid(n: int, first_three: Sequence[int]) -> int | None:
    """The dealer's forbidden bid: ``n - s`` when the first three bids sum to ``s <= n``."""
    s = sum(first_three)
    return n - s if s <= n else None


# ---- legal cards (GJ-5.3 .. GJ-5.5) ----------------------------------------------------------

#: Suit masks indexed by strain; NT (4) has no cards, so "holds a trump" is simply false.
STRAIN_MASK = SUIT_MASK + (0,)

NORMAL_LEAD = 0  # a normal card led: demand = its suit
HIGH_JOKER_LEAD = 1  # "maghali": holders of the named suit give their highest card of it
LOW_JOKER_LEAD = 2  # "tsaighos": holders of the named suit give any card of it


def follow_mask(hand: int, demand: int, lead_kind: int, trump: int) -> int:
    """Legal cards (mask) of a follower holding ``hand`` (GJ-5.3 .. GJ-5.5, GJ-5.8).

    Jokers are always legal; else the demand suit (only its highest card after a ``high``
    joker lead: the lowest id is the highest rank), else any trump, else anything. A joker has
    no suit (GJ-1.3): it is in no ``SUIT_MASK``, so it never counts as a card of the demand
    suit or a trump. The answer depends on the lead (``demand``, ``lead_kind``) and ``trump``
    only, never on the cards played since (GJ-5.6), and asks for any card of the suit or any
    trump: never to win, to beat a card, to play a joker or a mode (GJ-5.7).
    """
    jokers = hand & JOKER_MASK
    own = hand & SUIT_MASK[demand]
    if own:
        if lead_kind == HIGH_JOKER_LEAD:
            return (own & -own) | jokers
        return own | jokers
    trumps = hand & STRAIN_MASK[trump]
    if trumps:
        return trumps | jokers
    return hand


# ---- trick values (GJ-6) ---------------------------------------------------------------------
#
# A trick is resolved incrementally: every play gets a value and the strictly greatest value
# so far holds the trick. Values: a discard 0; a card of the demand suit 100 + strength; a
# trump 200 + strength (strength 8 = ace .. 0 = six, GJ-1.2); a ``low`` joker never changes
# the holder (GJ-6.2); a ``high`` joker that follows is 300 + its position, so the last one
# wins (GJ-6.1). A leading ``high`` joker is 300, or 150 under option
# ``high_joker_lead_trumpable`` when it names a non-trump suit in a trump deal (GJ-6.6): then a
# trump (200+) beats it, the named suit (100+) does not, a later high joker (301+) still does.
# A leading ``low`` joker is 0: the leader keeps the trick unless a card of the named suit, a
# trump or a high joker is played (GJ-6.4). Both jokers get the same values (GJ-1.4: X1 and X2
# behave identically), and a normal card's value depends only on whether its suit is the trump,
# the demand suit or neither, never on which suit it is (GJ-1.5: suits have no order).

#: ``CARD_VALUE[trump * 4 + demand][card]`` for the 36 normal card ids.
CARD_VALUE: tuple[tuple[int, ...], ...] = tuple(
    tuple(200 + 8 - c % 9 if c // 9 == trump else 100 + 8 - c % 9 if c // 9 == demand else 0
          for c in range(36))
    for trump in range(5) for demand in range(4)
)
HIGH_JOKER_VALUE = 300


def joker_lead_value(mode: int, named: int, trump: int, trumpable: bool) -> int:
    """Value of a leading joker (see the table above); ``mode`` 0 = high, 1 = low."""
    if mode:
        return 0
    if trumpable and trump != NO_TRUMP and named != trump:
        return 150
    return HIGH_JOKER_VALUE


def trick_winner(plays: Sequence[tuple[int, int, int, int]], trump: int, trumpable: bool = False) -> int:
    """Seat winning a complete or partial trick of ``(seat, card, mode, named_suit)`` plays,
    the lead first (``mode``/``named_suit`` -1 where they do not apply) (GJ-6.1 .. GJ-6.6)."""
    seat, card, mode, named = plays[0]
    if card >= 36:
        demand, best = named, joker_lead_value(mode, named, trump, trumpable)
    else:
        demand = card // 9
        best = CARD_VALUE[trump * 4 + demand][card]
    values = CARD_VALUE[trump * 4 + demand]
    winner = seat
    for i in range(1, len(plays)):
        seat, card, mode, _ = plays[i]
        if card >= 36:
            v = HIGH_JOKER_VALUE + i if mode == 0 else -1
        else:
            v = values[card]
        if v > best:
            winner, best = seat, v
    return winner


# ---- scoring a deal (GJ-7) ------------------------------------------------------------------

KHISHTI_PENALTIES = ("200", "500", "100_per_card")


def khishti_penalty(option: str, n: int) -> int:
    """The khishti penalty as a positive number (GJ-7.4, GJ-A6)."""
    if option == "200":
        return 200
    if option == "500":
        return 500
    if option == "100_per_card":
        return 100 * n
    raise ValueError(f"unknown khishti_penalty {option!r}")


def deal_score(bid: int, taken: int, n: int, khishti: str = "200") -> int:
    """Score of one player for one deal: the first matching line of GJ-7.1 .. GJ-7.5."""
    if taken == bid:
        if bid == n:
            return 100 * n
        if bid == 0:
            return 50
        return 50 * (bid + 1)
    if taken == 0:
        return -khishti_penalty(khishti, n)
    return 10 * taken


# ---- end of a pulka (GJ-8) -------------------------------------------------------------------

MOSHLA_MODES = ("all_others", "single_premium_only", "off")


def settle_pulka(scores: Sequence[Sequence[int]], made: Sequence[Sequence[bool]], premium_on: bool = True,
                 moshla: str = "all_others") -> tuple[list[int], list[int], list[int]]:
    """Premium and moshla of one pulka from its deals' scores and made flags (per deal, per
    seat; made = tricks equal to the bid, GJ-7.6, whatever the score). Returns ``(qualifiers,
    premium, moshla)`` with per-seat premium (>= 0) and moshla (<= 0) entries (GJ-8.1 ..
    GJ-8.6, GJ-A1 .. GJ-A5); with no qualifier both are all zeros (GJ-8.5)."""
    seats = range(len(scores[0]))
    zeros = [0 for _ in seats]
    if not premium_on:
        return [], zeros, list(zeros)
    qualifiers = [p for p in seats if all(deal[p] for deal in made)]
    best = [max(deal[p] for deal in scores) for p in seats]
    premium = [best[p] if p in qualifiers else 0 for p in seats]
    if moshla == "all_others":
        applies = len(qualifiers) >= 1
    elif moshla == "single_premium_only":
        applies = len(qualifiers) == 1
    elif moshla == "off":
        applies = False
    else:
        raise ValueError(f"unknown moshla {moshla!r}")
    cancel = [-max(0, best[p]) if applies and p not in qualifiers else 0 for p in seats]
    return qualifiers, premium, cancel


def final_winners(totals: Sequence[int]) -> list[int]:
    """Every seat sharing the highest total (GJ-9.3: no tie-break)."""
    top = max(totals)
    return [p for p, t in enumerate(totals) if t == top]


def standing(totals: Sequence[int]) -> list[int]:
    """Place of each seat, 1-based, equal totals sharing a place (1, 1, 3, 4) (GJ-9.3)."""
    return [1 + sum(1 for u in totals if u > t) for t in totals]
