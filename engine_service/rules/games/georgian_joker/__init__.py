"""Georgian Joker (ჯოკერი), rulebook ``georgian_joker.md`` (rule ids GJ-x.y).

Modules: :mod:`.actions` (action ids and notation), :mod:`.rules` (the pure rules: schedule,
legal cards, trick values, scoring, pulka settlement), :mod:`.state` (the match state, fast
path), :mod:`.views` (what each seat may know), :mod:`.definition` (options, draw, auto-move),
:mod:`.determinize` (uniform sampling of full states from a seat's view).
"""

from ...registry import register
from .definition import GAME, OPTION_SPECS, GeorgianJokerGame, auto_trump  # noqa: F401
from .state import GeorgianJokerState  # noqa: F401

register(GAME)
