"""The no-leak checks' card finder: ``current_deal_cards_in`` (one walk, no copy) finds exactly
what ``cards_in(without_previous_deal_trick(...))`` finds, on the shapes that decide it and
on every audience's view of real matches of every game."""

from __future__ import annotations

import pytest

from engine_service.rules.cards import card_id
from engine_service.rules.registry import all_game_ids, get_game

from .playout import cards_in, current_deal_cards_in, iter_states, without_previous_deal_trick

TRICK = {"leader": 0, "plays": [{"seat": 0, "card": "AS"}, {"seat": 1, "card": "X1"}], "winner": 1}
EARLIER = {"leader": 1, "plays": [{"seat": 1, "card": "8C"}], "winner": 1}

#: (object, the codes cards_in finds, the codes current_deal_cards_in finds)
SHAPES = [
    ({"last_trick": TRICK, "trick_history": []}, "AS X1", ""),  # the previous deal's trick
    ({"last_trick": TRICK, "trick_history": [EARLIER]}, "AS X1 8C", "AS X1 8C"),  # this deal's
    ({"last_trick": TRICK, "tricks_taken": [0, 0], "trick_history": [EARLIER]}, "AS X1 8C", "8C"),
    ({"last_trick": TRICK, "tricks_taken": [0, 1]}, "AS X1", "AS X1"),
    ({"last_trick": TRICK, "tricks_taken": (0, 0), "hand": ["KH"]}, "AS X1 KH", "KH"),  # a tuple: a list
    ({"last_trick": TRICK, "tricks_taken": "none", "trick_history": [EARLIER]}, "AS X1 8C", "AS X1 8C"),
    ({"last_trick": {"last_trick": TRICK}}, "AS X1", ""),  # empty once its own is skipped
    ({"last_trick": [], "trick": ["QD"]}, "QD", "QD"),
    ({"views": [{"last_trick": EARLIER}, ({"last_trick": TRICK, "trick_history": [1]},)]}, "AS X1 8C", "AS X1"),
    ({"match_id": "KM-OYF4MYKODk_TC", "seat_token": "AS", "token": "x AS", "client_action_id": "TC"}, "", ""),
    ({("AS", "KD"): 1, None: "9H", 3: "X2", "QS JS": [1.5, True, None]}, "AS KD 9H X2 QS JS", "AS KD 9H X2 QS JS"),
    ({"note": "(7C)", "x": "7C8D", "y": "7C-8D", "z": "\n9S\t", "TH": 0}, "7C 8D 9S TH", "7C 8D 9S TH"),
    (["AS", ("KD", ["QH"]), {"TC": {"JD": 0}}], "AS KD QH TC JD", "AS KD QH TC JD"),
    ("X1 X2", "X1 X2", "X1 X2"),
]


@pytest.mark.parametrize("obj, named, current", SHAPES)
def test_the_cards_named_and_the_current_deal_s(obj, named, current):
    assert cards_in(obj) == {card_id(c) for c in named.split()}
    assert current_deal_cards_in(obj) == {card_id(c) for c in current.split()}
    assert current_deal_cards_in(obj) == cards_in(without_previous_deal_trick(obj))


@pytest.mark.parametrize("game_id", all_game_ids())
def test_finds_what_the_copy_finds_in_every_view_of_a_match(game_id):
    game = get_game(game_id)
    compared = 0
    for state in iter_states(game, 17):
        for v in [state.public_view(), *(state.view(s) for s in range(game.num_seats))]:
            found = current_deal_cards_in(v)
            assert found == cards_in(without_previous_deal_trick(v))
            compared += bool(found)
    assert compared > 100
