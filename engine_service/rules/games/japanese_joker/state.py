"""The Japanese Joker match state: one object from the first deal to the end of the match.

Representation (ARCHITECTURE.md section 3, "speed matters"): hands, up cards and down cards are
int bitmasks per seat; actions are the small ints of :mod:`.tables`; a trick is a lead key, a
lead card and a leader. ``legal_ids`` and ``_apply`` touch no strings, dicts or views: the
notation and the views are built at the API edge (:mod:`.views`). ``clone`` copies a few ints
and eight two-element lists; everything else it shares is immutable for the whole deal.

Phases: ``DEALING`` (a chance step: the next deck is due), ``TRUMP`` (JJK-3.3: the declarer
chooses after three cards), ``PLAY`` (18 tricks), ``OVER`` (JJK-8.2).
"""

from __future__ import annotations

from typing import Any

from ...cards import CODES, JOKER_MASK, STRAINS, SUITS, card_id, strain_index
from ...errors import MalformedAction
from ...game import CHANCE, TERMINAL, State
from .tables import (ACTION_CARD, ACTION_ID, ACTION_LEAD_KEY, ACTION_STR, CHUNK0, CHUNK1, CHUNK2,
                     FOLLOW_JOKERS, FOLLOWER_WINS, JOKER_LEAD_BASE, LEAD_JOKERS, LEAD_SUIT_MASK,
                     NUM_LEAD_KEYS, TRUMP_BASE, TRUMP_MASK, deal_scores)

DEALING, TRUMP, PLAY, OVER = 0, 1, 2, 3
PHASE_NAMES = ("dealing", "trump_choice", "playing", "over")
TRICKS_PER_DEAL = 18  # JJK-3.5
JM = JOKER_MASK
_TRUMP_IDS = [46, 47, 48, 49, 50]
_NO_DOWN: tuple[int, ...] = (-1,) * 38


