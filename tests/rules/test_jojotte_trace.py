"""Rule-id trace tests for Jo-Jotte: one focused test per rule id that no other test names
(JJ-2.3, JJ-3.4, JJ-5.5, JJ-8.3, JJ-8.4), each failing if the rule broke.

Seat 0 is the non-dealer of the first deal (``first_dealer=1``), as in the rulebook's examples;
``deal`` (checks_jojotte, through ``make_deck``) places the named cards where JJ-2.4-2.8 deal them.
"""

from __future__ import annotations

import random

import pytest

from engine_service.rules import InvalidDeck, RulesError
from engine_service.sessions.chance import random_deck

from .checks_jojotte import GAME, act, auto_finish_deal, deal, table, to_play

PACK = [r + s for s in "SHDC" for r in "AKQJT987"]


# ---- JJ-2.3: the deck is a uniformly random permutation, reproducible from its seed -----------

def test_jj_2_3_the_deal_is_exactly_the_permutation_given_and_a_seed_reproduces_it():
    """JJ-2.3: the engine deals from a permutation D[0..31] chosen outside (the shuffle and the
    cut are part of it): the same seeded generator gives the same deck and so the same deal,
    and the cards reach the hands by position (JJ-2.4: D[0..1] to the non-dealer, D[2..3] to
    the dealer, ...; D[12] the turn-up)."""
    decks = []
    for _ in range(2):
        deck = PACK[:]
        random.Random(2024).shuffle(deck)
        decks.append(deck)
    assert decks[0] == decks[1]
    states = [GAME.new_state({}, first_dealer=1) for _ in range(2)]
    for st, deck in zip(states, decks):
        st.deal(deck)
    deck = decks[0]
    v = [st.public_view()["table"]["turn_up"] for st in states]
    assert v == [deck[12], deck[12]]
    assert sorted(states[0].view(0)["hand"]) == sorted(deck[0:2] + deck[4:6] + deck[8:10])
    assert sorted(states[0].view(1)["hand"]) == sorted(deck[2:4] + deck[6:8] + deck[10:12])
    assert states[0].view(0)["hand"] == states[1].view(0)["hand"]


@pytest.mark.parametrize("bad", [PACK[:31], PACK[:31] + ["AS"], PACK + ["AS"], PACK[:31] + ["6S"]])
def test_jj_2_3_only_a_permutation_of_the_32_cards_is_dealt(bad):
    """JJ-2.3: a deck that is not a permutation of the 32-card pack is refused."""
    with pytest.raises(InvalidDeck):
        GAME.new_state({}, first_dealer=1).deal(bad)


def test_jj_2_3_the_server_deck_is_a_fresh_permutation_of_the_pack():
    """JJ-2.3 on the server side: every deal gets a fresh permutation of the 32 cards (the
    session layer shuffles with the CSPRNG: see docs/games/jojotte.md, documented choices)."""
    decks = [random_deck(GAME) for _ in range(40)]
    for d in decks:
        assert sorted(d) == sorted(PACK)
    assert len(set(decks)) == len(decks)
    # every card shows up on top of some deck over a few hundred shuffles (a loose sanity check
    # of uniformity: a biased shuffle that never moved a card to the top would fail)
    tops = {random_deck(GAME)[0] for _ in range(800)}
    assert tops == set(PACK)


# ---- JJ-3.4: after a contract bid only RESP / REDBL calls, then the auction ends -------------

ROUND_CALLS = {"accept", "name:S", "name:H", "name:D", "name:C"}


@pytest.mark.parametrize("before,bid", [
    ((), "accept"), ((), "name:D"), (("pass",), "accept"), (("pass",), "name:H"),
    (("pass", "pass"), "name:C"), (("pass", "pass"), "no_trump"), (("pass", "pass", "pass"), "name:D"),
    (("pass", "pass", "pass"), "no_trump")])
