"""The Georgian Joker match state: a whole match of 24 (standard) or 16 (nines) deals.

Representation (speed first, ARCHITECTURE.md section 3): hands are four int bitmasks, actions
are ints (:mod:`.actions`), the trick in progress is a handful of ints (leader, demand suit,
lead kind, the seat holding the trick and its value, :mod:`.rules`), the deal's public actions
are a list of ids. Match-level constants live in one shared immutable :class:`Config`, so
``clone()`` copies four short lists and a few ints. Everything a view shows is rebuilt from
these (:mod:`.views`); nothing on the fast path builds a string or a dict, except the deal
result once per deal.
"""

from __future__ import annotations

from typing import Any

from ...cards import JOKER1, NO_TRUMP, PACK36_JOKERS_MASK, STRAINS
from ...game import CHANCE, TERMINAL, State
from ...options import Options
from . import actions as A
from . import rules as R

# phases (the rulebook's states, GJ-10). The internal states (trick resolution, DEAL_SCORED,
# PULKA_SETTLED) take no player action and are no phases: the action that completes a trick,
# a deal or a pulka passes through them (GJ-10.1); DEAL_SETUP waits for the deck, a chance step.
DEAL_SETUP = 0  # waiting for the deck (chance step)
TRUMP_CHOICE = 1
BIDDING = 2
PLAYING = 3
MATCH_OVER = 4
PHASE_NAMES = ("deal_setup", "trump_choice", "bidding", "playing", "match_over")

_BIT = tuple(1 << c for c in range(38))
_SUIT_IDS = A.SUIT_IDS
_FOLLOW_J = A.FOLLOW_JOKER_IDS
_HIGH_JOKER_LEAD = R.HIGH_JOKER_LEAD
_LEAD_J = A.LEAD_JOKER_IDS
_CARD_VALUE = R.CARD_VALUE
_ACTION_CARD = A.ACTION_CARD
_ACTION_MODE = A.ACTION_MODE
_ACTION_SUIT = A.ACTION_SUIT


class Config:
    """Match constants derived once from the validated options (shared by every clone)."""

    __slots__ = ("options", "schedule", "cards", "pulka", "pulka_end", "khishti", "premium",
                 "moshla", "trumpable", "deals")

    def __init__(self, options: Options) -> None:
        self.options = options
        self.schedule: str = options["deal_schedule"]
        self.cards: tuple[int, ...] = R.SCHEDULES[self.schedule]
        self.pulka: tuple[int, ...] = R.PULKAS[self.schedule]
        self.pulka_end: tuple[bool, ...] = R.pulka_ends(self.schedule)
        self.khishti: str = options["khishti_penalty"]
        self.premium: bool = options["pulka_premium"]
        self.moshla: str = options["moshla"]
        self.trumpable: bool = options["high_joker_lead_trumpable"]
        self.deals: int = len(self.cards)


