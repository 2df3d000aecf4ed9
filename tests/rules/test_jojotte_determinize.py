"""Determinization (``JojotteGame.determinize(view, rng)``): samples agree with everything the
seat knows, never depend on what it does not know, and are uniform over consistent deals."""

from __future__ import annotations

import math
import random

import pytest

from engine_service.rules import CHANCE, TERMINAL
from engine_service.rules.cards import PACK32, card_code, card_id
from engine_service.rules.errors import InconsistentView

from .checks_jojotte import GAME, OPTION_SETS, act
from .playout import iter_states, random_match
from .test_jojotte_rules import EXCH_DEAL, JO_DEAL, PLAY_DEAL, deal, to_play

PACK_MASK = sum(1 << c for c in PACK32)


def play_out_deal(state, rng):
    """Random legal actions until the current deal is scored; the pack is conserved throughout."""
    n = len(state.deal_results())
    while len(state.deal_results()) == n and state.to_act() >= 0:
        z = state.zones()
        assert sum(z.values()) == PACK_MASK and all(a & b == 0 for a in z.values() for b in z.values() if a is not b)
        state.apply_id(rng.choice(state.legal_ids()))
    assert len(state.deal_results()) == n + 1 or state.to_act() == TERMINAL


@pytest.mark.parametrize("options", [{}] + OPTION_SETS, ids=lambda o: str(len(o)))
def test_samples_reproduce_the_view_and_play_on(options):
    rng = random.Random(11)
    checked = 0
    for seed in range(4):
        for i, state in enumerate(iter_states(GAME, 600 + seed, options)):
            if i % 4 or i > 200:
                continue
            seat = rng.choice((0, 1))
            view = state.view(seat)
            sample = GAME.determinize(view, random.Random(i))
            assert sample.view(seat) == view  # legal actions included
            assert sample.to_act() == state.to_act()
            assert sum(sample.zones().values()) == PACK_MASK
            # the seat's own cards and the public cards are where they are in the real state
            zs, zr = sample.zones(), state.zones()
            for zone in (f"hand{seat}", "turn_up", "info_card", "trick", "won0", "won1"):
                assert zs[zone] == zr[zone], zone
            play_out_deal(sample, rng)
            checked += 1
    assert checked > 40


def test_samples_depend_only_on_the_view():
    """Two states with the same view(seat) but different hidden cards give identical samples."""
    for state in iter_states(GAME, 77):
        if state.public_view()["phase"] == "play" and state.view(0)["tricks_taken"] != [0, 0]:
            break
    view = state.view(0)
    other = GAME.determinize(view, random.Random(1))
    while other.zones()["hand1"] == state.zones()["hand1"]:
        other = GAME.determinize(view, random.Random(random.random()))
    assert other.view(0) == view and other.zones()["hand1"] != state.zones()["hand1"]
    for seed in range(5):
        a = GAME.determinize(state.view(0), random.Random(seed))
        b = GAME.determinize(other.view(0), random.Random(seed))
        assert a.zones() == b.zones() and a._deck == b._deck


def test_spectator_views_are_refused():
    state = deal(**PLAY_DEAL)
    with pytest.raises(InconsistentView):
        GAME.determinize(state.public_view(), random.Random(0))


def test_a_view_without_a_seat_is_refused():
    """``Game.determinize``: InconsistentView for a view without a seat, not a KeyError
    (another game's seat view: tests/rules/test_invariants.py, for every pair of games)."""
    view = deal(**PLAY_DEAL).view(0)
    del view["seat"]
    with pytest.raises(InconsistentView):
        GAME.determinize(view, random.Random(0))


def test_between_deals_the_match_context_is_rebuilt():
    state = to_play(deal(**PLAY_DEAL), "accept", "pass")
    rng = random.Random(3)
    while state.to_act() != CHANCE:
        state.apply_id(rng.choice(state.legal_ids()))
    for seat in (0, 1):
        sample = GAME.determinize(state.view(seat), random.Random(0))
        assert sample.view(seat) == state.view(seat)
        assert sample.result() == state.result() and sample.deal_results() == state.deal_results()


