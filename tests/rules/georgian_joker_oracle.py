"""An independent, deliberately plain reference model of Georgian Joker, written from the
rulebook (``shared/rules/georgian_joker.md``) and NOTATION.md only, for differential tests of
the engine (tests/rules/test_georgian_joker_oracle.py).

It shares no code with ``engine_service.rules.games.georgian_joker``: cards are code strings,
hands are sets, and every rule is spelled out the slow, obvious way with its rule id (GJ-x.y).
Where the rulebook leaves something to the engine, the model follows the engine's documented
choice (docs/games/georgian_joker.md), and says so here:

* Legal actions are compared as sets (NOTATION 2.4), so the engine's documented order (choice 1)
  does not matter to the model.
* The acting seat between deals is "chance" (a deck is due, ``deal(deck)``) and after the last
  deal "terminal"; ``dealer`` between deals is the dealer of the next deal and after the match
  the dealer of the last one (docs: "The match").
* A deal result is NOTATION 4's dict: ``trump``, ``bids``, ``taken``, ``scores`` and, after the
  last deal of a pulka only, ``premium`` and ``moshla`` (zeros where none, zeros throughout
  with ``pulka_premium = false``).
* ``result()`` is ``{"totals", "winners", "over"}``; ``winners`` stays empty until the match is
  over (NOTATION 3), then every seat sharing the highest total (GJ-9.3, GJ-A14).
"""

from __future__ import annotations

from typing import Any

SUITS = "SHDC"  # GJ-0.2
RANKS = "AKQJT9876"  # GJ-1.2, high to low
JOKERS = ("X1", "X2")  # GJ-0.2, GJ-1.4
# GJ-1.1: every rank 6..A in four suits, without 6S and 6C, plus the two jokers: 36 cards.
PACK = [r + s for s in SUITS for r in RANKS if r + s not in ("6S", "6C")] + list(JOKERS)
assert len(PACK) == 36

DEFAULTS: dict[str, Any] = {  # GJ-13
    "deal_schedule": "standard",
    "khishti_penalty": "200",
    "pulka_premium": True,
    "moshla": "all_others",
    "high_joker_lead_trumpable": False,
    "turn_time_s": 30,
    "reconnect_grace_s": 60,
}

CHANCE = "chance"
TERMINAL = "terminal"


def is_joker(card: str) -> bool:
    return card in JOKERS


def strength(card: str) -> int:
    """GJ-1.2: higher is better (A = 8 ... 6 = 0)."""
    return 8 - RANKS.index(card[0])


def schedule(deal_schedule: str) -> list[int]:
    """GJ-2.4 (standard) and GJ-2.5 (nines): n for every deal of the match."""
    if deal_schedule == "nines":
        return [9] * 16
    return [1, 2, 3, 4, 5, 6, 7, 8] + [9] * 4 + [8, 7, 6, 5, 4, 3, 2, 1] + [9] * 4


def pulkas(deal_schedule: str) -> list[range]:
    """GJ-2.4 / GJ-2.5: the 0-based deal indices of each of the four pulkas."""
    if deal_schedule == "nines":
        return [range(0, 4), range(4, 8), range(8, 12), range(12, 16)]  # deal k in pulka ceil(k/4)
    return [range(0, 8), range(8, 12), range(12, 20), range(20, 24)]


def deal_score(bid: int, taken: int, n: int, khishti: str) -> int:
    """GJ-7: the first matching line."""
    if taken == bid == n:  # GJ-7.1
        return 100 * n
    if taken == bid == 0:  # GJ-7.2
        return 50
    if taken == bid:  # GJ-7.3
        return 50 * (bid + 1)
    if bid >= 1 and taken == 0:  # GJ-7.4 khishti, GJ-A6
        if khishti == "200":
            return -200
        if khishti == "500":
            return -500
        assert khishti == "100_per_card"
        return -100 * n
    return 10 * taken  # GJ-7.5


