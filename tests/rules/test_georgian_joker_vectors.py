"""Every Georgian Joker vector file (shared/rules/vectors/georgian_joker_*.json, schema
GJ-0.4) replayed field by field: deals through the real match state, single tricks, bidding,
scoring and pulka settlement through the rules the state runs on."""

from __future__ import annotations

import json
import re

import pytest

from engine_service.rules.cards import CODES, card_id, codes_of
from engine_service.rules.games.georgian_joker import rules as R
from engine_service.rules.games.georgian_joker.definition import OPTION_SPECS
from tests.shared_paths import vectors

from .checks_georgian_joker import GAME, STANDARD_N, deck_for, state_at_deal

VECTORS = vectors("georgian_joker")
BY_KIND: dict[str, list] = {}
for _name, _vec in VECTORS:
    BY_KIND.setdefault(_vec["kind"], []).append((_name, _vec))

STRAINS = ("S", "H", "D", "C", "NT")
RULE_OPTIONS = {s.name for s in OPTION_SPECS}


def test_every_vector_file_is_understood():
    """GJ-0.4: the common fields of every file, and no kind this test does not replay."""
    assert VECTORS
    for name, vec in VECTORS:
        assert vec["schema"] == "card-rules-vector/1", name
        assert vec["game"] == "georgian_joker", name
        assert name == f"georgian_joker_{vec['name']}.json"
        assert vec["kind"] in ("deal", "trick_cases", "bidding_cases", "scoring_cases", "pulka_settlement"), name
        assert vec["source"] and vec["rules"], name
        GAME.options(vec.get("table_options", {}))  # every option named is a real option
        assert set(vec.get("table_options", {})) <= RULE_OPTIONS


def play_action(play: dict, lead: bool) -> str:
    """The notation of a vector play (GJ-0.4 -> NOTATION 2)."""
    text = f"play:{play['card']}"
    if "joker_mode" in play:
        text += f":{play['joker_mode']}"
        if "named_suit" in play:
            text += f":{play['named_suit']}"
    assert ("named_suit" in play) == (lead and play["card"].startswith("X")), play
    return text


def legal_cards(state) -> set[str]:
    return {a.split(":")[1] for a in state.legal_actions()}


# ---- deals -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,vec", BY_KIND.get("deal", []), ids=[n for n, _ in BY_KIND.get("deal", [])])
def test_deal_vector(name, vec):
    """A whole deal through the match state: schedule position, dealing, trump, bids with the
    forbidden bid, every legal set, every trick winner, tricks and scores (GJ-2 .. GJ-7)."""
    opts = vec.get("table_options", {})
    k, dealer, n = vec["deal_number"], vec["dealer"], vec["cards_per_player"]
    assert len(vec["players"]) == 4
    state = state_at_deal(k, opts, first_dealer=(dealer - (k - 1)) % 4)
    assert state.dealer() == dealer
    hands = vec["hands"]
    state.deal(deck_for(hands, dealer, vec["trump_indicator"]))
    view = state.public_view()
    assert view["table"]["deal"] == k and view["table"]["pulka"] == vec["pulka"]
    assert view["table"]["cards_per_player"] == n
    assert view["table"]["forehand"] == (dealer + 1) % 4
    assert view["table"]["trump_indicator"] == vec["trump_indicator"]
    if vec["trump_chooser"] is not None:
        assert state.to_act() == vec["trump_chooser"] and n == 9
        state.apply(f"trump:{vec['trump']}", vec["trump_chooser"])
    for s in range(4):
        assert sorted(state.view(s)["hand"]) == sorted(hands[s])
    assert state.public_view()["table"]["trump"] == vec["trump"]
    for i, b in enumerate(vec["bids"]):
        assert state.to_act() == b["seat"] == ((dealer + 1 + i) % 4)
        if i == 3:
            assert state.public_view()["table"]["forbidden_bid"] == vec["expected_forbidden_bid"]
            assert [int(a[4:]) for a in state.legal_actions()] == vec["expected_legal_bids_last"]
        state.apply(f"bid:{b['bid']}", b["seat"])
    for t, trick in enumerate(vec["tricks"]):
        assert state.to_act() == trick["leader"], f"trick {t + 1}"
        for i, play in enumerate(trick["plays"]):
            seat = play["seat"]
            assert state.to_act() == seat
            expected = trick.get("expected_legal", {}).get(str(seat))
            if expected is not None:
                assert legal_cards(state) == set(expected), f"trick {t + 1} seat {seat}"
            state.apply(play_action(play, i == 0), seat)
        if t < len(vec["tricks"]) - 1:
            assert state.public_view()["last_trick"]["winner"] == trick["expected_winner"], f"trick {t + 1}"
            assert state.to_act() == trick["expected_winner"]
    result = state.deal_results()[-1]
    assert result["taken"] == vec["expected_tricks_taken"]
    assert result["scores"] == vec["expected_deal_scores"]
    assert result["bids"] == [next(b["bid"] for b in vec["bids"] if b["seat"] == s) for s in range(4)]
    assert result["trump"] == vec["trump"]


