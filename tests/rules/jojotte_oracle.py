"""A slow, literal Jo-Jotte referee written from shared/rules/jojotte.md and NOTATION.md alone.

It shares no code with the engine (no tables, no masks, no Config): cards are the rulebook's
codes, every rule is spelled out as the text states it, one function per rule id. The audit
tests (test_jojotte_audit.py) drive it and the engine side by side through random matches and
compare every legal set (NOTATION 2.2, 2.4: as sets), every deal result (NOTATION 4, exact JSON)
and the match result.

Every table option of section 11 is modelled except the draw for the first deal (not part of
a transcript: ``first_dealer`` fixes it). ``jj_meld_declaration = optional`` (JJ-A21) follows
the engine's documented steps (docs/games/jojotte.md, documented choices 4 and 5): defender
quartets, declarer quartets, defender sequences, declarer sequences, each ``declare`` or
``conceal``; a concealed category counts as holding none; the quartets are judged on the hands
held when the second quartet statement was made.
"""

from __future__ import annotations

SUITS = "SHDC"
NATURAL = "AKQJT987"  # JJ-1.4
TRUMP_ORDER = "J9ATKQ87"  # JJ-1.2
PLAIN_ORDER = "ATKQJ987"  # JJ-1.3

DEFAULTS = {
    "jj_first_deal_packet": 2, "jj_second_deal_packet": 3, "jj_info_card": "bottom",
    "jj_throw_in_redealer": "same", "jj_round1_calls": "accept_name_pass",
    "jj_round2_turnup_suit": "allowed", "jj_double_timing": "after_bid",
    "jj_seven_exchange": "any_seven_unless_both", "jj_exchange_window": "after_second_deal",
    "jj_slam_strain": "contract", "jj_nullo_strain": "no_trump", "jj_multiplier_scope": "trick_points",
    "jj_failed_slam": "opponent_500", "jj_first_lead": "contract_opponent", "jj_must_head_plain": True,
    "jj_trick_value": "max_card", "jj_outcome_basis": "all_points",
    "jj_defender_win_award": "two_best_tricks", "jj_tie_rule": "frozen_pot",
    "jj_pot_at_rubber_end": "lapse", "jj_premium_line": "above", "jj_nullo_penalty_negative": False,
    "jj_rubber_bonus_condition": "first_to_two", "jj_match_winner": "rubbers", "jj_match_rubbers": 1,
    "jj_overcall_accepted_turnup": True, "jj_unbid_slam_in_nullo": False, "jj_game_target": 80,
    "jj_nt_quartet_order": "plain", "jj_winner_sequences": "all", "jj_card_in_two_melds": True,
    "jj_split_runs": False, "jj_jojotte_announcement": "required",
    "jj_undoubled_scoring": "culbertson", "jj_scoresheet": "above_below", "jj_nullo_melds": False,
    "jj_simultaneous_game": "higher_total", "jj_partscore_reset": True,
    "jj_meld_declaration": "automatic",
}


def natural_sorted(cards):
    return sorted(cards, key=lambda c: (SUITS.index(c[1]), NATURAL.index(c[0])))


# ---- play rules --------------------------------------------------------------------------------

def beats(card, lead, trump):
    """JJ-6.6: does ``card``, played second, win the trick led with ``lead``?"""
    if card[1] == lead[1]:
        order = TRUMP_ORDER if lead[1] == trump else PLAIN_ORDER
        return order.index(card[0]) < order.index(lead[0])
    return card[1] == trump


def legal_cards(hand, lead, trump, head_plain):
    """JJ-6.8."""
    if lead is None:
        return list(hand)
    same = [c for c in hand if c[1] == lead[1]]
    if same:
        better = [c for c in same if beats(c, lead, trump)]
        if better and (lead[1] == trump or head_plain):
            return better
        return same
    trumps = [c for c in hand if c[1] == trump] if trump else []
    return trumps or list(hand)


def card_value(card, trump):
    """JJ-8.1."""
    if card[1] == trump and card[0] == "J":
        return 20
    if card[1] == trump and card[0] == "9":
        return 15
    return {"A": 10, "T": 10, "K": 5, "Q": 5}.get(card[0], 0)


