"""Japanese Joker (rulebook ``japanese_joker.md``, rule ids JJK-x.y), registered at import.

Modules: :mod:`.tables` (action ids and precomputed tables), :mod:`.state` (the match state:
fast path, notation, results), :mod:`.views` (what each seat may know), :mod:`.game` (options,
first declarer, auto-move, positions), :mod:`.determinize` (states consistent with a view).
"""

from ...registry import register
from .game import GAME, OPTION_SPECS, JapaneseJokerGame
from .state import JapaneseJokerState
from .tables import deal_scores

register(GAME)

__all__ = ["GAME", "OPTION_SPECS", "JapaneseJokerGame", "JapaneseJokerState", "deal_scores"]
