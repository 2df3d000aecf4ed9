"""The Jo-Jotte match state: one state machine for the whole match (jojotte.md sections 2-10).

Fast path first: hands are bitmasks, actions ints (:mod:`.actions`), every per-card question a
tuple lookup (:mod:`.tables`), the options compiled once (:class:`.options.Config`). The phases,
in the order a deal goes through them:

``R1_ND, R1_D, R2_ND, R2_D`` (auction rounds, JJ-3.1) -> ``RESP`` / ``REDBL`` (overcall, double,
redouble) -> [``LATE_DBL``: ``jj_double_timing = end_of_auction``] -> second deal and
information card (JJ-4.1) -> [``EXCH_DEF``, ``EXCH_DECL``: the seven-exchange window, JJ-4.2]
-> ``NULLO`` (JJ-4.3) -> [``SLAM``: the answer to nullo, JJ-4.4] -> [``MELD``: four
declare/conceal steps with ``jj_meld_declaration = optional``; otherwise melds are settled
automatically, JJ-5] -> ``PLAY`` (nine tricks, JJ-6) -> scoring (JJ-9, JJ-10) -> ``CHANCE``
(the next deck) or the end of the match.

Views, the public action log and determinization live in :mod:`.views` and
:mod:`.determinize`; they read this state, never the reverse.
"""

from __future__ import annotations

from typing import Any

from ...cards import CODES, PACK32_MASK
from ...game import CHANCE, TERMINAL, State
from . import actions as A
from . import melds as M
from . import scoring as S
from . import tables as T
from .options import SEVEN_ANY, SEVEN_NONE, config_for
from .scoring import NORMAL, NULLO, SLAM
from .tables import NT

(PH_R1_ND, PH_R1_D, PH_R2_ND, PH_R2_D, PH_RESP, PH_REDBL, PH_LATE_DBL, PH_EXCH_DEF, PH_EXCH_DECL,
 PH_NULLO, PH_SLAM, PH_MELD, PH_PLAY, PH_CHANCE, PH_OVER) = range(15)

PHASE_NAMES = ("auction", "auction", "auction", "auction", "auction", "auction", "auction",
               "exchange", "exchange", "nullo", "slam", "melds", "play", "deal", "over")
AUCTION_STATES = ("R1_ND", "R1_D", "R2_ND", "R2_D", "RESP", "REDBL", "LATE_DBL")

_S0, _S1, _S2, _S3 = T.SUIT_LISTS
_SUIT_MASK_OF = T.SUIT_MASK_OF

# Constant legal lists (copied on return so that callers may keep or mutate them).
_R1_FULL = tuple(tuple([A.ACCEPT] + [A.NAME + s for s in range(4) if s != t] + [A.PASS]) for t in range(4))
_R1_SHORT = (A.ACCEPT, A.PASS)
_R2_ALL = tuple([A.NAME + s for s in range(4)] + [A.NO_TRUMP, A.PASS])
_R2_NO_TURN = tuple(tuple([A.NAME + s for s in range(4) if s != t] + [A.NO_TRUMP, A.PASS]) for t in range(4))
_RESP_SUIT = (A.NO_TRUMP, A.DOUBLE, A.PASS)
_RESP_NO_OVERCALL = (A.DOUBLE, A.PASS)
_RESP_LATE_SUIT = (A.NO_TRUMP, A.PASS)
_ONLY_PASS = (A.PASS,)
_REDBL = (A.REDOUBLE, A.PASS)
_LATE_DBL = (A.DOUBLE, A.PASS)
_NULLO = (A.NULLO, A.PASS)
_MELD = (A.DECLARE, A.CONCEAL)


