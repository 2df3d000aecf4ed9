"""Jo-Jotte action ids and their NOTATION.md strings.

Actions are small ints in the fast path; strings exist only at the API edge.

=========  ====================================  ================================
ids        notation                              rule
=========  ====================================  ================================
0..35      ``play:AS`` (card id)                  JJ-6
36..71     ``play:KS:jo`` (36 + trump king id)    JJ-7.2
72..107    ``play:QS:jotte`` (72 + queen id)      JJ-7.2
108        ``accept``                            JJ-3.1
109        ``pass`` (auction, nullo window, slam answer)
110..113   ``name:S`` .. ``name:C``               JJ-3.1
114        ``no_trump``                          JJ-3.1, JJ-3.2
115, 116   ``double``, ``redouble``              JJ-3.3
117..120   ``exchange:7S`` .. ``exchange:7C``     JJ-4.2
121        ``no_exchange``                       JJ-4.2
122        ``nullo``                             JJ-4.3
123..127   ``slam:S`` .. ``slam:C``, ``slam:NT``  JJ-4.4
128, 129   ``declare``, ``conceal``              JJ-A21 (``jj_meld_declaration = optional``)
=========  ====================================  ================================

Only strings that some Jo-Jotte state could offer are well-formed: a card of the 32-card pack,
``jo`` on a king, ``jotte`` on a queen, ``exchange`` of a seven.
"""

from __future__ import annotations

from ...cards import CODES, PACK32, STRAINS, SUITS
from ...errors import MalformedAction

JO = 36
JOTTE = 72
ACCEPT = 108
PASS = 109
NAME = 110  # + suit
NO_TRUMP = 114
DOUBLE = 115
REDOUBLE = 116
EXCHANGE = 117  # + suit of the seven
NO_EXCHANGE = 121
NULLO = 122
SLAM = 123  # + strain (4 = NT)
DECLARE = 128
CONCEAL = 129
NUM_ACTIONS = 130


def _strings() -> tuple[str | None, ...]:
    names: list[str | None] = [None] * NUM_ACTIONS
    for c in PACK32:
        names[c] = "play:" + CODES[c]
        if CODES[c][0] == "K":
            names[JO + c] = f"play:{CODES[c]}:jo"
        if CODES[c][0] == "Q":
            names[JOTTE + c] = f"play:{CODES[c]}:jotte"
    names[ACCEPT] = "accept"
    names[PASS] = "pass"
    for s in range(4):
        names[NAME + s] = "name:" + SUITS[s]
        names[EXCHANGE + s] = "exchange:7" + SUITS[s]
    names[NO_TRUMP] = "no_trump"
    names[DOUBLE] = "double"
    names[REDOUBLE] = "redouble"
    names[NO_EXCHANGE] = "no_exchange"
    names[NULLO] = "nullo"
    for st in range(5):
        names[SLAM + st] = "slam:" + STRAINS[st]
    names[DECLARE] = "declare"
    names[CONCEAL] = "conceal"
    return tuple(names)


ACTION_STRINGS = _strings()
ACTION_IDS = {s: i for i, s in enumerate(ACTION_STRINGS) if s is not None}


def action_str(action: int) -> str:
    try:
        s = ACTION_STRINGS[action]
    except (IndexError, TypeError):
        s = None
    if s is None or (isinstance(action, int) and action < 0):
        raise MalformedAction(f"not a Jo-Jotte action id: {action!r}")
    return s


def parse_action(text: str) -> int:
    """The id of a Jo-Jotte action string; MalformedAction for any other string (legality is
    not checked here; ``State.parse_action``, the way in, refuses a non-string first)."""
    try:
        return ACTION_IDS[text]
    except KeyError:
        raise MalformedAction(f"not a Jo-Jotte action: {text!r}") from None


def card_of_play(action: int) -> int:
    """The card of a ``play`` action id (with or without announcement)."""
    if action < JO:
        return action
    if action < JOTTE:
        return action - JO
    return action - JOTTE
