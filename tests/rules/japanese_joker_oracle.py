"""An independent, deliberately plain reference model ("oracle") of Japanese Joker, written from
the rulebook (``shared/rules/japanese_joker.md``, rule ids ``JJK-x.y``) and NOTATION.md only, for
differential tests of the engine (:mod:`tests.rules.test_japanese_joker_oracle`).

It shares no code with ``engine_service.rules.games.japanese_joker``: cards are code strings,
hands are sets, columns are ``[down, up]`` lists, and every rule is spelled out the slow, obvious
way with its rule id. Nothing is optimised.

Where the rulebook leaves a question open, the model follows the engine's documented choices
(docs/games/japanese_joker.md, "Documented choices"):

* the first declarer is given by the caller (``first_dealer``, NOTATION 3: "In Japanese Joker
  ... it is the first declarer"); JJK-2.2's random draw is a session matter;
* ``dealer()`` names the declarer of the current deal, between deals the next one, and after the
  match the seat that would have declared the next deal (documented choice 8);
* the session options ``turn_time_s`` / ``reconnect_grace_s`` have no effect on the rules
  (documented choice 9): they are validated (JJK-11 ranges) and otherwise ignored;
* the auto-move trump tie (JJK-10.4) compares the highest card of each tied suit, jokers ignored
  (documented choice 6);
* the deal's record (the views' ``deal_actions``, documented choice 3) carries JJK-9.2's
  events as ``from`` (``hand``/``table``), and for a table play ``moved_hidden`` (count) and
  ``moved_public`` (a list, empty unless the table is cleared); the owner's view adds
  ``moved_cards`` (played column's down card first); the second play of a trick names ``winner``;
* option values are JSON integers (the docs' options table); ``21.0`` or ``true`` is refused;
* a deal result is exactly ``{"trump", "taken", "scores"}`` (NOTATION 4) and the match result
  ``{"totals", "winners", "over"}`` (NOTATION 3).
"""

from __future__ import annotations

from typing import Any

SUITS = "SHDC"  # JJK-0.2 suit codes; also the tie-break order of JJK-10.4
RANKS = "AKQJT9876"  # JJK-1.2, high to low
JOKERS = ("X1", "X2")  # JJK-1.1
# JJK-1.1: 36 cards, 6 to A in four suits, with 6S and 6C replaced by the two jokers.
PACK = [r + s for s in SUITS for r in RANKS if r + s not in ("6S", "6C")] + list(JOKERS)
TRUMP_CHOICES = ("S", "H", "D", "C", "NT")  # JJK-3.3

CHANCE = "chance"
TERMINAL = "terminal"

DEFAULTS: dict[str, Any] = {"target_score": 21, "turn_time_s": 30, "reconnect_grace_s": 60}


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """JJK-11: the three table options with their allowed values (default when absent)."""
    o = {**DEFAULTS, **options}
    assert set(o) == set(DEFAULTS), o
    # JSON integers only (docs/games/japanese_joker.md "Options": 21.0 or true is not a value)
    assert all(isinstance(v, int) and not isinstance(v, bool) for v in o.values()), o
    assert o["target_score"] in (11, 15, 21, 31), o  # JJK-8.1
    assert 10 <= o["turn_time_s"] <= 120, o  # JJK-10.3 / JJK-11
    assert 15 <= o["reconnect_grace_s"] <= 600, o  # JJK-10.2 / JJK-11
    return o


def is_joker(card: str) -> bool:
    return card in JOKERS  # JJK-1.3: jokers have no suit and no rank


def suit(card: str) -> str:
    assert not is_joker(card)
    return card[1]


def rank_value(card: str) -> int:
    """JJK-1.2: higher is better (A = 8 ... 6 = 0)."""
    return len(RANKS) - 1 - RANKS.index(card[0])


