"""The pure rules core: cards, the game API, the four games, notation and transcripts.

Standard library only; no I/O, clock, logging or global random (ARCHITECTURE.md section 3).
"""

from .errors import (  # noqa: F401
    DealRequired, IllegalAction, InconsistentView, InvalidDeck, InvalidOptions, MalformedAction, MatchOver,
    NotYourTurn, RulesError, TranscriptError, UnknownGame,
)
from .game import CHANCE, TERMINAL, Game, State  # noqa: F401
from .registry import all_game_ids, all_games, get_game, register  # noqa: F401