def test_jj_3_4_a_contract_bid_ends_the_rounds_pass_in_resp_ends_the_auction(before, bid):
    """JJ-3.4: once a contract bid is made no round-1 / round-2 call is offered again: the
    opponent answers in ``RESP`` (``no_trump`` / ``double`` / ``pass``), and his ``pass`` ends
    the auction — the second deal follows (JJ-4.1), even when the bid came in round 1."""
    state = deal(turn="8S", info="7C")
    act(state, *before)
    bidder = state.to_act()
    state.apply(bid)
    assert table(state)["auction_state"] == "RESP" and state.to_act() == 1 - bidder
    legal = set(state.legal_actions())
    assert legal <= {"no_trump", "double", "pass"} and not legal & ROUND_CALLS
    for call in ROUND_CALLS:
        with pytest.raises(RulesError):
            state.apply(call)
    state.apply("pass")
    v = state.public_view()
    assert v["phase"] != "auction" and v["hand_sizes"] == [9, 9]
    assert v["table"]["contract"]["declarer"] == bidder


def test_jj_3_4_overcall_double_and_redouble_never_reopen_the_rounds():
    """JJ-3.4: ``no_trump`` overcalls stay in ``RESP`` (a new contract, the other player
    answers); ``double`` leads to ``REDBL``; the auction ends from ``REDBL`` whatever the answer,
    with no further round call on the way."""
    state = deal(turn="8S", info="7C")
    seen = []
    for call in ("accept", "no_trump", "double", "redouble"):
        seen.append((table(state)["auction_state"], tuple(state.legal_actions())))
        state.apply(call)
    assert [s for s, _ in seen] == ["R1_ND", "RESP", "RESP", "REDBL"]
    assert all(not set(legal) & ROUND_CALLS for _, legal in seen[1:])
    v = state.public_view()
    assert v["phase"] != "auction" and v["table"]["contract"]["multiplier"] == 4
    assert v["table"]["contract"]["strain"] == "NT" and v["table"]["contract"]["declarer"] == 1


# ---- JJ-5.5: the higher best quartet scores every quartet of its owner ------------------------

QUARTET_DEAL = dict(nd=("JS", "JH", "JD", "JC", "KS", "KH"), nd2=("KD", "KC", "7S"),
                    dl=("AS", "AH", "AD", "AC", "8S", "8H"), dl2=("8D", "8C", "9S"), turn="7D",
                    info="7H")


def test_jj_5_5_best_quartet_wins_and_its_owner_scores_each_of_his_quartets():
    """JJ-5.5 (suit contract, JJ-1.5 order J 9 A T K Q): seat 0's best quartet (jacks) beats
    seat 1's aces, so seat 0 scores 100 for each of his quartets — his kings too, although
    kings rank below aces — and seat 1 scores none."""
    state = to_play(deal(**QUARTET_DEAL), "accept", "pass")  # trump diamonds
    assert table(state)["melds"]["points"] == [200, 0]
    dialogue = table(state)["melds"]["dialogue"]
    scored = [e for e in dialogue if e.get("say") == "scores" and e["seat"] == 0]
    assert scored, dialogue
    auto_finish_deal(state)
    d = table(state)["last_deal"]
    assert d["quartet_winner"] == 0 and d["melds"] == [200, 0]


def test_jj_5_5_at_no_trump_the_aces_win_and_the_loser_scores_no_quartet():
    """JJ-5.5 at no-trump (JJ-1.5 order A T K Q J): seat 1's aces beat seat 0's best (kings):
    seat 1 scores his one quartet, 100; seat 0, with two quartets, scores nothing."""
    state = to_play(deal(**QUARTET_DEAL), "pass", "pass", "pass", "no_trump", "pass")
    assert table(state)["contract"]["strain"] == "NT"
    assert table(state)["melds"]["points"] == [0, 100]
    auto_finish_deal(state)
    d = table(state)["last_deal"]
    assert d["quartet_winner"] == 1 and d["melds"] == [0, 100]


def test_jj_5_5_the_only_quartet_scores():
    """JJ-5.5: a player with the only quartet(s) scores them."""
    deal_cards = dict(QUARTET_DEAL, dl=("AS", "AH", "QD", "AC", "8S", "8H"), nd2=("KD", "KC", "AD"))
    # seat 0: jacks, kings; seat 1: no quartet (the AD is seat 0's)
    state = to_play(deal(**deal_cards), "accept", "pass")
    assert table(state)["melds"]["points"][0] == 200 and table(state)["melds"]["points"][1] == 0