def trick_value(lead, follow, winner_is_follower, trump, mode, last):
    """JJ-8.2 / JJ-A17, plus JJ-7.3's 10 for the ninth trick (the caller leaves it out in nullo)."""
    a, b = card_value(lead, trump), card_value(follow, trump)
    if mode == "max_card":
        v = max(a, b)
    elif mode == "sum":
        v = a + b
    else:
        v = b if winner_is_follower else a
    return v + (10 if last else 0)


# ---- melds (section 5) ----------------------------------------------------------------------------

def quartet_order(strain, o):
    """JJ-1.5 / JJ-A18: ranks that may form a quartet (JJ-5.1), best first."""
    if strain != "NT":
        return "J9ATKQ"
    return "AKQJT" if o["jj_nt_quartet_order"] == "natural" else "ATKQJ"


def quartets(hand, strain, o):
    """JJ-5.1: quartet ranks held, best first."""
    return [r for r in quartet_order(strain, o) if all(r + s in hand for s in SUITS)]


def sequences(hand, strain, o):
    """JJ-5.2: maximal runs of >= 3 in natural order, as (length, top index, is_trump, suit);
    with ``jj_split_runs`` a run is cut in two (>= 3 each) when that scores more (JJ-A20)."""
    out = []
    for s in SUITS:
        run = []
        for r in NATURAL + "-":
            if r != "-" and r + s in hand:
                run.append(r)
                continue
            n = len(run)
            if n >= 3:
                top = NATURAL.index(run[0])
                parts = [(n, top)]
                if o["jj_split_runs"]:
                    for k in range(3, n - 2):
                        if seq_points(k) + seq_points(n - k) > sum(seq_points(x) for x, _ in parts):
                            parts = [(max(k, n - k), top), (min(k, n - k), top + max(k, n - k))]
                out += [(x, t, s == strain, s) for x, t in parts]
            run = []
    return out


def seq_points(length):
    return 50 if length >= 5 else 40 if length == 4 else 20


def seq_key(q):
    """JJ-5.6's ranking: longer, then higher top, then trump."""
    return (q[0], -q[1], q[2])


def settle_melds(hands, strain, o, declared=((True, True), (True, True)), quartet_hands=None):
    """JJ-5.3 to JJ-5.7: meld points per seat. ``declared[seat] = (quartets, sequences)``:
    False where the seat concealed that category (JJ-A21: then it holds none)."""
    pts = [0, 0]
    hands = [list(hands[0]), list(hands[1])]
    qh = quartet_hands or hands
    q = [quartets(qh[s], strain, o) if declared[s][0] else [] for s in (0, 1)]
    order = quartet_order(strain, o)
    if q[0] or q[1]:
        w = 0 if not q[1] or (q[0] and order.index(q[0][0]) < order.index(q[1][0])) else 1
        pts[w] += 100 * len(q[w])
        if not o["jj_card_in_two_melds"]:
            hands[w] = [c for c in hands[w] if c[0] not in q[w]]
    s = [sorted(sequences(hands[x], strain, o), key=seq_key, reverse=True) if declared[x][1] else []
         for x in (0, 1)]
    winner = None
    if s[0] and not s[1]:
        winner = 0
    elif s[1] and not s[0]:
        winner = 1
    elif s[0] and s[1] and seq_key(s[0][0]) != seq_key(s[1][0]):
        winner = 0 if seq_key(s[0][0]) > seq_key(s[1][0]) else 1
    if winner is not None:
        scored = s[winner] if o["jj_winner_sequences"] == "all" else s[winner][:2]
        pts[winner] += sum(seq_points(x[0]) for x in scored)
    return pts


# ---- the match ---------------------------------------------------------------------------------

