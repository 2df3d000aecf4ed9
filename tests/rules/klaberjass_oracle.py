"""An independent, deliberately plain reference model of Klaberjass, written from the rulebook
(``shared/rules/klaberjass.md``) and NOTATION.md only, for differential tests of the engine.

It shares no code with ``engine_service.rules.games.klaberjass``: cards are code strings,
hands are sets, and every rule is spelled out the slow, obvious way with its rule id. Where the
rulebook leaves a decision to the engine (NOTATION 2.3: the words of option-specific actions;
the documented choices of docs/games/klaberjass.md) the model follows the engine's documented
choice, and says so.
"""

from __future__ import annotations

from typing import Any

SUITS = "SHDC"
NATURAL = "AKQJT987"  # KL-1.4
TRUMP_TRICK = "J9ATKQ87"  # KL-1.2, highest first
PLAIN_TRICK = "ATKQJ987"  # KL-1.3, highest first
PACK = [r + s for s in SUITS for r in NATURAL]

DEFAULTS: dict[str, Any] = {
    "kl_draw_order": "plain", "kl_draw_tie": "redraw", "kl_deal_first_to": "dealer",
    "kl_first_deal_packet": 3, "kl_dealer_rotation": "alternate", "kl_throw_in_redealer": "same",
    "kl_schmeiss": False, "kl_dix_requires_turnup_trump": False, "kl_dix_window": "melds_and_play",
    "kl_split_runs": False, "kl_sequence_compare": "value", "kl_winner_sequences": "all",
    "kl_bella_order": "queen_first", "kl_trump_kqj_bonus": True, "kl_must_overtrump": True,
    "kl_ten_value": 10, "kl_score_scope": "deal_total", "kl_target_score": 500,
    "kl_simultaneous_target": "higher_total", "kl_meld_declaration": "automatic",
    "kl_reveal_scored_melds": "summary", "kl_bella_announcement": "not_required",
}


def seq_points(length: int) -> int:
    """KL-5.3."""
    return 20 if length == 3 else 50


def runs_in_suit(hand: set[str], suit: str) -> list[list[str]]:
    """KL-5.2: maximal runs of adjacent cards (natural order) of length >= 3."""
    runs, cur = [], []
    for r in NATURAL:
        if r + suit in hand:
            cur.append(r + suit)
        else:
            if len(cur) >= 3:
                runs.append(cur)
            cur = []
    if len(cur) >= 3:
        runs.append(cur)
    return runs


def sequences_of(hand: set[str], split: bool) -> list[list[str]]:
    """KL-5.2 / kl_split_runs (KL-A10): the owner cuts a run of 6+ into two pieces of >= 3 when
    that scores more (engine's documented tie-break: the longest top piece)."""
    out = []
    for s in SUITS:
        for run in runs_in_suit(hand, s):
            best = [run]
            if split and len(run) >= 6:
                for cut in range(3, len(run) - 2):
                    cand = [run[:cut], run[cut:]]
                    pts = sum(seq_points(len(p)) for p in cand)
                    bpts = sum(seq_points(len(p)) for p in best)
                    if pts > bpts or (pts == bpts and len(cand[0]) > len(best[0])):
                        best = cand
            out.extend(best)
    return out


