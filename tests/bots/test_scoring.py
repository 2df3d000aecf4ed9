"""bot_plugins.scoring: what one deal was worth to each seat (NOTATION.md section 4), the
value the arena compares bots by and the search bot's rollouts maximise. Checked against the
rules cores' own deal results and running totals, so a field it misses or a game it reads
wrongly shows."""

from __future__ import annotations

import pytest

from bot_plugins.scoring import deal_scores, relative
from engine_service.rules import get_game
from tests.rules.playout import iter_states


def played(game_id: str, deals: int, seed: int):
    """A match of ``game_id`` with ``deals`` deal results (or near its end), played by
    :func:`tests.rules.playout.iter_states`: the rules' own results, thrown-in deals included."""
    state = None
    for state in iter_states(get_game(game_id), seed):
        if len(state.deal_results()) >= deals:
            break
    return state


@pytest.mark.parametrize("game_id, deals", [("klaberjass", 6), ("japanese_joker", 6), ("georgian_joker", 8)])
def test_the_deals_values_add_up_to_the_running_totals(game_id, deals):
    """KL-9 (each side enters its ``scored``), JJK scoring (``scores``), GJ-7 and GJ-8 (the
    deal's ``scores``, and at a pulka's last deal its ``premium`` and ``moshla``, NOTATION.md
    section 4): summed over the deals, what each deal was worth is the match's totals."""
    for seed in range(3):
        state = played(game_id, deals, seed)
        results = state.deal_results()
        values = [deal_scores(game_id, r, get_game(game_id).num_seats) for r in results]
        assert [sum(column) for column in zip(*values)] == state.result()["totals"], (game_id, seed)
    if game_id == "georgian_joker":  # the pulka's premium and moshla were in the sum
        last = results[7]
        assert "premium" in last and "moshla" in last
        assert values[7] == [s + p + m for s, p, m in zip(last["scores"], last["premium"], last["moshla"])]


def test_a_jojotte_deal_is_worth_its_points_below_and_above_the_line():
    """Jo-Jotte's score sheet has two lines (JJ-9): a deal is worth what it entered on both;
    a thrown-in deal nothing."""
    seen = set()
    for seed in range(20):
        for result in played("jojotte", 3, seed).deal_results():
            value = deal_scores("jojotte", result, 2)
            if result.get("thrown_in"):
                assert value == [0.0, 0.0]
                seen.add("thrown in")
            else:
                assert value == [b + a for b, a in zip(result["below"], result["above"])]
                seen.add("scored" if any(result["above"]) else "below only")
    assert {"scored", "below only"} <= seen


def test_a_thrown_in_deal_is_worth_nothing_and_a_result_without_scores_is_refused():
    """KL-3.5 / JJ-3: a deal nobody took is thrown in and scores nothing; a result without a
    score field is a KeyError naming the game, not a silent zero."""
    assert deal_scores("klaberjass", {"thrown_in": True}, 2) == [0.0, 0.0]
    assert deal_scores("jojotte", {"thrown_in": True}, 2) == [0.0, 0.0]
    assert deal_scores("klaberjass", {"thrown_in": False, "scored": [0, 162]}, 2) == [0.0, 162.0]
    assert deal_scores("japanese_joker", {"scores": [8, -3]}, 2) == [8.0, -3.0]
    # GJ-8: a pulka's premium and its moshla are entered with its last deal
    pulka_end = {"scores": [50, 100, -200, 10], "premium": [100, 0, 0, 0], "moshla": [0, -100, 0, 0]}
    assert deal_scores("georgian_joker", pulka_end, 4) == [150.0, 0.0, -200.0, 10.0]
    with pytest.raises(KeyError, match="georgian_joker: the deal result has no score field"):
        deal_scores("georgian_joker", {"trump": "NT"}, 4)


def test_relative_is_a_seats_score_less_the_others_mean():
    assert relative([10.0, 4.0, 1.0, 1.0], 0) == 10.0 - 2.0
    assert relative([10.0, 4.0, 1.0, 1.0], 2) == 1.0 - 5.0
    assert relative([7.0], 0) == 7.0
