"""Rule-by-rule trace of the Georgian Joker rules no other test named (``georgian_joker.md``):
GJ-1.3, GJ-1.4, GJ-1.5, GJ-2.1, GJ-2.6, GJ-3.1, GJ-3.7, GJ-4.6, GJ-5.6, GJ-5.7, GJ-7.6,
GJ-7.7, GJ-8.5, GJ-9.2, GJ-9.4, GJ-10.1, GJ-10.2, GJ-11.4, GJ-12.5. One test (or more) per rule,
the rule id in its name and docstring; each fails when the engine (or, for GJ-3.1, GJ-9.4,
GJ-10.1, GJ-10.2 and GJ-12.5, the session layer) breaks the rule.

Scripted deals are laid out as in ``test_georgian_joker_audit.py`` (``layout``: the hands as
written, dealt by GJ-3.2 / GJ-3.5). Pulka scenarios are *planned*: the auto-move policy's card
play (GJ-12.2) does not look at the bids, so a deal is first played on a copy to learn who takes
how many tricks, then bid so that the chosen seats make or miss their bids.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from typing import Callable

import pytest

from engine_service.rules import CHANCE, TERMINAL, IllegalAction, MalformedAction, transcript

from .checks_georgian_joker import GAME, check_scores, snapshot
from .test_georgian_joker_audit import PACK, at_deal, bid_all, layout, play_deal_by_auto_move

VERBS = re.compile(r"(trump:(S|H|D|C|NT)|bid:\d|play:([AKQJT9876][SHDC]|X[12]:(high|low)(:[SHDC])?))")


def play(state, plays: str) -> None:
    """Apply ``plays`` (card codes, ``X1:high``, ``X1:low:S``) in order."""
    for p in plays.split():
        state.apply(f"play:{p}")


def legal_set(state) -> set[str]:
    return {a[5:] for a in state.legal_actions()}


def audiences(state) -> list[dict]:
    return [state.public_view()] + [state.view(s) for s in range(4)]


# ---- GJ-1.3 a joker has no suit and no rank ---------------------------------------------------------

def test_a_joker_is_no_card_of_any_suit_gj_1_3():
    """GJ-1.3: holding a joker never counts as holding the demand suit or a trump, so a player
    whose only "spade" would be a joker must trump (GJ-5.3 step 3), and one without spades or
    trumps may play anything; after a ``high`` joker lead the highest card of the named suit is a
    normal card, never the joker (it has no rank)."""
    state = at_deal(4)  # n = 4, dealer 3, forehand 0; indicator TD: diamonds are trump
    state.deal(layout({0: "7S 8H 9H TH", 1: "X1 9D 9C 8C", 2: "X2 7C 6H JH", 3: "AS QS KD 7D"}, 3, "TD"))
    bid_all(state)
    state.apply("play:7S")
    assert legal_set(state) == {"9D", "X1:high", "X1:low"}  # the joker is no spade: trump
    state.apply("play:9D")
    assert legal_set(state) == {"7C", "6H", "JH", "X2:high", "X2:low"}  # nor a trump: anything
    state2 = at_deal(4)
    state2.deal(layout({0: "X1 7S 8S 9S", 1: "X2 6H 7C AS", 2: "KH 9H 7D AC", 3: "QS JS TS 9C"}, 3, "TD"))
    bid_all(state2)
    state2.apply("play:X1:high:H")
    assert legal_set(state2) == {"6H", "X2:high", "X2:low"}  # its only heart is its highest (GJ-5.4)


@pytest.mark.parametrize("mode,winner", [("high", 1), ("low", 3)])
def test_what_a_joker_does_is_its_declaration_gj_1_3(mode, winner):
    """GJ-1.3: the same joker in the same trick wins when declared ``high`` and is ignored when
    declared ``low`` (GJ-6.1, GJ-6.2); the declaration is public with the play."""
    state = at_deal(4)
    state.deal(layout({0: "7S 8H 9H TH", 1: "X1 KS 9C 8C", 2: "8S 7H 7C 6H", 3: "AS QS 8D 7D"}, 3, "TD"))
    bid_all(state)
    play(state, f"7S X1:{mode} 8S AS")
    last = state.public_view()["last_trick"]
    assert last["plays"][1] == {"seat": 1, "card": "X1", "joker_mode": mode}
    assert last["winner"] == winner


# ---- GJ-1.4 / GJ-1.5 relabelling symmetries ---------------------------------------------------------

def relabel(code: str, mapping: dict[str, str]) -> str:
    """A card code with its suit (or joker label) renamed by ``mapping``."""
    if code in mapping:
        return mapping[code]
    if len(code) == 2 and code[1] in mapping:
        return code[0] + mapping[code[1]]
    return code


def relabel_action(action: str, mapping: dict[str, str]) -> str:
    parts = action.split(":")
    if parts[0] == "play":
        parts[1] = relabel(parts[1], mapping)
        if len(parts) == 4:
            parts[3] = mapping.get(parts[3], parts[3])
    elif parts[0] == "trump":
        parts[1] = mapping.get(parts[1], parts[1])
    return ":".join(parts)


def mirrored_deals(mapping: dict[str, str], options: dict, seeds) -> None:
    """Play deals twice with random legal actions, the second time with every card, trump and
    named suit renamed by ``mapping``: at every step the legal sets correspond and so do the
    results (trump renamed) and the trick winners."""
    rng = random.Random(7)
    for seed in seeds:
        a = GAME.new_state(options, first_dealer=seed % 4)
        b = GAME.new_state(options, first_dealer=seed % 4)
        for _ in range(seed % 3):  # a few deals in, so that n varies
            deck = rng.sample(PACK, len(PACK))
            a.deal(deck)
            b.deal([relabel(c, mapping) for c in deck])
            while a.to_act() >= 0:
                act = rng.choice(a.legal_actions())
                a.apply(act)
                b.apply(relabel_action(act, mapping))
        deck = rng.sample(PACK, len(PACK))
        n = a.public_view()["table"]["cards_per_player"]  # of the deal about to be dealt
        if seed % 4 == 0 and n <= 8:  # X2 as the trump indicator: no trump (GJ-3.3, GJ-3.8)
            deck.remove("X2")
            deck.insert(4 * n, "X2")
        a.deal(deck)
        b.deal([relabel(c, mapping) for c in deck])
        while a.to_act() >= 0:
            legal = a.legal_actions()
            assert {relabel_action(x, mapping) for x in legal} == set(b.legal_actions())
            assert b.to_act() == a.to_act()
            act = rng.choice(legal)
            a.apply(act)
            b.apply(relabel_action(act, mapping))
            ta, tb = a.public_view()["last_trick"], b.public_view()["last_trick"]
            assert (ta and ta["winner"]) == (tb and tb["winner"])
        ra, rb = a.deal_results()[-1], b.deal_results()[-1]
        assert rb == {**ra, "trump": mapping.get(ra["trump"], ra["trump"])}
        assert a.result() == b.result()


def test_x1_and_x2_are_interchangeable_in_every_deal_gj_1_4():
    """GJ-1.4: exchanging the labels X1 and X2 everywhere (deck, actions) changes nothing: the
    same legal sets (relabelled), trick winners, tricks, scores and totals, also when a joker
    is the indicator (GJ-3.3, GJ-3.8)."""
    mirrored_deals({"X1": "X2", "X2": "X1"}, {}, range(12))
    mirrored_deals({"X1": "X2", "X2": "X1"}, {"deal_schedule": "nines"}, range(6))


@pytest.mark.parametrize("mapping", [
    {"S": "C", "C": "S"}, {"H": "D", "D": "H"}, {"S": "C", "C": "S", "H": "D", "D": "H"},
], ids=["S<->C", "H<->D", "reversed"])
def test_suits_have_no_order_only_the_trump_is_privileged_gj_1_5(mapping):
    """GJ-1.5: renaming the suits (each swap keeps the pack, which lacks 6S and 6C; both swaps
    reverse the order S H D C) renames the trump and the named suits and changes nothing else:
    no suit outranks another, only the deal's trump is special. (The *order* of legal lists is
    notation, NOTATION 2.4; sets are compared.)"""
    mirrored_deals(mapping, {}, range(10))
    mirrored_deals(mapping, {"deal_schedule": "nines", "high_joker_lead_trumpable": True}, range(5))


def test_an_off_suit_ace_never_beats_the_lead_suit_gj_1_5():
    """GJ-1.5 / GJ-6.5: in a no-trump deal a card of the demand suit beats the aces of the three
    other suits, whichever suit is led."""
    for suit in "SHDC":
        lead = "7" + suit
        aces = ["A" + t for t in "SHDC" if t != suit]
        fillers = [c for c in PACK if c[1] != suit and c[0] in "KQJ"]
        hands = {0: " ".join([lead] + [c for c in PACK if c[1] == suit and c[0] in "KQJ"])}
        for seat, ace in zip((1, 2, 3), aces):
            hands[seat] = " ".join([ace] + fillers[3 * seat - 3:3 * seat])
        state = at_deal(4)
        state.deal(layout(hands, 3, "X1"))  # a joker indicator: no trump
        bid_all(state)
        for seat, card in enumerate([lead] + aces):
            state.apply(f"play:{card}", seat)
        assert state.public_view()["last_trick"]["winner"] == 0, suit


# ---- GJ-2.1 four players, each for themselves ----------------------------------------------------

def test_four_players_each_scoring_for_themselves_gj_2_1():
    """GJ-2.1: exactly four seats; every seat's deal score comes from its own bid and tricks
    only: opposite seats (partners in a partnership game) score apart, and tricks are counted
    per seat, never pooled."""
    assert GAME.num_seats == 4
    state = at_deal(4)
    assert len(state.public_view()["totals"]) == 4 and len(state.public_view()["hand_sizes"]) == 4
    before = state.result()["totals"]
    state.deal(layout({0: "AS KS 6H 7H", 1: "QS JS AH KH", 2: "9S 8S QH JH", 3: "7S TS 9H 8H"}, 3, "TD"))
    bid_all(state, [2, 0, 1, 2])
    play(state, "AS QS 9S 7S KS JS 8S TS 6H AH QH 9H KH JH 8H 7H")
    r = state.deal_results()[-1]
    # seat 0 makes 2 (150); seat 2, opposite, bid 1 and took none (khishti); seat 1 took two
    # tricks it did not bid (20); seat 3 bid 2 and took none
    assert r["taken"] == [2, 2, 0, 0] and r["scores"] == [150, 20, -200, -200]
    assert state.result()["totals"] == [t + s for t, s in zip(before, r["scores"])]


# ---- GJ-2.6 every seat deals equally often ----------------------------------------------------------

@pytest.mark.parametrize("schedule,times", [("standard", 6), ("nines", 4)])
def test_every_seat_deals_six_or_four_times_gj_2_6(schedule, times):
    """GJ-2.6: with ``standard`` each seat deals exactly 6 of the 24 deals, with ``nines``
    exactly 4 of the 16, whoever deals first."""
    rng = random.Random(26)
    for first in range(4):
        state = GAME.new_state({"deal_schedule": schedule}, first_dealer=first)
        dealers = []
        while state.to_act() != TERMINAL:
            if state.to_act() == CHANCE:
                dealers.append(state.dealer())
                state.deal(rng.sample(PACK, len(PACK)))
            else:
                state.apply_id(rng.choice(state.legal_ids()))
        assert Counter(dealers) == {s: times for s in range(4)}, (first, dealers)


# ---- GJ-3.7 the trump is public for the whole deal --------------------------------------------------

@pytest.mark.parametrize("options,deal", [({}, 5), ({}, 9), ({"deal_schedule": "nines"}, 1)])
def test_trump_and_indicator_stay_public_to_the_end_of_the_deal_gj_3_7(options, deal):
    """GJ-3.7: from the moment the trump is fixed (the indicator turned, or the forehand's
    choice) to the deal's last card, every audience sees it; in ``n <= 8`` deals the indicator
    card itself stays visible; the deal's result keeps the trump."""
    state = at_deal(deal, options)
    deck = random.Random(deal).sample(PACK, len(PACK))
    state.deal(deck)
    n = state.public_view()["table"]["cards_per_player"]
    expected = None
    if n <= 8:
        expected = ("NT" if deck[4 * n][0] == "X" else deck[4 * n][1], deck[4 * n])
    else:
        for v in audiences(state):
            assert v["table"]["trump"] is None and v["table"]["trump_indicator"] is None
        state.apply("trump:C")
        expected = ("C", None)
    steps = 0
    while state.to_act() >= 0:
        for v in audiences(state):
            assert (v["table"]["trump"], v["table"]["trump_indicator"]) == expected
        state.apply(GAME.auto_move(state.view(state.to_act())))
        steps += 1
    assert steps == 4 + 4 * n
    assert state.deal_results()[-1]["trump"] == expected[0]


