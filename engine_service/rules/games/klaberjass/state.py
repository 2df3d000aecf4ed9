"""The Klaberjass match state: one whole match, deal after deal (rulebook sections 2-10).

Representation (for speed, ARCHITECTURE.md section 3): hands and won piles are int bitmasks,
actions are small ints (:mod:`.tables`), every per-trump table is chosen once when the trump is
fixed, and the per-deal public action list is a cons list, so ``clone`` copies a few ints and
six two-element lists. Dictionaries exist only at the edges: deal results (one per deal),
views and the meld dialogue (built lazily from a :class:`~.sequences.MeldOutcome`).

Phases of a deal: chance (waiting for a deck) -> auction (KL-3) -> dix window (KL-4.2) ->
[meld declarations, only with ``kl_meld_declaration = optional``] -> melds resolved (KL-5) ->
trick play (KL-6, with the in-play dix exchange) -> deal scoring (KL-9) -> match end test
(KL-10) -> chance again, or the end of the match.
"""

from __future__ import annotations

from typing import Any

from ...cards import CODES
from ...game import CHANCE, TERMINAL, State
from ...options import Options, compiled
from .config import BELLA_ANY, BELLA_KING_FIRST, BELLA_QUEEN_FIRST, Config
from .notation import action_str as _action_str
from .notation import parse_action as _parse_action
from .sequences import MeldOutcome, dialogue, ranked, resolve
from .tables import (ACCEPT, BEATS_AS_TRUMP, BELLA, BIT, CONCEAL, DECLARE, EXCHANGE, IDS, JACK, KEEP, KING,
                     NAME, NAMES_EXCEPT, PACK_MASK, PASS, QUEEN, REFUSE, RUNS, SCHMEISS, SEVEN, STRENGTH,
                     SUIT_MASK_OF, TAKE, ids_of)

# Phases.
P_CHANCE, P_AUCTION, P_WINDOW, P_MELD, P_PLAY, P_OVER = range(6)
PHASE_NAMES = ("dealing", "auction", "dix_window", "meld_declaration", "play", "over")

# Auction states (KL-3.1; the schmeiss states exist only with kl_schmeiss, KL-A7).
R1_ELDER, R1_DEALER, R2_ELDER, R2_DEALER, SCHMEISS_ANSWER_R1, SCHMEISS_ANSWER_R2, SCHMEISS_NAME = range(7)
AUCTION_STATE_NAMES = ("R1_ELDER", "R1_DEALER", "R2_ELDER", "R2_DEALER", "SCHMEISS_ANSWER",
                       "SCHMEISS_ANSWER", "SCHMEISS_NAME")

_R1 = (TAKE, PASS)
_R1_SCHMEISS = (TAKE, PASS, SCHMEISS)
_ANSWER = (ACCEPT, REFUSE)
_WINDOW_HOLDER = [EXCHANGE, KEEP]
_MELD_STEP = (DECLARE, CONCEAL)
_I0, _I1, _I2, _I3 = IDS