def test_a_finished_match_is_rebuilt_over():
    """JJ-10.5: after the last deal the view says the match is over and who won; the sample of
    either seat is a finished match with the same winners, nobody to act."""
    state = random_match(GAME, 5)
    assert state.to_act() == TERMINAL
    for seat in (0, 1):
        sample = GAME.determinize(state.view(seat), random.Random(0))
        assert sample.view(seat) == state.view(seat)
        assert sample.to_act() == TERMINAL and sample.result() == state.result()


def _chi2_critical(df: int, z: float = 3.29) -> float:
    """Wilson-Hilferty upper quantile of chi-square (z = 3.29: p ~ 0.0005)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def test_unconstrained_unknown_cards_are_uniform():
    """At the nullo window seat 1 knows its 9 cards, the turn-up and the information card: each
    of the 21 other cards is in seat 0's hand with probability 9/21 (chi-square over the cards),
    and any given one lands in each of the 21 unknown places with probability 1/21."""
    state = deal(**PLAY_DEAL)
    act(state, "pass", "pass", "no_trump", "pass")  # seat 0 declares NT: no exchange window
    assert state.public_view()["phase"] == "nullo"
    view = state.view(1)
    known = {card_id(c) for c in view["hand"]} | {card_id("8S"), card_id("7C")}
    unknown = [c for c in PACK32 if c not in known]
    assert len(unknown) == 21
    n = 1500
    in_hand = {c: 0 for c in unknown}
    probe = unknown[0]
    positions: dict[int, int] = {}
    rng = random.Random(2024)
    for _ in range(n):
        s = GAME.determinize(view, rng)
        h0 = s.zones()["hand0"]
        for c in unknown:
            in_hand[c] += h0 >> c & 1
        pos = s._deck.index(probe)
        positions[pos] = positions.get(pos, 0) + 1
    expected = n * 9 / 21
    chi2 = sum((k - expected) ** 2 / expected + (k - expected) ** 2 / (n - expected) for k in in_hand.values())
    assert chi2 < _chi2_critical(len(unknown) - 1), chi2
    assert len(positions) == 21
    e = n / 21
    chi2 = sum((k - e) ** 2 / e for k in positions.values())
    assert chi2 < _chi2_critical(20), chi2


HEAD_DEAL = dict(nd=("JH", "AS", "KS", "AD", "KD", "QD"), nd2=("JD", "TD", "9D"),
                 dl=("9H", "8H", "AC", "KC", "JC", "9C"), dl2=("7C", "QS", "7D"), turn="7S", info="8S")


def test_could_not_beat_fact_excludes_the_higher_cards():
    """JJ-6.3: seat 1 follows seat 0's JH with the 9H; he would have had to beat it, so no
    sample gives him the AH, TH, KH or QH. (Control: before that trick some samples do.)"""
    state = to_play(deal(**HEAD_DEAL), "accept", "pass")
    act(state, "play:AC", "play:AS")  # seat 0 must trump the club lead, and leads next
    higher = [card_id(c) for c in ("AH", "TH", "KH", "QH")]
    rng = random.Random(8)
    before = state.view(0)
    assert any(any(GAME.determinize(before, rng).zones()["hand1"] >> c & 1 for c in higher) for _ in range(100))
    act(state, "play:JH", "play:9H")
    view = state.view(0)
    for _ in range(300):
        s = GAME.determinize(view, rng)
        assert s.view(0) == view
        assert not any(s.zones()["hand1"] >> c & 1 for c in higher)


def test_void_fact_excludes_the_suit():
    """Seat 1 discards a heart on the declarer's diamond lead at no-trump: no sample gives him
    an unseen diamond."""
    state = to_play(deal(**PLAY_DEAL), "pass", "pass", "no_trump", "pass")  # seat 0 declares NT
    act(state, "play:KH", "play:AH")  # seat 1 leads, seat 0 wins and leads next
    act(state, "play:AD")
    assert state.to_act() == 1 and not any(a.endswith("D") for a in state.legal_actions())
    act(state, "play:QH")
    view = state.view(0)
    diamonds = [card_id(c) for c in ("TD", "9D", "8D", "7D")]
    rng = random.Random(9)
    for _ in range(300):
        s = GAME.determinize(view, rng)
        assert not any(s.zones()["hand1"] >> c & 1 for c in diamonds)


def _void_in_three_suits_view():
    """Seat 0's view at no-trump with three cards each: seat 1 scored the run QH-JH-TH-9H
    (JJ-5.9) and showed no diamond, club or spade on those leads (JJ-6.4), so his one card
    besides QH and JH is a heart, and the only unseen heart is AH."""
    for i, state in enumerate(iter_states(GAME, 13)):
        if i == 16:
            break
    view = state.view(0)
    assert view["hand"] == ["AS", "KH", "7D"] and view["hand_sizes"] == [3, 3]
    assert view["table"]["contract"]["play_strain"] == "NT"
    assert [(t["plays"][0]["card"], t["plays"][1]["card"]) for t in view["table"]["tricks"]] == [
        ("AD", "8D"), ("JD", "8S"), ("JS", "QS"), ("7H", "8H"), ("7C", "9H"), ("KS", "TH")]
    return state, view


def test_voids_that_leave_exactly_his_unknown_cards_deal_him_those_cards():
    """JJ-6.4, JJ-5.9: when the facts leave exactly as many cards as the opponent's unknown
    places (here one, AH), every sample deals him exactly those: the view is consistent (it is
    the real one), not refused for want of choice."""
    state, view = _void_in_three_suits_view()
    rng = random.Random(0)
    for _ in range(3):
        sample = GAME.determinize(view, rng)
        assert sample.view(0) == view
        assert sample.zones()["hand1"] == state.zones()["hand1"] == sum(1 << card_id(c) for c in ("AH", "QH", "JH"))


def test_an_edited_hand_taking_his_only_possible_card_is_refused():
    """The view of the test above edited so that seat 0 holds AH instead of 7D: no unseen card
    fits seat 1's third place (7D is a diamond, JJ-6.4), one place short: InconsistentView, not
    some other error."""
    _, view = _void_in_three_suits_view()
    view["hand"] = ["AS", "KH", "AH"]
    with pytest.raises(InconsistentView):
        GAME.determinize(view, random.Random(0))


def test_exchange_offer_tells_whether_the_opponent_holds_a_seven():
    """Under ``any_seven_unless_both`` a seat holding a seven that is not offered the exchange
    knows the opponent holds one too; one that is offered it knows he holds none."""
    layout = dict(EXCH_DEAL, dl2=("QC", "JC", "7C"))  # both hold sevens
    state = deal(**layout)
    act(state, "accept", "pass", "no_exchange")
    view = state.view(0)
    assert view["table"]["exchange_offer"] == ["no_exchange"]
    sevens = [card_id(c) for c in ("7H", "7D", "7C")]
    rng = random.Random(4)
    for _ in range(100):
        s = GAME.determinize(view, rng)
        assert any(s.zones()["hand1"] >> c & 1 for c in sevens)
    state = deal(**EXCH_DEAL)  # only seat 0 holds a seven
    act(state, "accept", "pass", "no_exchange")
    view = state.view(0)
    assert view["table"]["exchange_offer"] == ["exchange:7S", "no_exchange"]
    for _ in range(100):
        s = GAME.determinize(view, rng)
        assert not any(s.zones()["hand1"] >> c & 1 for c in sevens)


def test_samples_along_a_whole_match_reproduce_the_view():
    """Views from every phase of one match (every fifth decision), five samples each: each is
    found (no InconsistentView after MAX_TRIES proposals) and reproduces the view. Their cost
    is a benchmark figure (``bench/rules_playouts.py``, "determinize ms"), not a test."""
    views = []
    for i, state in enumerate(iter_states(GAME, 901)):
        if i % 5 == 0:
            views.append(state.view(state.to_act()))
        if len(views) == 60:
            break
    rng = random.Random(0)
    for view in views:
        for _ in range(5):
            assert GAME.determinize(view, rng).view(view["seat"]) == view


def test_every_unknown_card_can_be_dealt_to_the_opponent_the_ace_of_spades_too():
    """At the nullo window seat 0 knows its 9 cards, the turn-up and the information card; the
    AS (card id 0) is one of the 21 it does not see, in seat 1's hand with probability 9/21
    like any other (JJ-2.3: a uniformly random deck), and each of them turns up there."""
    state = deal(**PLAY_DEAL)
    act(state, "pass", "pass", "no_trump", "pass")  # seat 0 declares NT: no exchange window
    view = state.view(0)
    known = {card_id(c) for c in view["hand"]} | {card_id("8S"), card_id("7C")}
    unknown = [c for c in PACK32 if c not in known]
    assert len(unknown) == 21 and card_id("AS") in unknown
    rng = random.Random(11)
    counts = {c: 0 for c in unknown}
    for _ in range(300):
        h1 = GAME.determinize(view, rng).zones()["hand1"]
        for c in unknown:
            counts[c] += h1 >> c & 1
    assert all(80 <= k <= 180 for k in counts.values()), counts  # 300 * 9 / 21 = 129


def test_trump_seven_exchange_offer_leaves_the_opponents_other_sevens_open():
    """``jj_seven_exchange = trump_seven`` (JJ-4.2, JJ-A9): being offered the exchange says
    only that the seat holds the seven of trumps; the both-hold clause does not apply, so the
    opponent may still hold any of the other three sevens, and samples give him one."""
    layout = dict(EXCH_DEAL, nd=("AS", "KS", "7H", "AD", "KD", "QD"))  # hearts trump: 7H
    state = deal(options={"jj_seven_exchange": "trump_seven"}, **layout)
    act(state, "accept", "pass", "no_exchange")
    view = state.view(0)
    assert view["table"]["exchange_offer"] == ["exchange:7H", "no_exchange"]
    others = [card_id(c) for c in ("7S", "7D", "7C")]
    rng = random.Random(5)
    hands = [GAME.determinize(view, rng).zones()["hand1"] for _ in range(100)]
    assert any(h >> c & 1 for h in hands for c in others)


def test_the_meld_check_of_a_sample_counts_the_exchanged_turn_up():
    """JJ-4.2, JJ-5.9: seat 0 exchanges 7C for the turn-up QH, which completes his trump run
    K-Q-J of hearts and breaks his 9-8-7 of clubs; in play, seat 1's samples reproduce the meld
    dialogue of the hand he held when the melds were stated (QH in it, 7C out): some give him
    the 9C and 8C, as in the real deal, which beside the 7C would have made a second run."""
    layout = dict(nd=("KH", "JH", "7C", "8C", "9C", "AD"), nd2=("TS", "8D", "9S"),
                  dl=("AH", "TH", "AC", "QC", "JC", "8S"), dl2=("TD", "KS", "8H"), turn="QH", info="JS")
    state = deal(**layout)
    act(state, "accept", "pass", "no_exchange", "exchange:7C", "pass")
    view = state.view(1)
    assert view["phase"] == "play" and view["table"]["exchange"]["seven"] == "7C"
    assert {"seat": 0, "say": "not_good 3"} in view["table"]["melds"]["dialogue"]
    rng = random.Random(3)
    clubs = (1 << card_id("9C")) | (1 << card_id("8C"))
    samples = [GAME.determinize(view, rng) for _ in range(100)]
    assert all(s.view(1) == view for s in samples)
    assert any(s.zones()["hand0"] & clubs == clubs for s in samples)


LATE_OPTIONS = {"jj_exchange_window": "until_first_lead", "jj_meld_declaration": "optional"}
# Seat 0 names hearts (turn-up QH) and declares; seat 1, the defender, holds the four kings, QS QD QC
# and the 7S: exchanging it for the QH during the meld statements completes a quartet of queens.
QUEENS_DEAL = dict(nd=("AH", "JH", "8H", "AC", "9C", "8S"), nd2=("TD", "9D", "AD"),
                   dl=("KS", "KD", "KC", "QS", "QD", "QC"), dl2=("7S", "KH", "9S"), turn="QH", info="TS")


def _holds(state, seat, cards) -> bool:
    m = sum(1 << card_id(c) for c in cards)
    return state.zones()[f"hand{seat}"] & m == m


# The same with seat 0 holding the four nines (JJ-1.5: higher than kings): his quartet wins.
NINES_DEAL = dict(QUEENS_DEAL, nd=("9H", "JH", "8H", "AC", "9C", "9S"), dl2=("7S", "KH", "8S"))


@pytest.mark.parametrize("layout, after_quartets, scored", [
    (QUEENS_DEAL, True, (1, ["K"], 100)),
    (QUEENS_DEAL, False, (1, ["K", "Q"], 200)),
    (NINES_DEAL, True, (0, ["9"], 100)),
], ids=["after", "before", "after-nines"])
def test_a_meld_phase_exchange_states_the_quartets_of_the_hand_held_then(layout, after_quartets, scored):
    """JJ-A10 (``until_first_lead``), JJ-4.2, JJ-5.9, JJ-A21: seat 1 exchanges the 7S for the
    turn-up QH during the meld statements. Made at his sequence turn, after the quartets were
    stated, his quartets are the kings alone, yet the samples of seat 0 give him the QS, QD and
    QC too, as in the real deal; made at his quartet turn, before his statement, kings and
    queens score and every sample gives him all the queens. With seat 0's nines stated against
    his kings, seat 0's quartets stay seat 0's. The samples of both seats reproduce their views
    (seat 1's own hand holds kings and queens either way)."""
    state = deal(LATE_OPTIONS, **layout)
    act(state, "accept", "pass", "no_exchange", "no_exchange", "pass")
    if after_quartets:
        act(state, "declare", "declare", "exchange:7S", "declare", "declare")
    else:
        act(state, "exchange:7S", "declare", "declare", "declare", "declare")
    view = state.view(0)
    assert view["phase"] == "play" and view["table"]["exchange"] == {"seat": 1, "seven": "7S", "turn_up": "QH"}
    lines = [line for line in view["table"]["melds"]["dialogue"] if "quartets" in line]
    seat, ranks, points = scored
    assert lines == [{"seat": seat, "say": "scores", "quartets": ranks, "points": points}]
    rng = random.Random(1)
    samples = [GAME.determinize(view, rng) for _ in range(1000 if after_quartets else 50)]
    assert all(s.view(0) == view for s in samples)
    queens = [_holds(s, 1, ("QS", "QD", "QC", "QH")) for s in samples]
    assert any(queens) and (after_quartets or all(queens))
    if after_quartets:
        assert not all(queens)
    for _ in range(5):
        assert GAME.determinize(state.view(1), rng).view(1) == state.view(1)


def test_automatic_declaration_states_both_players_quartets():
    """JJ-5.5, JJ-5.9 (automatic declaration, the default of JJ-A21): seat 1 states its quartet
    of kings, seat 0 answers with the higher nines (JJ-1.5); the samples of either seat
    reproduce that dialogue."""
    layout = dict(dl=("KH", "KC", "KS", "KD", "QC", "JC"), dl2=("AH", "TH", "8S"),
                  nd=("9H", "9S", "9D", "9C", "AS", "AD"), nd2=("TS", "8D", "AC"), turn="QH", info="7D")
    state = to_play(deal(**layout), "accept", "pass")
    dialogue = state.public_view()["table"]["melds"]["dialogue"]
    assert dialogue[:2] == [{"seat": 1, "say": "quartet K"}, {"seat": 0, "say": "not_good 9"}]
    rng = random.Random(2)
    for seat in (0, 1):
        for _ in range(10):
            assert GAME.determinize(state.view(seat), rng).view(seat) == state.view(seat)


def test_a_concealed_quartet_stays_possible_in_the_samples():
    """JJ-A21 (``jj_meld_declaration = optional``), JJ-5.9: seat 1 conceals his quartet of
    kings, so the dialogue says "quartet none" and seat 0 scores his nines; seat 0's samples
    still give seat 1 all four kings sometimes, as in the real deal (a concealed category says
    nothing about the hand)."""
    layout = dict(nd=("9S", "9D", "9H", "9C", "AS", "AD"), nd2=("TS", "8D", "AC"),
                  dl=("AH", "KH", "JH", "TH", "KC", "KS"), dl2=("KD", "8C", "JC"), turn="QH", info="8S")
    state = deal(LATE_OPTIONS, **layout)
    act(state, "accept", "pass", "no_exchange", "no_exchange", "pass", "conceal", "declare", "declare",
        "declare")
    view = state.view(0)
    assert view["phase"] == "play"
    assert view["table"]["melds"]["dialogue"][:2] == [{"seat": 1, "say": "quartet none"}, {"seat": 0, "say": "not_good 9"}]
    rng = random.Random(1)
    samples = [GAME.determinize(view, rng) for _ in range(300)]
    assert all(s.view(0) == view for s in samples)
    assert any(_holds(s, 1, ("KH", "KC", "KS", "KD")) for s in samples)


def test_a_jo_announcement_puts_the_trump_queen_in_every_sample():
    """JJ-7.2: "jo" is legal only while the announcer holds the queen of trumps, so after seat
    0's KS with "jo" every sample of seat 1 gives seat 0 the QS."""
    state = to_play(deal(**JO_DEAL), "name:S", "pass")
    act(state, "play:AC", "play:KS:jo")
    view = state.view(1)
    rng = random.Random(6)
    for _ in range(100):
        s = GAME.determinize(view, rng)
        assert s.view(1) == view and _holds(s, 0, ("QS",))


def test_an_edited_view_that_no_deal_fits_is_refused():
    """A view whose meld dialogue contradicts the seat's own hand (seat 1 holds a six-card club
    run; the edited dialogue says "length 5", JJ-5.9) admits no consistent deal: determinize
    raises InconsistentView instead of returning a state."""
    state = to_play(deal(**JO_DEAL), "name:S", "pass")
    view = state.view(1)
    view["table"]["melds"]["dialogue"][2] = {"seat": 1, "say": "length 5"}
    with pytest.raises(InconsistentView):
        GAME.determinize(view, random.Random(0))


def test_an_edited_hand_leaving_too_few_cards_for_the_opponent_is_refused():
    """A view whose hand claims 24 cards leaves six unseen ones for the opponent's nine
    (JJ-2.3): InconsistentView, not some other error."""
    state = deal(**PLAY_DEAL)
    act(state, "pass", "pass", "no_trump", "pass")
    view = state.view(1)
    view["hand"] = [c for c in ("AS", "KS", "QS", "JS", "TS", "9S", "7S", "AH", "KH", "QH", "JH", "TH", "9H",
                                "8H", "7H", "AD", "KD", "QD", "JD", "TD", "9D", "8D", "7D", "AC")]
    with pytest.raises(InconsistentView):
        GAME.determinize(view, random.Random(0))


def test_editing_the_view_afterwards_leaves_the_sample_alone():
    """The sample shares no list or dict with the view it came from: a bot that edits the view
    after sampling (deal results, the last deal's detail) does not change the sample."""
    state = random_match(GAME, 5)
    view = state.view(0)
    sample = GAME.determinize(view, random.Random(0))
    view["deal_results"][0]["pot"] += 1
    view["deal_results"][0]["below"][0] += 1
    view["table"]["last_deal"]["tricks"][0] += 1
    assert sample.view(0) == state.view(0)


def test_known_cards_take_every_place_of_their_holders_nine():
    """JJ-2.3 (a uniformly random deck), JJ-2.4, JJ-2.6: after the second deal nothing public
    says which of a player's nine cards came in which packet, so across samples the seat's own
    KH and the opponent's played AH each take all nine deck places of their holder's hand."""
    state = to_play(deal(**PLAY_DEAL), "pass", "pass", "no_trump", "pass")
    act(state, "play:KH", "play:AH")
    view = state.view(1)
    rng = random.Random(12)
    places = {card_id("KH"): set(), card_id("AH"): set()}
    for _ in range(200):
        deck = GAME.determinize(view, rng)._deck
        for c, seen in places.items():
            seen.add(deck.index(c))
    assert [len(seen) for seen in places.values()] == [9, 9], places


def test_a_scored_run_card_he_played_then_could_not_beat_with_stays_known():
    """JJ-5.9, JJ-6.3: seat 1 scores the run AC-KC-QC and leads the AC; later he follows seat
    0's TC with the KC, which says he holds no higher club now. The AC is known twice over (a
    scored card and a played one) and stays his: seat 0's view is still sampled, not refused."""
    layout = dict(nd=("KS", "QS", "8S", "AH", "QH", "TC"), nd2=("8C", "JD", "9H"),
                  dl=("AS", "TS", "9S", "AC", "KC", "QC"), dl2=("TH", "9D", "7C"), turn="7D", info="8D")
    state = to_play(deal(**layout), "name:S", "pass")
    assert state.public_view()["table"]["melds"]["dialogue"][-1]["sequences"][0]["cards"] == ["AC", "KC", "QC"]
    act(state, "play:AC", "play:8C", "play:9D", "play:JD", "play:TC", "play:KC")
    view = state.view(0)
    rng = random.Random(0)
    for _ in range(5):
        assert GAME.determinize(view, rng).view(0) == view


def test_an_edited_dialogue_giving_the_opponent_too_many_known_cards_is_refused():
    """Seat 0 has played the KS with "jo" (so he holds the QS, JJ-7.2); an edited dialogue that
    has him also score the quartets of eights and sevens (JJ-5.9) pins ten cards on his nine:
    InconsistentView, not some other error."""
    state = to_play(deal(**JO_DEAL), "name:S", "pass")
    act(state, "play:AC", "play:KS:jo")
    view = state.view(1)
    view["table"]["melds"]["dialogue"][1] = {"seat": 0, "say": "scores", "quartets": ["8", "7"], "points": 200}
    with pytest.raises(InconsistentView):
        GAME.determinize(view, random.Random(0))


def test_the_previous_deals_last_trick_keeps_its_announcement():
    """JJ-7.2: before the new deal's first trick, ``last_trick`` is the previous deal's final
    one; here its lead was announced ("jotte"), and every sample shows it so."""
    views = (state.view(state.to_act()) for state in iter_states(GAME, 188) if state.to_act() >= 0)
    view = next(v for v in views if not any(v["tricks_taken"]) and v["last_trick"]
                and any(p.get("announce") for p in v["last_trick"]["plays"]))
    rng = random.Random(0)
    for _ in range(3):
        assert GAME.determinize(view, rng).view(view["seat"]) == view


def test_not_beating_a_king_says_nothing_of_the_lower_cards():
    """JJ-6.3: seat 1 follows seat 0's KH (spades trump) with the 9H, so he holds neither the
    AH nor the TH; the JH, lower than the king, stays open, and some samples give it to him."""
    layout = dict(HEAD_DEAL, nd=("KH", "AS", "KS", "AD", "KD", "QD"))
    state = to_play(deal(**layout), "accept", "pass")
    act(state, "play:AC", "play:AS", "play:KH", "play:9H")
    view = state.view(0)
    rng = random.Random(8)
    hands = [GAME.determinize(view, rng).zones()["hand1"] for _ in range(100)]
    assert not any(h >> card_id(c) & 1 for h in hands for c in ("AH", "TH"))
    assert any(h >> card_id("JH") & 1 for h in hands)


def test_a_jo_announcement_says_nothing_of_the_trump_jack():
    """JJ-7.2: "jo" proves the queen of trumps only; after seat 0's KS with "jo" the JS, which
    seat 1 has not seen, is not in every sample of seat 0's hand."""
    state = to_play(deal(**JO_DEAL), "name:S", "pass")
    act(state, "play:AC", "play:KS:jo")
    view = state.view(1)
    rng = random.Random(6)
    assert not all(_holds(GAME.determinize(view, rng), 0, ("JS",)) for _ in range(50))


@pytest.mark.parametrize("bid, trump", [("name:H", "H"), ("accept", "D")])
def test_a_jo_in_any_trump_suit_pins_that_suits_queen_and_no_other_card(bid, trump):
    """JJ-7.2 in a trump suit other than spades: after seat 0 trumps seat 1's AC with the trump
    king and "jo", every sample of seat 1 gives seat 0 that suit's queen, and no other card seat 1
    has not seen is in every sample of seat 0's hand (the fact is the queen of the king's own
    suit, whatever the suit's place in the pack)."""
    state = to_play(deal(**JO_DEAL), bid, "pass")
    act(state, "play:AC", f"play:K{trump}:jo")
    view = state.view(1)
    rng = random.Random(6)
    samples = [GAME.determinize(view, rng) for _ in range(150)]
    assert all(s.view(1) == view and _holds(s, 0, (f"Q{trump}",)) for s in samples)
    seen = set(view["hand"]) | {"AC", f"K{trump}", f"Q{trump}"}
    always = {c for c in ({card_code(i) for i in PACK32} - seen) if all(_holds(s, 0, (c,)) for s in samples)}
    assert always == set()
