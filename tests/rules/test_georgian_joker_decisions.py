"""The rulebook's own decisions (``georgian_joker.md`` section 14) that no test named by id:
GJ-A2, GJ-A3, GJ-A12, GJ-A13, GJ-A15, GJ-A16, GJ-A17, GJ-A18. One focused test (or more) per
decision, its id in the name and the docstring, each failing when the engine decides otherwise.
(The operational side of GJ-A16 is the session layer's: the timer and takeover tests of
``tests/sessions/test_operational_oracle.py`` name it too.)

Scripted deals are laid out as in ``test_georgian_joker_audit.py`` (``layout``: the hands as
written, dealt by GJ-3.2 / GJ-3.5); pulka scenarios are planned as in
``test_georgian_joker_trace.py`` (``planned_deal``).
"""

from __future__ import annotations

import json
import random

import pytest

from engine_service.rules import InvalidOptions, MalformedAction
from engine_service.rules.cards import card_id

from .checks_georgian_joker import GAME, check_scores
from .test_georgian_joker_audit import PACK, at_deal, bid_all, layout, play_deal_by_auto_move
from .test_georgian_joker_trace import miss, planned_deal


def audiences(state) -> list[dict]:
    return [state.public_view()] + [state.view(s) for s in range(4)]


# ---- GJ-A2 the premium is the best deal once more ---------------------------------------------------

def test_the_premium_is_the_qualifiers_best_deal_once_more_gj_a2():
    """GJ-A2 (GJ-8.2): a seat that makes every bid of a nines pulka receives ``+best(p)``, the
    highest of its four deal scores (not their sum, not a fixed bonus), as a separate entry:
    its deal scores stay as they were and its total is their sum plus that best deal."""
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=1)
    rng = random.Random(2)

    def bids_for(t):
        return [t[0], miss(t, 1), miss(t, 2), miss(t, 3)]

    results = [planned_deal(state, rng, bids_for) for _ in range(4)]
    own = [r["scores"][0] for r in results]
    assert all(r["bids"][0] == r["taken"][0] for r in results)
    assert len(set(own)) > 1  # the best deal is not just any deal
    assert results[-1]["premium"] == [max(own), 0, 0, 0]
    assert [r["scores"][0] for r in state.deal_results()] == own  # GJ-8.6: deal scores untouched
    assert state.result()["totals"][0] == sum(own) + max(own)
    check_scores(state)


# ---- GJ-A3 moshla "as a rule": every qualifier keeps its premium -----------------------------------

@pytest.mark.parametrize("moshla, applied", [("all_others", True), ("single_premium_only", False),
                                             ("off", False)])
def test_two_qualifiers_each_get_a_premium_and_only_the_others_moshla_gj_a3(moshla, applied):
    """GJ-A3 (GJ-8.2, GJ-8.3): with two qualifiers in one pulka each receives their own best deal
    again and never suffers moshla; the two others lose their best deal (floored at 0) under
    the literal default ``all_others``, but not under ``single_premium_only`` (exactly one
    qualifier needed) nor ``off``."""
    state = GAME.new_state({"deal_schedule": "nines", "moshla": moshla}, first_dealer=0)
    rng = random.Random(3)
    results = [planned_deal(state, rng, lambda t: [t[0], t[1], miss(t, 2), miss(t, 3)]) for _ in range(4)]
    best = [max(r["scores"][p] for r in results) for p in range(4)]
    settled = results[-1]
    assert settled["premium"] == [best[0], best[1], 0, 0]
    expected = [0, 0, -max(0, best[2]), -max(0, best[3])] if applied else [0, 0, 0, 0]
    assert settled["moshla"] == expected
    if applied:
        assert any(settled["moshla"][p] < 0 for p in (2, 3))
    check_scores(state)


# ---- GJ-A12 the dealing order replays a recorded permutation ---------------------------------------

