"""The contract between the session layer and the transport.

The transport (engine_service/transport, the only code that imports grpc) turns protobuf
requests into these values, calls :class:`MatchService` and turns the answers back into
protobuf. The session layer never imports grpc; the transport never imports the rules core's
internals beyond the registry. Errors cross this boundary as :class:`SessionError` (with the
status-code name the transport maps to a grpc.StatusCode) or as a
:class:`~engine_service.rules.errors.RulesError` (mapped by class in the transport's one error
table, ARCHITECTURE.md section 5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Literal, Mapping, Protocol, Sequence

# ---- errors --------------------------------------------------------------------------------


class SessionError(Exception):
    """An error of the session layer. ``code`` is a grpc.StatusCode name, ``reason`` an
    UPPER_SNAKE machine-readable reason for google.rpc.ErrorInfo; the message says only what
    the caller may know."""

    code = "INTERNAL"
    reason = "INTERNAL"

    def __init__(self, message: str, *, reason: str | None = None, **metadata: str) -> None:
        super().__init__(message)
        self.message = message
        if reason:
            self.reason = reason
        self.metadata = {k: str(v) for k, v in metadata.items()}


class BadRequest(SessionError):
    code, reason = "INVALID_ARGUMENT", "BAD_REQUEST"


class MatchNotFound(SessionError):
    code, reason = "NOT_FOUND", "MATCH_NOT_FOUND"


class Unauthenticated(SessionError):
    code, reason = "UNAUTHENTICATED", "MISSING_OR_BAD_TOKEN"


class PermissionDenied(SessionError):
    code, reason = "PERMISSION_DENIED", "NOT_ALLOWED"


class SeatTaken(SessionError):
    code, reason = "ALREADY_EXISTS", "SEAT_TAKEN"


class CreateIdInUse(SessionError):
    """CreateMatch's ``client_create_id`` created a match with a request that differs from
    this one (ALREADY_EXISTS); the message says only that."""

    code, reason = "ALREADY_EXISTS", "CLIENT_CREATE_ID_IN_USE"


class StaleSequence(SessionError):
    """``expected_seq`` is not the match's current sequence number; carries the caller's
    current view so that it can re-decide without another round trip."""

    code, reason = "ABORTED", "STALE_SEQUENCE"

    def __init__(self, message: str, current: "ViewEnvelope", **metadata: str) -> None:
        super().__init__(message, **metadata)
        self.current = current


class LimitExceeded(SessionError):
    code, reason = "RESOURCE_EXHAUSTED", "LIMIT_EXCEEDED"


class MatchNotActive(SessionError):
    """The match has ended or was terminated (FAILED_PRECONDITION)."""

    code, reason = "FAILED_PRECONDITION", "MATCH_NOT_ACTIVE"


class FailedPrecondition(SessionError):
    """The request is well formed but the match is not in a state that allows it."""

    code, reason = "FAILED_PRECONDITION", "FAILED_PRECONDITION"


class MatchNotOver(SessionError):
    """The match is still waiting or being played: its decks stay secret (RevealDeals;
    FAILED_PRECONDITION)."""

    code, reason = "FAILED_PRECONDITION", "MATCH_NOT_OVER"


class Unavailable(SessionError):
    """The service is draining for shutdown."""

    code, reason = "UNAVAILABLE", "DRAINING"


# ---- requests and answers ------------------------------------------------------------------

SeatKind = Literal["open", "bot"]


@dataclass(frozen=True)
class SeatConfig:
    kind: SeatKind = "open"
    bot: str = ""  # bot plugin name when kind == "bot"


@dataclass(frozen=True)
class CreateMatchRequest:
    game: str
    options: Mapping[str, Any] = field(default_factory=dict)
    seats: Sequence[SeatConfig] = ()  # empty: every seat open
    # per-decision deadline; 0: the table default (the game's turn_time_s option where it has
    # one, else SessionConfig.default_turn_time_s, 30 s per JJK-10/NOTATION 5; 0 there: none)
    turn_time_s: float = 0.0
    spectators_allowed: bool = True
    name: str = ""
    # shown in the lobby (list_open_matches) while it waits for players; False: only who is
    # given the match id finds it
    listed: bool = False
    # spectators see the match this many actions late while it is played (0: live; at most
    # sessions.delay.MAX_SPECTATOR_DELAY); seats and the admin are never delayed
    spectator_delay_actions: int = 0
    # admin only (the transport refuses them without the admin token):
    decks: Sequence[Sequence[str]] = ()  # explicit decks, used in order, then CSPRNG decks
    first_dealer: int | None = None  # None: the rulebook's draw, from the CSPRNG
    # added by the session layer: the bot that plays an absent or departed seat of a
    # four-player game (GJ-12.4 "the bot the table names"); "": the session default
    # (SessionConfig.takeover_bot, itself "" = the rulebook's auto-move policy)
    takeover_bot: str = ""
    # the idempotency key (16..128 printable characters, else BadRequest BAD_CLIENT_CREATE_ID;
    # "": none): a retry with it gets the match it created, never a second one; with a request
    # that differs otherwise, CreateIdInUse. Kept only as a hash (tokens.create_id_hash)
    client_create_id: str = field(default="", repr=False)


@dataclass(frozen=True)
class Principal:
    """Who is calling, resolved from the bearer token: a seat of one match, a spectator
    (no token) or the admin."""

    kind: Literal["seat", "spectator", "admin"]
    match_id: str = ""
    seat: int | None = None
    #: the hash of the seat token it was resolved from: a call under way when the operator
    #: replaced that token (ReissueSeatToken) is refused when it reaches the match
    token_hash: str = ""


@dataclass(frozen=True)
class GameInfo:
    id: str
    name: str
    num_seats: int
    description: str
    rulebook: str
    options: Sequence[Any]  # engine_service.rules.options.OptionSpec


@dataclass(frozen=True)
class BotInfo:
    name: str
    games: Sequence[str]
    description: str
    plugin: str = ""


@dataclass(frozen=True)
class BotLoadFailure:
    """A bot plugin, or one bot of a plugin, left out at start-up (docs/bots.md, "Packaging"):
    ``stage`` is ``import``, ``register``, ``validate``, ``hook`` or ``spec``; ``reason`` never
    carries the message of an exception the plugin's own code raised (that is in the log)."""

    plugin: str
    stage: str
    reason: str