class Model:
    """A whole match (KL-2 .. KL-10). Seats are match seats; the elder is ``1 - dealer``."""

    def __init__(self, options: dict[str, Any] | None = None, first_dealer: int = 0) -> None:
        self.o = {**DEFAULTS, **(options or {})}
        self.dealer = first_dealer
        self.totals = [0, 0]
        self.results: list[dict[str, Any]] = []
        self.over = False
        self.winners: list[int] = []
        self.to_act: int | None = None  # None: a deck is due (or the match is over)

    # ---- dealing (KL-2.4 - KL-2.10) -------------------------------------------------------

    def deal(self, deck: list[str]) -> None:
        assert self.to_act is None and not self.over and sorted(deck) == sorted(PACK)
        o = self.o
        self.deck = list(deck)
        self.elder = 1 - self.dealer
        self.first = self.dealer if o["kl_deal_first_to"] == "dealer" else self.elder
        first, second = self.first, 1 - self.first
        self.hands: list[set[str]] = [set(), set()]
        if o["kl_first_deal_packet"] == 3:
            packets = [(0, 3, first), (3, 6, second), (6, 9, first), (9, 12, second)]
        else:
            packets = [(0, 2, first), (2, 4, second), (4, 6, first), (6, 8, second), (8, 10, first),
                       (10, 12, second)]
        for a, b, seat in packets:
            self.hands[seat].update(deck[a:b])
        self.turn_up = deck[12]  # KL-2.5
        self.slot = self.turn_up  # the face-up card beside the stock
        self.phase = "auction"
        self.astate = "R1_ELDER"
        self.schmeisser: int | None = None
        self.to_act = self.elder
        self.trump: str | None = None
        self.maker: int | None = None
        self.exchanged = False
        self.declared = [True, True]
        self.trick: list[tuple[int, str]] = []
        self.ntricks = 0
        self.card_points = [0, 0]
        self.played_order: list[list[str]] = [[], []]  # trump Q/K plays per seat, in order
        self.king_announced = [False, False]
        self.kqj = [0, 0]
        self.first_card_done = [False, False]

    def second_deal(self) -> None:
        """KL-2.8 (kl_deal_first_to applies here too), KL-2.9."""
        first, second = self.first, 1 - self.first
        d = self.deck
        self.hands[first].update([d[13], d[15], d[17]])
        self.hands[second].update([d[14], d[16], d[18]])
        self.info = d[31]

    # ---- legal actions ----------------------------------------------------------------------

    def dix(self) -> str:
        return "7" + self.trump

    def exchangeable_by(self, seat: int) -> bool:
        """KL-4.1, KL-4.4, KL-A8: the dix in ``seat``'s hand, no exchange yet, the turn-up is
        not itself the dix, and (option) the turn-up suit is trump."""
        if self.exchanged or self.dix() not in self.hands[seat] or self.turn_up == self.dix():
            return False
        if self.o["kl_dix_requires_turnup_trump"] and self.turn_up[1] != self.trump:
            return False
        return True

    def legal(self) -> set[str]:
        p = self.to_act
        if p is None:
            return set()
        o = self.o
        if self.phase == "auction":
            others = {"name:" + s for s in SUITS if s != self.turn_up[1]}  # KL-3.3
            st = self.astate
            if st in ("R1_ELDER", "R1_DEALER"):
                out = {"take", "pass"}
            elif st in ("R2_ELDER", "R2_DEALER"):
                out = others | {"pass"}
            elif st == "SCHMEISS_ANSWER":
                return {"accept", "refuse"}
            else:  # SCHMEISS_NAME
                return others
            if o["kl_schmeiss"]:
                out.add("schmeiss")
            return out
        if self.phase == "window":  # NOTATION 2.1
            return {"exchange", "keep"} if self.exchangeable_by(p) else {"keep"}
        if self.phase == "declare":  # KL-A20 (engine choice: both words for both seats)
            return {"declare", "conceal"}
        assert self.phase == "play"
        cards = self.legal_cards(p)
        out = {"play:" + c for c in cards}
        king = "K" + self.trump
        if o["kl_bella_announcement"] == "required" and king in cards:
            order = o["kl_bella_order"]
            queen = "Q" + self.trump
            played_q = queen in self.played_order[p]
            holds_q = queen in self.hands[p]
            if (order == "queen_first" and played_q) or (order == "king_first" and holds_q) or \
                    (order == "any" and (played_q or holds_q)):
                out.add("play:" + king + ":bella")
        if o["kl_dix_window"] == "melds_and_play" and self.exchangeable_by(p):
            out.add("exchange")  # KL-4.2 during trick play
        return out

    def trick_rank(self, card: str) -> int:
        order = TRUMP_TRICK if card[1] == self.trump else PLAIN_TRICK
        return 8 - order.index(card[0])

    def legal_cards(self, p: int) -> set[str]:
        """KL-6.9."""
        h = self.hands[p]
        if not self.trick:
            return set(h)
        led = self.trick[0][1]
        same = {c for c in h if c[1] == led[1]}
        if same:
            if led[1] == self.trump and self.o["kl_must_overtrump"]:
                higher = {c for c in same if self.trick_rank(c) > self.trick_rank(led)}
                if higher:
                    return higher
            return same
        trumps = {c for c in h if c[1] == self.trump}
        return trumps or set(h)

    # ---- applying ---------------------------------------------------------------------------

    def apply(self, action: str) -> None:
        assert action in self.legal(), (action, self.legal())
        p = self.to_act
        assert p is not None
        getattr(self, "_" + self.phase)(p, action)

    def _auction(self, p: int, a: str) -> None:
        st = self.astate
        if a == "pass":
            nxt = {"R1_ELDER": "R1_DEALER", "R1_DEALER": "R2_ELDER", "R2_ELDER": "R2_DEALER"}
            if st == "R2_DEALER":
                return self.throw_in()  # KL-3.5
            self.astate = nxt[st]
            self.to_act = 1 - p
        elif a == "take":
            self.end_auction(p, self.turn_up[1])
        elif a.startswith("name:"):
            self.end_auction(p, a[5])
        elif a == "schmeiss":  # KL-A7
            self.schmeisser = p
            self.round = 1 if st.startswith("R1") else 2
            self.astate = "SCHMEISS_ANSWER"
            self.to_act = 1 - p
        elif a == "accept":
            self.throw_in()
        elif a == "refuse":
            if self.round == 1:
                self.end_auction(self.schmeisser, self.turn_up[1])
            else:
                self.astate = "SCHMEISS_NAME"
                self.to_act = self.schmeisser

    def end_auction(self, maker: int, trump: str) -> None:
        self.maker, self.trump = maker, trump
        self.second_deal()
        self.phase = "window"
        self.to_act = self.elder  # KL-4.2: elder first

    def exchange(self, p: int) -> None:
        """KL-4.3."""
        self.hands[p].remove(self.dix())
        self.hands[p].add(self.turn_up)
        self.slot = self.dix()
        self.exchanged = True

    def _window(self, p: int, a: str) -> None:
        if a == "exchange":
            self.exchange(p)
        if p == self.elder:
            self.to_act = 1 - p
        elif self.o["kl_meld_declaration"] == "optional":
            self.phase = "declare"
            self.to_act = self.elder
        else:
            self.resolve_melds()

    def _declare(self, p: int, a: str) -> None:
        self.declared[p] = a == "declare"
        if p == self.elder:
            self.to_act = 1 - p
        else:
            self.resolve_melds()

    def seq_key(self, seq: list[str]) -> tuple:
        """KL-5.4 (kl_sequence_compare, KL-A11)."""
        primary = len(seq) if self.o["kl_sequence_compare"] == "length" else seq_points(len(seq))
        return (primary, -NATURAL.index(seq[0][0]), seq[0][1] == self.trump)

    def resolve_melds(self) -> None:
        """KL-4.5, KL-5.4 - KL-5.6."""
        split = self.o["kl_split_runs"]
        ranked = []
        for s in (0, 1):
            seqs = sequences_of(self.hands[s], split)
            # best first (KL-5.4); equal ones in suit order S H D C (KL-5.5 step 3 (D))
            seqs.sort(key=lambda q: ([-int(x) for x in self.seq_key(q)], SUITS.index(q[0][1])))
            ranked.append(seqs)
        best = [self.seq_key(ranked[s][0]) if ranked[s] and self.declared[s] else None for s in (0, 1)]
        self.meld_points = [0, 0]
        self.meld_scored: list[set[str]] = [set(), set()]
        self.meld_winner = None
        if best[0] != best[1]:
            if best[1] is None or (best[0] is not None and best[0] > best[1]):
                w = 0
            else:
                w = 1
            self.meld_winner = w
            won = ranked[w][:2] if self.o["kl_winner_sequences"] == "best_plus_one" else ranked[w]
            self.meld_points[w] = sum(seq_points(len(q)) for q in won)
            for q in won:
                self.meld_scored[w].update(q)
        self.phase = "play"
        self.to_act = self.elder  # KL-6.1

    def _play(self, p: int, a: str) -> None:
        if a == "exchange":
            self.exchange(p)  # does not end the turn
            return
        parts = a.split(":")
        card = parts[1]
        if not self.first_card_done[p]:  # KL-7.2: the hand at his first card
            self.first_card_done[p] = True
            self.kqj[p] = self.kqj_bonus(p)
        self.hands[p].remove(card)
        if card[1] == self.trump and card[0] in "KQ":
            self.played_order[p].append(card)
            if card[0] == "K" and len(parts) == 3:
                self.king_announced[p] = True
        self.trick.append((p, card))
        if len(self.trick) == 1:
            self.to_act = 1 - p
            return
        (lp, lc), (fp, fc) = self.trick
        if fc[1] == lc[1]:
            win = fp if self.trick_rank(fc) > self.trick_rank(lc) else lp  # KL-6.8
        else:
            win = fp if fc[1] == self.trump else lp
        self.ntricks += 1
        pts = self.value(lc) + self.value(fc) + (10 if self.ntricks == 9 else 0)  # KL-8.2, KL-7.3
        self.card_points[win] += pts
        self.trick = []
        if self.ntricks == 9:
            self.score_deal()
        else:
            self.to_act = win

    def value(self, card: str) -> int:
        """KL-8.1 (kl_ten_value)."""
        r = card[0]
        if card[1] == self.trump and r in "J9":
            return 20 if r == "J" else 14
        return {"A": 11, "T": self.o["kl_ten_value"], "K": 4, "Q": 3, "J": 2}.get(r, 0)

    def kqj_bonus(self, p: int) -> int:
        """KL-7.2 (engine's documented reading of "already scored": the scored meld cards
        include the trump K, Q and J)."""
        if not self.o["kl_trump_kqj_bonus"]:
            return 0
        need = {"K" + self.trump, "Q" + self.trump, "J" + self.trump}
        if not need <= self.hands[p] or need <= self.meld_scored[p]:
            return 0
        for run in runs_in_suit(self.hands[p], self.trump):
            if need <= set(run):
                return seq_points(len(run))
        raise AssertionError("K Q J are adjacent")

    def bella(self, p: int) -> int:
        """KL-7.1 (kl_bella_order, kl_bella_announcement)."""
        seq = [c[0] for c in self.played_order[p]]
        if len(seq) < 2:
            return 0
        order = self.o["kl_bella_order"]
        ok = order == "any" or (order == "queen_first" and seq == ["Q", "K"]) or \
            (order == "king_first" and seq == ["K", "Q"])
        if ok and self.o["kl_bella_announcement"] == "required" and not self.king_announced[p]:
            ok = False
        return 20 if ok else 0

    # ---- scoring and match end (KL-9, KL-10) ------------------------------------------------

    def throw_in(self) -> None:
        self.results.append({"thrown_in": True})
        if self.o["kl_throw_in_redealer"] == "other":
            self.dealer = 1 - self.dealer
        self.to_act = None

    def score_deal(self) -> None:
        m, op = self.maker, 1 - self.maker
        bonuses = [self.bella(s) + self.kqj[s] for s in (0, 1)]
        own = [self.meld_points[s] + bonuses[s] for s in (0, 1)]
        total = [own[s] + self.card_points[s] for s in (0, 1)]  # KL-9.1
        trick_scope = self.o["kl_score_scope"] == "trick_points"
        scored = [0, 0]
        if total[m] > total[op]:  # KL-9.2
            scored = total[:]
        elif total[m] == total[op]:  # KL-9.3
            scored[op] = total[op]
            scored[m] = own[m] if trick_scope else 0
        else:  # KL-9.4
            if trick_scope:
                scored[m] = own[m]
                scored[op] = own[op] + self.card_points[0] + self.card_points[1]
            else:
                scored[op] = total[0] + total[1]
        self.totals = [self.totals[0] + scored[0], self.totals[1] + scored[1]]
        self.results.append({"thrown_in": False, "trump": self.trump, "maker": m,
                             "melds": self.meld_points[:], "card_points": self.card_points[:],
                             "bonuses": bonuses, "scored": scored})
        self.to_act = None
        t = self.o["kl_target_score"]
        a, b = self.totals
        if a >= t and b >= t:  # KL-10.2
            if self.o["kl_simultaneous_target"] == "deal_winner":
                a, b = scored
            if a != b:
                self.winners = [0 if a > b else 1]
        elif a >= t or b >= t:
            self.winners = [0 if a >= t else 1]
        if self.winners:
            self.over = True
        elif self.o["kl_dealer_rotation"] == "alternate":  # KL-2.2
            self.dealer = 1 - self.dealer

    def result(self) -> dict[str, Any]:
        return {"totals": self.totals[:], "winners": self.winners[:], "over": self.over}

    # ---- NOTATION 5 ---------------------------------------------------------------------------

    def auto_move(self) -> str:
        legal = self.legal()
        for w in ("pass", "keep"):
            if w in legal:
                return w
        plays = [a for a in legal if a.startswith("play:") and a.count(":") == 1]
        if not plays:
            return sorted(legal)[0]

        def key(a: str):
            c = a[5:]
            return (c[1] == self.trump, self.trick_rank(c), SUITS.index(c[1]))
        return min(plays, key=key)
