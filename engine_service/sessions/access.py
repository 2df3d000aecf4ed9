"""Who may do what with a match: a bearer token resolved to a :class:`~.api.Principal`
(:func:`authenticate`), the audience a principal sees a match as (:func:`audience_of`), the
seat a principal acts for (:func:`acting_seat`), and whether a seat token is still its
seat's (:func:`require_current_token`), and whether a seat's leave already took effect
(:func:`left_already`).

Why a module of its own: every request of :class:`~.manager.MatchManager` that names a match
asks one of these questions, and the answers are the service's access rules (docs/api.md,
"Connecting", "Errors"): which error a caller gets, and which view, must not depend on the
request that asked. They are plain functions of the match and the principal; the manager passes in
its map of seat tokens.
"""

from __future__ import annotations

from .api import PermissionDenied, Principal, Unauthenticated
from .match import LiveMatch
from .tokens import token_hash
from .views import ADMIN, SPECTATOR, Audience


def authenticate(tokens: dict[str, tuple[str, int]], match_id: str, token: str | None, *,
                 admin: bool = False) -> Principal:
    """Resolve a bearer token for ``match_id`` (:meth:`.manager.MatchManager.authenticate`).
    ``tokens``: the manager's seat tokens, token hash -> (match id, seat)."""
    if admin:
        return Principal(kind="admin", match_id=match_id)
    if not token:
        return Principal(kind="spectator", match_id=match_id)
    digest = token_hash(token)
    entry = tokens.get(digest)
    if entry is None:
        raise Unauthenticated("unknown or expired seat token")
    owner, seat = entry
    if match_id and owner != match_id:
        raise PermissionDenied("this seat token belongs to another match", reason="WRONG_MATCH")
    return Principal(kind="seat", match_id=owner, seat=seat, token_hash=digest)


def require_current_token(m: LiveMatch, principal: Principal) -> None:
    """A seat principal's token is still its seat's: the operator may have replaced it
    (ReissueSeatToken) while the call waited for the match (a store read, the match's lock)."""
    if principal.kind == "seat" and principal.token_hash and principal.seat is not None \
            and m.seats[principal.seat].token_hash != principal.token_hash:
        raise Unauthenticated("this seat token was replaced (by the operator, or by a retried JoinMatch)",
                              reason="TOKEN_REVOKED")


def audience_of(m: LiveMatch, principal: Principal) -> Audience:
    """The audience ``principal`` sees ``m`` as: the admin, its seat, or a spectator (refused
    where the match allows none)."""
    if principal.kind == "admin":
        return ADMIN
    if principal.kind == "seat":
        if principal.match_id != m.match_id or principal.seat is None:
            raise PermissionDenied("this seat token belongs to another match", reason="WRONG_MATCH")
        slot = m.seats[principal.seat]
        if slot.token_hash == "":
            raise Unauthenticated("unknown or expired seat token")
        require_current_token(m, principal)
        if slot.left:
            # GJ-12.4: the seat is the takeover bot's now; its player is no longer present
            # and does not follow the hand the bot plays. After the end: the result and the
            # reveal, as a spectator sees them (a match terminated mid-deal would otherwise
            # show them the bot's unplayed hand, which stays hidden from everyone, GJ-11.3)
            if not m.over:
                raise PermissionDenied("you have left this match", reason="SEAT_LEFT")
            return SPECTATOR
        return principal.seat
    if not m.spectators_allowed:
        raise PermissionDenied("this match does not allow spectators", reason="SPECTATORS_NOT_ALLOWED")
    return SPECTATOR


def acting_seat(principal: Principal, match_id: str) -> int:
    """The seat a request that only a seat's player may make (act, leave) acts for."""
    if principal.kind == "spectator":
        raise Unauthenticated("a seat token is required")
    if principal.kind != "seat" or principal.seat is None:
        raise PermissionDenied("only a seat's player may do this", reason="NOT_A_SEAT")
    if principal.match_id != match_id:
        raise PermissionDenied("this seat token belongs to another match", reason="WRONG_MATCH")
    return principal.seat


def left_already(m: LiveMatch, seat: int) -> bool:
    """Whether ``seat``'s own leave of the started match already took effect, so that a
    LeaveMatch of that seat is a repeat (:meth:`.manager.MatchManager.leave_match`): the match
    ended by this seat's resignation (two players: ``outcome`` ``resigned``, ``resigned`` the
    seat), or the seat left a four-player match, which went on (``left``; whether or not it
    has ended since). Both are in the match's durable record (its result, the seat's record),
    so the answer is the same after a restart. Not after any other end (the rules', another
    seat's resignation, a forfeit, a termination) nor for a seat freed in a waiting match
    (its token is void)."""
    if m.seats[seat].left:
        return True
    result = m.result or {}
    return m.over and result.get("outcome") == "resigned" and result.get("resigned") == seat
