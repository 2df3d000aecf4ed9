"""Action ids, their notation strings (NOTATION.md section 2) and legal-list tables.

Every decision of Georgian Joker is one small int, so that the fast path never touches a
string. The ids are laid out so that **ascending id is the documented legal-action order**
(NOTATION 2.4): sorting is never needed, and a legal list is a concatenation of precomputed
per-suit lists.

======  =====================  ==============================================================
id      notation               meaning
======  =====================  ==============================================================
0..35   ``play:AS`` ...        play a normal card (the card id: suits S H D C, ranks A..6)
36..39  ``play:X1:high`` ...   a joker that follows: X1 high, X1 low, X2 high, X2 low (GJ-5.2)
40..55  ``play:X1:high:S``...  a joker lead: ``40 + 8*joker + 4*mode + suit``, i.e. per joker
                               high S H D C, then low S H D C (GJ-5.2)
60..64  ``trump:S`` ...        the forehand's trump choice S H D C NT (GJ-3.5)
100+b   ``bid:b``              a bid of ``b`` tricks; ``bid:0`` is the pass (GJ-4.2)
======  =====================  ==============================================================

Bids are open-ended (``bid:12`` parses to 112 and is then rejected as out of range with a
precise message) because parsing is independent of legality (game.py).
"""

from __future__ import annotations

import re

from ...cards import CODES, JOKER1, PACK36_JOKERS, STRAINS, SUITS, card_id
from ...errors import MalformedAction

HIGH = 0
LOW = 1
MODES = ("high", "low")

FOLLOW_JOKER_BASE = 36  # 36 + 2*joker + mode
LEAD_JOKER_BASE = 40  # 40 + 8*joker + 4*mode + suit
TRUMP_BASE = 60  # 60 + strain (4 = NT)
BID_BASE = 100  # 100 + bid
NO_SUIT = -1

# ---- decoding tables (index: action id < BID_BASE) ----------------------------------------

#: Card played by a play action (normal card id, or 36 / 37 for X1 / X2); -1 for non-plays.
ACTION_CARD: tuple[int, ...]
#: Joker mode of a joker play (HIGH / LOW); -1 for a normal card or a non-play.
ACTION_MODE: tuple[int, ...]
#: Named suit of a joker lead; NO_SUIT otherwise.
ACTION_SUIT: tuple[int, ...]


def _decoding_tables() -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    card = [-1] * BID_BASE
    mode = [-1] * BID_BASE
    suit = [NO_SUIT] * BID_BASE
    for c in range(36):
        card[c] = c
    for j in range(2):
        for m in range(2):
            a = FOLLOW_JOKER_BASE + 2 * j + m
            card[a], mode[a] = JOKER1 + j, m
            for s in range(4):
                a = LEAD_JOKER_BASE + 8 * j + 4 * m + s
                card[a], mode[a], suit[a] = JOKER1 + j, m, s
    return tuple(card), tuple(mode), tuple(suit)


ACTION_CARD, ACTION_MODE, ACTION_SUIT = _decoding_tables()


def follow_joker_id(joker: int, mode: int) -> int:
    """Id of ``play:X<j>:<mode>`` (``joker`` is the card id 36 or 37)."""
    return FOLLOW_JOKER_BASE + 2 * (joker - JOKER1) + mode


def lead_joker_id(joker: int, mode: int, suit: int) -> int:
    """Id of ``play:X<j>:<mode>:<suit>``."""
    return LEAD_JOKER_BASE + 8 * (joker - JOKER1) + 4 * mode + suit


# ---- legal-list tables -------------------------------------------------------------------

#: ``SUIT_IDS[s][bits]``: the card ids of suit ``s`` whose 9-bit pattern (bit r = rank r) is
#: ``bits``, ascending. Lists, so that ``a + b`` builds a fresh legal list.
SUIT_IDS: tuple[tuple[list[int], ...], ...] = tuple(
    tuple([9 * s + r for r in range(9) if bits >> r & 1] for bits in range(512)) for s in range(4)
)
#: Joker actions for a follower holding the jokers ``bits`` (bit 0 = X1, bit 1 = X2).
FOLLOW_JOKER_IDS: tuple[list[int], ...] = tuple(
    [follow_joker_id(JOKER1 + j, m) for j in range(2) if bits >> j & 1 for m in range(2)]
    for bits in range(4)
)
#: Joker actions for a leader holding the jokers ``bits``.
LEAD_JOKER_IDS: tuple[list[int], ...] = tuple(
    [lead_joker_id(JOKER1 + j, m, s) for j in range(2) if bits >> j & 1 for m in range(2) for s in range(4)]
    for bits in range(4)
)
TRUMP_IDS: list[int] = [TRUMP_BASE + t for t in range(5)]
#: ``BID_IDS[n]``: bids 0..n. ``DEALER_BID_IDS[n][f]``: bids 0..n without ``f`` (GJ-4.3).
BID_IDS: tuple[list[int], ...] = tuple([BID_BASE + b for b in range(n + 1)] for n in range(10))
DEALER_BID_IDS: tuple[tuple[list[int], ...], ...] = tuple(
    tuple([BID_BASE + b for b in range(n + 1) if b != f] for f in range(n + 1)) for n in range(10)
)