@pytest.mark.parametrize("deal_number", range(1, 10))
def test_a_recorded_permutation_deals_exactly_one_way_gj_a12(deal_number):
    """GJ-A12 (GJ-3.2, GJ-3.3, GJ-3.5): for every hand size of the standard schedule (deals 1-9:
    n = 1 .. 9), ``deck[k]`` goes to seat ``(F + k) mod 4`` one card at a time from the forehand,
    the indicator is ``deck[4n]`` (the card after the last dealt card), and a nine-card deal
    continues the same rotation with ``deck[12 ..]`` after the trump choice."""
    state = at_deal(deal_number, first_dealer=deal_number % 4)
    n = state.public_view()["table"]["cards_per_player"]
    assert n == min(deal_number, 9)
    f = (state.dealer() + 1) % 4
    deck = random.Random(deal_number).sample(PACK, len(PACK))
    state.deal(deck)
    dealt = 4 * n if n <= 8 else 12
    for s in range(4):
        assert sorted(state.view(s)["hand"]) == sorted(deck[(s - f) % 4:dealt:4]), s
    table = state.public_view()["table"]
    if n <= 8:
        assert table["trump_indicator"] == deck[4 * n]
        expected = "NT" if deck[4 * n] in ("X1", "X2") else deck[4 * n][1]
        assert table["trump"] == expected
    else:
        assert table["trump_indicator"] is None and state.to_act() == f
        state.apply("trump:C")
        for s in range(4):
            assert sorted(state.view(s)["hand"]) == sorted(deck[(s - f) % 4::4]), s


# ---- GJ-A13 nothing of phase B before the trump is declared ----------------------------------------

def test_before_the_trump_choice_each_player_sees_only_their_three_cards_gj_a13():
    """GJ-A13 (GJ-3.6, GJ-11.3): in a nine-card deal every player sees their own three cards at
    once (the chooser too, and only those), no phase-B card reaches any view or counts as seen
    before the choice, and every player has their whole hand right after it."""
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=2)
    deck = random.Random(13).sample(PACK, len(PACK))
    state.deal(deck)
    f = 3
    phase_b = deck[12:]
    for s in range(4):
        assert sorted(state.view(s)["hand"]) == sorted(deck[(s - f) % 4:12:4])
    texts = json.dumps(audiences(state))
    assert not any(f'"{c}"' in texts for c in phase_b)
    for s in [None, 0, 1, 2, 3]:
        secret = state.secret_cards(s)
        assert all(secret >> card_id(c) & 1 for c in phase_b), s
    state.apply(GAME.auto_move(state.view(f)), f)
    assert all(len(state.view(s)["hand"]) == 9 for s in range(4))


# ---- GJ-A15 completed tricks stay public for the whole deal ----------------------------------------

def test_every_completed_trick_stays_public_until_the_deal_ends_gj_a15():
    """GJ-A15 (GJ-11.5): after each trick of an eight-card deal every audience (spectator and
    the four seats alike) sees all the deal's completed tricks so far, in order, each with its
    leader, plays (modes and named suits) and winner; a trick once shown never changes."""
    state = at_deal(8, first_dealer=1)
    state.deal(random.Random(15).sample(PACK, len(PACK)))
    seen: list[dict] = []
    while state.to_act() >= 0:
        views = audiences(state)
        tricks = views[0]["table"]["tricks"]
        assert all(v["table"]["tricks"] == tricks for v in views)
        assert tricks[:len(seen)] == seen and len(tricks) - len(seen) in (0, 1)
        if len(tricks) > len(seen):
            assert tricks[-1] == views[0]["last_trick"]
            assert len(tricks[-1]["plays"]) == 4
        seen = tricks
        state.apply(GAME.auto_move(state.view(state.to_act())))
    assert len(seen) == 7  # the eighth ends the deal; the views then show the next deal (choice 4)
    assert sum(state.deal_results()[-1]["taken"]) == 8


# ---- GJ-A16 the timer options ----------------------------------------------------------------------