class GeorgianJokerState(State):
    """One match (GJ-2 .. GJ-10). Mutable for speed; ``clone()`` is cheap."""

    __slots__ = (
        "game", "options", "first_dealer", "_history", "cfg",
        # match
        "started", "dealer_seat", "totals", "results", "prev_trick",
        # deal
        "phase", "cur", "n", "forehand", "trump", "indicator", "deck", "hands", "bids", "bid_sum",
        "nbids", "taken", "tricks_done", "log",
        # trick in progress
        "leader", "nplayed", "demand", "lead_kind", "best_seat", "best_val", "values",
    )

    def __init__(self, game: Any, cfg: Config, first_dealer: int) -> None:
        self.game = game
        self.cfg = cfg
        self.options = cfg.options
        self.first_dealer = first_dealer
        self._history = None
        self.started = 0  # deals started so far (= 0-based index of the next deal at DEAL_SETUP)
        self.dealer_seat = first_dealer
        self.totals = [0, 0, 0, 0]
        self.results: list[dict[str, Any]] = []
        # The final trick of the last deal that ended: (its leader, its four play ids), None
        # before the first deal ends. What ``last_trick`` shows until the current deal's first
        # trick is complete. Immutable, shared by clones.
        self.prev_trick: tuple[int, tuple[int, ...]] | None = None
        self.phase = DEAL_SETUP
        self.cur = CHANCE
        self._reset_deal(cfg.cards[0])

    def _reset_deal(self, n: int) -> None:
        self.n = n
        self.forehand = (self.dealer_seat + 1) & 3
        self.trump = -1
        self.indicator = -1
        self.deck: tuple[int, ...] = ()
        self.hands = [0, 0, 0, 0]
        self.bids = [-1, -1, -1, -1]
        self.bid_sum = 0
        self.nbids = 0
        self.taken = [0, 0, 0, 0]
        self.tricks_done = 0
        self.log: list[int] = []
        self.leader = self.forehand
        self.nplayed = 0
        self.demand = -1
        self.lead_kind = 0
        self.best_seat = -1
        self.best_val = -1
        self.values: tuple[int, ...] = ()

    # ---- fast path ----------------------------------------------------------------------

    def to_act(self) -> int:
        return self.cur

    def legal_ids(self) -> list[int]:
        phase = self.phase
        if phase == PLAYING:
            hand = self.hands[self.cur]
            if self.nplayed == 0:  # GJ-5.1: any card; a joker lead names a suit
                return (_SUIT_IDS[0][hand & 511] + _SUIT_IDS[1][(hand >> 9) & 511]
                        + _SUIT_IDS[2][(hand >> 18) & 511] + _SUIT_IDS[3][(hand >> 27) & 511]
                        + _LEAD_J[hand >> 36])
            demand = self.demand
            own = (hand >> (9 * demand)) & 511
            # GJ-5.6: from the lead (demand, lead_kind) and the trump only; jokers are in no
            # suit (GJ-1.3); any card of the suit, any trump: no duty to beat (GJ-5.7)
            if own:  # GJ-5.3 step 2, GJ-5.4 (highest only after a high joker lead), GJ-5.5
                if self.lead_kind == _HIGH_JOKER_LEAD:
                    own &= -own
                return _SUIT_IDS[demand][own] + _FOLLOW_J[hand >> 36]
            trump = self.trump
            if trump < 4:
                trumps = (hand >> (9 * trump)) & 511
                if trumps:  # GJ-5.3 step 3: any trump
                    return _SUIT_IDS[trump][trumps] + _FOLLOW_J[hand >> 36]
            return (_SUIT_IDS[0][hand & 511] + _SUIT_IDS[1][(hand >> 9) & 511]
                    + _SUIT_IDS[2][(hand >> 18) & 511] + _SUIT_IDS[3][(hand >> 27) & 511]
                    + _FOLLOW_J[hand >> 36])
        if phase == BIDDING:
            if self.nbids < 3:
                return A.BID_IDS[self.n][:]
            forbidden = self.n - self.bid_sum  # GJ-4.3
            if forbidden >= 0:
                return A.DEALER_BID_IDS[self.n][forbidden][:]
            return A.BID_IDS[self.n][:]
        if phase == TRUMP_CHOICE:
            return A.TRUMP_IDS[:]
        return []

    # ---- rollout helpers (fast path, pure: for search bots' playouts) -----------------------

    def last_to_trick(self) -> bool:
        """Whether the seat to act plays the fourth and last card of the trick in progress."""
        return self.phase == PLAYING and self.nplayed == 3

    def winning_ids(self, ids: list[int]) -> list[int]:
        """The ids of ``ids`` (a follower's ``legal_ids()``) that would hold the trick in
        progress if played now, i.e. take it when played last: a ``high`` joker (the last one
        wins, GJ-6.1), never a ``low`` one (GJ-6.2); a normal card worth more than the card
        holding the trick (a higher trump, GJ-6.2, or a higher card of the demand suit, GJ-6.3;
        a discard never wins, GJ-6.5; with ``high_joker_lead_trumpable`` a trump beats a high
        joker lead naming another suit, GJ-6.6)."""
        best = self.best_val
        values = self.values
        out = []
        for a in ids:
            if a < 36:
                if values[a] > best:
                    out.append(a)
            elif _ACTION_MODE[a] == A.HIGH:
                out.append(a)
        return out

    def trick_rank(self, a: int) -> int:
        """How dear the play id ``a`` of a follower is to give up (larger = dearer): a ``low``
        joker, which never takes a trick (GJ-6.2), is the cheapest; then plain cards by rank
        (GJ-1.2), then trumps by rank; a ``high`` joker (GJ-6.1) is the dearest."""
        if a < 36:
            return (10 if a // 9 == self.trump else 1) * 16 + 8 - a % 9
        return 0 if _ACTION_MODE[a] == A.LOW else 1000

    def wants_trick(self, seat: int) -> bool:
        """Whether one more trick can help ``seat``: it has taken fewer tricks than it bid (a
        deal scores for taking exactly the bid, GJ-7)."""
        return self.taken[seat] < self.bids[seat]

    def _apply(self, action: int) -> None:
        phase = self.phase
        if phase == PLAYING:  # the hot path, inlined
            seat = self.cur
            nplayed = self.nplayed
            self.log.append(action)
            if action < 36:
                self.hands[seat] ^= _BIT[action]
                if nplayed:
                    v = self.values[action]
                    if v > self.best_val:
                        self.best_val = v
                        self.best_seat = seat
                else:
                    self.demand = demand = action // 9
                    self.lead_kind = R.NORMAL_LEAD
                    self.values = values = _CARD_VALUE[self.trump * 4 + demand]
                    self.best_val = values[action]
                    self.best_seat = seat
            else:
                self.hands[seat] ^= _BIT[_ACTION_CARD[action]]
                mode = _ACTION_MODE[action]
                if nplayed:
                    if mode == 0:  # GJ-6.1: the last high joker wins
                        self.best_val = R.HIGH_JOKER_VALUE + nplayed
                        self.best_seat = seat
                else:
                    self.demand = demand = _ACTION_SUIT[action]
                    self.lead_kind = R.LOW_JOKER_LEAD if mode else R.HIGH_JOKER_LEAD
                    self.values = _CARD_VALUE[self.trump * 4 + demand]
                    self.best_val = R.joker_lead_value(mode, demand, self.trump, self.cfg.trumpable)
                    self.best_seat = seat
            if nplayed == 3:  # trick complete (GJ-6); the winner leads the next (GJ-5.9) at
                # once: resolving a trick, scoring a deal, settling a pulka take no action (GJ-10.1)
                winner = self.best_seat
                self.taken[winner] += 1
                self.tricks_done += 1
                if self.tricks_done == self.n:
                    self.prev_trick = (self.leader, tuple(self.log[-4:]))
                    self._score_deal()
                    return
                self.nplayed = 0
                self.cur = self.leader = winner
            else:
                self.nplayed = nplayed + 1
                self.cur = (seat + 1) & 3
        elif phase == BIDDING:
            bid = action - A.BID_BASE
            self.log.append(action)
            self.bids[self.cur] = bid
            self.bid_sum += bid
            self.nbids += 1
            if self.nbids == 4:  # GJ-4.1 -> PLAYING, the forehand leads (GJ-5.9)
                self.phase = PLAYING
                self.cur = self.leader = self.forehand
            else:
                self.cur = (self.cur + 1) & 3
        elif phase == TRUMP_CHOICE:
            self.log.append(action)
            self.trump = action - A.TRUMP_BASE
            self._deal_phase_b()
            self.phase = BIDDING
        else:
            raise RuntimeError("no player action is due")

    def _deal(self, deck: tuple[int, ...]) -> None:
        """GJ-3.2 .. GJ-3.5: one card at a time clockwise from the forehand, ``deck[0]`` first."""
        n = self.cfg.cards[self.started]
        self._reset_deal(n)
        self.deck = deck
        f = self.forehand
        bit = _BIT
        hands = self.hands
        dealt = 4 * n if n <= 8 else 12  # nine-card deals: phase A only (GJ-3.5)
        for i in range(4):
            m = 0
            for c in deck[i:dealt:4]:
                m |= bit[c]
            hands[(f + i) & 3] = m
        self.started += 1
        self.cur = f
        if n <= 8:
            ind = deck[4 * n]  # GJ-3.3: the trump indicator; a joker means no trump
            self.indicator = ind
            self.trump = NO_TRUMP if ind >= 36 else ind // 9
            self.phase = BIDDING
        else:
            self.phase = TRUMP_CHOICE

    def _deal_phase_b(self) -> None:
        """GJ-3.5 phase B: ``deck[12 .. 35]`` continuing the rotation, after the trump choice."""
        deck, hands, f, bit = self.deck, self.hands, self.forehand, _BIT
        for i in range(4):
            m = 0
            for c in deck[12 + i::4]:
                m |= bit[c]
            hands[(f + i) & 3] |= m

    def _score_deal(self) -> None:
        """GJ-7 scores, entered as soon as the last trick is complete (GJ-7.7); GJ-8 pulka
        settlement (made = ``taken == bid``, GJ-7.6); the totals are deal scores plus premiums
        plus moshla (GJ-9.2); then the next deal's dealer or the match end, which comes only
        after the last scheduled deal: no end by score (GJ-9.1), the rules have no early end
        (GJ-9.4: only the session's operational rules, GJ-12)."""
        cfg = self.cfg
        n, bids, taken = self.n, self.bids, self.taken
        scores = [R.deal_score(bids[p], taken[p], n, cfg.khishti) for p in range(4)]
        result: dict[str, Any] = {"trump": STRAINS[self.trump], "bids": list(bids), "taken": list(taken),
                                  "scores": scores}
        totals = self.totals = [t + s for t, s in zip(self.totals, scores)]
        index = self.started - 1
        self.results = self.results + [result]
        if cfg.pulka_end[index]:
            pulka = cfg.pulka[index]
            deals = [r for r, p in zip(self.results, cfg.pulka) if p == pulka]
            _, premium, moshla = R.settle_pulka(
                [r["scores"] for r in deals],
                [[b == t for b, t in zip(r["bids"], r["taken"])] for r in deals],
                cfg.premium, cfg.moshla)
            result["premium"] = premium
            result["moshla"] = moshla
            self.totals = [t + a + b for t, a, b in zip(totals, premium, moshla)]
        self.phase = MATCH_OVER if self.started == cfg.deals else DEAL_SETUP
        self.cur = TERMINAL if self.phase == MATCH_OVER else CHANCE
        if self.phase == DEAL_SETUP:
            # GJ-2.3: continuous rotation, so every seat deals 6 (standard) or 4 (nines) times (GJ-2.6)
            self.dealer_seat = (self.dealer_seat + 1) & 3

    def clone(self) -> "GeorgianJokerState":
        c = object.__new__(GeorgianJokerState)
        c.game = self.game
        c.cfg = self.cfg
        c.options = self.options
        c.first_dealer = self.first_dealer
        c._history = self._history
        c.started = self.started
        c.dealer_seat = self.dealer_seat
        c.totals = self.totals  # replaced, never mutated in place
        c.results = self.results  # replaced, never mutated in place
        c.prev_trick = self.prev_trick
        c.phase = self.phase
        c.cur = self.cur
        c.n = self.n
        c.forehand = self.forehand
        c.trump = self.trump
        c.indicator = self.indicator
        c.deck = self.deck
        c.hands = self.hands[:]
        c.bids = self.bids[:]
        c.bid_sum = self.bid_sum
        c.nbids = self.nbids
        c.taken = self.taken[:]
        c.tricks_done = self.tricks_done
        c.log = self.log[:]
        c.leader = self.leader
        c.nplayed = self.nplayed
        c.demand = self.demand
        c.lead_kind = self.lead_kind
        c.best_seat = self.best_seat
        c.best_val = self.best_val
        c.values = self.values
        return c

    # ---- notation ---------------------------------------------------------------------------

    def action_str(self, action: int) -> str:
        return A.action_str(action)

    def _parse_notation(self, text: str) -> int:
        return A.parse_action(text)

    def _why_illegal(self, a: int, text: str) -> str:
        phase = self.phase
        if phase == TRUMP_CHOICE:
            return f"{text}: the forehand must choose the trump now (trump:S, H, D, C or NT) (GJ-3.5)"
        if phase == BIDDING:
            if a < A.BID_BASE:
                return f"{text}: it is time to bid (bid:0 .. bid:{self.n}) (GJ-4.1)"
            b = a - A.BID_BASE
            if b > self.n:
                return f"{text}: a bid is 0 .. {self.n} in this {self.n}-card deal (GJ-4.2)"
            return (f"{text}: the dealer may not bid {b}: the four bids would add up to {self.n}, "
                    f"the number of tricks (GJ-4.3)")
        if a >= A.TRUMP_BASE:
            return f"{text}: it is time to play a card (GJ-5)"
        card = _ACTION_CARD[a]
        code = "X1" if card == JOKER1 else "X2" if card == JOKER1 + 1 else A.action_str(card)[5:]
        hand = self.hands[self.cur]
        if not hand & _BIT[card]:
            return f"{text}: {code} is not in your hand"
        if card >= 36:
            if self.nplayed == 0:
                return (f"{text}: a joker lead names a suit: play:{code}:{A.MODES[_ACTION_MODE[a]]}:S "
                        f"(or H, D, C) (GJ-5.2, GJ-5.10)")
            return (f"{text}: a joker that follows names no suit: play:{code}:{A.MODES[_ACTION_MODE[a]]} "
                    f"(GJ-5.2, GJ-5.10)")
        demand = STRAINS[self.demand]
        if hand & R.SUIT_MASK[self.demand]:
            if self.lead_kind == R.HIGH_JOKER_LEAD:
                return f"{text}: after a high joker lead naming {demand} you must give your highest {demand} (GJ-5.4)"
            return f"{text}: you must follow suit {demand} (GJ-5.3)"
        return f"{text}: you have no {demand} and must play a trump {STRAINS[self.trump]} (GJ-5.3, GJ-5.8)"

    # ---- results ----------------------------------------------------------------------------

    def dealer(self) -> int:
        return self.dealer_seat

    def deal_results(self) -> list[dict[str, Any]]:
        """The deal results so far (NOTATION section 4). A new list of the engine's own result
        records, which are never changed once written: read-only by contract, so that callers
        polling the count after every action (playouts, the benchmark) pay nothing; views copy."""
        return list(self.results)

    def result(self) -> dict[str, Any]:
        over = self.phase == MATCH_OVER
        return {"totals": list(self.totals), "winners": R.final_winners(self.totals) if over else [],
                "over": over}

    # ---- information ------------------------------------------------------------------------

    def in_deal(self) -> bool:
        return self.phase in (TRUMP_CHOICE, BIDDING, PLAYING)

    def public_cards(self) -> int:
        """Cards every seat and spectator has seen in the current (or, between deals, the last)
        deal: the indicator and every played card (GJ-11.1)."""
        from .views import deal_record
        rec = deal_record(self)
        m = 0 if self.indicator < 0 else _BIT[self.indicator]
        for trick in rec.tricks:
            for play in trick.plays:
                m |= _BIT[play.card]
        for play in rec.current:
            m |= _BIT[play.card]
        return m

    def secret_cards(self, seat: int | None) -> int:
        known = self.public_cards()
        if seat is not None and self.in_deal():
            known |= self.hands[seat]
        return PACK36_JOKERS_MASK & ~known

    def zones(self) -> dict[str, int]:
        if not self.in_deal():
            return {}
        from .views import deal_record
        rec = deal_record(self)
        trick = 0
        for play in rec.current:
            trick |= _BIT[play.card]
        played = 0
        for t in rec.tricks:
            for play in t.plays:
                played |= _BIT[play.card]
        z = {f"hand{s}": self.hands[s] for s in range(4)}
        z["trick"] = trick
        z["played"] = played
        n, deck = self.n, self.deck
        if n <= 8:
            z["turn_up"] = _BIT[deck[4 * n]]
            stock = 0
            for c in deck[4 * n + 1:]:
                stock |= _BIT[c]
            z["stock"] = stock
        elif self.phase == TRUMP_CHOICE:
            undealt = 0
            for c in deck[12:]:
                undealt |= _BIT[c]
            z["undealt"] = undealt
        return z

    def view(self, seat: int) -> dict[str, Any]:
        from .views import build_view
        return build_view(self, seat)

    def public_view(self) -> dict[str, Any]:
        from .views import build_view
        return build_view(self, None)

    def view_maker(self):
        from .views import view_maker
        return view_maker(self)

    def __repr__(self) -> str:
        return (f"<GeorgianJokerState deal {self.started}/{self.cfg.deals} {PHASE_NAMES[self.phase]} "
                f"to_act={self.cur}>")