# ---- GJ-4.6 bids are public at once ---------------------------------------------------------------

def test_every_accepted_bid_is_public_at_once_gj_4_6():
    """GJ-4.6: right after each bid every seat and a spectator see it (``table.bids`` by seat,
    ``table.deal_actions`` in order), before anybody else acts; a rejected bid shows nothing."""
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=1)  # dealer 1, forehand 2
    state.deal(random.Random(46).sample(PACK, len(PACK)))
    state.apply("trump:H")
    made: list = [None] * 4
    for i, (seat, b) in enumerate(((2, 3), (3, 0), (0, 4))):
        state.apply(f"bid:{b}", seat)
        made[seat] = b
        for v in audiences(state):
            assert v["table"]["bids"] == made
            assert v["table"]["deal_actions"][-1] == f"bid:{b}" and len(v["table"]["deal_actions"]) == 2 + i
    with pytest.raises(IllegalAction):
        state.apply("bid:2", 1)  # 3 + 0 + 4 + 2 = 9: forbidden (GJ-4.3)
    assert all(v["table"]["bids"] == made for v in audiences(state))
    state.apply("bid:1", 1)
    assert all(v["table"]["bids"] == [4, 1, 3, 0] for v in audiences(state))


# ---- GJ-5.6 obligations come from the lead alone ----------------------------------------------------