class Model:
    """A whole two-player match (JJK-2 .. JJK-8)."""

    def __init__(self, options: dict[str, Any] | None = None, first_dealer: int = 0) -> None:
        self.o = check_options(dict(options or {}))
        self.target = self.o["target_score"]
        self.declarer = first_dealer  # JJK-2.2 (the caller's draw)
        self.totals = [0, 0]
        self.results: list[dict[str, Any]] = []
        self.over = False
        self.winners: list[int] = []
        self.phase = "dealing"
        # deal state
        self.deck: list[str] = []
        self.hands: list[set[str]] = [set(), set()]
        self.columns: list[list[list[str]]] = [[], []]  # per seat, [down, up] in table order
        self.trump: str | None = None
        self.played_any = [False, False]
        self.taken = [0, 0]
        self.tricks_played = 0
        self.leader = -1
        self.trick: list[tuple[int, str, str | None]] = []  # (seat, card, named suit)
        self.played: list[set[str]] = [set(), set()]
        # JJK-9.2 / JJK-9.4: the up cards moved to a hand by JJK-4.3 (public while still there)
        self.known: list[set[str]] = [set(), set()]
        # the deal's public record (JJK-9.1 / 9.2; format: docs documented choice 3) and, per
        # seat, the down-card identities its owner learns (JJK-9.3)
        self.events: list[dict[str, Any]] = []
        self.private_moved: dict[int, list[str]] = {}
        self.last_trick: dict[str, Any] | None = None  # the match's most recent complete trick
        self.check_invariants = True

    # ------------------------------------------------------------------ who acts

    def to_act(self) -> int | str:
        if self.over:
            return TERMINAL  # JJK-8.2
        if self.phase == "dealing":
            return CHANCE  # JJK-3.1: a fresh deck is due
        if self.phase == "trump_choice":
            return self.declarer  # JJK-3.3
        # JJK-2.5 / JJK-6.4: the leader leads, then the other player follows
        return self.leader if not self.trick else 1 - self.leader

    def dealer(self) -> int:
        return self.declarer

    # ------------------------------------------------------------------ dealing (JJK-3)

    def deal(self, deck: list[str]) -> None:
        assert self.phase == "dealing" and not self.over
        assert sorted(deck) == sorted(PACK) and len(deck) == 36, deck  # JJK-1.1
        self.deck = list(deck)
        d, o = self.declarer, 1 - self.declarer
        self.hands = [set(), set()]
        self.columns = [[], []]
        self.trump = None
        self.played_any = [False, False]
        self.taken = [0, 0]
        self.tricks_played = 0
        self.trick = []
        self.played = [set(), set()]
        self.known = [set(), set()]
        self.events = []
        self.private_moved = {}
        # JJK-3.2: deck[0..5] one at a time alternately, declarer first (even k to the declarer).
        for k in range(6):
            self.hands[d if k % 2 == 0 else o].add(deck[k])
        self.phase = "trump_choice"  # JJK-3.3

    def _phase_b(self) -> None:
        """JJK-3.4: 5 more hand cards each (deck[6..15]), then the down cards of columns 1-5
        (deck[16..25]), then the up cards (deck[26..35]); always alternating, declarer first."""
        d, o = self.declarer, 1 - self.declarer
        deck = self.deck
        for k in range(6, 16):
            self.hands[d if k % 2 == 0 else o].add(deck[k])
        for i in range(5):
            self.columns[d].append([deck[16 + 2 * i], deck[26 + 2 * i]])
            self.columns[o].append([deck[17 + 2 * i], deck[27 + 2 * i]])
        # JJK-3.5: 8 in hand and 5 columns each
        assert all(len(self.hands[s]) == 8 and len(self.columns[s]) == 5 for s in (0, 1))

    # ------------------------------------------------------------------ legal actions (JJK-5)

    def up_cards(self, p: int) -> set[str]:
        return {col[1] for col in self.columns[p]}

    def available(self, p: int) -> set[str]:
        """JJK-5.1: before p's first card of the deal only the hand; afterwards the hand plus the
        up cards of p's own columns. Down cards never."""
        if not self.played_any[p]:
            return set(self.hands[p])
        return set(self.hands[p]) | self.up_cards(p)

    def legal_cards(self, p: int) -> set[str]:
        """The cards p may play now (JJK-5.2 .. 5.4)."""
        a = self.available(p)
        if not self.trick:
            return a  # JJK-5.2: the leader may lead any available card
        jokers = {c for c in a if is_joker(c)}  # JJK-5.3.1 / JJK-5.4.1: a joker is always legal
        normal = {c for c in a if not is_joker(c)}
        t = self.trump
        lead_card, named = self.trick[0][1], self.trick[0][2]
        if not is_joker(lead_card):
            # JJK-5.3: following a normal lead of suit L
            lead_suit = suit(lead_card)
            of_l = {c for c in normal if suit(c) == lead_suit}
            if of_l:
                return of_l | jokers  # 5.3.2: any card of L
            trumps = {c for c in normal if suit(c) == t} if t != "NT" else set()
            if trumps:
                return trumps | jokers  # 5.3.3: any trump
            return a  # 5.3.4
        # JJK-5.4: following a joker lead naming Q
        of_q = {c for c in normal if suit(c) == named}
        if of_q:
            # 5.4.2 (JJK-A1, JJK-A4 when Q = T): exactly the single highest Q card, wherever it lies
            return {max(of_q, key=rank_value)} | jokers
        trumps = {c for c in normal if suit(c) == t} if t != "NT" else set()
        if trumps:
            return trumps | jokers  # 5.4.3 (JJK-A5): any trump
        return a  # 5.4.4

    def legal(self) -> set[str]:
        """The legal action strings (NOTATION 2, japanese_joker rows)."""
        p = self.to_act()
        if p in (CHANCE, TERMINAL):
            return set()
        if self.phase == "trump_choice":
            return {f"trump:{x}" for x in TRUMP_CHOICES}  # JJK-3.3: five options
        out = set()
        leading = not self.trick
        for c in self.legal_cards(p):
            if is_joker(c) and leading:
                # JJK-5.2 / JJK-A6: a leading joker names any of S H D C (trump and NT deals alike)
                out |= {f"play:{c}:{s}" for s in SUITS}
            else:
                out.add(f"play:{c}")  # JJK-5.5: a following joker makes no declaration
        return out

    # ------------------------------------------------------------------ applying actions

    def apply(self, action: str) -> None:
        assert action in self.legal(), (action, sorted(self.legal()))  # JJK-5.7
        p = self.to_act()
        parts = action.split(":")
        if parts[0] == "trump":
            self.events.append({"seat": p, "action": action})
            self.trump = parts[1]  # JJK-3.3, public (JJK-3.6)
            self._phase_b()
            self.phase = "playing"
            self.leader = self.declarer  # JJK-2.5
            return
        card = parts[1]
        named = parts[2] if len(parts) == 3 else None
        self.events.append({"seat": p, "action": action})
        self._remove(p, card)
        self.played_any[p] = True
        self.played[p].add(card)
        self.trick.append((p, card, named))
        if len(self.trick) == 2:
            self._finish_trick()

    def _remove(self, p: int, card: str) -> None:
        """Take ``card`` from p's hand or from one of p's up cards (JJK-4)."""
        event = self.events[-1]
        if card in self.hands[p]:
            self.hands[p].remove(card)
            self.known[p].discard(card)
            event["from"] = "hand"
            return
        event["from"] = "table"
        cols = self.columns[p]
        idx = [i for i, col in enumerate(cols) if col[1] == card]
        assert len(idx) == 1, (card, cols)  # JJK-4.1: only an up card can be played
        i = idx[0]
        if len(cols) >= 3:
            # JJK-4.2: the column disappears; its down card goes into the hand
            self.hands[p].add(cols[i][0])
            event["moved_hidden"] = 1  # JJK-9.2: "moved 1 hidden card"
            event["moved_public"] = []
            self.private_moved[len(self.events) - 1] = [cols[i][0]]
            del cols[i]
        else:
            # JJK-4.3 / JJK-A8: exactly two columns before the play -> the whole table is cleared
            assert len(cols) == 2, cols  # JJK-4.4: never one column
            other = cols[1 - i]
            self.hands[p] |= {cols[i][0], other[0], other[1]}
            # JJK-9.2: two hidden cards, plus the identity of the other up card (already public)
            event["moved_hidden"] = 2
            event["moved_public"] = [other[1]]
            self.known[p].add(other[1])
            self.private_moved[len(self.events) - 1] = [cols[i][0], other[0]]  # played column first
            self.columns[p] = []
        # JJK-4.7 invariant (off for hand-laid positions, which need not be reachable)
        assert not self.check_invariants or len(self.hands[p]) + 2 * len(self.columns[p]) == 18 - len(self.played[p]) - 1

    def trick_winner(self) -> int:
        """JJK-6.1 .. 6.3."""
        (leader, lead, named), (follower, f, _) = self.trick
        t = self.trump
        if is_joker(f):
            return follower  # JJK-6.1: the follower's joker wins, whatever the lead
        if not is_joker(lead):
            # JJK-6.2
            if suit(lead) == suit(f):
                return follower if rank_value(f) > rank_value(lead) else leader
            if t != "NT" and suit(f) == t:
                return follower
            return leader
        # JJK-6.3: a joker lead naming Q answered by a normal card
        if t != "NT" and named != t and suit(f) == t:
            return follower
        return leader

    def _finish_trick(self) -> None:
        w = self.trick_winner()
        self.events[-1]["winner"] = w
        self.last_trick = {"plays": [{"seat": q, "card": c, **({"named_suit": n} if n else {})}
                                     for q, c, n in self.trick], "winner": w}
        self.taken[w] += 1
        self.tricks_played += 1
        self.trick = []
        self.leader = w  # JJK-6.4: the winner leads the next trick
        if self.tricks_played == 18:  # JJK-3.5 / JJK-6.4: 18 tricks
            assert not any(self.hands[s] or self.columns[s] for s in (0, 1))
            self._score_deal()

    # ------------------------------------------------------------------ scoring (JJK-7, 8)

    def _score_deal(self) -> None:
        a, b = self.taken
        assert a + b == 18
        # JJK-7.1: more tricks scores the difference, the other 0; 9:9 nobody
        scores = [a - b if a > b else 0, b - a if b > a else 0]
        self.results.append({"trump": self.trump, "taken": [a, b], "scores": scores})
        # JJK-7.2: added to the totals at once
        self.totals = [self.totals[0] + scores[0], self.totals[1] + scores[1]]
        # JJK-2.3 / JJK-A9: the declarer alternates after every deal, draws included
        self.declarer = 1 - self.declarer
        self.phase = "dealing"
        # JJK-8.2 / JJK-A14: checked after each deal; "at least the target"
        reached = [s for s in (0, 1) if self.totals[s] >= self.target]
        assert len(reached) <= 1  # only one player scores per deal
        if reached:
            self.over = True
            self.winners = reached
        # JJK-8.3: otherwise the next deal starts

    def deal_results(self) -> list[dict[str, Any]]:
        return self.results

    def result(self) -> dict[str, Any]:
        return {"totals": list(self.totals), "winners": list(self.winners), "over": self.over}

    # ------------------------------------------------------------------ JJK-10.4 auto-move

    def auto_move(self) -> str:
        """JJK-10.4, deterministic."""
        p = self.to_act()
        assert p not in (CHANCE, TERMINAL)
        if self.phase == "trump_choice":
            three = [c for c in self.hands[p] if not is_joker(c)]
            counts = {s: sum(1 for c in three if suit(c) == s) for s in SUITS}
            most = max(counts.values())
            tied = [s for s in SUITS if counts[s] == most]
            # tie: the tied suit holding the highest-ranked card (documented choice 6), then S H D C
            best = max(max(rank_value(c) for c in three if suit(c) == s) for s in tied)
            tied = [s for s in tied if max(rank_value(c) for c in three if suit(c) == s) == best]
            return f"trump:{tied[0]}"  # never NT
        legal = self.legal_cards(p)
        normal = [c for c in legal if not is_joker(c)]
        if normal:
            c = min(normal, key=lambda c: (rank_value(c), SUITS.index(suit(c))))
            return f"play:{c}"
        j = "X1" if "X1" in legal else "X2"
        return f"play:{j}:S" if not self.trick else f"play:{j}"

    # ------------------------------------------------------------------ for comparisons

    def columns_up(self, p: int) -> list[str]:
        return [col[1] for col in self.columns[p]]

    def record(self, seat: int | None) -> list[dict[str, Any]]:
        """The deal's record as ``seat`` sees it (None: public): the public events, plus the
        down cards the seat itself received (``moved_cards``, JJK-9.3)."""
        out = []
        for i, e in enumerate(self.events):
            e = dict(e)
            if seat is not None and e["seat"] == seat and i in self.private_moved:
                e["moved_cards"] = list(self.private_moved[i])
            out.append(e)
        return out
