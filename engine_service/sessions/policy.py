"""The rulebooks' operational rules (GJ-12, JJK-10, NOTATION.md section 5) as table settings.

* **Turn time** (GJ-12.1, JJK-10.3): every decision of a player has a deadline; on expiry the
  server plays one move by the game's auto-move policy (``Game.auto_move``). Games whose
  rulebook makes it a table option (``turn_time_s``: Georgian and Japanese Joker) take it from
  the options; the 32-card games follow JJK-10 (NOTATION section 5): a match's turn time is
  within JJK-11's range (10-120 s), or the session's default.
* **Absence** (a joined seat with no open watch stream) has a grace period
  (``reconnect_grace_s``, an option of the Joker games, a session setting otherwise), then
  the rulebook's policy:

  - two-player games (Japanese Joker, Klaberjass, Jo-Jotte: JJK-10.2 via NOTATION section 5):
    :data:`FORFEIT`, the absent player loses the match. During the wait no turn timer runs
    (JJK-10.2 (D)): the connected player may still make the decisions that are theirs, with no
    deadline, and the match stops at the absent player's next decision until the player
    returns (each decision then gets a fresh timer) or the grace period ends. When both
    are absent, the first window to expire decides; windows expiring at the same instant
    (both started together, e.g. by a server restart) end the match without a winner;
  - four-player games (Georgian Joker, GJ-12.3/12.4): :data:`BOT_TAKEOVER`, turn timers run
    during the grace period; after it a bot plays the seat at once until the player's stream
    returns.

* **Leaving** an active match counts as resigning (JJK-10.1): a two-player match ends and the
  opponent wins; in Georgian Joker the bot keeps the seat for the rest of the match and the
  result lists the seat as ``abandoned`` (GJ-12.4).

So no operational event ends a Georgian Joker match early (GJ-9.4 allows an early end only
through GJ-12, and GJ-12 gives none: timeouts never end it, GJ-12.1; leavers are replaced,
GJ-12.4, even all four): it runs to its last deal. The operator's ``TerminateMatch`` is the
one exception, outside the rules (status ``terminated``, no winners).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..rules.game import Game
from .api import BadRequest
from .config import SessionConfig

FORFEIT = "forfeit"
BOT_TAKEOVER = "bot_takeover"

TURN_TIME_OPTION = "turn_time_s"
GRACE_OPTION = "reconnect_grace_s"
#: JJK-11's values of ``turn_time_s``, which the 32-card games follow too (NOTATION.md section
#: 5 puts them under JJK-10): a shorter deadline would let the server play a match by itself
#: at any speed (its auto-moves are no client's calls, so no rate limit applies).
TURN_TIME_RANGE_S = (10.0, 120.0)


def absence_policy(game: Game) -> str:
    return FORFEIT if game.num_seats == 2 else BOT_TAKEOVER


def has_option(game: Game, name: str) -> bool:
    return any(spec.name == name for spec in game.option_specs)


def merge_turn_time(game: Game, options: Mapping[str, Any], requested: float) -> dict[str, Any]:
    """The raw options with a requested turn time folded into the game's ``turn_time_s``
    option where the game has one (the option then validates the value, e.g. 10-120 s)."""
    raw = dict(options)
    if not requested >= 0:  # NaN too
        raise BadRequest("the turn time must not be negative", reason="BAD_TURN_TIME", field="turn_time")
    low, high = TURN_TIME_RANGE_S
    if requested and not has_option(game, TURN_TIME_OPTION) and not low <= requested <= high:
        raise BadRequest(f"the turn time must be {low:.0f} to {high:.0f} seconds (JJK-11, NOTATION.md "
                         f"section 5), or unset for the server's default", reason="BAD_TURN_TIME",
                         field="turn_time")
    if requested and has_option(game, TURN_TIME_OPTION):
        if TURN_TIME_OPTION in raw and raw[TURN_TIME_OPTION] != requested:
            raise BadRequest(f"turn_time_s is given twice with different values ({requested} and "
                             f"option {raw[TURN_TIME_OPTION]})", reason="BAD_TURN_TIME", field="turn_time")
        raw[TURN_TIME_OPTION] = int(requested) if float(requested).is_integer() else requested
    return raw


def turn_time(game: Game, options: Mapping[str, Any], requested: float, config: SessionConfig) -> float:
    """The effective per-decision deadline in seconds (0: none)."""
    if has_option(game, TURN_TIME_OPTION):
        return float(options[TURN_TIME_OPTION])
    return float(requested) if requested else config.default_turn_time_s


def reconnect_grace(game: Game, options: Mapping[str, Any], config: SessionConfig) -> float:
    if has_option(game, GRACE_OPTION):
        return float(options[GRACE_OPTION])
    return config.reconnect_grace_s