# (lead hands: seat 0 leads ``lead``; seats 1 and 2 each play one of their variants; seat 3's
# legal set must be the same after every combination). Deal 4, trump D (indicator TD).
OBLIGATION_CASES = {
    "normal_lead_follow_suit": (
        {0: "7S 8H 9H TH", 1: "X1 KS 9C 8C", 2: "X2 9D 7C 6H", 3: "AS QS 8D 7D"}, "7S",
        ("KS", "X1:high", "X1:low"), ("9D", "X2:high", "X2:low"), {"AS", "QS"}),
    "normal_lead_void_any_trump_even_below": (
        {0: "7S 8H 9H TH", 1: "X1 KS 9C 8C", 2: "X2 9D 7C 6H", 3: "8D 7D AC QC"}, "7S",
        ("KS", "X1:high", "X1:low"), ("9D", "X2:high", "X2:low"), {"8D", "7D"}),
    "high_joker_lead_highest_named_card": (
        {0: "X1 7S 8S 9S", 1: "X2 QH 7H AS", 2: "8D 7D AC KC", 3: "KH 9H 6H JS"}, "X1:high:H",
        ("QH", "X2:high", "X2:low"), ("8D", "7D"), {"KH"}),
    "high_joker_lead_void_must_trump": (
        {0: "X1 7S 8S 9S", 1: "X2 QH 7H AS", 2: "8D 7D AC KC", 3: "QC JC 9C 6D"}, "X1:high:H",
        ("QH", "X2:high", "X2:low"), ("8D", "7D"), {"6D"}),
    "low_joker_lead_any_named_card": (
        {0: "X1 7H 8H 9H", 1: "X2 KC 9C AS", 2: "AC 9D KS QS", 3: "QC 7C TS 8D"}, "X1:low:C",
        ("KC", "9C", "X2:high", "X2:low"), ("AC",), {"QC", "7C"}),
}