# ---- JJ-8.3: trick points are the sum of the values of the tricks won -------------------------

VALUE_SUIT = {"J": 20, "9": 15, "A": 10, "T": 10, "K": 5, "Q": 5, "8": 0, "7": 0}
VALUE_PLAIN = {"J": 0, "9": 0, "A": 10, "T": 10, "K": 5, "Q": 5, "8": 0, "7": 0}


def card_value(card, strain):
    return (VALUE_SUIT if card[1] == strain else VALUE_PLAIN)[card[0]]


@pytest.mark.parametrize("seed", range(8))
def test_jj_8_3_trick_points_are_the_sum_of_the_values_of_the_tricks_won(seed):
    """JJ-8.3: each player's ``trick_points`` is the sum, over the tricks he won, of the trick
    values (JJ-8.2: the highest-valued card; + 10 for the ninth trick, JJ-7.3), computed here
    from the cards played and JJ-8.1's table."""
    rng = random.Random(seed)
    deck = PACK[:]
    rng.shuffle(deck)
    state = GAME.new_state({}, first_dealer=seed % 2)
    state.deal(deck)
    act(state, "accept", "pass")
    while state.public_view()["phase"] != "play":
        seat = state.to_act()
        a = GAME.auto_move(state.view(seat))
        state.apply("pass" if a == "nullo" else a, seat)
    strain = table(state)["contract"]["play_strain"]
    assert table(state)["contract"]["kind"] == "normal"
    while len(table(state)["tricks"]) < 8:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    tricks = table(state)["tricks"]
    r = auto_finish_deal(state)
    last = table(state)["last_deal"]
    # the ninth trick: from the engine's final-trick record
    final = state.public_view()["last_trick"]
    tricks = tricks + [final]
    expected = [0, 0]
    for i, t in enumerate(tricks):
        cards = [p["card"] for p in t["plays"]]
        value = max(card_value(c, strain) for c in cards) + (10 if i == 8 else 0)
        expected[t["winner"]] += value
    assert r["trick_points"] == expected == last["trick_points"]


# ---- JJ-8.4: no trick points in a nullo contract -----------------------------------------------

STRONG_DEAL = dict(nd=("JS", "9S", "AS", "TS", "KS", "QS"), nd2=("8S", "7S", "AH"),
                   dl=("KH", "QH", "JH", "TH", "9H", "AD"), dl2=("KD", "QD", "JD"), turn="7D",
                   info="7C")


def test_jj_8_4_nullo_counts_no_trick_points_during_or_after_the_play():
    """JJ-8.4: in a nullo contract no trick points are counted: the view's ``trick_points``
    stay ``[0, 0]`` trick after trick although valuable cards are taken, the result reports
    ``[0, 0]`` (NOTATION 4), nothing is entered below the line and the pot is untouched."""
    # seat 0 names spades and is the declarer; seat 1 bids nullo, seat 0 passes: nullo at NT
    state = to_play(deal(**STRONG_DEAL), "name:S", "pass", "nullo", "pass")
    assert table(state)["contract"]["kind"] == "nullo"
    while True:
        assert table(state)["trick_points"] == [0, 0]
        if len(state.deal_results()) == 1:
            break
        state.apply(GAME.auto_move(state.view(state.to_act())))
    r = state.deal_results()[0]
    assert r["contract"]["kind"] == "nullo" and r["trick_points"] == [0, 0]
    assert r["below"] == [0, 0] and r["pot"] == 0
    assert table(state)["last_deal"]["trick_points"] == [0, 0]


def test_jj_8_4_nullo_leaves_a_pending_pot_untouched():
    """JJ-8.4 with JJ-9.5: a nullo deal neither settles nor changes the frozen pot (its tricks
    carry no points to add to it)."""
    from engine_service.rules.games.jojotte import scoring as S
    from engine_service.rules.games.jojotte.options import Config
    cfg = Config(GAME.options({}))
    res = S.score_deal(cfg, S.NULLO, 0, 1, (0, 0), (0, 0), (35, 60), (4, 5), (20, 15, 25, 10), 70)
    assert res.pot == 70 and res.below == (0, 0) and res.pot_to is None