class OracleMatch:
    """One match: ``legal()`` (a set of notation strings) and ``apply(action)`` for the seat to
    act, ``deal(deck)`` when ``needs_deal``; ``results`` and ``result()`` as NOTATION 4 says."""

    def __init__(self, options=None, first_dealer=0):
        unknown = set(options or {}) - set(DEFAULTS)
        assert not unknown, f"the oracle does not model {unknown}"
        self.o = dict(DEFAULTS, **(options or {}))
        self.dealer = first_dealer
        self.results = []
        self.below = [0, 0]
        self.above = [0, 0]
        self.games = [0, 0]
        self.game_pts = [0, 0]
        self.rubber_games = [0, 0]
        self.rubber_seq = []
        self.rubber_sum = [0, 0]
        self.rubbers = [0, 0]
        self.rubber_totals = []
        self.pot = 0
        self.over = False
        self.winners = []
        self.needs_deal = True

    # -- dealing (JJ-2) --
    def deal(self, deck):
        assert self.needs_deal and len(deck) == 32 and len(set(deck)) == 32
        self.needs_deal = False
        self.deck = list(deck)
        nd, dl = 1 - self.dealer, self.dealer
        self.hands = {0: [], 1: []}
        p = self.o["jj_first_deal_packet"]
        i = 0
        while i < 12:  # JJ-2.4: non-dealer first, packets of p
            self.hands[nd] += deck[i:i + p]
            self.hands[dl] += deck[i + p:i + 2 * p]
            i += 2 * p
        self.turn_up = deck[12]  # JJ-2.5
        self.original_turn_up = deck[12]
        self.phase = "R1_ND"
        self.to_act = nd
        self.bidder = None
        self.strain = None
        self.mult = 1
        self.accepted = False
        self.exchanged = False
        self.exchanger = None
        self.offer = []
        self.late = None

    def turn_suit(self):
        return self.original_turn_up[1]

    # -- legal sets --
    def legal(self):
        ph = self.phase
        o = self.o
        t = self.turn_suit()
        if ph in ("R1_ND", "R1_D"):  # JJ-3.1 round 1
            out = {"accept", "pass"}
            if o["jj_round1_calls"] == "accept_name_pass":
                out |= {"name:" + s for s in SUITS if s != t}
            return out
        if ph in ("R2_ND", "R2_D"):  # JJ-3.1 round 2
            out = {"no_trump", "pass"}
            out |= {"name:" + s for s in SUITS
                    if s != t or o["jj_round2_turnup_suit"] == "allowed"}
            return out
        if ph == "RESP":  # JJ-3.1, JJ-3.2, JJ-3.3, JJ-A8, JJ-A36
            out = {"pass"}
            if o["jj_double_timing"] == "after_bid":
                out.add("double")
            if self.strain != "NT" and (not self.accepted or o["jj_overcall_accepted_turnup"]):
                out.add("no_trump")
            return out
        if ph == "REDBL":
            return {"redouble", "pass"}
        if ph == "LATE_DBL":
            return {"double", "pass"}
        if ph in ("EXCH_DEF", "EXCH_DECL"):  # NOTATION 2.2
            if self.to_act == self.exchanger and not self.exchanged:
                return {"exchange:" + c for c in self.offer} | {"no_exchange"}
            return {"no_exchange"}
        extra = set()
        if self.late == self.to_act and not self.exchanged:  # JJ-A10 until_first_lead
            extra = {"exchange:" + c for c in self.offer if c in self.hands[self.to_act]}
        if ph == "NULLO":
            return {"nullo", "pass"} | extra
        if ph == "MELD":
            return {"declare", "conceal"} | extra
        if ph == "SLAM":  # JJ-4.4
            out = {"slam:" + self.strain, "pass"}
            if self.strain != "NT" and o["jj_slam_strain"] == "suit_or_no_trump":
                out.add("slam:NT")
            return out | extra
        if ph == "PLAY":
            hand = self.hands[self.to_act]
            trump = None if self.play_strain == "NT" else self.play_strain
            cards = legal_cards(hand, self.lead, trump, o["jj_must_head_plain"])
            out = {"play:" + c for c in cards}
            if trump and self.kind != "nullo" and o["jj_jojotte_announcement"] == "required":
                k, q = "K" + trump, "Q" + trump
                if k in cards and q in hand:
                    out.add("play:" + k + ":jo")
                if q in cards and self.jo[self.to_act]:
                    out.add("play:" + q + ":jotte")
            return out | extra
        raise AssertionError(ph)

    # -- transitions --
    def apply(self, a):
        assert a in self.legal(), (a, self.legal())
        seat = self.to_act
        ph = self.phase
        if a.startswith("exchange:"):
            self._exchange(seat, a[9:])
            if ph not in ("EXCH_DEF", "EXCH_DECL"):
                return  # JJ-A10: the late exchange does not end the turn
        if ph in ("R1_ND", "R1_D", "R2_ND", "R2_D"):
            if a == "pass":
                nxt = {"R1_ND": "R1_D", "R1_D": "R2_ND", "R2_ND": "R2_D"}.get(ph)
                if nxt is None:  # JJ-3.6
                    self.results.append({"thrown_in": True})
                    if self.o["jj_throw_in_redealer"] == "other":
                        self.dealer = 1 - self.dealer
                    self.needs_deal = True
                    self.phase = None
                    return
                self.phase = nxt
                self.to_act = 1 - seat
                return
            strain = self.turn_suit() if a == "accept" else "NT" if a == "no_trump" else a[5:]
            self._bid(strain, seat, a == "accept")
        elif ph == "RESP":
            if a == "no_trump":
                self._bid("NT", seat, False)
            elif a == "double":
                self.mult = 2
                self.phase = "REDBL"
                self.to_act = self.bidder
            elif self.o["jj_double_timing"] == "after_bid":
                self._end_auction()
            else:
                self.phase = "LATE_DBL"
                self.to_act = 1 - self.bidder
        elif ph == "REDBL":
            if a == "redouble":
                self.mult = 4
            self._end_auction()
        elif ph == "LATE_DBL":
            if a == "double":
                self.mult = 2
                self.phase = "REDBL"
                self.to_act = self.bidder
            else:
                self._end_auction()
        elif ph == "EXCH_DEF":
            self.phase = "EXCH_DECL"
            self.to_act = self.declarer
        elif ph == "EXCH_DECL":
            self._nullo_window()
        elif ph == "NULLO":
            if a == "pass":
                self.kind = "normal"
                self.play_strain = self.strain
                self._meld_phase()
            else:
                self.phase = "SLAM"
                self.to_act = self.declarer
        elif ph == "SLAM":
            if a == "pass":
                self.kind = "nullo"
                self.play_strain = "NT" if self.o["jj_nullo_strain"] == "no_trump" else self.strain
            else:
                self.kind = "slam"
                self.play_strain = a[5:]
            self._meld_phase()
        elif ph == "MELD":  # JJ-A21: defender quartets, declarer quartets, then sequences
            cat = self.meld_step // 2
            self.declared[seat][cat] = a == "declare"
            self.meld_step += 1
            if self.meld_step == 2:
                self.quartet_hands = [list(self.hands[0]), list(self.hands[1])]
            if self.meld_step == 4:
                self.melds = settle_melds(self.hands, self.play_strain, self.o,
                                          self.declared, self.quartet_hands)
                self._start_play()
            else:
                self.to_act = 1 - seat
        elif ph == "PLAY":
            self._play(seat, a)

    def _bid(self, strain, seat, accepted):
        self.strain, self.bidder, self.mult, self.accepted = strain, seat, 1, accepted
        self.phase = "RESP"
        self.to_act = 1 - seat

    def _end_auction(self):
        """JJ-3.5, JJ-2.6, JJ-2.7, then the seven-exchange window of JJ-4.2 / NOTATION 2.2."""
        self.declarer = self.bidder
        nd, dl = 1 - self.dealer, self.dealer
        d = self.deck
        if self.o["jj_second_deal_packet"] == 3:
            self.hands[nd] += d[13:16]
            self.hands[dl] += d[16:19]
        else:
            for i in range(13, 19):
                self.hands[nd if i % 2 == 1 else dl].append(d[i])
        self.info = d[31] if self.o["jj_info_card"] == "bottom" else d[19]
        mode = self.o["jj_seven_exchange"]
        if mode != "none" and self.strain == self.turn_suit() and self.turn_up[0] != "7":
            if mode == "any_seven_unless_both":
                sevens = [[c for c in self.hands[s] if c[0] == "7"] for s in (0, 1)]
                if bool(sevens[0]) != bool(sevens[1]):
                    self.exchanger = 0 if sevens[0] else 1
                    self.offer = natural_sorted(sevens[self.exchanger])
            else:
                seven = "7" + self.strain
                for s in (0, 1):
                    if seven in self.hands[s]:
                        self.exchanger, self.offer = s, [seven]
            self.phase = "EXCH_DEF"
            self.to_act = 1 - self.declarer
        else:
            self._nullo_window()

    def _exchange(self, seat, seven):
        self.hands[seat].remove(seven)
        self.hands[seat].append(self.turn_up)
        self.turn_up = seven
        self.exchanged = True
        self.late = None

    def _nullo_window(self):
        if (self.o["jj_exchange_window"] == "until_first_lead" and self.exchanger is not None
                and not self.exchanged):
            self.late = self.exchanger
        self.phase = "NULLO"
        self.to_act = 1 - self.declarer

    def _meld_phase(self):
        """JJ-4.6: melds (none in nullo, JJ-5.10, JJ-A30), then trick play."""
        if self.kind == "nullo" and not self.o["jj_nullo_melds"]:
            self.melds = [0, 0]
            self._start_play()
        elif self.o["jj_meld_declaration"] == "optional":
            self.phase = "MELD"
            self.meld_step = 0
            self.declared = [[True, True], [True, True]]
            self.quartet_hands = None
            self.to_act = 1 - self.declarer  # JJ-5.4: the defender speaks first
        else:
            self.melds = settle_melds(self.hands, self.play_strain, self.o)
            self._start_play()

    def _start_play(self):
        self.jo = [False, False]
        self.jojotte = [0, 0]
        self.tricks = [0, 0]
        self.tp = [0, 0]
        self.values = [[], []]
        self.trick_no = 0
        self.lead = None
        self.phase = "PLAY"
        if self.o["jj_first_lead"] == "non_dealer":
            self.to_act = 1 - self.dealer
        elif self.kind == "nullo":  # JJ-6.1
            self.to_act = self.declarer
        else:
            self.to_act = 1 - self.declarer

    def _play(self, seat, a):
        parts = a.split(":")
        card = parts[1]
        if len(parts) == 3 and parts[2] == "jo":
            self.jo[seat] = True
        if len(parts) == 3 and parts[2] == "jotte":
            self.jojotte[seat] += 20
        trump = None if self.play_strain == "NT" else self.play_strain
        if (self.o["jj_jojotte_announcement"] == "automatic" and trump and self.kind != "nullo"):
            if card == "K" + trump and "Q" + trump in self.hands[seat]:
                self.jo[seat] = True  # JJ-A22: the king first, the queen still held
            elif card == "Q" + trump and self.jo[seat]:
                self.jojotte[seat] += 20
        self.hands[seat].remove(card)
        if self.late == seat:
            self.late = None
        if self.lead is None:
            self.lead, self.leader = card, seat
            self.to_act = 1 - seat
            return
        trump = None if self.play_strain == "NT" else self.play_strain
        follower_wins = beats(card, self.lead, trump)
        w = seat if follower_wins else self.leader
        self.trick_no += 1
        last = self.trick_no == 9 and self.kind != "nullo"
        v = trick_value(self.lead, card, follower_wins, trump, self.o["jj_trick_value"], last)
        self.tricks[w] += 1
        self.tp[w] += v
        self.values[w].append(v)
        self.lead = None
        self.to_act = w
        if self.trick_no == 9:
            self._score()

    # -- scoring (JJ-9, JJ-10) --
    def _score(self):
        o = self.o
        decl, dfd = self.declarer, 1 - self.declarer
        below, above = [0, 0], [0, 0]
        pm = self.mult if o["jj_multiplier_scope"] == "all" else 1
        one_column = o["jj_scoresheet"] == "single_column"  # JJ-A27: every entry counts

        def premium(seat, v):  # JJ-9.9, JJ-A28
            (below if o["jj_premium_line"] == "below" or one_column else above)[seat] += v

        def above_line(seat, v):
            (below if one_column else above)[seat] += v

        if self.kind == "nullo":  # JJ-9.7
            nullo_player = dfd
            k = self.tricks[nullo_player]
            if k == 0:
                premium(nullo_player, 200 * pm)
            else:
                pen = (200 + 100 * (k - 1)) * pm
                above_line(decl, pen)
                if o["jj_nullo_penalty_negative"]:  # JJ-A29
                    above_line(nullo_player, -pen)
            if o["jj_unbid_slam_in_nullo"]:
                for s in (0, 1):
                    if self.tricks[s] == 9:
                        premium(s, 100 * pm)
            if o["jj_nullo_melds"]:  # JJ-A30
                for s in (0, 1):
                    below[s] += self.melds[s]
            trick_points = [0, 0]
        else:
            trick_points = list(self.tp)
            for s in (0, 1):  # JJ-9.1
                below[s] += self.melds[s] + self.jojotte[s]
            if o["jj_outcome_basis"] == "all_points":  # JJ-9.2
                comp = [self.melds[s] + self.jojotte[s] + self.tp[s] for s in (0, 1)]
            else:
                comp = list(self.tp)
            winner = None if comp[0] == comp[1] else (0 if comp[0] > comp[1] else 1)
            both = self.tp[0] + self.tp[1]
            new_pot = self.pot
            if self.mult == 1 and o["jj_undoubled_scoring"] == "each_scores_own":  # JJ-A24
                below[0] += self.tp[0]
                below[1] += self.tp[1]
            elif self.mult == 1:  # JJ-9.3
                if winner == decl:
                    below[decl] += self.tp[decl]
                elif winner == dfd:
                    award = o["jj_defender_win_award"]
                    if award == "two_best_tricks":
                        below[dfd] += sum(sorted(self.values[dfd], reverse=True)[:2])
                    elif award == "both_trick_points":
                        below[dfd] += both
                    else:
                        below[dfd] += self.tp[dfd]
                elif o["jj_tie_rule"] == "frozen_pot":
                    new_pot += both
            else:  # JJ-9.4
                if winner is not None:
                    below[winner] += both * self.mult
                elif o["jj_tie_rule"] == "frozen_pot":
                    new_pot += both * self.mult
            if winner is not None and self.pot:  # JJ-9.5
                below[winner] += self.pot
                new_pot = 0
            self.pot = new_pot
            if self.kind == "slam":  # JJ-9.6
                if self.tricks[decl] == 9:
                    premium(decl, 500 * pm)
                elif o["jj_failed_slam"] == "opponent_500":
                    premium(dfd, 500 * pm)
                if self.tricks[dfd] == 9:  # JJ-7.4
                    premium(dfd, 100 * pm)
            else:
                for s in (0, 1):  # JJ-7.4, JJ-9.8
                    if self.tricks[s] == 9:
                        premium(s, 100 * pm)
        # JJ-10.1: game test after the deal is completely scored
        for s in (0, 1):
            self.game_pts[s] += below[s]
        t = o["jj_game_target"]
        g = self.game_pts
        gw = None
        if g[0] >= t and g[1] < t:
            gw = 0
        elif g[1] >= t and g[0] < t:
            gw = 1
        elif g[0] >= t and g[1] >= t:  # JJ-A32
            x = g if o["jj_simultaneous_game"] == "higher_total" else below
            if x[0] != x[1]:
                gw = 0 if x[0] > x[1] else 1
        rubber_over = False
        if gw is not None:
            self.games[gw] += 1
            self.rubber_games[gw] += 1
            self.rubber_seq.append(gw)
            if o["jj_partscore_reset"]:  # JJ-10.2
                self.game_pts = [0, 0]
            else:  # JJ-A33: the loser keeps his part-score
                self.game_pts[gw] = 0
            if self.rubber_games[gw] == 2:  # JJ-10.3
                rubber_over = True
                if (o["jj_rubber_bonus_condition"] == "first_to_two"
                        or self.rubber_seq[-2:] == [gw, gw]):
                    above_line(gw, 300)
        for s in (0, 1):
            self.below[s] += below[s]
            self.above[s] += above[s]
            self.rubber_sum[s] += below[s] + above[s]
        if rubber_over:
            self.rubbers[gw] += 1
            self.rubber_totals.append(list(self.rubber_sum))
            self.rubber_sum = [0, 0]
            self.rubber_games = [0, 0]
            self.rubber_seq = []
            self.game_pts = [0, 0]
            if o["jj_pot_at_rubber_end"] == "lapse":
                self.pot = 0
        holder = 1 - self.declarer if self.kind == "nullo" else self.declarer
        self.results.append({
            "thrown_in": False,
            "contract": {"kind": self.kind, "strain": self.play_strain, "holder": holder,
                         "multiplier": self.mult},
            "trick_points": trick_points,
            "below": below,
            "above": above,
            "pot": self.pot,
        })
        self.dealer = 1 - self.dealer  # JJ-2.2
        self.phase = None
        if rubber_over and len(self.rubber_totals) >= o["jj_match_rubbers"]:  # JJ-10.5
            self.over = True
            pts = [sum(t[s] for t in self.rubber_totals) for s in (0, 1)]
            if o["jj_match_winner"] == "rubbers" and self.rubbers[0] != self.rubbers[1]:
                self.winners = [0 if self.rubbers[0] > self.rubbers[1] else 1]
            elif pts[0] != pts[1]:
                self.winners = [0 if pts[0] > pts[1] else 1]
            else:
                self.winners = [0, 1]
        else:
            self.needs_deal = True

    def result(self):
        return {"totals": {"below": list(self.below), "above": list(self.above),
                           "games_won": list(self.games)},
                "winners": list(self.winners), "over": self.over}