@pytest.mark.parametrize("case", list(OBLIGATION_CASES))
def test_obligations_depend_only_on_the_lead_gj_5_6(case):
    """GJ-5.6: what the fourth player must play depends on the lead (suit, or named suit and
    mode) and the trump only: a card of the demand suit, a trump, a ``high`` or ``low`` joker
    played in between never changes it (no obligation to overtrump, nor to beat a joker)."""
    hands, lead, second, third, expected = OBLIGATION_CASES[case]
    seen = []
    for p1 in second:
        for p2 in third:
            state = at_deal(4)
            state.deal(layout(hands, 3, "TD"))
            bid_all(state)
            play(state, f"{lead} {p1} {p2}")
            assert state.to_act() == 3
            seen.append(legal_set(state))
    assert all(s == expected for s in seen), seen


# ---- GJ-5.7 no obligation to win, to beat, to play a joker or a mode ------------------------------

def test_no_obligation_to_win_beat_or_play_a_joker_gj_5_7():
    """GJ-5.7: a follower may play a low card of the lead suit under a higher one it holds, may
    trump below a trump already played, may keep its joker for later, and may give its joker in
    either mode; the leader may lead its joker in either mode naming any suit."""
    state = at_deal(4)
    state.deal(layout({0: "KS 8H 9H TH", 1: "X1 AS 7S 9C", 2: "AD 6D AC KC", 3: "KD 7D QC JC"}, 3, "TD"))
    bid_all(state)
    state.apply("play:KS")
    assert legal_set(state) == {"AS", "7S", "X1:high", "X1:low"}  # AS would win: not required
    state.apply("play:7S")
    state.apply("play:AD")
    assert legal_set(state) == {"KD", "7D"}  # no need to overtrump the ace of trumps
    state.apply("play:7D")
    assert state.public_view()["last_trick"]["winner"] == 2
    # the leader's joker: both modes, all four suits named, and every normal card
    state = at_deal(4)
    state.deal(layout({0: "X1 AS 8H 9C", 1: "KS 7S 9H QC", 2: "AD 6D AC KC", 3: "KD 7D QH JC"}, 3, "TD"))
    bid_all(state)
    assert legal_set(state) == {"AS", "8H", "9C"} | {f"X1:{m}:{s}" for m in ("high", "low") for s in "SHDC"}
    # the only rank obligation is GJ-5.4's: after a low joker lead any card of the named suit
    state.apply("play:X1:low:S")
    assert legal_set(state) == {"KS", "7S"}


# ---- planned deals: who makes their bid (GJ-7.6, GJ-8) ----------------------------------------------

def planned_deal(state, rng: random.Random, bids_for: Callable[[list[int]], list[int] | None],
                 tries: int = 2000) -> dict:
    """Deal a random deck for which ``bids_for(taken)`` gives bids (None: try another deck),
    taken being the tricks of each seat when the auto-move policy plays the cards (GJ-12.2:
    independent of the bids); bid them and play the deal. Returns the deal's result."""
    for _ in range(tries):
        deck = rng.sample(PACK, len(PACK))
        trial = state.clone()
        trial.deal(deck)
        play_deal_by_auto_move(trial)
        taken = trial.deal_results()[-1]["taken"]
        bids = bids_for(taken)
        if bids is not None and sum(bids) != sum(taken):  # never the dealer's forbidden bid
            break
    else:
        raise AssertionError("no deck found")
    state.deal(deck)
    while state.to_act() >= 0:
        seat = state.to_act()
        view = state.view(seat)
        state.apply(f"bid:{bids[seat]}" if view["phase"] == "bidding" else GAME.auto_move(view), seat)
    result = state.deal_results()[-1]
    assert result["bids"] == bids and result["taken"] == taken
    return result