@pytest.mark.parametrize("name, default, low, high", [("turn_time_s", 30, 10, 120),
                                                      ("reconnect_grace_s", 60, 15, 600)])
def test_the_operational_options_have_the_rulebooks_ranges_gj_a16(name, default, low, high):
    """GJ-A16 (GJ-12, GJ-13): timeouts and disconnections are governed by ``turn_time_s``
    (integer 10-120, default 30) and ``reconnect_grace_s`` (integer 15-600, default 60); a value
    outside the range or of another type is refused; neither changes the rules of play (one
    whole deal plays alike under both bounds)."""
    assert GAME.new_state().options[name] == default
    for bad in (low - 1, high + 1, float(default) + 0.5, str(default), True):
        with pytest.raises(InvalidOptions):
            GAME.new_state({name: bad})
    decks = random.Random(16).sample(PACK, len(PACK))
    finals = []
    for value in (low, high):
        state = GAME.new_state({name: value}, first_dealer=0)
        for _ in range(3):
            state.deal(decks)
            play_deal_by_auto_move(state)
        finals.append((state.deal_results(), state.result()))
    assert finals[0] == finals[1]


# ---- GJ-A17 trump after a high joker lead even though it cannot win -------------------------------

def test_a_player_void_in_the_named_suit_must_trump_a_high_joker_lead_gj_a17():
    """GJ-A17 (GJ-5.8): after ``play:X1:high:S`` in a diamond deal a player without spades but
    with diamonds may play only diamonds (any of them) or a joker, although no trump can beat
    the leading high joker; the joker then wins (GJ-6.1, default options)."""
    state = at_deal(4)  # n = 4, dealer 3, forehand 0
    state.deal(layout({0: "X1 7H 8H 9H", 1: "TD 6D AH AC", 2: "KS 7C 8C 9C", 3: "AS KD 7D JC"}, 3, "QD"))
    bid_all(state)
    state.apply("play:X1:high:S")
    assert set(state.legal_actions()) == {"play:TD", "play:6D"}
    state.apply("play:6D")
    assert set(state.legal_actions()) == {"play:KS"}
    state.apply("play:KS")
    assert set(state.legal_actions()) == {"play:AS"}  # its highest spade (GJ-5.4)
    state.apply("play:AS")
    assert state.public_view()["last_trick"]["winner"] == 0


# ---- GJ-A18 one joker_mode field for the four declarations ----------------------------------------

def test_one_mode_field_high_or_low_for_leading_and_following_jokers_gj_a18():
    """GJ-A18 (GJ-5.2, NOTATION 2): the four declarations of the seed are one mode, ``high`` or
    ``low``: a following joker is ``play:X1:high`` / ``play:X1:low`` (no suit), a leading joker
    adds the named suit, ``play:X1:high:S`` .. ``play:X1:low:C``; the views show ``joker_mode``
    (and ``named_suit`` on a lead). The seed's own words are not actions."""
    state = at_deal(4)
    state.deal(layout({0: "X1 7H 8H 9H", 1: "X2 6D AH AC", 2: "KS 7C 8C 9C", 3: "AS KD 7D JC"}, 3, "QD"))
    bid_all(state)
    assert [a for a in state.legal_actions() if "X1" in a] == [
        f"play:X1:{m}:{s}" for m in ("high", "low") for s in "SHDC"]
    for word in ("up", "down", "maghali", "tsaighos", "mojokvra", "gataneba", "take", "under", "HIGH"):
        with pytest.raises(MalformedAction):
            state.apply(f"play:X1:{word}:S")
    state.apply("play:X1:low:H")
    assert [a for a in state.legal_actions() if "X2" in a] == ["play:X2:high", "play:X2:low"]
    state.apply("play:X2:high")
    trick = state.public_view()["trick"]
    assert trick == [{"seat": 0, "card": "X1", "joker_mode": "low", "named_suit": "H"},
                     {"seat": 1, "card": "X2", "joker_mode": "high"}]