def legal_cards(hand: set[str], trick: list[dict[str, Any]], trump: str) -> set[str]:
    """GJ-5.1 .. GJ-5.8: the cards of ``hand`` that may be played to ``trick`` (plays so far,
    each ``{"seat", "card", "mode", "named"}``). Jokers appear once; either mode is legal."""
    if not trick:
        return set(hand)  # GJ-5.1: the leader may lead any card
    lead = trick[0]
    # Demand suit: the lead's suit, or the named suit of a joker lead (section 5 definitions).
    # GJ-5.6: only the lead decides; later cards never change the obligations.
    if is_joker(lead["card"]):
        q = lead["named"]
        highest_rule = lead["mode"] == "high"  # GJ-5.4 (mode low: GJ-5.5 = GJ-5.3)
    else:
        q = lead["card"][1]
        highest_rule = False
    jokers = {c for c in hand if is_joker(c)}  # GJ-5.3 step 1: a joker is always legal
    q_cards = {c for c in hand if not is_joker(c) and c[1] == q}
    if q_cards:  # GJ-5.3 step 2
        if highest_rule:  # GJ-5.4: the single highest Q card (also when Q is the trump)
            top = max(q_cards, key=strength)
            return {top} | jokers
        return q_cards | jokers
    if trump != "NT":  # GJ-5.3 step 3 (GJ-5.8: even when the trump cannot win)
        trumps = {c for c in hand if not is_joker(c) and c[1] == trump}
        if trumps:
            return trumps | jokers
    return set(hand)  # GJ-5.3 step 4


def trick_winner(trick: list[dict[str, Any]], trump: str, trumpable: bool) -> int:
    """GJ-6.1 .. GJ-6.6, evaluated in order; the seat that wins the complete ``trick``."""
    assert len(trick) == 4
    lead = trick[0]
    q = lead["named"] if is_joker(lead["card"]) else lead["card"][1]
    highs = [p for p in trick if is_joker(p["card"]) and p["mode"] == "high"]
    normals = [p for p in trick if not is_joker(p["card"])]
    trumps = [p for p in normals if trump != "NT" and p["card"][1] == trump]
    if highs:
        # GJ-6.6 (option): a high joker lead naming Q != T (T != NT), no later high joker, at
        # least one normal trump played: the highest trump wins instead.
        if (trumpable and trump != "NT" and is_joker(lead["card"]) and lead["mode"] == "high"
                and q != trump and len(highs) == 1 and trumps):
            return max(trumps, key=lambda p: strength(p["card"]))["seat"]
        return highs[-1]["seat"]  # GJ-6.1: the last high joker
    # GJ-6.2: low jokers are ignored; the highest trump wins.
    if trumps:
        return max(trumps, key=lambda p: strength(p["card"]))["seat"]
    # GJ-6.3: the highest card of the demand suit; GJ-6.5: discards never win.
    qs = [p for p in normals if p["card"][1] == q]
    if qs:
        return max(qs, key=lambda p: strength(p["card"]))["seat"]
    return lead["seat"]  # GJ-6.4 (and GJ-A9: both jokers low)


