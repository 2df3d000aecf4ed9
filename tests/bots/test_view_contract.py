"""The view a bot receives, as docs/bots.md describes it to bot authors: the common keys in
every game, and the shapes that differ between games (``totals``, ``table.deal_actions``), so
that a bot written from that page does not trip over one game's view."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine_service.rules import all_game_ids, get_game
from tests.rules.playout import iter_states

DOC = (Path(__file__).resolve().parents[2] / "docs" / "bots.md").read_text()


def documented_common_keys() -> set[str]:
    """The keys the page lists after "Its keys are the same in every game"."""
    start = DOC.index("Its keys are the same in every game")
    text = DOC[start:DOC.index("whose keys each game's engine notes list", start)]
    text = re.sub(r"\([^()]*\)", "", text)  # nested parentheses hold examples, not keys
    text = re.sub(r"\([^()]*\)", "", text)
    return {k for k in re.findall(r"`([a-z_]+)`", text) if "." not in k}


def test_the_documented_common_keys_are_the_views_keys():
    keys = documented_common_keys()
    for game_id in all_game_ids():
        state = next(s for s in iter_states(get_game(game_id), 3) if s.to_act() >= 0)
        assert set(state.view(state.to_act())) == keys, game_id


@pytest.mark.parametrize("game_id", all_game_ids())
def test_totals_and_deal_actions_have_the_documented_shapes(game_id):
    game = get_game(game_id)
    seen = 0
    for state in iter_states(game, 5):
        if state.to_act() < 0:
            continue
        view = state.view(state.to_act())
        if game_id == "jojotte":
            assert set(view["totals"]) == {"below", "above", "games_won"}
            assert all(len(v) == game.num_seats for v in view["totals"].values())
        else:
            assert isinstance(view["totals"], list) and len(view["totals"]) == game.num_seats
        for entry in view["table"]["deal_actions"]:
            if game_id == "georgian_joker":
                assert isinstance(entry, str)
            else:
                assert isinstance(entry, dict) and {"seat", "action"} <= set(entry)
            seen += 1
        if seen > 200:
            break
    assert seen > 0


@pytest.mark.parametrize("game_id", all_game_ids())
def test_the_table_options_complete_to_the_matchs_options(game_id):
    """docs/bots.md: ``get_game(game_id).options(view["table"]["options"])`` is the match's
    whole option set, whether the view lists every option or only the non-default ones."""
    game = get_game(game_id)
    spec = next(s for s in game.option_specs if len(s.values) > 1)
    options = game.options({spec.name: spec.values[1]})  # one option off its default
    state = next(s for s in iter_states(game, 7, dict(options)) if s.to_act() >= 0)
    view = state.view(state.to_act())
    assert dict(game.options(view["table"]["options"])) == dict(options)


def test_the_games_with_table_tricks_are_the_ones_the_page_names():
    """docs/bots.md said every game's completed tricks are in ``table.tricks``: a Japanese
    Joker bot reading it got a KeyError. The page names the games that have it, and says how a
    Japanese Joker bot finds a trick's winner instead (``winner`` on its second play)."""
    start = DOC.index("and its completed tricks")
    sentence = DOC[start:DOC.index("whose keys each game's engine notes list", start)]
    named = sentence[:sentence.index(", with each trick's card")]
    names = {get_game(g).name: g for g in all_game_ids()}
    documented = {g for name, g in names.items() if name in named}
    for game_id in all_game_ids():
        game = get_game(game_id)
        views = [s.view(s.to_act()) for s in iter_states(game, 11) if s.to_act() >= 0]
        has = {"tricks" in v["table"] for v in views}
        assert has == {game_id in documented}, game_id
        if game_id not in documented:
            assert f"{game.name} has no `table.tricks`" in sentence
            winners = [e["winner"] for v in views for e in v["table"]["deal_actions"] if "winner" in e]
            assert winners and set(winners) <= set(range(game.num_seats))
