"""Every public action shows in the public view, so a client that joins late (or reconnects to a
snapshot) sees what the table saw, without the event stream.

In all four games every action is public (GJ-4.6 and GJ-11.1 bids, trump choices and cards;
JJK-9.1 cards and named suits; KL-3, KL-4.3, KL-5.5 calls, dix steps and exchanges; JJ-3, JJ-4
calls, exchanges, nullo and slam answers), so two different legal actions at one decision must
leave two different public views. The only exception is a rulebook one: under optional meld
declarations a ``declare`` that states nothing a ``conceal`` would not is published as
``conceal`` (KL-A20, JJ-A21: the choice to conceal is the player's secret, the statement is
public).
"""

from __future__ import annotations

import json
import random

import pytest

from engine_service.rules import CHANCE, TERMINAL, all_game_ids, get_game

from .test_invariants import option_sets

GAMES = all_game_ids()
_SAME_STATEMENT = {"declare", "conceal"}


@pytest.mark.parametrize("game_id", GAMES)
def test_every_public_action_changes_the_public_view(game_id):
    game = get_game(game_id)
    four = game.num_seats == 4
    checked = 0
    for i, options in enumerate(option_sets(game_id)):
        if four:
            options = {**options, "deal_schedule": "nines"}
        rng = random.Random(70 + i)
        state = game.new_state(options, first_dealer=rng.randrange(game.num_seats))
        deals = 0
        while state.to_act() != TERMINAL and deals <= (3 if four else 8):
            if state.to_act() == CHANCE:
                deck = list(game.pack)
                rng.shuffle(deck)
                state.deal(deck)
                deals += 1
                continue
            ids = state.legal_ids()
            seen: dict[str, str] = {}
            for a in ids if len(ids) > 1 else ():
                after = state.clone()
                after.apply_id(a)
                key = json.dumps(after.public_view(), sort_keys=True)
                action = state.action_str(a)
                other = seen.setdefault(key, action)
                assert other == action or {other, action} == _SAME_STATEMENT, (
                    game_id, options, state.public_view()["phase"], other, action)
                checked += 1
            state.apply_id(rng.choice(ids))
    assert checked >= 500, checked


@pytest.mark.parametrize("game_id", GAMES)
def test_the_public_record_shows_each_action_as_taken_but_a_declare_that_states_nothing(game_id):
    """``State.public_action``, the form the session logs and publishes: every action as it was
    taken (GJ-4.6 and GJ-11.1, JJK-9.1, KL-3 to KL-5.5, JJ-3 and JJ-4: all public), the one
    exception being a ``declare`` that states nothing a ``conceal`` would not, shown as
    ``conceal`` (KL-A20, JJ-A21)."""
    from tests.rules.playout import iter_states
    game = get_game(game_id)
    checked = 0
    for options in option_sets(game_id)[:4]:
        for i, state in enumerate(iter_states(game, 5, options)):
            if i > 600:
                break
            for a in state.legal_ids():
                public = state.public_action(a)
                text = state.action_str(a)
                assert public == a or (text == "declare" and state.action_str(public) == "conceal"), (
                    game_id, text, public)
                checked += 1
    assert checked >= 1000, checked
