"""Klaberjass (rulebook ``klaberjass.md``): registered as ``klaberjass`` at import.

Modules: :mod:`.tables` (card orders, values, runs, action ids), :mod:`.config` (table
options), :mod:`.notation` (action strings), :mod:`.sequences` (melds and the comparison
dialogue), :mod:`.state` (the match state: fast path, scoring), :mod:`.views` (what a seat may
know), :mod:`.determinize` (sampling a state from a view), :mod:`.game` (the definition).
"""

from ...registry import register
from .game import GAME, KlaberjassGame
from .state import KlaberjassState

register(GAME)

__all__ = ["GAME", "KlaberjassGame", "KlaberjassState"]