# ---- single tricks -----------------------------------------------------------------------------

TRICK_CASES = [(name, vec, case) for name, vec in BY_KIND.get("trick_cases", []) for case in vec["cases"]]


@pytest.mark.parametrize("name,vec,case", TRICK_CASES, ids=[f"{n}:{c['id']}" for n, _, c in TRICK_CASES])
def test_trick_case(name, vec, case):
    """GJ-5 legal sets of the seats whose hands are given, GJ-6 winner (under the case's
    options), with the functions the match state runs on."""
    opts = GAME.options({**vec.get("table_options", {}), **case.get("table_options", {})})
    trump = STRAINS.index(case["trump"])
    plays = case["plays"]
    lead = plays[0]
    lead_card = card_id(lead["card"])
    if lead_card >= 36:
        demand = "SHDC".index(lead["named_suit"])
        kind = R.HIGH_JOKER_LEAD if lead["joker_mode"] == "high" else R.LOW_JOKER_LEAD
    else:
        demand, kind = lead_card // 9, R.NORMAL_LEAD
    hands = {int(s): sum(1 << card_id(c) for c in h) for s, h in case.get("hands", {}).items()}
    for i, play in enumerate(plays):
        seat = play["seat"]
        assert seat == (plays[0]["seat"] + i) % 4
        play_action(play, i == 0)  # the play is well formed for its position
        if seat not in hands:
            continue
        legal = hands[seat] if i == 0 else R.follow_mask(hands[seat], demand, kind, trump)
        assert card_id(play["card"]) in set(c for c in range(38) if legal >> c & 1), f"{play} is illegal"
        expected = case.get("expected_legal", vec.get("expected_legal", {})).get(str(seat))
        if expected is not None:
            assert set(codes_of(legal)) == set(expected), f"seat {seat}"
    tuples = [(p["seat"], card_id(p["card"]), {"high": 0, "low": 1}.get(p.get("joker_mode"), -1),
               "SHDC".index(p["named_suit"]) if "named_suit" in p else -1) for p in plays]
    assert R.trick_winner(tuples, trump, opts["high_joker_lead_trumpable"]) == case["expected_winner"]


# ---- bidding -----------------------------------------------------------------------------------

BID_CASES = [(name, vec, case) for name, vec in BY_KIND.get("bidding_cases", []) for case in vec["cases"]]


@pytest.mark.parametrize("name,vec,case", BID_CASES, ids=[f"{n}:{c['id']}" for n, _, c in BID_CASES])
def test_bidding_case(name, vec, case):
    """GJ-4.3: the dealer's legal bids after three bids, in a real deal with that many cards."""
    n = case["cards_per_player"]
    assert R.forbidden_bid(n, case["previous_bids"]) == case["expected_forbidden"]
    opts = dict(vec.get("table_options", {}))
    if n == 9:
        opts["deal_schedule"] = "nines"
        state = GAME.new_state(opts, first_dealer=2)
    else:
        opts["deal_schedule"] = "standard"
        state = state_at_deal(STANDARD_N.index(n) + 1, opts, first_dealer=2)
    deck = list(GAME.pack)
    state.deal(deck)
    if n == 9:
        state.apply("trump:NT")
    for b in case["previous_bids"]:
        state.apply(f"bid:{b}")
    assert state.to_act() == state.dealer()
    assert state.public_view()["table"]["forbidden_bid"] == case["expected_forbidden"]
    assert [int(a[4:]) for a in state.legal_actions()] == case["expected_legal"]


