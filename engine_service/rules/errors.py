"""Explicit errors of the rules core.

Every error the rules raise is a :class:`RulesError` with a stable machine-readable ``reason``
(the transport maps the class to a gRPC status code and puts ``reason`` in google.rpc
ErrorInfo). A message is written from the acting seat's point of view: it never names a card
the caller may not know.
"""

from __future__ import annotations


class RulesError(Exception):
    """Base class. ``reason`` is an UPPER_SNAKE machine-readable code."""

    reason = "RULES_ERROR"

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class MalformedAction(RulesError):
    """The action string is not in the notation of NOTATION.md section 2 for this game."""

    reason = "MALFORMED_ACTION"


class IllegalAction(RulesError):
    """A well-formed action that is not among the legal actions of the seat to act."""

    reason = "ILLEGAL_ACTION"


class NotYourTurn(RulesError):
    """A seat acted while another seat (or the dealer's chance step) is to act."""

    reason = "NOT_YOUR_TURN"


class MatchOver(RulesError):
    """An action was submitted after the match ended."""

    reason = "MATCH_OVER"


class DealRequired(RulesError):
    """An action was submitted while the state waits for a deck (chance step)."""

    reason = "DEAL_REQUIRED"


class InvalidDeck(RulesError):
    """A deck is not a permutation of the game's pack, or was given at the wrong moment."""

    reason = "INVALID_DECK"


class InvalidOptions(RulesError):
    """An unknown table option, or a value outside the option's allowed values."""

    reason = "INVALID_OPTIONS"


class InconsistentView(RulesError, ValueError):
    """``Game.determinize`` got a view that no state of this game can produce for a seat
    (a spectator's view, another game's, or an edited one)."""

    reason = "INCONSISTENT_VIEW"


class UnknownGame(RulesError):
    reason = "UNKNOWN_GAME"


class TranscriptError(RulesError):
    """A transcript file is not valid JSON, not ``card-transcript/1``, or malformed."""

    reason = "INVALID_TRANSCRIPT"