class KlaberjassState(State):
    """A Klaberjass match (see the module docstring). Seats are match seats (NOTATION 1)."""

    __slots__ = (
        "game", "options", "first_dealer", "_cfg", "_history",
        # match
        "_dealer", "_totals", "_results", "_details", "_winners", "_prev_trick",
        # deal
        "_phase", "_to_act", "_deck", "_elder", "_hands", "_turn", "_turn0", "_info", "_astate",
        "_sch", "_trump", "_maker", "_tmask", "_vals", "_str", "_dix", "_xok", "_xseat", "_xtrick",
        "_decl", "_meld", "_lead", "_leader", "_ntricks", "_pts", "_won", "_bella", "_qk", "_kqj",
        "_acts",
    )

    def __init__(self, game, options: Options, first_dealer: int) -> None:
        self.game = game
        self.options = options
        self.first_dealer = first_dealer
        self._cfg = compiled(options, Config)  # one per option set, shared by its matches
        self._history = None
        self._dealer = first_dealer
        self._totals = [0, 0]
        self._results: list[dict[str, Any]] = []
        self._details: list[dict[str, Any]] = []
        self._winners: list[int] = []
        # The final trick of the last deal that ended, as its two (seat << 8 | play id) entries
        # (None before the first deal ends and after a thrown-in deal): what ``last_trick``
        # shows until the current deal's first trick is complete. Immutable, shared by clones.
        self._prev_trick: tuple[int, int] | None = None
        self._phase = P_CHANCE
        self._to_act = CHANCE
        self._reset_deal()

    def _reset_deal(self) -> None:
        self._deck: tuple[int, ...] = ()
        self._elder = 1 - self._dealer  # KL-2.6: the dealer is the younger hand, the other the elder
        self._hands = [0, 0]
        self._turn = self._turn0 = self._info = -1
        self._astate = R1_ELDER
        self._sch = -1
        self._trump = self._maker = -1
        self._tmask = 0
        self._vals = self._str = None
        self._dix = -1
        self._xok = False
        self._xseat = self._xtrick = -1
        self._decl = [True, True]
        self._meld: MeldOutcome | None = None
        self._lead = -1
        self._leader = self._elder
        self._ntricks = 0
        self._pts = [0, 0]
        self._won = [0, 0]
        self._bella = [0, 0]
        self._qk = [0, 0]
        self._kqj = [0, 0]
        self._acts = None

    # ---- fast path -------------------------------------------------------------------------

    def to_act(self) -> int:
        return self._to_act

    def dealer(self) -> int:
        return self._dealer

    def clone(self) -> "KlaberjassState":
        n = object.__new__(KlaberjassState)
        n.game = self.game
        n.options = self.options
        n.first_dealer = self.first_dealer
        n._cfg = self._cfg
        n._history = self._history
        n._dealer = self._dealer
        n._totals = self._totals[:]
        n._results = self._results[:]
        n._details = self._details[:]
        n._winners = self._winners[:]
        n._prev_trick = self._prev_trick
        n._phase = self._phase
        n._to_act = self._to_act
        n._deck = self._deck
        n._elder = self._elder
        n._hands = self._hands[:]
        n._turn = self._turn
        n._turn0 = self._turn0
        n._info = self._info
        n._astate = self._astate
        n._sch = self._sch
        n._trump = self._trump
        n._maker = self._maker
        n._tmask = self._tmask
        n._vals = self._vals
        n._str = self._str
        n._dix = self._dix
        n._xok = self._xok
        n._xseat = self._xseat
        n._xtrick = self._xtrick
        n._decl = self._decl[:]
        n._meld = self._meld
        n._lead = self._lead
        n._leader = self._leader
        n._ntricks = self._ntricks
        n._pts = self._pts[:]
        n._won = self._won[:]
        n._bella = self._bella[:]
        n._qk = self._qk[:]
        n._kqj = self._kqj[:]
        n._acts = self._acts
        return n

    def _deal(self, deck: tuple[int, ...]) -> None:
        """KL-2.3-2.6: the first deal from ``deck[0]`` (top card), then the turn-up ``D[12]``."""
        self._reset_deal()
        cfg = self._cfg
        d = self._dealer
        first = self._elder if cfg.elder_served_first else d
        b = BIT
        if cfg.packet == 3:  # KL-2.4: D[0..2] first, D[3..5] second, D[6..8] first, D[9..11] second
            hf = b[deck[0]] | b[deck[1]] | b[deck[2]] | b[deck[6]] | b[deck[7]] | b[deck[8]]
            hs = b[deck[3]] | b[deck[4]] | b[deck[5]] | b[deck[9]] | b[deck[10]] | b[deck[11]]
        else:  # kl_first_deal_packet = 2
            hf = b[deck[0]] | b[deck[1]] | b[deck[4]] | b[deck[5]] | b[deck[8]] | b[deck[9]]
            hs = b[deck[2]] | b[deck[3]] | b[deck[6]] | b[deck[7]] | b[deck[10]] | b[deck[11]]
        hands = self._hands
        hands[first] = hf
        hands[1 - first] = hs
        self._deck = deck
        self._turn = self._turn0 = deck[12]  # KL-2.5
        self._phase = P_AUCTION
        self._to_act = self._elder

    def legal_ids(self) -> list[int]:
        ph = self._phase
        p = self._to_act
        if ph == P_PLAY:
            h = self._hands[p]
            lead = self._lead
            if lead < 0:  # KL-6.2: the leader may lead any card
                m = h
            else:
                same = h & SUIT_MASK_OF[lead]
                if same:  # KL-6.3, KL-6.4, KL-6.7
                    if same & self._tmask and self._cfg.must_overtrump:
                        m = same & BEATS_AS_TRUMP[lead] or same
                    else:
                        m = same
                else:  # KL-6.5, KL-6.6
                    m = h & self._tmask or h
            out = list(_I0[m & 0x1FF] + _I1[m >> 9 & 0x1FF] + _I2[m >> 18 & 0x1FF] + _I3[m >> 27 & 0x1FF])
            if self._cfg.bella_announce:
                self._add_bella_plays(out, p, m)
            if self._xok and h & BIT[self._dix] and self._cfg.dix_in_play:  # KL-4.2 during play
                out.append(EXCHANGE)
            return out
        if ph == P_AUCTION:  # KL-3.1; KL-3.4: no no-trump, overcall, double, nullo or slam call
            st = self._astate
            sch = self._cfg.schmeiss
            if st <= R1_DEALER:
                return list(_R1_SCHMEISS if sch else _R1)
            if st <= R2_DEALER:
                out = list(NAMES_EXCEPT[self._turn0 // 9])
                out.append(PASS)
                if sch:
                    out.append(SCHMEISS)
                return out
            if st == SCHMEISS_NAME:
                return list(NAMES_EXCEPT[self._turn0 // 9])
            return list(_ANSWER)
        if ph == P_WINDOW:
            if self._xok and self._hands[p] & BIT[self._dix]:
                return _WINDOW_HOLDER[:]
            return [KEEP]
        if ph == P_MELD:
            return list(_MELD_STEP)
        return []

    # ---- rollout helpers (fast path, pure: for search bots' playouts) -----------------------

    def last_to_trick(self) -> bool:
        """Whether the seat to act plays the last card of the trick in progress: the follower
        (two cards to a trick, KL-6.2)."""
        return self._phase == P_PLAY and self._lead >= 0

    def winning_ids(self, ids: list[int]) -> list[int]:
        """The ids of ``ids`` (the follower's ``legal_ids()``) whose card takes the trick in
        progress: a higher card of the led suit, or a trump on a plain lead (KL-6.8). Non-play
        ids (the in-play exchange) never win."""
        lead = self._lead
        ls = lead // 9
        trump = self._trump
        st = self._str
        need = st[lead]
        out = []
        for a in ids:
            c = a - BELLA if a >= BELLA else a
            if c >= 36:
                continue
            cs = c // 9
            if (st[c] > need) if cs == ls else cs == trump:
                out.append(a)
        return out

    def trick_rank(self, a: int) -> int:
        """How dear the card of play id ``a`` is to give up in the current deal (larger =
        dearer): card points (KL-8.1) first, then trumps above plain cards, then trick strength
        (KL-1.2, KL-1.3); the bella announcement ranks just below the same card without it, so
        a rollout choosing the cheapest card announces. Non-play ids rank above every card."""
        c = a - BELLA if a >= BELLA else a
        if c >= 36:
            return 1 << 16
        r = (self._vals[c] << 5 | (16 if c // 9 == self._trump else 0) | self._str[c]) << 1
        return r if a >= BELLA else r | 1

    def _add_bella_plays(self, out: list[int], p: int, legal_mask: int) -> None:
        """``kl_bella_announcement = required``: ``play:KX:bella`` right after ``play:KX`` when
        the trump king is playable and the marriage can still be completed by this player
        (queen_first: he played the queen; king_first: he holds it; any: either)."""
        king = self._trump * 9 + KING
        if not legal_mask >> king & 1:
            return
        queen_bit = BIT[self._trump * 9 + QUEEN]
        order = self._cfg.bella_order
        played = self._qk[p] & 1
        held = self._hands[p] & queen_bit
        if (order == BELLA_QUEEN_FIRST and played) or (order == BELLA_KING_FIRST and held) or \
                (order == BELLA_ANY and (played or held)):
            out.insert(out.index(king) + 1, BELLA + king)

    def _why_illegal(self, a: int, text: str) -> str:
        """Why an action is refused, from the table's options, the public table and the actor's
        own hand only. A call the table's house rules leave out names its option: a frontend (or
        a player) read "is not a legal action now", as if it could become legal later. A card
        play or an exchange says which rule forbids it (KL-4, KL-6.3 - KL-6.5). Other refusals
        list the legal actions (State)."""
        cfg = self._cfg
        h = self._hands[self._to_act]
        if a in (SCHMEISS, ACCEPT, REFUSE) and not cfg.schmeiss:
            return f"{text}: this table plays without schmeiss (option kl_schmeiss, KL-A7)"
        if a in (DECLARE, CONCEAL) and not cfg.optional_melds:
            return (f"{text}: melds are stated automatically at this table (option "
                    f"kl_meld_declaration, KL-5.8, KL-A20)")
        if BELLA <= a < TAKE and not cfg.bella_announce:
            return (f"{text}: bella is credited without an announcement at this table (option "
                    f"kl_bella_announcement, KL-7.1, KL-A23)")
        if a == EXCHANGE and self._phase in (P_WINDOW, P_PLAY):
            if self._trump >= 0 and cfg.dix_needs_turnup_trump and self._turn0 // 9 != self._trump:
                return (f"{text}: at this table the dix is exchanged only when the turn-up suit "
                        f"became trump (option kl_dix_requires_turnup_trump, KL-4.1, KL-A8)")
            if self._phase == P_PLAY and not cfg.dix_in_play:
                return (f"{text}: at this table the dix is exchanged only in the window before the "
                        f"melds (option kl_dix_window, KL-4.2, KL-A9)")
            if self._xseat >= 0:
                return f"{text}: the dix has already been exchanged in this deal (KL-4.2)"
            return f"{text}: you hold no exchangeable dix, the seven of trumps (KL-4.1, KL-4.4)"
        if self._phase == P_PLAY and (a < 36 or BELLA <= a < BELLA + 36):
            c = a - BELLA if a >= BELLA else a
            lead = self._lead
            if not h & BIT[c]:
                return f"{text}: {CODES[c]} is not in your hand"
            if lead >= 0:
                suit = "SHDC"[lead // 9]
                same = h & SUIT_MASK_OF[lead]
                if same and not same & BIT[c]:
                    return f"{text}: you must follow suit {suit} (KL-6.3)"
                # a ``:bella`` king refused while its card may be played breaks no card rule
                if same and (a < BELLA or c not in self.legal_ids()):
                    return f"{text}: you must beat the trump {CODES[lead]} with a higher trump (KL-6.4)"
                if not same and h & self._tmask and not self._tmask & BIT[c]:
                    return f"{text}: you have no {suit} and must play a trump {'SHDC'[self._trump]} (KL-6.5)"
        return super()._why_illegal(a, text)

    def public_action(self, a: int) -> int:
        """KL-A20: a ``declare`` that states nothing a ``conceal`` would not state (the elder
        without a sequence; a dealer whose answer, and so the whole dialogue, comes out the
        same) is recorded as ``conceal``: the public record must not tell the opponent that
        the player has no sequence, or none good enough (docs/games/klaberjass.md: "the
        choice itself reveals nothing")."""
        if self._phase != P_MELD or a != DECLARE:
            return a
        p = self._to_act
        cfg = self._cfg
        if p == self._elder:
            return DECLARE if ranked(self._hands[p], self._trump, cfg.split_runs, cfg.length_compare) else CONCEAL
        outcomes = []
        for flag in (True, False):
            decl = [self._decl[0], self._decl[1]]
            decl[p] = flag
            o = resolve(self._hands, self._elder, self._trump, (decl[0], decl[1]),
                        cfg.split_runs, cfg.length_compare, cfg.best_plus_one)
            outcomes.append((dialogue(o, True), o.points, o.revealed_mask))
        return CONCEAL if outcomes[0] == outcomes[1] else DECLARE

    def _apply(self, a: int) -> None:
        p = self._to_act
        if self._phase == P_MELD:
            a = self.public_action(a)
        self._acts = (self._acts, p << 8 | a)
        ph = self._phase
        if ph == P_PLAY:
            if a == EXCHANGE:
                self._exchange(p)
                return
            self._play(p, a)
        elif ph == P_AUCTION:
            self._auction(p, a)
        elif ph == P_WINDOW:
            if a == EXCHANGE:
                self._exchange(p)
            if p == self._elder:
                self._to_act = 1 - p
            else:
                self._after_window()
        elif ph == P_MELD:
            self._decl[p] = a == DECLARE
            if p == self._elder:
                self._to_act = 1 - p
            else:
                self._resolve_melds()
        else:  # pragma: no cover - the API path refuses actions at CHANCE / TERMINAL
            raise AssertionError("no action is due")

    # ---- trick play (KL-6 - KL-8) --------------------------------------------------------------

    def _play(self, p: int, a: int) -> None:
        announced = a >= BELLA
        c = a - BELLA if announced else a
        hands = self._hands
        h = hands[p]
        trump = self._trump
        if self._ntricks == 0 and self._cfg.kqj_bonus:
            self._check_kqj(p, h)
        hands[p] = h ^ BIT[c]
        if c // 9 == trump and (c % 9 == KING or c % 9 == QUEEN):
            self._bella_step(p, c, announced)
        lead = self._lead
        if lead < 0:
            self._lead = c
            self._leader = p
            self._to_act = 1 - p
            return
        leader = self._leader
        cs = c // 9
        if cs == lead // 9:  # KL-6.8
            win = p if self._str[c] > self._str[lead] else leader
        elif cs == trump:
            win = p
        else:
            win = leader
        vals = self._vals
        v = vals[lead] + vals[c]  # KL-8.2
        n = self._ntricks + 1
        self._ntricks = n
        self._pts[win] += v + 10 if n == 9 else v  # KL-7.3: last trick
        self._won[win] |= BIT[lead] | BIT[c]
        self._lead = -1
        self._leader = win
        if n == 9:
            node = self._acts[0]  # the follower's entry is on top; the lead is the play before
            while node[1] & 0xFF >= TAKE:  # an in-play exchange between the two cards
                node = node[0]
            self._prev_trick = (node[1], self._acts[1])
            self._score_deal()
        else:
            self._to_act = win  # KL-6.2

    def _bella_step(self, p: int, c: int, announced: bool) -> None:
        """KL-7.1 bella (``kl_bella_order``, ``kl_bella_announcement``): credited when the pair
        is completed in the required order by the same player. Bits: 1 queen played, 2 king
        played, 4 king played with the announcement."""
        qk = self._qk[p]
        is_king = c % 9 == KING
        order = self._cfg.bella_order
        if is_king:
            done = qk & 1 and order != BELLA_KING_FIRST
            self._qk[p] = qk | (6 if announced else 2)
        else:
            done = qk & 2 and order != BELLA_QUEEN_FIRST
            self._qk[p] = qk | 1
        if done and (not self._cfg.bella_announce or self._qk[p] & 4):
            self._bella[p] += 20

    def _check_kqj(self, p: int, h: int) -> None:
        """KL-7.2: the hand held when ``p`` plays his first card (after any exchange made then
        or earlier) holding trump K, Q, J scores 20 (run of 3) or 50 (run of 4+), unless those
        cards were scored as a trump sequence in the meld phase."""
        trump = self._trump
        need = BIT[trump * 9 + KING] | BIT[trump * 9 + QUEEN] | BIT[trump * 9 + JACK]
        if h & need != need:
            return
        meld = self._meld
        if meld is not None and meld.scored_mask[p] & need == need:
            return
        for top, n in RUNS[h >> (9 * trump) & 0x1FF]:
            if top <= KING < top + n:
                self._kqj[p] = 20 if n == 3 else 50
                return

    def _exchange(self, p: int) -> None:
        """KL-4.1, KL-4.3: the dix goes face up in the turn-up's place; the turn-up to the hand."""
        dix = self._dix
        self._hands[p] ^= BIT[dix] | BIT[self._turn]
        self._turn = dix
        self._xok = False
        self._xseat = p
        self._xtrick = self._ntricks if self._phase == P_PLAY else -1

    # ---- auction (KL-3) --------------------------------------------------------------------

    def _auction(self, p: int, a: int) -> None:
        st = self._astate
        if a == PASS:
            if st == R2_DEALER:
                self._throw_in()  # KL-3.5
                return
            self._astate = st + 1
            self._to_act = 1 - p
        elif a == TAKE:
            self._end_auction(p, self._turn0 // 9)
        elif a == SCHMEISS:  # KL-A7
            self._sch = p
            self._astate = SCHMEISS_ANSWER_R1 if st <= R1_DEALER else SCHMEISS_ANSWER_R2
            self._to_act = 1 - p
        elif a == ACCEPT:
            self._throw_in()
        elif a == REFUSE:
            if st == SCHMEISS_ANSWER_R1:
                self._end_auction(self._sch, self._turn0 // 9)
            else:
                self._astate = SCHMEISS_NAME
                self._to_act = self._sch
        else:  # name:X
            self._end_auction(p, a - NAME)

    def _end_auction(self, maker: int, trump: int) -> None:
        """KL-3.2, then the second deal (KL-2.8; KL-2.7: only now that trump is fixed) and the
        information card (KL-2.9); KL-3.7: the dix window follows, then the melds, then play."""
        cfg = self._cfg
        self._maker = maker
        self._trump = trump
        self._tmask = 0x1FF << (9 * trump)
        self._vals = cfg.values[trump]
        self._str = STRENGTH[trump]
        deck = self._deck
        b = BIT
        first = self._elder if cfg.elder_served_first else self._dealer
        self._hands[first] |= b[deck[13]] | b[deck[15]] | b[deck[17]]
        self._hands[1 - first] |= b[deck[14]] | b[deck[16]] | b[deck[18]]
        self._info = deck[31]
        dix = trump * 9 + SEVEN
        self._dix = dix
        # KL-4.1, KL-4.4, KL-A8: exchangeable unless the turn-up is the dix itself.
        self._xok = dix != self._turn0 and (not cfg.dix_needs_turnup_trump or self._turn0 // 9 == trump)
        self._phase = P_WINDOW
        self._to_act = self._elder

    def _after_window(self) -> None:
        if self._cfg.optional_melds:
            self._phase = P_MELD
            self._to_act = self._elder
        else:
            self._resolve_melds()

    def _resolve_melds(self) -> None:
        """KL-4.5, KL-5: melds judged on the hands after the window; their points are credited
        at once (KL-5.7: ``table.meld_points`` from here on, and in the deal total of
        ``_score_deal``); then trick play (KL-6.1, KL-3.7)."""
        cfg = self._cfg
        self._meld = resolve(self._hands, self._elder, self._trump, (self._decl[0], self._decl[1]),
                             cfg.split_runs, cfg.length_compare, cfg.best_plus_one)
        self._phase = P_PLAY
        self._leader = self._elder
        self._to_act = self._elder

    # ---- scoring (KL-9, KL-10) -------------------------------------------------------------

    def _throw_in(self) -> None:
        """KL-3.5: the deal is void, with no second deal (KL-2.7); KL-2.2 /
        ``kl_throw_in_redealer``: who deals again."""
        self._results.append({"thrown_in": True})
        self._details.append({"thrown_in": True})
        self._prev_trick = None  # no trick in this deal: last_trick shows none
        if not self._cfg.throw_in_same:
            self._dealer = 1 - self._dealer
        self._phase = P_CHANCE
        self._to_act = CHANCE

    def _score_deal(self) -> None:
        cfg = self._cfg
        m = self._maker
        o = 1 - m
        meld = self._meld.points  # resolved before the first trick (KL-3.7), so never None here
        pts = self._pts
        bonus = [self._bella[0] + self._kqj[0], self._bella[1] + self._kqj[1]]
        own = [meld[0] + bonus[0], meld[1] + bonus[1]]  # melds (KL-5.7) and bonuses (KL-9.1)
        total = [own[0] + pts[0], own[1] + pts[1]]
        scored = [0, 0]
        if total[m] > total[o]:  # KL-9.2; under trick_points too (KL-A17: own points, own melds)
            outcome = "maker_more"
            scored = total[:]
        elif total[m] == total[o]:  # KL-9.3
            outcome = "equal"
            if cfg.trick_scope:
                scored[m] = own[m]
                scored[o] = total[o]
            else:
                scored[o] = total[o]
        else:  # KL-9.4
            outcome = "opponent_more"
            if cfg.trick_scope:
                scored[m] = own[m]
                scored[o] = own[o] + pts[0] + pts[1]
            else:
                scored[o] = total[0] + total[1]
        totals = self._totals
        totals[0] += scored[0]
        totals[1] += scored[1]
        self._results.append({
            "thrown_in": False, "trump": "SHDC"[self._trump], "maker": m, "melds": list(meld),
            "card_points": pts[:], "bonuses": bonus, "scored": scored,
        })
        won = self._won
        self._details.append({
            "thrown_in": False, "dealer": self._dealer, "tricks": [won[0].bit_count() // 2, won[1].bit_count() // 2],
            "last_trick": [10 if self._leader == 0 else 0, 10 if self._leader == 1 else 0],
            "bella": self._bella[:], "trump_kqj": self._kqj[:], "deal_totals": total, "outcome": outcome,
        })
        self._check_end(scored)
        if self._winners:  # KL-10.3: a match is one game; it is over once that game is won
            self._phase = P_OVER
            self._to_act = TERMINAL
        else:
            if cfg.alternate:  # KL-2.2
                self._dealer = 1 - self._dealer
            self._phase = P_CHANCE
            self._to_act = CHANCE

    def _check_end(self, scored: list[int]) -> None:
        """KL-10.1-10.2 (``kl_target_score``, ``kl_simultaneous_target``)."""
        t = self._cfg.target
        a, b = self._totals
        if a >= t and b >= t:
            if self._cfg.deal_winner_breaks_tie:
                a, b = scored
            if a != b:
                self._winners = [0 if a > b else 1]
        elif a >= t:
            self._winners = [0]
        elif b >= t:
            self._winners = [1]

    # ---- API edge --------------------------------------------------------------------------

    def action_str(self, action: int) -> str:
        return _action_str(action)

    def _parse_notation(self, text: str) -> int:
        return _parse_action(text)

    def deal_results(self) -> list[dict[str, Any]]:
        """NOTATION section 4 results of the deals completed so far (shared dicts: read only)."""
        return self._results[:]

    def deal_details(self) -> list[dict[str, Any]]:
        """Per completed deal: trick counts, last-trick points, bella, trump K-Q-J bonus, deal
        totals (KL-9.1) and outcome (KL-9.2-9.4) - the breakdown behind ``deal_results``."""
        return self._details[:]

    def result(self) -> dict[str, Any]:
        return {"totals": self._totals[:], "winners": self._winners[:], "over": self._phase == P_OVER}

    @property
    def deal_number(self) -> int:
        """0-based index of the current deal (of the next one while waiting for a deck)."""
        return len(self._results)

    def deal_actions(self) -> list[tuple[int, int]]:
        """(seat, action id) of every action of the current deal, in order (all public)."""
        out = []
        node = self._acts
        while node is not None:
            node, item = node
            out.append((item >> 8, item & 0xFF))
        out.reverse()
        return out

    def public_known(self) -> int:
        """Cards whose place every spectator knows: the face-up turn-up / dix, the information
        card, played cards and the cards the public record identifies in a hand."""
        if self._phase in (P_CHANCE, P_OVER):
            return 0
        known = BIT[self._turn] | self._won[0] | self._won[1]
        if self._info >= 0:
            known |= BIT[self._info]
        if self._lead >= 0:
            known |= BIT[self._lead]
        return known | self.revealed(0) | self.revealed(1)

    def revealed(self, seat: int) -> int:
        """Cards of ``seat``'s hand that the public record identifies: the turn-up he took by
        exchanging (KL-4.3), the cards the meld dialogue names or implies (KL-5.5) and the trump
        queen behind a ``play:KX:bella`` (KL-A23: the announcement is legal only to a player who
        can still complete the marriage, so before he plays the queen it shows that he holds
        it, as a "jo" does in Jo-Jotte)."""
        if self._phase in (P_CHANCE, P_OVER):
            return 0
        m = 0
        if self._meld is not None:
            m = self._meld.revealed_mask[seat]
        if self._xseat == seat:
            m |= BIT[self._turn0]
        if self._qk[seat] & 4:  # the king was played with the bella announcement
            m |= BIT[self._trump * 9 + QUEEN]
        return m & self._hands[seat]

    def secret_cards(self, seat: int | None) -> int:
        known = self.public_known()
        if seat is not None and self._phase not in (P_CHANCE, P_OVER):
            known |= self._hands[seat]
        return PACK_MASK & ~known

    def zones(self) -> dict[str, int]:
        if self._phase in (P_CHANCE, P_OVER):
            return {}
        h0, h1 = self._hands
        w0, w1 = self._won
        turn = BIT[self._turn]
        info = BIT[self._info] if self._info >= 0 else 0
        trick = BIT[self._lead] if self._lead >= 0 else 0
        stock = PACK_MASK & ~(h0 | h1 | w0 | w1 | turn | info | trick)
        return {"hand0": h0, "hand1": h1, "stock": stock, "turn_up": turn, "info_card": info,
                "won0": w0, "won1": w1, "trick": trick}

    def view(self, seat: int) -> dict[str, Any]:
        from .views import build_view
        if seat not in (0, 1):
            raise ValueError(f"klaberjass has seats 0 and 1, not {seat!r}")
        return build_view(self, seat)

    def public_view(self) -> dict[str, Any]:
        from .views import build_view
        return build_view(self, None)

    def view_maker(self):
        from .views import view_maker
        return view_maker(self)

    def hand_of(self, seat: int) -> list[str]:
        """Card codes of a hand in card order (omniscient; for tests and the admin view)."""
        return [CODES[c] for c in ids_of(self._hands[seat])]
