"""Small-sample strength checks (seeded, so deterministic): the heuristic beats random in every
game and the search bot beats random, by the arena's duplicate score difference with a 95%
confidence interval above zero. The real strength figures come from the long arena runs in
docs/bots.md; these only catch a bot that got broken."""

from __future__ import annotations

import pytest

from bot_plugins.arena import ArenaConfig, run_arena
from engine_service.rules import all_game_ids

BOARDS = {"klaberjass": 60, "jojotte": 120, "georgian_joker": 48, "japanese_joker": 40}


@pytest.mark.parametrize("game_id", all_game_ids())
def test_heuristic_beats_random(game_id):
    report = run_arena(ArenaConfig(game=game_id, bots=("heuristic", "random"), deals=BOARDS.get(game_id, 60),
                                   seed=11, progress=False))
    heuristic = next(b for b in report.bots if b.name == "heuristic")
    assert heuristic.score_diff.low > 0, heuristic
    assert heuristic.win_rate.mean > 0.5
    assert heuristic.failures == {}


@pytest.mark.parametrize("game_id", all_game_ids())
def test_search_beats_random(game_id):
    # a budget the iteration cap always reaches first: the run is deterministic on any machine
    report = run_arena(ArenaConfig(game=game_id, bots=("search-fast", "random"), deals=12, seed=5,
                                   budget_s=60.0, progress=False, plugins=("tests.bots.fast_search",)))
    search = next(b for b in report.bots if b.name == "search-fast")
    assert search.score_diff.mean > 0, search
    assert search.failures == {}
