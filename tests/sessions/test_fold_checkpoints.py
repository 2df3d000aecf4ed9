"""LiveMatch.fold from checkpoints: a past position (a resumed watch, a retried action) is
folded from the nearest saved copy, and gives exactly what a fold from the start gives."""

from __future__ import annotations

import json
import random

import pytest

from engine_service.rules import CHANCE, TERMINAL, get_game
from engine_service.rules.cards import card_code
from engine_service.sessions.match import CHECKPOINT_EVERY, LiveMatch
from engine_service.store.base import ActionRecord, DeckRecord, MatchRecord, SeatRecord

from .helpers import GAMES


def long_match(game_id: str, seed: int) -> tuple[MatchRecord, list[DeckRecord], list[ActionRecord]]:
    """A random match's record, decks and log: a whole match, or 1,500 actions (mostly passes
    where passing is legal: thrown-in deals make long 32-card matches)."""
    game = get_game(game_id)
    rng = random.Random(seed)
    state = game.new_state({}, first_dealer=0)
    decks: list[DeckRecord] = []
    actions: list[ActionRecord] = []
    while len(actions) < 1500 and state.to_act() != TERMINAL:
        if state.to_act() == CHANCE:
            deck = [card_code(c) for c in game.pack]
            rng.shuffle(deck)
            decks.append(DeckRecord(len(decks), tuple(deck)))
            state.deal(deck)
            continue
        seat = state.to_act()
        legal = state.legal_actions()
        action = "pass" if "pass" in legal and rng.random() < 0.97 else rng.choice(legal)  # long matches
        state.apply(action, seat)
        actions.append(ActionRecord(seq=len(actions) + 1, seat=seat, action=action, by="player"))
    record = MatchRecord(match_id="m", game=game_id, options={}, first_dealer=0,
                         seats=tuple(SeatRecord(i) for i in range(game.num_seats)), status="active",
                         created_at=0.0)
    return record, decks, actions


def observed(state, dealt: int) -> str:
    n = state.game.num_seats
    return json.dumps([state.to_act(), state.legal_actions(), state.deal_results(), state.result(),
                       [state.view(s) for s in range(n)], dealt], sort_keys=True, default=str)


@pytest.mark.parametrize("game_id", GAMES)
def test_a_fold_from_a_checkpoint_is_the_fold_from_the_start(game_id):
    record, decks, actions = long_match(game_id, 11)
    n = len(actions)
    assert n > CHECKPOINT_EVERY + 10
    live = LiveMatch(record, decks, actions)
    assert live._checkpoints == {}  # loading a match keeps no copies
    reference = LiveMatch(record, decks, actions)
    for seq in (n - 1, 0, 1, CHECKPOINT_EVERY - 1, CHECKPOINT_EVERY, CHECKPOINT_EVERY + 1, n // 2, n, n - 2):
        state, dealt = live.fold(seq)
        assert observed(state, dealt) == observed(*reference.fold(seq, checkpoints=False)), seq
        if state.to_act() >= 0:  # the caller may advance the state it got: no checkpoint is it
            state.apply(state.legal_actions()[0], state.to_act())
    assert sorted(live._checkpoints) == list(range(CHECKPOINT_EVERY, n, CHECKPOINT_EVERY))
    assert observed(*live.fold(n)) == observed(live.state, live.deals_dealt)


def test_a_fold_starts_from_the_nearest_checkpoint_at_or_before_its_seq():
    """The fold of a late position starts from the latest checkpoint at or before it, not an
    earlier one (each replays CHECKPOINT_EVERY more actions) nor a later one (past the seq):
    the other checkpoints are not touched."""
    record, decks, actions = long_match("klaberjass", 11)
    n = len(actions)
    live = LiveMatch(record, decks, actions)
    reference = LiveMatch(record, decks, actions)
    live.fold(n)  # leaves a checkpoint every CHECKPOINT_EVERY actions
    saved = dict(live._checkpoints)
    assert sorted(saved) == [CHECKPOINT_EVERY, 2 * CHECKPOINT_EVERY] and n > 2 * CHECKPOINT_EVERY + 1

    class Untouchable:
        def clone(self):
            raise AssertionError("a checkpoint other than the nearest one was used")

    for seq, nearest in ((CHECKPOINT_EVERY, CHECKPOINT_EVERY), (2 * CHECKPOINT_EVERY - 1, CHECKPOINT_EVERY),
                         (2 * CHECKPOINT_EVERY, 2 * CHECKPOINT_EVERY), (n - 1, 2 * CHECKPOINT_EVERY)):
        live._checkpoints = {k: (v if k == nearest else (Untouchable(), v[1])) for k, v in saved.items()}
        assert observed(*live.fold(seq)) == observed(*reference.fold(seq, checkpoints=False)), seq


def test_no_checkpoint_is_left_where_a_deal_waits_for_its_deck():
    """A fold that ends where a deal waits for a deck nobody knows yet (an admin's decks given
    one at a time) leaves no checkpoint there, even at a multiple of CHECKPOINT_EVERY: the deck
    comes later, and a fold of a later position from such a copy would find the deal undealt
    ("no deck for deal ...") in a log that replays. Klaberjass, seed 2: deal 50 starts right
    after action 256."""
    record, decks, actions = long_match("klaberjass", 2)
    n = CHECKPOINT_EVERY
    live = LiveMatch(record, decks[:50], actions[:n])
    state, dealt = live.fold(n)
    assert state.to_act() == CHANCE and dealt == 50  # waiting for deal 50's deck
    assert n not in live._checkpoints
    live.decks.update((d.deal, d) for d in decks[50:])  # the decks come; the match goes on
    live.actions.extend(actions[n:n + 20])
    reference = LiveMatch(record, decks, actions[:n + 20])
    assert observed(*live.fold(n + 10)) == observed(*reference.fold(n + 10, checkpoints=False))


def test_a_match_loaded_active_deals_the_deck_its_last_action_makes_due_under_no_deal_limit():
    """LiveMatch's ``deal_limit`` (the server's --max-match-deals, 0: none): a match read back
    active whose log ends with the action that completes a deal is folded with the next deal
    dealt from its stored deck, as MatchWriter.apply dealt it; under a limit it reaches, that
    deal is not dealt (the match ends there)."""
    record, decks, actions = long_match("klaberjass", 11)
    reference = LiveMatch(record, decks, actions)
    k = next(k for k in range(1, len(actions)) if reference.fold(k, checkpoints=False)[1] == 2)
    unbounded = LiveMatch(record, decks, actions[:k])
    assert unbounded.deals_dealt == 2 and unbounded.state.to_act() != CHANCE
    bounded = LiveMatch(record, decks, actions[:k], deal_limit=1)
    assert bounded.deals_dealt == 1 and bounded.state.to_act() == CHANCE