@dataclass(frozen=True)
class SeatInfo:
    seat: int
    kind: SeatKind
    bot: str = ""
    player_name: str = ""
    taken: bool = False  # an open seat that someone joined
    present: bool = False  # has an open watch stream (or is a bot)
    replaced_by_bot: bool = False  # absent player whose seat a bot plays (GJ-12)
    left: bool = False  # the player left the match for good (GJ-12.4): cannot come back


MatchStatus = Literal["waiting", "active", "finished", "terminated"]


@dataclass(frozen=True)
class MatchSummary:
    match_id: str
    game: str
    options: Mapping[str, Any]  # non-default options
    status: MatchStatus
    seq: int
    seats: Sequence[SeatInfo]
    turn_time_s: float
    spectators_allowed: bool
    created_at: float
    name: str = ""
    result: Mapping[str, Any] | None = None  # rules result when finished / terminated
    listed: bool = False  # created for the lobby (shown there while it waits for players)
    # the commitment of every deal dealt so far, in deal order ("" for a deal recorded before
    # commitments existed); docs/api.md, "Fair dealing"
    deal_commitments: Sequence[str] = ()
    spectator_delay_actions: int = 0  # how many actions spectators are kept behind (0: live)


@dataclass(frozen=True)
class Page:
    """One page of a listing (ListMatches, ListOpenMatches): its matches, and the token of
    the next page ("": this is the last one). A page may hold fewer matches than asked while
    more follow (the admin's listing drops a match that changed status as it was read)."""
    matches: Sequence[MatchSummary]
    next_page_token: str = ""