def miss(taken: list[int], seat: int) -> int:
    """A bid with which ``seat`` misses its ``taken`` tricks by one."""
    return taken[seat] + 1 if taken[seat] < sum(taken) else taken[seat] - 1


def test_made_means_exactly_the_bid_whatever_the_score_gj_7_6():
    """GJ-7.6: "made" is ``t = b``, and that is what the premium counts (GJ-8.1): seat 0 makes
    every bid of a nines pulka, one of them a pass taking nothing (50), and qualifies; seat 1
    makes three and takes one trick more than it bid in the other (10 per trick: a positive
    score, but not made), so it gets no premium and suffers moshla (GJ-8.3)."""
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=3)
    rng = random.Random(76)

    def plan(k: int):
        def bids_for(t):
            if k == 0 and t[0] != 0:
                return None  # seat 0's made pass
            if k == 1 and t[1] < 2:
                return None  # seat 1 overtakes by one, keeping a trick: 10 * t > 0
            return [t[0], t[1] - 1 if k == 1 else t[1], miss(t, 2), miss(t, 3)]
        return bids_for

    results = [planned_deal(state, rng, plan(k)) for k in range(4)]
    assert results[0]["scores"][0] == 50
    assert results[1]["scores"][1] == 10 * results[1]["taken"][1] > 0
    assert all(r["scores"][1] > 0 for r in results)
    best = [max(r["scores"][p] for r in results) for p in range(4)]
    settled = results[-1]
    assert settled["premium"] == [best[0], 0, 0, 0]
    assert settled["moshla"] == [0] + [-max(0, best[p]) for p in (1, 2, 3)]
    assert settled["moshla"][1] == -best[1] < 0
    check_scores(state)


@pytest.mark.parametrize("options", [{}, {"moshla": "single_premium_only"}, {"khishti_penalty": "500"}])
def test_nobody_qualifies_nothing_added_or_subtracted_gj_8_5(options):
    """GJ-8.5: in a nines pulka where each seat misses exactly one deal (and makes the three
    others), nobody qualifies: the settlement enters zeros for everybody (no premium, no
    moshla) and the totals are the deal scores alone."""
    state = GAME.new_state({"deal_schedule": "nines", **options}, first_dealer=0)
    rng = random.Random(85)
    results = [planned_deal(state, rng, lambda t, k=k: [miss(t, p) if p == k else t[p] for p in range(4)])
               for k in range(4)]
    for k, r in enumerate(results):
        assert [b == t for b, t in zip(r["bids"], r["taken"])] == [p != k for p in range(4)]
    assert all("premium" not in r for r in results[:3])
    assert results[-1]["premium"] == [0, 0, 0, 0] and results[-1]["moshla"] == [0, 0, 0, 0]
    assert state.result()["totals"] == [sum(r["scores"][p] for r in results) for p in range(4)]


# ---- GJ-7.7 scores are entered when the last trick is complete ------------------------------------

def test_deal_scores_are_entered_with_the_last_trick_gj_7_7():
    """GJ-7.7: before the deal's last card there is no entry; the card that completes the last
    trick enters the deal's scores at once (result, totals, every view), with no further action
    and before the next deal is dealt; after a pulka's last deal the premium and moshla come in
    the same moment (GJ-8)."""
    state = at_deal(2)  # n = 2, dealer 1, forehand 2
    assert state.dealer() == 1
    state.deal(layout({2: "AS KS", 3: "QS JS", 0: "TS 9S", 1: "8S 7S"}, 1, "AH"))
    scored = len(state.deal_results())
    totals = state.result()["totals"]
    for b in ("bid:2", "bid:0", "bid:0", "bid:1"):
        state.apply(b)
    play(state, "AS QS TS 8S KS JS 9S")
    assert len(state.deal_results()) == scored and state.result()["totals"] == totals
    assert all(v["totals"] == totals for v in audiences(state))
    state.apply("play:7S")
    assert len(state.deal_results()) == scored + 1 and state.to_act() == CHANCE
    scores = state.deal_results()[-1]["scores"]
    assert scores == [50, -200, 200, 50]  # seat 2 bid and took both; 0, 3 passed; 1 bid 1, took none
    assert state.result()["totals"] == [t + s for t, s in zip(totals, scores)]
    for v in audiences(state):
        assert v["deal_results"][-1]["scores"] == scores and v["totals"] == state.result()["totals"]
    # a pulka's last deal: the settlement is in the same result, at the same moment
    state = at_deal(4, {"deal_schedule": "nines"})
    state.deal(random.Random(77).sample(PACK, len(PACK)))
    while state.to_act() >= 0:
        table = state.public_view()["table"]
        last = len(table["tricks"]) == 8 and len(state.public_view()["trick"]) == 3
        state.apply(GAME.auto_move(state.view(state.to_act())))
        assert (len(state.deal_results()) == 4) == last
    r = state.deal_results()[-1]
    assert "premium" in r and "moshla" in r and state.to_act() == CHANCE