class JapaneseJokerState(State):
    """A whole match of Japanese Joker (JJK-2 .. JJK-8)."""

    __slots__ = (
        "game", "options", "first_dealer", "_history", "_target",
        "_phase", "_to_act", "_declarer", "_totals", "_results", "_winners",
        "_deck", "_trump", "_tbase", "_tmask", "_first3", "_columns", "_down_of",
        "_hand", "_up", "_down", "_open", "_cleared", "_taken", "_won", "_out",
        "_lead", "_lead_card", "_leader", "_ntricks", "_last", "_log", "_origin",
    )

    def __init__(self, game, options, first_dealer: int) -> None:
        """Made only by :meth:`JapaneseJokerGame.new_state`, which refuses a ``first_dealer``
        other than seat 0 or 1 (JJK-2.2) and validates ``options``."""
        self.game = game
        self.options = options
        self.first_dealer = first_dealer
        self._history = None
        self._target = options["target_score"]
        self._phase = DEALING
        self._to_act = CHANCE
        self._declarer = first_dealer  # JJK-2.2: drawn outside, passed in
        self._totals = [0, 0]
        self._results: tuple[dict[str, Any], ...] = ()
        self._winners: tuple[int, ...] = ()
        # The last complete trick of the match (leader, lead card, lead key, follower's card,
        # winner): of this deal once its first trick is complete, until then (and between
        # deals) the final trick of the previous deal; None before the first trick. A new deal
        # keeps it (``last_trick``). Immutable, shared by clones.
        self._last: tuple[int, int, int, int, int] | None = None
        self._reset_deal()

    def _reset_deal(self) -> None:
        self._deck: tuple[int, ...] | None = None
        self._trump = -1
        self._tbase = 0
        self._tmask = 0
        self._first3 = (0, 0)
        self._columns: tuple[tuple[tuple[int, int], ...], ...] = ((), ())
        self._down_of = _NO_DOWN
        self._hand = [0, 0]
        self._up = [0, 0]
        self._down = [0, 0]
        self._open = [0, 0]  # 0 before a seat's first card of the deal, -1 after (JJK-5.1)
        self._cleared = [0, 0]  # the up card moved to the hand by JJK-4.3 (public)
        self._taken = [0, 0]
        self._won = [0, 0]
        self._out = 0  # cards outside the deal (positions only; 0 in a dealt deal)
        self._lead = -1  # lead key: lead card, or 36 + named suit of a leading joker
        self._lead_card = -1
        self._leader = -1
        self._ntricks = 0
        self._log: tuple | None = None  # cons list of this deal's action ids
        self._origin = (self._declarer, -1)  # who moves first in the log, and the lead key then

    # ---- fast path -------------------------------------------------------------------------

    def to_act(self) -> int:
        return self._to_act

    def legal_ids(self) -> list[int]:
        """JJK-5.1 - 5.4 (and JJK-3.3 during the trump choice); ascending ids (tables.py)."""
        if self._phase != PLAY:
            return _TRUMP_IDS[:] if self._phase == TRUMP else []
        p = self._to_act
        a = self._hand[p] | (self._up[p] & self._open[p])  # available cards A(p), JJK-5.1
        lead = self._lead
        if lead < 0:  # JJK-5.2: any available card; a leading joker names a suit
            return [*CHUNK0[a & 4095], *CHUNK1[a >> 12 & 4095], *CHUNK2[a >> 24 & 4095],
                    *LEAD_JOKERS[a >> 36]]
        s = a & LEAD_SUIT_MASK[lead]
        if s:
            if lead >= 36:  # JJK-5.4 step 2: the single highest card of the named suit
                s &= -s
            s |= a & JM
        else:
            s = a & self._tmask  # step 3: any trump (empty in NT deals)
            s = s | (a & JM) if s else a  # step 4: anything
        return [*CHUNK0[s & 4095], *CHUNK1[s >> 12 & 4095], *CHUNK2[s >> 24 & 4095],
                *FOLLOW_JOKERS[s >> 36]]

    # ---- rollout helpers (fast path, pure: for search bots' playouts) -----------------------

    def last_to_trick(self) -> bool:
        """Whether the seat to act plays the last card of the trick in progress: the follower
        (two cards to a trick, JJK-6)."""
        return self._phase == PLAY and self._lead >= 0

    def winning_ids(self, ids: list[int]) -> list[int]:
        """The ids of ``ids`` (the follower's ``legal_ids()``) that take the trick in progress:
        a joker always (JJK-6.1), a normal card by JJK-6.2 / JJK-6.3."""
        base = self._tbase + self._lead * 38
        wins = FOLLOWER_WINS
        return [a for a in ids if wins[base + a]]

    def trick_rank(self, a: int) -> int:
        """How dear the follower's play id ``a`` is to give up (larger = dearer): plain cards
        by rank (JJK-1.2), then trumps by rank, then a joker, which always takes (JJK-6.1)."""
        if a >= 36:
            return 1000
        return (10 if self._tmask >> a & 1 else 1) * 16 + 8 - a % 9

    def _apply(self, action: int) -> None:
        if action >= TRUMP_BASE:
            self._choose_trump(action - TRUMP_BASE)
            return
        p = self._to_act
        c = ACTION_CARD[action]
        bit = 1 << c
        hands = self._hand
        h = hands[p]
        if h & bit:
            hands[p] = h ^ bit
        else:  # an up card (JJK-4.1); its column goes (JJK-4.2) or the table clears (JJK-4.3)
            up = self._up[p] ^ bit
            d = 1 << self._down_of[c]
            if up & (up - 1):
                self._up[p] = up
                self._down[p] ^= d
                hands[p] = h | d
            elif up:
                hands[p] = h | d | up | (1 << self._down_of[up.bit_length() - 1])
                self._up[p] = 0
                self._down[p] = 0
                self._cleared[p] = up
            else:  # a lone column exists only in explicit positions (JJK-4.4)
                hands[p] = h | d
                self._up[p] = 0
                self._down[p] = 0
        self._open[p] = -1
        self._log = (self._log, action)
        lead = self._lead
        if lead < 0:
            self._lead = ACTION_LEAD_KEY[action]
            self._lead_card = c
            self._leader = p
            self._to_act = 1 - p
            return
        w = p if FOLLOWER_WINS[self._tbase + lead * 38 + c] else 1 - p  # JJK-6
        self._taken[w] += 1
        self._won[w] |= bit | (1 << self._lead_card)
        self._last = (1 - p, self._lead_card, lead, c, w)
        self._lead = -1
        self._ntricks += 1
        if self._ntricks == TRICKS_PER_DEAL:
            self._end_deal()
        else:
            self._to_act = w  # JJK-6.4

    def _choose_trump(self, strain: int) -> None:
        """JJK-3.3 - 3.5: fix the trump, then deal phase B (hands, down cards, up cards)."""
        self._trump = strain
        self._tbase = strain * NUM_LEAD_KEYS * 38
        self._tmask = TRUMP_MASK[strain]
        self._log = (self._log, TRUMP_BASE + strain)
        deck = self._deck
        d = self._declarer
        o = 1 - d
        hands = self._hand
        for k in range(6, 16):
            hands[d if k % 2 == 0 else o] |= 1 << deck[k]
        cols: list[list[tuple[int, int]]] = [[], []]
        for i in range(5):
            cols[d].append((deck[16 + 2 * i], deck[26 + 2 * i]))
            cols[o].append((deck[17 + 2 * i], deck[27 + 2 * i]))
        self._set_columns((tuple(cols[0]), tuple(cols[1])))
        self._phase = PLAY
        self._to_act = d  # JJK-2.5

    def _set_columns(self, columns: tuple[tuple[tuple[int, int], ...], ...]) -> None:
        down_of = [-1] * 38
        for seat in (0, 1):
            up = down = 0
            for dn, u in columns[seat]:
                down_of[u] = dn
                up |= 1 << u
                down |= 1 << dn
            self._up[seat] = up
            self._down[seat] = down
        self._columns = columns
        self._down_of = tuple(down_of)

    def _end_deal(self) -> None:
        """JJK-7.1 score the deal; JJK-7.2 the points reach the match totals at once; JJK-8.2
        check the target; JJK-8.3 / JJK-2.3 otherwise the other player declares the next deal."""
        taken = (self._taken[0], self._taken[1])
        scores = deal_scores(taken)
        totals = self._totals
        totals[0] += scores[0]
        totals[1] += scores[1]
        self._results = self._results + (
            {"trump": STRAINS[self._trump], "taken": list(taken), "scores": list(scores)},)
        self._declarer = 1 - self._declarer
        reached = [s for s in (0, 1) if totals[s] >= self._target]
        if reached:
            self._winners = tuple(reached)
            self._phase = OVER
            self._to_act = TERMINAL
        else:
            self._phase = DEALING
            self._to_act = CHANCE

    def _deal(self, deck: tuple[int, ...]) -> None:
        """JJK-3.2: phase A, ``deck[k]`` to the declarer for even k, to the opponent for odd k.
        ``deck`` is the fresh permutation the session drew for this deal (JJK-3.1). There is no
        bidding (JJK-2.4): the declarer's trump choice is the deal's first decision."""
        self._reset_deal()
        self._deck = deck
        d = self._declarer
        self._hand[d] = (1 << deck[0]) | (1 << deck[2]) | (1 << deck[4])
        self._hand[1 - d] = (1 << deck[1]) | (1 << deck[3]) | (1 << deck[5])
        first3 = [0, 0]
        first3[d], first3[1 - d] = self._hand[d], self._hand[1 - d]
        self._first3 = (first3[0], first3[1])
        self._phase = TRUMP
        self._to_act = d

    def clone(self) -> "JapaneseJokerState":
        c = object.__new__(JapaneseJokerState)
        c.game = self.game
        c.options = self.options
        c.first_dealer = self.first_dealer
        c._target = self._target
        c._phase = self._phase
        c._to_act = self._to_act
        c._declarer = self._declarer
        c._totals = self._totals[:]
        c._results = self._results
        c._winners = self._winners
        c._deck = self._deck
        c._trump = self._trump
        c._tbase = self._tbase
        c._tmask = self._tmask
        c._first3 = self._first3
        c._columns = self._columns
        c._down_of = self._down_of
        c._hand = self._hand[:]
        c._up = self._up[:]
        c._down = self._down[:]
        c._open = self._open[:]
        c._cleared = self._cleared[:]
        c._taken = self._taken[:]
        c._won = self._won[:]
        c._out = self._out
        c._lead = self._lead
        c._lead_card = self._lead_card
        c._leader = self._leader
        c._ntricks = self._ntricks
        c._last = self._last
        c._log = self._log
        c._origin = self._origin
        c._history = self._history
        return c

    # ---- notation --------------------------------------------------------------------------

    def action_str(self, action: int) -> str:
        # ids 8 and 35 (play:6S, play:6C) name no action: the jokers replace those cards (JJK-1.1)
        if (not isinstance(action, int) or isinstance(action, bool) or not 0 <= action < len(ACTION_STR)
                or ACTION_STR[action] not in ACTION_ID):
            raise MalformedAction(f"not a Japanese Joker action id: {action!r}")
        return ACTION_STR[action]

    def _parse_notation(self, text: str) -> int:
        """``trump:S|H|D|C|NT``, ``play:<card>``, ``play:X1|X2:<suit>`` (NOTATION section 2)."""
        a = ACTION_ID.get(text)
        if a is not None:
            return a
        parts = text.split(":")
        verb = parts[0]
        if verb == "trump":
            if len(parts) == 2:
                strain_index(parts[1])  # raises with the offending value
            raise MalformedAction(f"{text!r}: the trump choice is trump:S, trump:H, trump:D, "
                                  "trump:C or trump:NT")
        if verb == "play":
            if len(parts) < 2 or len(parts) > 3:
                raise MalformedAction(f"{text!r}: a play is play:<card> or, for a leading joker, "
                                      "play:<joker>:<suit>")
            card = card_id(parts[1])  # MalformedAction for a non-card
            if card not in self.game.pack_set:
                raise MalformedAction(f"{text!r}: {parts[1]} is not in the Japanese Joker pack "
                                      "(6S and 6C are replaced by the jokers, JJK-1.1)")
            if len(parts) == 3:
                if card < 36:
                    raise MalformedAction(f"{text!r}: only a leading joker names a suit (JJK-5.2)")
                raise MalformedAction(f"{text!r}: a joker names one of the suits S, H, D, C")
        raise MalformedAction(f"{text!r} is not a Japanese Joker action (trump:<strain>, "
                              "play:<card>, play:<joker>:<suit>)")

    def _why_illegal(self, a: int, text: str) -> str:
        """The reason a parsed action is illegal, computed only from the actor's knowledge."""
        if self._phase == TRUMP:
            return (f"{text}: the declarer must first choose the trump: trump:S, trump:H, "
                    "trump:D, trump:C or trump:NT (JJK-3.3)")
        if a >= TRUMP_BASE:
            return f"{text}: the trump of this deal is already chosen (JJK-3.3)"
        p = self._to_act
        c = ACTION_CARD[a]
        code = CODES[c]
        bit = 1 << c
        if not (self._hand[p] | self._up[p]) & bit:
            return (f"{text}: {code} is neither in your hand nor a face-up card of your columns "
                    "(JJK-5.1)")
        if not self._hand[p] & bit and not self._open[p]:
            return (f"{text}: your first card of the deal must come from your hand; your "
                    "face-up column cards are playable after it (JJK-5.1)")
        if self._lead < 0 and a < JOKER_LEAD_BASE and c >= 36:
            return (f"{text}: a leading joker names a suit: play:{code}:S, play:{code}:H, "
                    f"play:{code}:D or play:{code}:C (JJK-5.2)")
        if self._lead >= 0 and a >= JOKER_LEAD_BASE:
            return f"{text}: a joker that follows names no suit: play:{code} (JJK-5.5)"
        avail = self._hand[p] | (self._up[p] & self._open[p])
        lead = self._lead
        asked = lead // 9 if lead < 36 else lead - 36
        suit = SUITS[asked]
        rule = "JJK-5.3" if lead < 36 else "JJK-5.4"
        has = avail & LEAD_SUIT_MASK[lead]
        if has:
            if lead >= 36:
                top = CODES[(has & -has).bit_length() - 1]
                return (f"{text}: the joker asks for {suit}: you must play your highest {suit}, "
                        f"{top}, or a joker ({rule})")
            return f"{text}: you must follow suit {suit} or play a joker ({rule})"
        return (f"{text}: you have no {suit}: you must play a trump ({STRAINS[self._trump]}) "
                f"or a joker ({rule})")

    # ---- results ---------------------------------------------------------------------------

    def dealer(self) -> int:
        """The declarer of the current deal, or of the next one between deals (JJK-2.3)."""
        return self._declarer

    def deal_results(self) -> list[dict[str, Any]]:
        """NOTATION section 4: ``trump``, ``taken``, ``scores`` per completed deal (read-only)."""
        return list(self._results)

    def result(self) -> dict[str, Any]:
        return {"totals": list(self._totals), "winners": list(self._winners),
                "over": self._phase == OVER}

    # ---- information -----------------------------------------------------------------------

    def known_in_hand(self, seat: int) -> int:
        """Cards publicly known to be in ``seat``'s hand: its up card moved by JJK-4.3 (JJK-9.2)."""
        return self._cleared[seat] & self._hand[seat]

    def secret_cards(self, seat: int | None) -> int:
        """JJK-9.3, 9.4, 9.7: down cards (even to their owner), the other hand except cards
        moved there publicly, and during the trump choice every card but the seat's own three."""
        if self._phase == TRUMP:
            pack = self.game.pack_mask
            return pack if seat is None else pack & ~self._hand[seat]
        if self._phase != PLAY:
            return 0
        secret = self._down[0] | self._down[1]
        for s in (0, 1):
            if s != seat:
                secret |= self._hand[s] & ~self._cleared[s]
        return secret

    def zones(self) -> dict[str, int]:
        if self._phase == TRUMP:
            h0, h1 = self._hand
            return {"hand0": h0, "hand1": h1, "stock": self.game.pack_mask & ~(h0 | h1)}
        if self._phase != PLAY:
            return {}
        z = {"hand0": self._hand[0], "hand1": self._hand[1], "up0": self._up[0],
             "up1": self._up[1], "down0": self._down[0], "down1": self._down[1],
             "trick": (1 << self._lead_card) if self._lead >= 0 else 0,
             "won0": self._won[0], "won1": self._won[1]}
        if self._out:
            z["out"] = self._out
        return z

    def view(self, seat: int) -> dict[str, Any]:
        if seat not in (0, 1):
            raise ValueError(f"seat must be 0 or 1, got {seat!r}")
        from .views import build_view
        return build_view(self, seat)

    def public_view(self) -> dict[str, Any]:
        from .views import build_view
        return build_view(self, None)

    def view_maker(self):
        from .views import view_maker
        return view_maker(self)

    def deal_log(self) -> list[int]:
        """The action ids of the current (or just finished) deal, in order."""
        out = []
        node = self._log
        while node is not None:
            node, a = node
            out.append(a)
        out.reverse()
        return out