# ---- notation ----------------------------------------------------------------------------

def action_str(action: int) -> str:
    """Notation string of an action id (NOTATION.md section 2); MalformedAction for an id that
    names no action (bids stop where the notation's do: six digits)."""
    if not isinstance(action, int) or isinstance(action, bool) or action < 0:
        raise MalformedAction(f"not a Georgian Joker action id: {action!r}")
    if action in _NORMAL_IDS:  # not 6S or 6C: the pack leaves them out (GJ-1.1)
        return "play:" + CODES[action]
    if FOLLOW_JOKER_BASE <= action < LEAD_JOKER_BASE + 16:
        text = f"play:{CODES[ACTION_CARD[action]]}:{MODES[ACTION_MODE[action]]}"
        suit = ACTION_SUIT[action]
        return text if suit == NO_SUIT else f"{text}:{SUITS[suit]}"
    if TRUMP_BASE <= action < TRUMP_BASE + 5:
        return "trump:" + STRAINS[action - TRUMP_BASE]
    if BID_BASE <= action <= BID_BASE + 999_999:
        return f"bid:{action - BID_BASE}"
    raise MalformedAction(f"not a Georgian Joker action id: {action!r}")


#: Ids and codes of the 34 normal cards of the pack (GJ-1.1: no 6S, no 6C).
_NORMAL_IDS = frozenset(c for c in PACK36_JOKERS if c < 36)
_NORMAL_CODES = frozenset(CODES[c] for c in _NORMAL_IDS)
_BID_RE = re.compile(r"bid:(0|[1-9][0-9]{0,5})")


def parse_action(text: str) -> int:
    """Action id of a notation string; :class:`MalformedAction` with the reason otherwise.

    Well-formed but illegal actions parse (``bid:12``, ``play:X1:high:S`` when following):
    legality is the state's business. There is no verb for leaving, disconnecting, reconnecting
    or a timeout: those are session events, never actions (GJ-12.5). ``text`` is a string:
    ``State.parse_action``, the way in, refuses anything else first.
    """
    verb, _, rest = text.partition(":")
    if verb == "play":
        parts = rest.split(":")
        code = parts[0]
        if code in ("X1", "X2"):
            joker = card_id(code)
            if len(parts) == 1:
                raise MalformedAction(
                    f"a joker play needs a mode: play:{code}:high or play:{code}:low (GJ-5.2, GJ-5.10)")
            if parts[1] not in MODES:
                raise MalformedAction(f"joker mode must be 'high' or 'low', got {parts[1]!r} (GJ-5.2)")
            mode = MODES.index(parts[1])
            if len(parts) == 2:
                return follow_joker_id(joker, mode)
            if len(parts) == 3 and len(parts[2]) == 1 and parts[2] in SUITS:
                return lead_joker_id(joker, mode, SUITS.index(parts[2]))
            raise MalformedAction(
                f"a joker lead names one suit S, H, D or C: play:{code}:{parts[1]}:S (GJ-5.2); got {text!r}")
        if code in _NORMAL_CODES:
            if len(parts) == 1:
                return card_id(code)
            raise MalformedAction(f"only a joker carries a mode or a named suit (GJ-5.10); got {text!r}")
        if code in ("6S", "6C"):
            raise MalformedAction(f"{code} is not in the Georgian Joker pack (GJ-1.1)")
        raise MalformedAction(f"not a card of this game: {code!r} in {text!r}")
    if verb == "trump":
        if rest in STRAINS:
            return TRUMP_BASE + STRAINS.index(rest)
        raise MalformedAction(f"trump is one of S, H, D, C, NT (GJ-3.5); got {text!r}")
    if verb == "bid":
        if _BID_RE.fullmatch(text):
            return BID_BASE + int(rest)
        raise MalformedAction(f"a bid is bid:<number of tricks>, e.g. bid:2 (GJ-4.2); got {text!r}")
    raise MalformedAction(f"not a Georgian Joker action: {text!r} (verbs: trump, bid, play)")