class Model:
    """A whole match (GJ-2 .. GJ-9). ``to_act`` is a seat, CHANCE or TERMINAL."""

    def __init__(self, options: dict[str, Any] | None = None, first_dealer: int = 0) -> None:
        self.o = {**DEFAULTS, **(options or {})}
        self.schedule = schedule(self.o["deal_schedule"])
        self.pulkas = pulkas(self.o["deal_schedule"])
        self.dealer = first_dealer  # GJ-2.2: fixed from outside
        self.k = 0  # 0-based index of the current (or next) deal
        self.results: list[dict[str, Any]] = []
        self.totals = [0, 0, 0, 0]
        self.over = False
        self.to_act: int | str = CHANCE
        self.phase = "deal_setup"

    # ---- dealing (GJ-3) -----------------------------------------------------------------------

    def deal(self, deck: list[str]) -> None:
        assert self.to_act == CHANCE and sorted(deck) == sorted(PACK)
        self.deck = list(deck)
        self.n = n = self.schedule[self.k]
        self.forehand = f = (self.dealer + 1) % 4  # GJ-0.3
        self.hands: list[set[str]] = [set(), set(), set(), set()]
        self.bids: list[int | None] = [None] * 4
        self.taken = [0, 0, 0, 0]
        self.trick: list[dict[str, Any]] = []
        self.tricks: list[dict[str, Any]] = []  # completed tricks of the deal (GJ-11.5)
        self.tricks_done = 0
        if n <= 8:
            for k in range(4 * n):  # GJ-3.2: one card at a time from the forehand
                self.hands[(f + k) % 4].add(deck[k])
            self.indicator = deck[4 * n]  # GJ-3.3
            # GJ-3.3 / GJ-3.8: a joker indicator means no trump; GJ-3.4: the rest is the stock.
            self.trump = "NT" if is_joker(self.indicator) else self.indicator[1]
            self.start_bidding()
        else:
            self.indicator = None
            for k in range(12):  # GJ-3.5 phase A: three cards each
                self.hands[(f + k) % 4].add(deck[k])
            self.trump = None
            self.phase = "trump_choice"
            self.to_act = f  # GJ-2.7: the forehand chooses

    def start_bidding(self) -> None:
        self.phase = "bidding"  # GJ-4.1
        self.bid_index = 0
        self.to_act = self.forehand

    # ---- legal actions (NOTATION 2) -----------------------------------------------------------

    def legal(self) -> set[str]:
        if self.to_act in (CHANCE, TERMINAL):
            return set()
        p = self.to_act
        if self.phase == "trump_choice":  # GJ-3.5 step 2
            return {"trump:" + t for t in ("S", "H", "D", "C", "NT")}
        if self.phase == "bidding":
            n = self.n
            bids = set(range(n + 1))  # GJ-4.2
            if self.bid_index == 3:  # GJ-4.3: only the dealer is restricted
                s = sum(self.bids[(self.forehand + i) % 4] for i in range(3))
                if s <= n:
                    bids.discard(n - s)
            return {f"bid:{b}" for b in bids}
        assert self.phase == "playing"
        out = set()
        for c in legal_cards(self.hands[p], self.trick, self.trump):
            if not is_joker(c):
                out.add("play:" + c)
            elif not self.trick:  # GJ-5.2: a joker lead has a mode and a named suit (any of four, GJ-A8)
                out |= {f"play:{c}:{m}:{s}" for m in ("high", "low") for s in SUITS}
            else:  # GJ-5.2 / GJ-5.7: a following joker, either mode, no named suit
                out |= {f"play:{c}:high", f"play:{c}:low"}
        return out

    def auto_move(self) -> str:
        """GJ-12.2, the deterministic auto-move policy for the seat to act."""
        p = self.to_act
        assert isinstance(p, int)
        legal = self.legal()
        if self.phase == "trump_choice":
            # the suit with the most normal cards among the three; tie: the tied suit holding
            # the highest-ranked card; still tied: first of S H D C. Never NT.
            normal = [c for c in self.hands[p] if not is_joker(c)]
            def key(suit):
                cards = [c for c in normal if c[1] == suit]
                return (len(cards), max((strength(c) for c in cards), default=-1), -SUITS.index(suit))
            return "trump:" + max(SUITS, key=key)
        if self.phase == "bidding":  # the smallest legal bid
            return min(legal, key=lambda a: int(a[4:]))
        normals = [a for a in legal if not is_joker(a.split(":")[1])]
        if normals:  # lowest rank (natural order, docs choice 8), ties by suit S H D C
            return min(normals, key=lambda a: (strength(a[5:7]), SUITS.index(a[6])))
        joker = "X1" if "X1" in self.hands[p] else "X2"
        return f"play:{joker}:low:S" if not self.trick else f"play:{joker}:low"

    # ---- applying -----------------------------------------------------------------------------

    def apply(self, action: str) -> None:
        assert action in self.legal(), (action, sorted(self.legal()))
        p = self.to_act
        assert isinstance(p, int)
        if action.startswith("trump:"):
            self.trump = action[6:]
            f = self.forehand
            for k in range(12, 36):  # GJ-3.5 phase B, same rotation
                self.hands[(f + k) % 4].add(self.deck[k])
            self.start_bidding()
        elif action.startswith("bid:"):
            self.bids[p] = int(action[4:])
            self.bid_index += 1
            if self.bid_index < 4:
                self.to_act = (p + 1) % 4  # GJ-4.1: clockwise, dealer last
            else:
                self.phase = "playing"
                self.to_act = self.forehand  # GJ-5.9: the forehand leads trick 1
        else:
            parts = action.split(":")
            card = parts[1]
            play = {"seat": p, "card": card, "mode": parts[2] if len(parts) > 2 else None,
                    "named": parts[3] if len(parts) > 3 else None}
            self.hands[p].remove(card)
            self.trick.append(play)
            if len(self.trick) < 4:
                self.to_act = (p + 1) % 4
                return
            w = trick_winner(self.trick, self.trump, self.o["high_joker_lead_trumpable"])
            self.taken[w] += 1
            self.tricks.append({"leader": self.trick[0]["seat"], "plays": list(self.trick), "winner": w})
            self.trick = []
            self.tricks_done += 1
            if self.tricks_done < self.n:
                self.to_act = w  # GJ-5.9: the winner leads the next trick
            else:
                self.score_deal()

    # ---- scoring (GJ-7, GJ-8, GJ-9) -----------------------------------------------------------

    def score_deal(self) -> None:
        n = self.n
        scores = [deal_score(self.bids[p], self.taken[p], n, self.o["khishti_penalty"]) for p in range(4)]
        r: dict[str, Any] = {"trump": self.trump, "bids": list(self.bids), "taken": list(self.taken),
                             "scores": scores}
        self.results.append(r)  # GJ-7.7
        for p in range(4):
            self.totals[p] += scores[p]
        for pk in self.pulkas:
            if self.k == pk[-1]:  # GJ-8: once per pulka, after its last deal
                premium, moshla = self.settle(pk)
                r["premium"], r["moshla"] = premium, moshla
                for p in range(4):
                    self.totals[p] += premium[p] + moshla[p]  # GJ-9.2
        self.k += 1
        if self.k == len(self.schedule):  # GJ-9.1
            self.over = True
            self.to_act = TERMINAL
            self.phase = "match_over"
        else:
            self.dealer = (self.dealer + 1) % 4  # GJ-2.3, continuous over pulkas (GJ-A11)
            self.to_act = CHANCE
            self.phase = "deal_setup"

    def settle(self, pk: range) -> tuple[list[int], list[int]]:
        premium, moshla = [0] * 4, [0] * 4
        if not self.o["pulka_premium"]:  # GJ-8.4
            return premium, moshla
        deals = [self.results[i] for i in pk]
        # GJ-8.1 / GJ-7.6: made the bid in every deal of the pulka.
        qualifies = [all(d["bids"][p] == d["taken"][p] for d in deals) for p in range(4)]
        best = [max(d["scores"][p] for d in deals) for p in range(4)]  # deal scores only (GJ-8.6)
        count = sum(qualifies)
        for p in range(4):
            if qualifies[p]:
                premium[p] = best[p]  # GJ-8.2
        cond = {"all_others": count >= 1, "single_premium_only": count == 1, "off": False}[self.o["moshla"]]
        if cond:  # GJ-8.3 (GJ-8.5: nobody qualifies, nothing)
            for p in range(4):
                if not qualifies[p]:
                    moshla[p] = -max(0, best[p])  # GJ-A4: floored at 0
        return premium, moshla

    def result(self) -> dict[str, Any]:
        winners: list[int] = []
        if self.over:  # GJ-9.3: every seat sharing the highest total
            top = max(self.totals)
            winners = [p for p in range(4) if self.totals[p] == top]
        return {"totals": list(self.totals), "winners": winners, "over": self.over}