# ---- scoring -----------------------------------------------------------------------------------

SCORE_CASES = [(name, vec, case) for name, vec in BY_KIND.get("scoring_cases", []) for case in vec["cases"]]


@pytest.mark.parametrize("name,vec,case", SCORE_CASES, ids=[f"{n}:{c['id']}" for n, _, c in SCORE_CASES])
def test_scoring_case(name, vec, case):
    """GJ-7.1 .. GJ-7.5 with the case's khishti penalty (default from the file's options)."""
    khishti = case.get("khishti_penalty", vec.get("table_options", {}).get("khishti_penalty", "200"))
    GAME.options({"khishti_penalty": khishti})
    assert R.deal_score(case["bid"], case["taken"], case["cards_per_player"], khishti) == case["expected_score"]


# ---- pulka settlement --------------------------------------------------------------------------

PULKA_SETS = [(name, vec, s) for name, vec in BY_KIND.get("pulka_settlement", []) for s in vec["sets"]]


@pytest.mark.parametrize("name,vec,pset", PULKA_SETS, ids=[f"{n}:{s['id']}" for n, _, s in PULKA_SETS])
def test_pulka_settlement(name, vec, pset):
    """GJ-8 premium and moshla under every option value of the set, from the deal scores of
    GJ-7; the deals' position in the schedule and their dealers (GJ-2.3, GJ-2.4)."""
    schedule = "standard"
    first = pset["first_dealer_of_match"]
    for deal in pset["deals"]:
        k = deal["deal_number"]
        assert R.PULKAS[schedule][k - 1] == pset["pulka"]
        assert R.SCHEDULES[schedule][k - 1] == deal["cards_per_player"]
        assert deal["dealer"] == (first + k - 1) % 4
        assert sum(deal["bids"]) != deal["cards_per_player"]
        assert sum(deal["taken"]) == deal["cards_per_player"]
        for khishti, expected in deal["expected_deal_scores_by_khishti"].items():
            assert [R.deal_score(b, t, deal["cards_per_player"], khishti)
                    for b, t in zip(deal["bids"], deal["taken"])] == expected, (k, khishti)
    numbers = [d["deal_number"] for d in pset["deals"]]
    assert numbers == [k for k in range(1, 25) if R.PULKAS[schedule][k - 1] == pset["pulka"]]
    # the dealers of those deals in a real match with that first dealer
    state = state_at_deal(numbers[0], {}, first_dealer=first)
    assert state.dealer() == pset["deals"][0]["dealer"]
    made = [[b == t for b, t in zip(d["bids"], d["taken"])] for d in pset["deals"]]
    for case in pset["cases"]:
        opts = GAME.options(case["table_options"])
        khishti = opts["khishti_penalty"]
        scores = [d["expected_deal_scores_by_khishti"][khishti] for d in pset["deals"]]
        qualifiers, premium, moshla = R.settle_pulka(scores, made, opts["pulka_premium"], opts["moshla"])
        if opts["pulka_premium"]:
            assert qualifiers == pset["expected_qualifiers"]
        assert premium == case["expected_premium"], case
        assert moshla == case["expected_moshla"], case
        totals = [sum(s[p] for s in scores) + premium[p] + moshla[p] for p in range(4)]
        assert totals == case["expected_pulka_total"], case


def test_vector_cards_are_real_cards():
    """Every card named in a vector is in the pack (GJ-1.1): no 6S, no 6C."""
    pack = {CODES[c] for c in GAME.pack}
    for name, vec in VECTORS:
        text = json.dumps(vec)
        for code in re.findall(r'"([AKQJT9876][SHDC]|X[12])"', text):
            assert code in pack, (name, code)
