"""Japanese Joker heuristic (rulebook ``japanese_joker.md``), from the seat's view only.

Every trick counts the same (JJK-7.1: the margin of tricks scores), so the play is about
winning as many tricks as possible.

* **Trump choice** (JJK-3.3, three cards seen): the suit the three cards make strongest; no
  trump when they are scattered and low.
* **Follow** (JJK-5.3, JJK-6): win with the cheapest card that wins; a joker only when nothing
  else wins and the lead is worth spending it on (an ace or king, or a trump); otherwise give
  the cheapest card, preferring an up card of a column over the hand (playing a column brings
  its down card into the hand, JJK-4.2, and keeps the hand's cards hidden).
* **Lead**: masters first (no unseen card and no opponent up card can beat them, trumps
  counted); then a joker naming the suit where the opponent's highest available card is worth
  drawing out (JJK-5.4 forces its highest card of that suit); otherwise the lowest card of the
  suit in which we hold most cards, so the opponent's honours fall on our small cards.
"""

from __future__ import annotations

from typing import Any, Mapping

from engine_service.plugins import DecisionRequest

from .cards import SUITS, is_joker, rank, suit
from .georgian_joker import STRENGTH

ALL_NORMAL = [r + s for s in SUITS for r in "AKQJT9876" if r + s not in ("6S", "6C")]


def _card(action: str) -> str:
    return action.split(":")[1]


class JapaneseJokerHeuristic:
    def decide(self, request: DecisionRequest) -> str:
        view, legal = request.view, list(request.legal)
        if len(legal) == 1:
            return legal[0]
        if legal[0].startswith("trump:"):
            return self._trump(list(view["hand"]), legal)
        return self._play(view, legal)

    @staticmethod
    def _trump(hand: list[str], legal: list[str]) -> str:
        best, best_score = "trump:NT", 3.0 + sum(1 for c in hand if is_joker(c))
        for s in SUITS:
            cards = [c for c in hand if not is_joker(c) and suit(c) == s]
            score = 2.0 * len(cards) + sum(STRENGTH[rank(c)] for c in cards) / 3.0
            if cards and score > best_score:
                best, best_score = f"trump:{s}", score
        return best if best in legal else legal[0]

    def _play(self, view: Mapping[str, Any], legal: list[str]) -> str:
        table = view["table"]
        seat = view["seat"]
        trump = table.get("trump")
        t = None if trump in (None, "NT") else trump
        mine_up = set((table.get("columns_up") or [[], []])[seat])
        opp_up = list((table.get("columns_up") or [[], []])[1 - seat])
        played = set()
        for a in table.get("deal_actions") or []:
            act = a.get("action", "") if isinstance(a, dict) else a
            if act.startswith("play:"):
                played.add(act.split(":")[1])
        own = set(view["hand"]) | mine_up
        opp_known = set(opp_up) | set((table.get("known_in_hand") or [[], []])[1 - seat])
        unseen = [c for c in ALL_NORMAL if c not in played and c not in own]
        trick = view.get("trick") or []

        def cost(a: str) -> float:
            c = _card(a)
            if is_joker(c):
                return 40.0
            base = STRENGTH[rank(c)] + (12 if t and suit(c) == t else 0)
            return base - (0.5 if c in mine_up else 0.0)

        if trick:
            lead = trick[0]
            lc = lead["card"]
            winners = [a for a in legal if self._wins_as_follower(lead, _card(a), t)]
            normal_winners = [a for a in winners if not is_joker(_card(a))]
            if normal_winners:
                return min(normal_winners, key=cost)
            losers = [a for a in legal if a not in winners]
            joker_winners = [a for a in winners if is_joker(_card(a))]
            worth = is_joker(lc) or rank(lc) in "AK" or (t and suit(lc) == t)
            if joker_winners and (worth or not losers):
                return joker_winners[0]
            return min(losers or legal, key=cost)

        # leading
        def beatable(c: str) -> bool:
            pool = unseen + list(opp_known)
            if t and suit(c) != t and any(suit(u) == t for u in pool if not is_joker(u)):
                # the opponent may ruff only if void in the suit; count it a risk when it holds
                # no card of the suit among what we can see
                if not any(suit(u) == suit(c) for u in opp_known if not is_joker(u)):
                    return True
            return any(not is_joker(u) and suit(u) == suit(c) and STRENGTH[rank(u)] > STRENGTH[rank(c)]
                       for u in pool)

        normal = [a for a in legal if not is_joker(_card(a))]
        masters = [a for a in normal if not beatable(_card(a))]
        if masters:
            return max(masters, key=cost)
        jokers = [a for a in legal if is_joker(_card(a)) and a.count(":") == 2]
        if jokers:
            targets = [c for c in opp_up if not is_joker(c) and rank(c) in "AKQ" and (not t or suit(c) != t)]
            if targets:
                s = suit(max(targets, key=lambda c: STRENGTH[rank(c)]))
                named = [a for a in jokers if a.endswith(":" + s)]
                if named:
                    return named[0]
        if not normal:
            return legal[0]
        counts = {s: sum(1 for c in own if not is_joker(c) and suit(c) == s) for s in SUITS}
        plain = [a for a in normal if not (t and suit(_card(a)) == t)] or normal
        return min(plain, key=lambda a: (-counts[suit(_card(a))], cost(a)))

    @staticmethod
    def _wins_as_follower(lead: Mapping[str, Any], card: str, t: str | None) -> bool:
        """JJK-6.1 .. JJK-6.3."""
        lc = lead["card"]
        if is_joker(card):
            return True
        if is_joker(lc):
            q = lead.get("named_suit")
            return bool(t and q != t and suit(card) == t)
        if suit(card) == suit(lc):
            return STRENGTH[rank(card)] > STRENGTH[rank(lc)]
        return bool(t and suit(card) == t)


def make() -> JapaneseJokerHeuristic:
    return JapaneseJokerHeuristic()