# ---- GJ-9.2 totals, GJ-9.4 no early end in the rules ------------------------------------------------

@pytest.mark.parametrize("options", [{"deal_schedule": "nines"}, {"moshla": "single_premium_only"}])
def test_totals_are_deal_scores_plus_premiums_plus_moshla_gj_9_2(options):
    """GJ-9.2: after every deal each seat's total (``result()`` and every view) is the sum of
    its deal scores, premiums and (negative) moshla entries so far; premiums and moshla occur
    in these matches."""
    rng = random.Random(92)
    state = GAME.new_state(options, first_dealer=2)
    seen = Counter()
    while state.to_act() != TERMINAL:
        if state.to_act() == CHANCE:
            results = state.deal_results()
            expected = [sum(r["scores"][p] + r.get("premium", [0] * 4)[p] + r.get("moshla", [0] * 4)[p]
                            for r in results) for p in range(4)]
            assert state.result()["totals"] == expected
            assert all(v["totals"] == expected for v in audiences(state))
            for r in results[-1:]:
                seen["premium"] += sum(1 for x in r.get("premium", []) if x)
                seen["moshla"] += sum(1 for x in r.get("moshla", []) if x)
            k = len(results)  # seat 0 makes every bid, seat 1 those of even deals only
            planned_deal(state, rng, lambda t: [t[0], miss(t, 1) if k % 2 else t[1], miss(t, 2), miss(t, 3)])
        else:  # pragma: no cover - planned_deal plays whole deals
            raise AssertionError(state)
    results = state.deal_results()
    assert state.result()["totals"] == [sum(r["scores"][p] + r.get("premium", [0] * 4)[p]
                                            + r.get("moshla", [0] * 4)[p] for r in results) for p in range(4)]
    assert seen["premium"] and seen["moshla"]


def test_the_rules_never_end_a_match_early_gj_9_4():
    """GJ-9.4 (with GJ-9.1): the rules themselves have no early end: whatever the totals (here
    one seat far ahead), the match is not over, nobody has won and a deck is due until the last
    scheduled deal is scored; the session's operational rules are the only other end (see
    test_operational_events_are_not_actions_gj_12_5_gj_9_4_gj_10_1_gj_10_2_gj_3_1)."""
    rng = random.Random(94)
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=0)
    for k in range(16):
        assert state.to_act() == CHANCE and not state.result()["over"] and state.result()["winners"] == []
        assert not state.public_view()["over"] and state.public_view()["winners"] == []
        # seat 0 makes every bid, the others never
        planned_deal(state, rng, lambda t: [t[0], miss(t, 1), miss(t, 2), miss(t, 3)])
    assert state.to_act() == TERMINAL and state.result()["over"] and state.result()["winners"] == [0]


# ---- GJ-10.1 internal states take no action ----------------------------------------------------------

def test_internal_states_take_no_player_action_gj_10_1():
    """GJ-10.1: dealing, trick resolution, deal scoring and pulka settlement are passed through
    without any player action: whenever a seat is to act its legal actions are decisions of the
    rulebook (trump, bid, card) only; the fourth card of a trick hands the next lead to its
    winner at once; the card that ends a deal leaves the state waiting for the next deck (a
    chance step, not a player) with the deal's result, and the settlement, published."""
    rng = random.Random(101)
    for options in ({}, {"deal_schedule": "nines"}):
        state = GAME.new_state(options, first_dealer=1)
        while state.to_act() != TERMINAL:
            if state.to_act() == CHANCE:
                assert state.public_view()["phase"] in ("deal_setup",)
                state.deal(rng.sample(PACK, len(PACK)))
                continue
            view = state.view(state.to_act())
            assert view["phase"] in ("trump_choice", "bidding", "playing") and view["legal"]
            assert all(VERBS.fullmatch(a) for a in view["legal"]), view["legal"]
            scored = len(state.deal_results())
            completes = view["phase"] == "playing" and len(view["trick"]) == 3
            state.apply(rng.choice(view["legal"]))
            if completes and len(state.deal_results()) == scored:  # a trick, not the deal
                winner = state.public_view()["last_trick"]["winner"]
                assert state.to_act() == winner and state.public_view()["phase"] == "playing"
                assert state.public_view()["trick"] == []
            elif completes:
                assert state.to_act() in (CHANCE, TERMINAL)
                assert state.public_view()["deal_results"][-1] == state.deal_results()[-1]
        assert len(state.deal_results()) == (24 if not options else 16)