@dataclass(frozen=True)
class DealReveal:
    """What is revealed of one deal's deck once its match is over (:mod:`.fairness`): per
    position top first, the card and its salt when the table saw it, else "" and the card's
    hash; and the commitment published while the match was played ("" for an unsalted deck,
    whose reveal has the shown cards only, like a deck committed as a whole)."""

    deal: int
    cards: Sequence[str]  # "" where the card stayed hidden
    commitment: str
    card_salts: Sequence[str]  # the salt of each shown card; "" elsewhere
    card_hashes: Sequence[str]  # the hash of each hidden card; "" elsewhere


@dataclass(frozen=True)
class Inspection:
    """The admin's look at a match: its summary and its omniscient view, of the same moment
    (one read: no action lands between them)."""

    summary: MatchSummary
    envelope: "ViewEnvelope"


@dataclass(frozen=True)
class JoinResult:
    match_id: str
    seat: int
    token: str  # the seat token: sent as "authorization: Bearer <token>"
    retry: bool = False  # a retried client_join_id: the seat it took, with a new token


@dataclass(frozen=True)
class ViewEnvelope:
    """A view for one audience at one sequence number."""

    match_id: str
    seq: int
    status: MatchStatus
    view: Mapping[str, Any]  # the rules core's view(seat) / public_view() / admin view
    deadline: float | None = None  # unix time of the current decision's deadline
    seat: int | None = None  # the audience's seat; None for spectators and the admin
    deal_commitment: str = ""  # the commitment to the deck of the view's deal (fair dealing)
    #: The envelopes of the audiences of one state share this dict (None: an envelope of its
    #: own), and share the objects of their views: the transport keeps there what it encoded of
    #: those objects, by identity (the state and its views never change while it is current).
    encodings: dict[Any, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class SubmitResult:
    seq: int  # the sequence number the action got
    action: str
    view: ViewEnvelope  # the submitter's view after the action
    duplicate: bool = False  # a retry of an already applied client_action_id


EventKind = Literal[
    "snapshot",  # first event of a stream that starts too far behind (or at after_seq=-1)
    "action",  # an accepted action (by a player, a bot or the auto-move policy)
    "match_ended",  # the rules ended the match, or a resignation / forfeit / termination
    "presence",  # a seat's presence changed (joined, connected, disconnected, bot took over)
    "heartbeat",  # keeps idle streams alive; carries the current seq
]


@dataclass(frozen=True)
class MatchEvent:
    """One event of a watch stream, already redacted for its audience.

    ``seq`` is the match sequence number after the event (actions increment it; other kinds
    carry the current value and are not replayed on resume). ``by`` says who made an action:
    ``player``, ``bot`` or ``auto`` (deadline or disconnect policy).
    """

    kind: EventKind
    seq: int
    match_id: str
    seat: int | None = None
    action: str = ""
    by: str = ""
    reason: str = ""
    view: ViewEnvelope | None = None  # the audience's view after this event
    details: Mapping[str, Any] = field(default_factory=dict)


# ---- the service the transport calls --------------------------------------------------------


class MatchService(Protocol):
    """Implemented by engine_service.sessions.manager.MatchManager."""

    async def start(self) -> None:
        """Open the store and resume every unfinished match (timers restarted)."""

    async def drain(self) -> None:
        """Refuse new matches and actions (Unavailable), finish in-flight work, close streams."""

    async def close(self) -> None: ...

    def list_games(self) -> list[GameInfo]: ...

    def list_bots(self) -> list[BotInfo]: ...

    def list_bot_load_failures(self) -> list[BotLoadFailure]:
        """The plugins and bots that failed to load, in the order they failed (ListBots says
        them, so that a missing bot is not missing without a word)."""

    def authenticate(self, match_id: str, token: str | None, *, admin: bool = False) -> Principal:
        """Resolve a bearer token (None: spectator) for ``match_id``; Unauthenticated for an
        unknown token, PermissionDenied for a token of another match or seat."""

    async def recall(self, match_id: str) -> bool:
        """Bring a stored match back into memory if it is not held (an ended match past its
        retention), so that its seat tokens are known again; whether it was brought back.
        MatchNotFound when there is no such match (never created, or deleted by retention):
        a seat token of a deleted match gets NOT_FOUND, not a token error."""

    async def create_match(self, request: CreateMatchRequest, *, admin: bool = False) -> MatchSummary:
        """Create a match and return its summary. With ``request.client_create_id``: a retry
        with the id of a match still stored returns that match's current summary (never a
        second match); the same id with a request that differs otherwise is CreateIdInUse."""

    async def join_match(self, match_id: str, seat: int | None, player_name: str,
                         client_join_id: str = "") -> JoinResult:
        """Take ``seat`` (None: the first open seat): SeatTaken when it is taken or a bot.
        ``client_join_id`` (16..128 printable characters, else BadRequest BAD_CLIENT_JOIN_ID;
        "": none): a retry with the id of a seat its player still holds gets that seat back
        with a new token (the previous one revoked), whatever ``seat`` says."""

    async def get_view(self, match_id: str, principal: Principal) -> ViewEnvelope: ...

    async def submit_action(self, match_id: str, principal: Principal, action: str,
                            expected_seq: int | None, client_action_id: str = "") -> SubmitResult: ...

    def watch(self, match_id: str, principal: Principal, after_seq: int) -> AsyncIterator[MatchEvent]:
        """Events after ``after_seq`` (replayed from the log), then live; a snapshot first
        when the watcher is too far behind or ``after_seq`` < 0. The stream is the seat's
        presence while it is open."""

    async def leave_match(self, match_id: str, principal: Principal, resign: bool) -> MatchSummary: ...

    def repeated_leave(self, match_id: str, token: str) -> MatchSummary | None:
        """A LeaveMatch whose token is unknown: the answer of the leave that voided ``token``
        by freeing its seat in the waiting match (a retry whose first answer was lost), or
        None for any other token (its Unauthenticated stands). Changes nothing."""

    async def get_match(self, match_id: str) -> MatchSummary: ...

    async def reveal_deals(self, match_id: str, principal: Principal) -> list[DealReveal]:
        """Every deal's commitment opened for the cards the table saw, once the match is over
        (MatchNotOver before); for whoever may view the match."""
        ...

    def list_open_matches(self, game: str = "", limit: int = 50) -> list[MatchSummary]:
        """The lobby: listed matches waiting for players with a seat free, oldest first."""

    def open_matches_page(self, game: str = "", limit: int = 50, page_token: str = "") -> Page:
        """A page of the lobby: after the match ``page_token`` ends at ("": the first page);
        BadRequest (BAD_PAGE_TOKEN) for a token of another listing or other filters."""

    # admin
    async def list_matches(self, status: str = "", game: str = "", limit: int = 100) -> list[MatchSummary]: ...

    async def matches_page(self, status: str = "", game: str = "", limit: int = 100, page_token: str = "") -> Page:
        """A page of the admin's listing, newest first, after the match ``page_token`` ends
        at ("": the first page); BadRequest (BAD_PAGE_TOKEN) as :meth:`open_matches_page`."""

    async def inspect_match(self, match_id: str) -> Inspection:
        """The summary and the omniscient view for the admin (every hand, the stock: never
        sent to players), of the same sequence number."""

    async def terminate_match(self, match_id: str, reason: str) -> MatchSummary: ...

    async def reissue_seat_token(self, match_id: str, seat: int) -> tuple[JoinResult, MatchSummary]:
        """A new token for a player's seat of an unfinished match; the old one is revoked (its
        calls fail, its streams end with TOKEN_REVOKED). BadRequest (BAD_SEAT) for a seat out
        of range, FailedPrecondition for an open seat, a bot seat or a player who left,
        MatchNotActive once the match is over."""

    async def export_transcript(self, match_id: str) -> dict[str, Any]: ...