class JojotteState(State):
    """A Jo-Jotte match in progress (seats 0 and 1 for the whole match, NOTATION section 1)."""

    __slots__ = (
        # match
        "game", "options", "cfg", "first_dealer", "_history", "_dealer", "_results", "_below",
        "_above", "_games", "_gpts", "_rgames", "_rseq", "_rsum", "_rubbers", "_rtotals", "_pot",
        "_winners", "_last_detail", "_prev_trick",
        # deal
        "_deck", "_phase", "_to_act", "_h", "_turn", "_turn0", "_info", "_bidder", "_strain",
        "_mult", "_accepted", "_decl", "_kind", "_pstrain", "_window", "_exch_seat", "_exch_offer",
        "_exchange", "_late_exch", "_settle", "_meld_pts", "_declared", "_meld_step", "_jo",
        "_jj", "_jo_mask", "_kq_auto", "_leader", "_lead", "_trick_no", "_tricks", "_tp",
        "_best", "_won", "_head", "_wins", "_vals", "_tv", "_trumps", "_log", "_alen", "_qhands",
    )

    def __init__(self, game: Any, options: Any, first_dealer: int) -> None:
        self.game = game
        self.options = options
        self.cfg = config_for(options)
        self.first_dealer = first_dealer
        self._history = None
        self._dealer = first_dealer
        self._results: tuple[dict[str, Any], ...] = ()
        self._below = (0, 0)
        self._above = (0, 0)
        self._games = (0, 0)
        self._gpts = (0, 0)  # points counting towards the current game (JJ-10.1)
        self._rgames = (0, 0)  # games won in the current rubber
        self._rseq: tuple[int, ...] = ()  # winners of the games of the current rubber, in order
        self._rsum = (0, 0)  # every entry of the current rubber (JJ-10.4)
        self._rubbers = (0, 0)
        self._rtotals: tuple[tuple[int, int], ...] = ()
        self._pot = 0
        self._winners: tuple[int, ...] | None = None
        self._last_detail: dict[str, Any] | None = None
        # The final trick of the last deal that ended, as its two (seat << 8 | play id) log
        # entries (None before the first deal ends and after a thrown-in deal): what
        # ``last_trick`` shows until the current deal's first trick is complete. Immutable,
        # shared by clones.
        self._prev_trick: tuple[int, int] | None = None
        self._phase = PH_CHANCE
        self._to_act = CHANCE
        self._reset_deal((), 0, 0)

    def _reset_deal(self, deck: tuple[int, ...], h0: int, h1: int) -> None:
        self._deck = deck
        self._h = [h0, h1]
        self._turn = self._turn0 = deck[12] if deck else -1
        self._info = -1
        self._bidder = -1
        self._strain = -1
        self._mult = 1
        self._accepted = False
        self._decl = -1
        self._kind = NORMAL
        self._pstrain = -1
        self._window = False
        self._exch_seat = -1
        self._exch_offer = 0
        self._exchange: tuple[int, int, int] | None = None
        self._late_exch = -1
        self._settle: M.Settlement | None = None
        self._meld_pts = (0, 0)
        self._declared = [True, True, True, True]  # (seat 0 q, seat 0 s, seat 1 q, seat 1 s)
        self._meld_step = 0
        self._qhands: tuple[int, int] | None = None  # hands when the quartets were stated
        self._jo = 0
        self._jj = [0, 0]
        self._jo_mask = 0
        self._kq_auto = 0
        self._leader = -1
        self._lead = -1
        self._trick_no = 0
        self._tricks = [0, 0]
        self._tp = [0, 0]
        self._best = [0, 0, 0, 0]
        self._won = [0, 0]
        self._head = self._wins = self._vals = None
        self._tv = 0
        self._trumps = 0
        self._log: list[int] = []
        self._alen = -1  # length of the log when the auction ended

    # ---- fast path ------------------------------------------------------------------------

    def to_act(self) -> int:
        return self._to_act

    def clone(self) -> "JojotteState":
        n = object.__new__(JojotteState)
        n.game = self.game
        n.options = self.options
        n.cfg = self.cfg
        n.first_dealer = self.first_dealer
        n._history = self._history
        n._dealer = self._dealer
        n._results = self._results
        n._below = self._below
        n._above = self._above
        n._games = self._games
        n._gpts = self._gpts
        n._rgames = self._rgames
        n._rseq = self._rseq
        n._rsum = self._rsum
        n._rubbers = self._rubbers
        n._rtotals = self._rtotals
        n._pot = self._pot
        n._winners = self._winners
        n._last_detail = self._last_detail
        n._prev_trick = self._prev_trick
        n._deck = self._deck
        n._phase = self._phase
        n._to_act = self._to_act
        n._h = self._h[:]
        n._turn = self._turn
        n._turn0 = self._turn0
        n._info = self._info
        n._bidder = self._bidder
        n._strain = self._strain
        n._mult = self._mult
        n._accepted = self._accepted
        n._decl = self._decl
        n._kind = self._kind
        n._pstrain = self._pstrain
        n._window = self._window
        n._exch_seat = self._exch_seat
        n._exch_offer = self._exch_offer
        n._exchange = self._exchange
        n._late_exch = self._late_exch
        n._settle = self._settle
        n._meld_pts = self._meld_pts
        n._declared = self._declared[:]
        n._meld_step = self._meld_step
        n._qhands = self._qhands
        n._jo = self._jo
        n._jj = self._jj[:]
        n._jo_mask = self._jo_mask
        n._kq_auto = self._kq_auto
        n._leader = self._leader
        n._lead = self._lead
        n._trick_no = self._trick_no
        n._tricks = self._tricks[:]
        n._tp = self._tp[:]
        n._best = self._best[:]
        n._won = self._won[:]
        n._head = self._head
        n._wins = self._wins
        n._vals = self._vals
        n._tv = self._tv
        n._trumps = self._trumps
        n._log = self._log[:]
        n._alen = self._alen
        return n

    def legal_ids(self) -> list[int]:
        ph = self._phase
        seat = self._to_act
        if ph == PH_PLAY:
            h = self._h[seat]
            lead = self._lead
            if lead < 0:
                m = h
            else:
                same = h & _SUIT_MASK_OF[lead]
                if same:  # JJ-6.3 / JJ-6.8: follow, and beat when obliged and able
                    m = (same & self._head[lead]) or same
                else:  # JJ-6.4 / JJ-6.5: trump if possible, else anything
                    m = (h & self._trumps) or h
            ids = _S0[m & 255] + _S1[(m >> 9) & 255] + _S2[(m >> 18) & 255] + _S3[(m >> 27) & 255]
            if m & self._jo_mask:
                self._add_announcements(ids, seat, h, m)
            if self._late_exch == seat:
                ids += self._exchange_ids(seat)
            return ids
        if ph <= PH_R2_D:
            t = self._turn0 // 9
            if ph <= PH_R1_D:
                return list(_R1_FULL[t] if self.cfg.r1_names else _R1_SHORT)
            return list(_R2_ALL if self.cfg.r2_turnup_ok else _R2_NO_TURN[t])
        if ph == PH_RESP:
            cfg = self.cfg
            if self._strain == NT:
                return list(_RESP_NO_OVERCALL if cfg.double_after_bid else _ONLY_PASS)
            overcall = cfg.overcall_accept or not self._accepted
            if cfg.double_after_bid:
                return list(_RESP_SUIT if overcall else _RESP_NO_OVERCALL)
            return list(_RESP_LATE_SUIT if overcall else _ONLY_PASS)
        if ph == PH_REDBL:
            return list(_REDBL)
        if ph == PH_LATE_DBL:
            return list(_LATE_DBL)
        if ph == PH_EXCH_DEF or ph == PH_EXCH_DECL:
            if seat == self._exch_seat and self._exchange is None:
                return self._exchange_ids(seat) + [A.NO_EXCHANGE]
            return [A.NO_EXCHANGE]
        if ph == PH_NULLO:
            ids = list(_NULLO)
        elif ph == PH_SLAM:
            st = self._strain
            ids = [A.SLAM + st]
            if st < NT and self.cfg.slam_choice:
                ids.append(A.SLAM + NT)
            ids.append(A.PASS)
        elif ph == PH_MELD:
            ids = list(_MELD)
        else:
            return []
        if self._late_exch == seat:
            ids += self._exchange_ids(seat)
        return ids

    # ---- rollout helpers (fast path, pure: for search bots' playouts) -----------------------

    def last_to_trick(self) -> bool:
        """Whether the seat to act plays the last card of the trick in progress: the follower
        (two cards to a trick, JJ-6.2, JJ-6.6)."""
        return self._phase == PH_PLAY and self._lead >= 0

    def winning_ids(self, ids: list[int]) -> list[int]:
        """The ids of ``ids`` (the follower's ``legal_ids()``) whose card takes the trick in
        progress: a higher card of the led suit, or a trump on a plain lead (JJ-6.6, JJ-6.7).
        Non-play ids (a late exchange, JJ-A10) never win."""
        wins = self._wins[self._lead]
        out = []
        for a in ids:
            c = a if a < A.JO else a - A.JO if a < A.JOTTE else a - A.JOTTE
            if c < 36 and wins >> c & 1:
                out.append(a)
        return out

    def trick_rank(self, a: int) -> int:
        """How dear the card of play id ``a`` is to give up in the current deal (larger =
        dearer): card value (JJ-8.1) first, then trumps above plain cards, then trick strength
        (JJ-1.2, JJ-1.3); a jo / jotte announcement (JJ-7.2) ranks just below the same card without it,
        so a rollout choosing the cheapest card announces. Non-play ids rank above every card."""
        c = a if a < A.JO else a - A.JO if a < A.JOTTE else a - A.JOTTE
        if c >= 36:
            return 1 << 16
        trump = self._trumps >> c & 1
        r = (self._vals[c] << 5 | trump << 4 | (T.TRUMP_STRENGTH if trump else T.PLAIN_STRENGTH)[c % 9]) << 1
        return r if a >= A.JO else r | 1

    def wants_trick(self, seat: int) -> bool:
        """Whether one more trick can help ``seat`` in the contract being played: in a nullo
        nobody wants one (the nullo player undertakes to win no trick, JJ-4.3, and his
        opponent scores for every trick the nullo player does win, JJ-9.7, so he ducks to
        leave them to him); in the other contracts everybody does (trick points, JJ-7)."""
        return self._kind != NULLO

    def _exchange_ids(self, seat: int) -> list[int]:
        """``exchange:7X`` for each exchangeable seven the seat holds (JJ-4.2), suit order."""
        m = self._exch_offer & self._h[seat]
        return [A.EXCHANGE + s for s in range(4) if m >> (s * 9 + T.SEVEN) & 1]

    def _add_announcements(self, ids: list[int], seat: int, hand: int, legal: int) -> None:
        """JJ-7.2: ``play:K:jo`` beside the trump king while the trump queen is held;
        ``play:Q:jotte`` beside the trump queen after this player's jo."""
        base = self._pstrain * 9
        king = base + T.KING
        queen = base + T.QUEEN
        if legal >> king & 1 and hand >> queen & 1:
            ids.insert(ids.index(king) + 1, A.JO + king)
        if legal >> queen & 1 and self._jo >> seat & 1:
            ids.insert(ids.index(queen) + 1, A.JOTTE + queen)

    def _apply(self, a: int) -> None:
        if self._phase == PH_PLAY and a < A.ACCEPT:
            seat = self._to_act
            if a >= A.JO:
                if a < A.JOTTE:
                    card = a - A.JO
                    self._jo |= 1 << seat
                else:
                    card = a - A.JOTTE
                    self._jj[seat] += 20  # JJ-7.1, credited on "jotte" (JJ-7.2)
            else:
                card = a
            bit = 1 << card
            h = self._h
            h[seat] ^= bit
            self._log.append(seat << 8 | a)
            if bit & self._kq_auto:
                self._auto_jojotte(seat, card)
            if self._late_exch == seat:
                self._late_exch = -1  # JJ-A10: the late window closes with his first card
            lead = self._lead
            if lead < 0:
                self._lead = card
                self._leader = seat
                self._to_act = 1 - seat
                return
            # JJ-6.6: the follower wins with a higher card of the led suit or a trump.
            w = seat if bit & self._wins[lead] else self._leader
            vals = self._vals
            tv = self._tv
            if tv == 0:  # JJ-8.2: the single highest-valued card
                v = vals[lead]
                v2 = vals[card]
                if v2 > v:
                    v = v2
            elif tv == 1:
                v = vals[lead] + vals[card]
            else:
                v = vals[card] if w == seat else vals[lead]
            n = self._trick_no + 1
            self._trick_no = n
            if n == 9 and self._kind != NULLO:
                v += 10  # JJ-7.3
            self._won[w] |= bit | (1 << lead)
            self._tricks[w] += 1
            self._tp[w] += v  # JJ-8.3: the sum of the values of the tricks won (JJ-8.4: unused in nullo)
            best = self._best
            i = w + w
            if v > best[i]:
                best[i + 1] = best[i]
                best[i] = v
            elif v > best[i + 1]:
                best[i + 1] = v
            self._lead = -1
            if n == 9:
                log = self._log  # the ninth trick's two cards are its last two entries
                self._prev_trick = (log[-2], log[-1])
                self._end_of_play()
                return
            self._to_act = w  # the winner leads next: ``_leader`` is set with his card
            return
        self._apply_other(a)

    def _auto_jojotte(self, seat: int, card: int) -> None:
        """``jj_jojotte_announcement = automatic``: K then Q of trumps by one player scores 20."""
        if card % 9 == T.KING:
            if self._h[seat] >> (card - T.KING + T.QUEEN) & 1:
                self._jo |= 1 << seat
        elif self._jo >> seat & 1:
            self._jj[seat] += 20

    def _apply_other(self, a: int) -> None:
        ph = self._phase
        seat = self._to_act
        if ph == PH_MELD and a >= A.DECLARE:
            a = self._normalized_meld_action(seat, a)
        self._log.append(seat << 8 | a)
        if A.EXCHANGE <= a < A.NO_EXCHANGE:
            self._do_exchange(seat, a - A.EXCHANGE)
            if ph != PH_EXCH_DEF and ph != PH_EXCH_DECL:
                return  # JJ-A10: a late exchange does not end the turn
        if ph <= PH_R2_D:
            self._auction_call(ph, seat, a)
        elif ph == PH_RESP:
            if a == A.NO_TRUMP:  # JJ-3.2: overcall, a new contract
                self._contract(NT, seat, False)
            elif a == A.DOUBLE:
                self._mult = 2
                self._phase = PH_REDBL
                self._to_act = self._bidder
            else:
                if self.cfg.double_after_bid:
                    self._end_auction()
                else:  # JJ-A8: one double call after the auction
                    self._phase = PH_LATE_DBL
                    self._to_act = 1 - self._bidder
        elif ph == PH_REDBL:
            if a == A.REDOUBLE:
                self._mult = 4
            self._end_auction()
        elif ph == PH_LATE_DBL:
            if a == A.DOUBLE:
                self._mult = 2
                self._phase = PH_REDBL
                self._to_act = self._bidder
            else:
                self._end_auction()
        elif ph == PH_EXCH_DEF:
            self._phase = PH_EXCH_DECL
            self._to_act = self._decl
        elif ph == PH_EXCH_DECL:
            self._open_nullo_window()
        elif ph == PH_NULLO:
            if a == A.NULLO:
                self._phase = PH_SLAM
                self._to_act = self._decl
            else:
                self._kind = NORMAL
                self._pstrain = self._strain
                self._start_melds()
        elif ph == PH_SLAM:
            if a == A.PASS:  # JJ-4.5: nullo stands
                self._kind = NULLO
                self._pstrain = NT if self.cfg.nullo_nt else self._strain
            else:
                self._kind = SLAM
                self._pstrain = a - A.SLAM
            self._start_melds()
        elif ph == PH_MELD:
            self._meld_statement(seat, a)

    # ---- auction (JJ-3) -------------------------------------------------------------------

    def _auction_call(self, ph: int, seat: int, a: int) -> None:
        if a == A.PASS:
            if ph == PH_R2_D:
                self._throw_in()
                return
            self._phase = ph + 1
            self._to_act = 1 - seat
        elif a == A.ACCEPT:
            self._contract(self._turn0 // 9, seat, True)
        elif a == A.NO_TRUMP:
            self._contract(NT, seat, False)
        else:
            self._contract(a - A.NAME, seat, False)

    def _contract(self, strain: int, bidder: int, accepted: bool) -> None:
        """JJ-3.1 contract bid -> ``RESP``; JJ-3.4: no round call follows, the auction ends
        from ``RESP`` or ``REDBL``."""
        self._strain = strain
        self._bidder = bidder
        self._mult = 1
        self._accepted = accepted
        self._phase = PH_RESP
        self._to_act = 1 - bidder

    def _throw_in(self) -> None:
        """JJ-3.6: void deal; the same dealer (or, by option, the other) deals again."""
        self._results = self._results + ({"thrown_in": True},)
        self._prev_trick = None  # no trick in this deal: last_trick shows none
        if not self.cfg.redeal_same:
            self._dealer = 1 - self._dealer
        self._phase = PH_CHANCE
        self._to_act = CHANCE

    def _end_auction(self) -> None:
        """JJ-3.5, JJ-4.1: declarer fixed; second deal and information card; then the windows."""
        cfg = self.cfg
        self._decl = decl = self._bidder
        self._alen = len(self._log)
        deck = self._deck
        dl = self._dealer
        h = self._h
        for i in cfg.second_nd:
            h[1 - dl] |= 1 << deck[i]
        for i in cfg.second_dl:
            h[dl] |= 1 << deck[i]
        self._info = deck[cfg.info_pos]
        turn = self._turn0
        mode = cfg.seven_mode
        if mode != SEVEN_NONE and self._strain == turn // 9 and turn % 9 != T.SEVEN:
            self._window = True
            if mode == SEVEN_ANY:  # JJ-4.2: exactly one player holds sevens
                s0 = h[0] & T.SEVENS_MASK
                s1 = h[1] & T.SEVENS_MASK
                if s0 and not s1:
                    self._exch_seat, self._exch_offer = 0, s0
                elif s1 and not s0:
                    self._exch_seat, self._exch_offer = 1, s1
            else:  # jj_seven_exchange = trump_seven
                seven = 1 << (self._strain * 9 + T.SEVEN)
                for s in (0, 1):
                    if h[s] & seven:
                        self._exch_seat, self._exch_offer = s, seven
            self._phase = PH_EXCH_DEF
            self._to_act = 1 - decl
        else:
            self._open_nullo_window()

    # ---- seven exchange, nullo, slam (JJ-4) -------------------------------------------------

    def _do_exchange(self, seat: int, suit: int) -> None:
        seven = suit * 9 + T.SEVEN
        self._h[seat] ^= (1 << seven) | (1 << self._turn)
        self._exchange = (seat, seven, self._turn)  # at most one exchange per deal
        self._turn = seven
        self._late_exch = -1

    def _open_nullo_window(self) -> None:
        if self.cfg.late_exchange and self._exch_seat >= 0 and self._exchange is None:
            self._late_exch = self._exch_seat
        self._phase = PH_NULLO
        self._to_act = 1 - self._decl

    def _start_melds(self) -> None:
        """JJ-4.6: the meld phase (none in nullo unless ``jj_nullo_melds``), then play."""
        cfg = self.cfg
        if self._kind == NULLO and not cfg.nullo_melds:
            self._start_play()
        elif cfg.meld_optional:
            self._phase = PH_MELD
            self._meld_step = 0
            self._to_act = 1 - self._decl
        else:
            self._settle_melds()
            self._start_play()

    def _meld_statement(self, seat: int, a: int) -> None:
        """JJ-A21: steps defender quartets, declarer quartets, defender sequences, declarer
        sequences; ``conceal`` forfeits that category."""
        step = self._meld_step
        self._declared[2 * seat + (step >> 1)] = a == A.DECLARE
        step += 1
        self._meld_step = step
        if step == 2:  # the quartets are stated: a later exchange does not change them
            self._qhands = (self._h[0], self._h[1])
        if step == 4:
            self._settle_melds()
            self._start_play()
        else:
            self._to_act = 1 - seat

    def public_action(self, a: int) -> int:
        """The public trace of the seat to act's legal action ``a`` (:meth:`_normalized_meld_action`)."""
        if self._phase == PH_MELD and a >= A.DECLARE:
            return self._normalized_meld_action(self._to_act, a)
        return a

    def _normalized_meld_action(self, seat: int, a: int) -> int:
        """The public trace of a meld step: ``declare`` when it changes what the dialogue of
        its category says (JJ-5.9), else ``conceal``. Declaring nothing, or a quartet or
        sequence that loses (the declarer's ``good``), states what concealing states, and
        scores the same: recorded as ``declare`` it told the opponent that the player holds
        nothing, or nothing good enough, which concealing must leave open (JJ-A21)."""
        if a != A.DECLARE:
            return a
        step = self._meld_step
        cat = step >> 1
        parts = []
        for flag in (True, False):
            flags = self._declared[:]
            flags[2 * seat + cat] = flag
            st = self._settlement(flags)
            parts.append((M.dialogue_parts(st)[cat], st.points))
        return A.DECLARE if parts[0] != parts[1] else A.CONCEAL

    def _settlement(self, flags: list[bool]) -> M.Settlement:
        cfg = self.cfg
        return M.settle(self._h, self._pstrain, 1 - self._decl, nt_natural=cfg.nt_quartet_natural,
                        card_in_two_melds=cfg.card_in_two_melds, split_runs=cfg.split_runs,
                        winner_all_sequences=cfg.winner_all_sequences,
                        declared=((flags[0], flags[1]), (flags[2], flags[3])), quartet_hands=self._qhands)

    def _settle_melds(self) -> None:
        st = self._settlement(self._declared)
        self._settle = st
        self._meld_pts = st.points

    def _start_play(self) -> None:
        cfg = self.cfg
        ps = self._pstrain
        self._phase = PH_PLAY
        self._head = cfg.head[ps]
        self._wins = T.WINS_OVER[ps]
        self._vals = T.CARD_VALUE[ps]
        self._tv = cfg.trick_value
        self._trumps = T.TRUMP_MASK[ps]
        if self._kind != NULLO and ps < NT:  # JJ-7.1: jo-jotte needs a trump suit
            kq = (1 << (ps * 9 + T.KING)) | (1 << (ps * 9 + T.QUEEN))
            if cfg.jo_required:
                self._jo_mask = kq
            else:
                self._kq_auto = kq
        if cfg.lead_contract_opponent:  # JJ-6.1
            leader = self._decl if self._kind == NULLO else 1 - self._decl
        else:
            leader = 1 - self._dealer
        self._to_act = leader

    # ---- end of deal: scoring and match progression (JJ-9, JJ-10) ---------------------------

    def _end_of_play(self) -> None:
        cfg = self.cfg
        kind = self._kind
        decl = self._decl
        score = S.score_deal(cfg, kind, decl, self._mult, self._meld_pts, self._jj, self._tp,
                             self._tricks, self._best, self._pot)
        below = list(score.below)
        above = list(score.above)
        self._pot = score.pot
        gpts = (self._gpts[0] + below[0], self._gpts[1] + below[1])
        w = S.game_winner(cfg, gpts, below)
        rubber_over = None
        if w is not None:
            games = list(self._games)
            games[w] += 1
            self._games = (games[0], games[1])
            rg = list(self._rgames)
            rg[w] += 1
            self._rgames = (rg[0], rg[1])
            self._rseq = self._rseq + (w,)
            if cfg.partscore_reset:  # JJ-10.2: a new line
                gpts = (0, 0)
            else:  # JJ-A33: the loser keeps his part-score
                gpts = (0, gpts[1]) if w == 0 else (gpts[0], 0)
            if rg[w] == 2:  # JJ-10.3
                rubber_over = w
                bonus = S.rubber_bonus(cfg, self._rseq, w)
                if cfg.single_column:
                    below[w] += bonus
                else:
                    above[w] += bonus
        self._gpts = gpts
        self._below = (self._below[0] + below[0], self._below[1] + below[1])
        self._above = (self._above[0] + above[0], self._above[1] + above[1])
        self._rsum = (self._rsum[0] + below[0] + above[0], self._rsum[1] + below[1] + above[1])
        if rubber_over is not None:
            self._rtotals = self._rtotals + (self._rsum,)
            rw = list(self._rubbers)
            rw[rubber_over] += 1
            self._rubbers = (rw[0], rw[1])
            self._rsum = (0, 0)
            self._rgames = (0, 0)
            self._rseq = ()
            self._gpts = (0, 0)
            if not cfg.pot_carry:  # JJ-9.5 (D): a pending pot lapses with the rubber
                self._pot = 0
        holder = 1 - decl if kind == NULLO else decl
        trick_points = [0, 0] if kind == NULLO else [self._tp[0], self._tp[1]]  # JJ-8.4
        self._results = self._results + ({
            "thrown_in": False,
            "contract": {"kind": S.KIND_NAMES[kind], "strain": ("S", "H", "D", "C", "NT")[self._pstrain],
                         "holder": holder, "multiplier": self._mult},
            "trick_points": trick_points,
            "below": below,
            "above": above,
            "pot": self._pot,
        },)
        st = self._settle
        self._last_detail = {
            "melds": list(self._meld_pts),
            "jo_jotte": list(self._jj),
            "trick_points": trick_points,
            "tricks": list(self._tricks),
            "comparison": list(score.comparison) if score.comparison else None,
            "outcome": score.outcome,
            "pot_to": score.pot_to,
            "game_winner": w,
            "rubber_winner": rubber_over,
            "quartet_winner": st.quartet_winner if st else None,
            "sequence_winner": st.sequence_winner if st else None,
        }
        self._dealer = 1 - self._dealer  # JJ-2.2, JJ-10.6
        if rubber_over is not None and len(self._rtotals) >= cfg.match_rubbers:
            self._winners = tuple(S.match_winners(cfg, self._rubbers, self._rtotals))
            self._phase = PH_OVER
            self._to_act = TERMINAL
        else:
            self._phase = PH_CHANCE
            self._to_act = CHANCE

    # ---- the deal (JJ-2) ---------------------------------------------------------------------

    def _deal(self, deck: tuple[int, ...]) -> None:
        """JJ-2.4, JJ-2.5: the first deal from D[0] and the turn-up D[12]; the second deal and
        the information card wait for the end of the auction (JJ-2.6, JJ-2.7). ``deck`` is the
        shuffled and cut permutation D[0..31] chosen outside the rules (JJ-2.3: the session's
        CSPRNG, a transcript, or a seeded generator in tests and tools)."""
        cfg = self.cfg
        dl = self._dealer
        nd_hand = 0
        for i in cfg.first_nd:
            nd_hand |= 1 << deck[i]
        dl_hand = 0
        for i in cfg.first_dl:
            dl_hand |= 1 << deck[i]
        deck = tuple(deck)
        if dl:
            self._reset_deal(deck, nd_hand, dl_hand)
        else:
            self._reset_deal(deck, dl_hand, nd_hand)
        self._phase = PH_R1_ND
        self._to_act = 1 - dl

    # ---- notation --------------------------------------------------------------------------

    def action_str(self, action: int) -> str:
        return A.action_str(action)

    def _parse_notation(self, text: str) -> int:
        return A.parse_action(text)

    def _why_illegal(self, a: int, text: str) -> str:
        """Why an action is refused, from the table's options, the actor's own hand and the
        trick on the table only. A call the options leave out (declare / conceal, a jo / jotte
        announcement, a seven exchange at a table without them) names its option: it read "is
        not a legal action now", as if it could become legal later. A card play says which
        rule forbids it (JJ-6.3 - JJ-6.5). Other refusals list the legal actions (State)."""
        cfg = self.cfg
        if a in (A.DECLARE, A.CONCEAL) and not cfg.meld_optional:
            return (f"{text}: melds are declared automatically at this table (option "
                    f"jj_meld_declaration, JJ-5.9, JJ-A21)")
        if A.JO <= a < A.ACCEPT and not cfg.jo_required:
            return (f"{text}: jo-jotte scores without announcements at this table (option "
                    f"jj_jojotte_announcement, JJ-7.2, JJ-A22)")
        if A.EXCHANGE <= a <= A.NO_EXCHANGE and cfg.seven_mode == SEVEN_NONE:
            return (f"{text}: this table plays without the seven exchange (option "
                    f"jj_seven_exchange, JJ-4.2, JJ-A9)")
        if self._phase == PH_PLAY and a < A.JOTTE + 36:
            c = a % 36
            h = self._h[self._to_act]
            lead = self._lead
            if not h >> c & 1:
                return f"{text}: {CODES[c]} is not in your hand"
            if lead >= 0:
                suit = "SHDC"[lead // 9]
                same = h & _SUIT_MASK_OF[lead]
                if same and not same >> c & 1:
                    return f"{text}: you must follow suit {suit} (JJ-6.3)"
                if same and same & self._head[lead] and not self._head[lead] >> c & 1:
                    return f"{text}: you must beat {CODES[lead]} with a higher {suit} (JJ-6.3)"
                if not same and h & self._trumps and not self._trumps >> c & 1:
                    return f"{text}: you have no {suit} and must play a trump {'SHDC'[self._pstrain]} (JJ-6.4)"
        return super()._why_illegal(a, text)

    # ---- results ---------------------------------------------------------------------------

    def dealer(self) -> int:
        return self._dealer

    def deal_results(self) -> list[dict[str, Any]]:
        return list(self._results)

    def result(self) -> dict[str, Any]:
        return {
            "totals": {"below": list(self._below), "above": list(self._above), "games_won": list(self._games)},
            "winners": list(self._winners) if self._winners is not None else [],
            "over": self._winners is not None,
        }

    # ---- zones, secrets, views ---------------------------------------------------------------

    def zones(self) -> dict[str, int]:
        if self._phase >= PH_CHANCE:
            return {}
        h0, h1 = self._h
        turn = 1 << self._turn
        info = 1 << self._info if self._info >= 0 else 0
        trick = 1 << self._lead if self._lead >= 0 else 0
        won0, won1 = self._won
        stock = PACK32_MASK & ~(h0 | h1 | turn | info | trick | won0 | won1)
        return {"hand0": h0, "hand1": h1, "turn_up": turn, "info_card": info, "stock": stock,
                "trick": trick, "won0": won0, "won1": won1}

    def revealed_mask(self) -> int:
        """Cards in a hand that both players know: the turn-up taken by an exchange, quartets
        stated and sequences scored in the meld dialogue (JJ-4.2, JJ-5.9)."""
        from .views import meld_public

        m = 0
        if self._exchange is not None:
            m |= 1 << self._exchange[2]
        if self._jo and self.cfg.jo_required:
            # JJ-7.2: "jo" is legal only while holding the trump queen
            m |= 1 << (self._pstrain * 9 + T.QUEEN)
        info = meld_public(self)
        if info is not None:
            m |= info[1]
        return m & (self._h[0] | self._h[1])

    def secret_cards(self, seat: int | None) -> int:
        if self._phase >= PH_CHANCE:
            return 0
        z = self.zones()
        hidden = (z["hand0"] | z["hand1"] | z["stock"]) & ~self.revealed_mask()
        if seat is None:
            return hidden
        return hidden & ~self._h[seat]

    def view(self, seat: int) -> dict[str, Any]:
        from .views import build_view

        return build_view(self, seat)

    def public_view(self) -> dict[str, Any]:
        from .views import build_view

        return build_view(self, None)

    def view_maker(self):
        from .views import view_maker

        return view_maker(self)