def test_the_fast_path_takes_no_player_action_when_none_is_due_gj_10_1():
    """GJ-10.1 / GJ-9.1: while the state waits for the next deck and once the match is over no
    player action is due, so even the unvalidated fast path ``apply_id`` refuses one (a bid, a
    trump choice, a card) instead of recording it in the history, and nothing changes. Found by
    mutation testing: deleting that refusal in ``_apply`` survived."""
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=0)
    rng = random.Random(7)
    waits = 0
    while True:
        if state.to_act() in (CHANCE, TERMINAL):
            before = snapshot(state)
            for action in ("bid:0", "trump:S", "play:AS"):
                with pytest.raises(RuntimeError):
                    state.apply_id(state.parse_action(action))
            assert snapshot(state) == before
            waits += 1
            if state.to_act() == TERMINAL:
                break
            state.deal(rng.sample(PACK, len(PACK)))
        else:
            state.apply(GAME.auto_move(state.view(state.to_act())))
    assert waits == 17  # before each of the 16 deals and after the match


# ---- GJ-11.4 the timeline of what a player knows -----------------------------------------------------

def test_what_a_player_knows_moment_by_moment_in_a_nine_card_deal_gj_11_4():
    """GJ-11.4, row by row, for seat 3 in a nine-card deal (dealer 0, chooser 1): its three
    cards while the trump is chosen (public: dealer and chooser); its nine cards and the trump
    once fixed; the bids so far and the dealer's forbidden value while bidding; during play its
    remaining hand, its legal set only on its turn, every played card with mode and named suit,
    trick winners, counts and hand sizes; after the deal the scores, every card played."""
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=0)
    deck = random.Random(114).sample(PACK, len(PACK))
    state.deal(deck)
    me = 3
    v = state.view(me)
    assert sorted(v["hand"]) == sorted(deck[k] for k in range(12) if (1 + k) % 4 == me)
    assert v["dealer"] == 0 and v["table"]["trump_chooser"] == 1 and v["to_act"] == 1
    assert v["table"]["trump"] is None and v["legal"] == [] and v["hand_sizes"] == [3, 3, 3, 3]
    state.apply("trump:S")
    v = state.view(me)
    assert sorted(v["hand"]) == sorted(deck[k] for k in range(36) if (1 + k) % 4 == me)
    assert v["table"]["trump"] == "S" and v["table"]["bids"] == [None] * 4
    for seat, b in ((1, 2), (2, 3), (me, 1)):
        assert state.view(me)["table"]["forbidden_bid"] is None
        state.apply(f"bid:{b}", seat)
        assert state.view(me)["table"]["bids"][seat] == b
    assert state.view(me)["table"]["forbidden_bid"] == 3 and state.view(me)["legal"] == []
    state.apply("bid:0", 0)
    played = []
    while state.to_act() >= 0:
        seat = state.to_act()
        v = state.view(me)
        assert (v["legal"] != []) == (seat == me)
        assert len(v["hand"]) == v["hand_sizes"][me] == 9 - sum(1 for s, _ in played if s == me)
        shown = [p for t in v["table"]["tricks"] for p in t["plays"]] + v["trick"]
        assert [(p["seat"], p["card"]) for p in shown] == played
        assert all(("joker_mode" in p) == (p["card"][0] == "X") for p in shown)
        assert sum(v["tricks_taken"]) == len(v["table"]["tricks"])
        assert all("winner" in t for t in v["table"]["tricks"])
        assert all(("named_suit" in p) == (p["card"][0] == "X" and p is t["plays"][0])
                   for t in v["table"]["tricks"] for p in t["plays"])
        legal = state.view(seat)["legal"]
        jokers = [a for a in legal if a.startswith("play:X")]  # play the jokers early, to see them
        action = (jokers[0] if jokers else GAME.auto_move(state.view(seat)))
        state.apply(action)
        played.append((seat, action.split(":")[1]))
    v = state.view(me)
    assert v["deal_results"][-1]["scores"] and v["hand"] == [] and len(played) == 36
    assert {c for _, c in played} == set(PACK)  # every dealt card has been played


# ---- GJ-12.5 session events are not actions ------------------------------------------------------------

@pytest.mark.parametrize("text", ["resign", "leave", "timeout", "disconnect", "reconnect", "abandon",
                                  "pass", "play:timeout", "bid:auto"])
def test_session_events_are_no_actions_of_the_game_gj_12_5(text):
    """GJ-12.5: leaving, disconnection, reconnection and timeouts are no actions: none of them
    is notation of this game (the engine refuses them as malformed), so no legal list, log or
    transcript step can hold one (legal lists: test_internal_states_take_no_player_action_gj_10_1)."""
    with pytest.raises(MalformedAction):
        GAME.new_state({}).parse_action(text)


