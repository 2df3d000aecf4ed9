"""The rulebook's own decisions (``japanese_joker.md`` section 12) that no test named by id:
JJK-A3, JJK-A7, JJK-A10. One focused test per decision, its id in the name and the docstring,
each failing when the engine decides otherwise. (JJK-A11, JJK-A12 and JJK-A13 are the session
layer's: ``tests/sessions/test_operational_oracle.py`` and ``tests/sessions/test_fair_dealing.py``
name them on the tests that check them.)

Scripted decks use :func:`lay_deck` of the audit (JJK-3.2 / 3.4 position by position).
"""

from __future__ import annotations

import json
import random

from engine_service.rules.cards import card_id, mask_of
from engine_service.rules.games.japanese_joker import GAME

from .test_japanese_joker_audit import PACK, cols, lay_deck

# The declarer (seat 0) holds every spade and both jokers; the opponent has neither, so every
# spade the declarer leads in a spade deal wins (JJK-6.2: a card of another suit never wins)
# and the declarer leads again.
DECLARER = dict(first3="AS 8S 7S".split(), rest="AH KH QH JH TH".split(),
                columns=cols("X1 X2 9H 8H 7H", "KS QS JS TS 9S"))
OPPONENT = dict(first3="6H AD KD".split(), rest="QD JD TD 9D 8D".split(),
                columns=cols("7D 6D AC KC QC", "JC TC 9C 8C 7C"))


def spade_deal():
    state = GAME.new_state({}, first_dealer=0)
    state.deal(lay_deck(DECLARER, OPPONENT))
    state.apply("trump:S", 0)
    return state


def follow(state) -> None:
    """The opponent follows with its first legal card."""
    state.apply(state.legal_actions()[0], 1)


# ---- JJK-A3 the hand grows, up to 13 cards ------------------------------------------------------

def test_the_hand_grows_without_limit_to_the_derived_thirteen_jjk_a3():
    """JJK-A3 (JJK-4.6): the declarer's first card comes from the hand (8 -> 7), then each up
    card played brings its down card into the hand (7 -> 8 -> 9 -> 10) and the play from two
    columns clears the table (10 -> 13): nothing limits the hand, and 13 is reached; the
    invariant of JJK-4.7 holds at every step."""
    state = spade_deal()
    sizes = []
    for card in ("AS", "KS", "QS", "JS", "TS"):
        state.apply(f"play:{card}", 0)
        view = state.public_view()
        sizes.append(view["hand_sizes"][0])
        played = len([a for a in view["table"]["deal_actions"] if a["seat"] == 0 and a["action"].startswith("play:")])
        assert view["hand_sizes"][0] + 2 * view["table"]["column_counts"][0] == 18 - played  # JJK-4.7
        follow(state)
        assert state.to_act() == 0  # the declarer won and leads again
    assert sizes == [7, 8, 9, 10, 13]
    assert state.public_view()["table"]["column_counts"][0] == 0
    assert sorted(state.view(0)["hand"]) == sorted("8S 7S AH KH QH JH TH X1 X2 9H 8H 7H 9S".split())


# ---- JJK-A7 a down card reaches the hand at once ----------------------------------------------

def test_a_down_card_reaches_the_hand_as_part_of_the_play_jjk_a7():
    """JJK-A7 (JJK-4.5): when the declarer plays the up card ``KS`` of its first column, the down
    card under it (``X1``) is in its hand at once, before the opponent acts: its own view lists
    it, every view counts it in the hand size and shows four columns, and the opponent, now to
    act, sees one hidden card moved (never which). It is playable from the next trick on."""
    state = spade_deal()
    state.apply("play:AS", 0)
    follow(state)
    state.apply("play:KS", 0)
    assert state.to_act() == 1
    own = state.view(0)
    assert "X1" in own["hand"] and own["hand_sizes"][0] == 8
    other = state.view(1)
    assert other["hand_sizes"][0] == 8 and other["table"]["column_counts"][0] == 4
    entry = other["table"]["deal_actions"][-1]
    assert entry["action"] == "play:KS" and entry["from"] == "table" and entry["moved_hidden"] == 1
    assert entry["moved_public"] == [] and "moved_cards" not in entry
    assert "X1" not in json.dumps(other) and "X1" not in json.dumps(state.public_view())
    follow(state)
    assert any(a.startswith("play:X1:") for a in state.legal_actions())  # the next trick


# ---- JJK-A10 the dealing order replays a recorded permutation -----------------------------------

def test_a_recorded_permutation_deals_exactly_one_way_jjk_a10():
    """JJK-A10 (JJK-3.2, JJK-3.4): with seat 1 declaring, ``deck[0 .. 5]`` alternate declarer
    first (the three cards each sees before the choice), ``deck[6 .. 15]`` the rest of the
    hands, ``deck[16 .. 25]`` the down cards and ``deck[26 .. 35]`` the up cards of columns 1-5,
    always declarer first; each down card lies under the up card dealt ten places later."""
    deck = random.Random(10).sample(PACK, len(PACK))
    state = GAME.new_state({}, first_dealer=1)
    state.deal(deck)
    d, o = 1, 0
    assert state.to_act() == d
    assert sorted(state.view(d)["hand"]) == sorted(deck[0:6:2])
    assert sorted(state.view(o)["hand"]) == sorted(deck[1:6:2])
    state.apply("trump:NT", d)
    assert sorted(state.view(d)["hand"]) == sorted(deck[0:6:2] + deck[6:16:2])
    assert sorted(state.view(o)["hand"]) == sorted(deck[1:6:2] + deck[7:16:2])
    table = state.public_view()["table"]
    assert table["columns_up"][d] == deck[26:36:2] and table["columns_up"][o] == deck[27:36:2]
    zones = state.zones()
    assert zones[f"down{d}"] == mask_of(map(card_id, deck[16:26:2])) and zones[f"down{o}"] == mask_of(map(card_id, deck[17:26:2]))
    # which down card lies under which up card: ``deck[16 + 2i]`` under ``deck[26 + 2i]`` (the
    # declarer's column i + 1); the spade deal's declarer plays its columns one by one
    state = spade_deal()
    state.apply("play:AS", 0)
    follow(state)
    moved = []
    for up in ("KS", "QS", "JS", "TS"):
        state.apply(f"play:{up}", 0)
        entry = state.view(0)["table"]["deal_actions"][-1]
        moved.append((entry["moved_cards"], entry["moved_public"]))
        follow(state)
    assert moved == [(["X1"], []), (["X2"], []), (["9H"], []), (["8H", "7H"], ["9S"])]