def test_operational_events_are_not_actions_gj_12_5_gj_9_4_gj_10_1_gj_10_2_gj_3_1():
    """Through the session layer, one nines match: a turn timeout (GJ-12.1), then every player
    leaves (GJ-12.4), the auto-move policy plays the seats to the end.

    * GJ-12.5: the timeout and the leaving are no steps of the match: the exported transcript's
      steps are exactly the accepted actions, ordinary notation, the auto-moves among them, and
      it checks out through the rules;
    * GJ-9.4: neither the timeout nor four departures end the match early: all 16 deals are
      played and scored (outcome ``completed``), the seats listed as abandoned;
    * GJ-10.1: no event asks anything of a player between deals: the action that ends a deal
      carries ``deal_scored`` and a view with the result, the next deal already dealt;
    * GJ-10.2: every event a spectator receives carries a sequence number that never goes back,
      each action exactly one more than the previous, from 1; replaying the match's actions
      from sequence 0 gives the same actions with the same numbers;
    * GJ-3.1: one fresh deck per deal, each a permutation of the 36 cards, from the server's
      CSPRNG, never in any player's or spectator's event."""
    import secrets

    from engine_service.sessions import chance
    from engine_service.sessions.api import Principal
    from tests.sessions.helpers import Stream, collect, config, manager, open_match, run, until

    assert isinstance(chance._csprng, secrets.SystemRandom)  # GJ-3.1: the OS CSPRNG

    async def go():
        # turn 10 s -> 0.1 s; streams that hold a whole match, a replay of it from seq 0
        cfg = config(time_scale=0.01, watcher_queue_size=100_000, snapshot_threshold=100_000)
        async with manager(cfg) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker",
                                            options={"deal_schedule": "nines", "turn_time_s": 10})
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in ps]
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: all(s.present for s in m.seats))
            await until(lambda: m.seq >= 1, timeout=30)  # the first decision timed out
            for seat in range(4):
                await mgr.leave_match(match_id, ps[seat], resign=False)
            await until(lambda: m.over, timeout=60)
            await until(lambda: spectator.task.done(), timeout=30)
            replayed = await collect(mgr.watch(match_id, Principal("spectator", match_id), 0))
            data = await mgr.export_transcript(match_id)
            inspection = await mgr.inspect_match(match_id)
            for s in streams:
                await s.close()
            await spectator.close()
            return spectator.events, replayed, data, list(m.actions), inspection, await mgr.get_match(match_id)

    events, replayed, data, records, inspection, summary = run(go(), timeout=120)
    # GJ-9.4
    assert summary.status == "finished" and summary.result["outcome"] == "completed"
    assert summary.result["abandoned"] == [0, 1, 2, 3] and len(data["deals"]) == 16
    assert data["result"]["over"] is True and summary.result["totals"] == data["result"]["totals"]
    # GJ-12.5
    steps = [step for deal in data["deals"] for step in deal["steps"]]
    assert [(s["seat"], s["action"]) for s in steps] == [(r.seat, r.action) for r in records]
    assert all(VERBS.fullmatch(s["action"]) for s in steps)
    assert (records[0].by, records[0].reason) == ("auto", "timeout")
    assert {r.by for r in records} == {"auto"}
    diff, _ = transcript.check(json.loads(transcript.dumps(data)))
    assert diff is None, str(diff)
    # GJ-10.2
    seqs = [e.seq for e in events if e.kind != "heartbeat"]
    assert seqs == sorted(seqs)
    actions = [e for e in events if e.kind == "action"]
    assert [e.seq for e in actions] == list(range(1, len(records) + 1))
    assert [(e.seq, e.seat, e.action) for e in replayed if e.kind == "action"] == \
        [(e.seq, e.seat, e.action) for e in actions]
    assert events[-1].kind == "match_ended" and events[-1].seq == len(records)
    # GJ-10.1
    ends = [e for e in actions if "deal_scored" in e.details]
    assert [e.details["deal_scored"] for e in ends] == list(range(16))
    for e in ends:
        view = e.view.view
        assert len(view["deal_results"]) == e.details["deal_scored"] + 1
        assert view["phase"] == ("trump_choice" if e.details["deal_scored"] < 15 else "match_over")
    # GJ-3.1
    decks = inspection.envelope.view["decks"]
    assert len(decks) == 16 and len({tuple(d) for d in decks}) == 16
    assert all(sorted(d) == sorted(PACK) for d in decks)
    assert [d["deck"] for d in data["deals"]] == decks
    for e in events:
        assert "decks" not in json.dumps(e.view.view if e.view else {})


def test_every_deck_is_a_fresh_uniform_permutation_from_the_csprng_gj_3_1():
    """GJ-3.1: the session's decks (``sessions.chance``) are permutations of the 36 cards drawn
    from the OS CSPRNG, a new one per call (no seed, nothing reproducible from earlier decks);
    where a given card lands is uniform over the 36 positions (a loose chi-square test)."""
    from engine_service.sessions import chance

    decks = [chance.random_deck(GAME) for _ in range(3600)]
    assert all(sorted(d) == sorted(PACK) for d in decks)
    assert len(set(decks)) == len(decks)
    where = Counter(d.index("X1") for d in decks)
    chi2 = sum((where[k] - 100) ** 2 / 100 for k in range(36))
    assert chi2 < 80, chi2  # 35 degrees of freedom: p < 1e-4 for a fair shuffle
    records = [chance.random_deck_record(GAME, k) for k in range(3)]
    assert [r.deal for r in records] == [0, 1, 2] and len({r.cards for r in records}) == 3
