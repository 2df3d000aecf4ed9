"""A Python client library for the card-game engine, over the generated cardgames.v1 stubs.

It speaks only the wire contract (the generated stubs, grpc and the google.rpc error details),
never the engine's internals, and adds what every client otherwise writes by hand:

* **connecting** plainly or with TLS (``connect("host:50051", tls=True)``);
* **seat sessions**: :meth:`Client.join` returns a :class:`SeatSession` that sends its seat
  token (``authorization: Bearer ...``) on every call; the join carries a ``client_join_id``,
  so that a join whose answer was lost (UNAVAILABLE, a timeout) is retried into the seat it
  took (with a new token) instead of failing with SEAT_TAKEN or taking a second seat;
* **creating safely**: :meth:`Client.create_match` carries a ``client_create_id``, so that a
  create whose answer was lost (UNAVAILABLE, a timeout) is retried into the match it created
  instead of leaving that one an orphan and making a second;
* **watching with automatic resume**: :meth:`SeatSession.watch` / :meth:`Spectator.watch`
  reopen a dropped stream with ``after_seq`` = the last sequence number received, so no event is
  seen twice and none is lost unless the gap outgrew the server's snapshot threshold (then a
  SNAPSHOT stands for the missed actions; heartbeats and presence events carry no new number
  and are not replayed); a stream that dropped while the view it delivered was still WAITING
  is reopened without ``after_seq`` (a SNAPSHOT first), since the match's start is no action
  and would not be replayed; ``on_connection`` tells the caller while that happens (the
  stream is down and reopened, it is back, it was given up: :class:`StreamState`), so that a
  screen can say "connection lost" instead of looking like a table where nobody moves;
* **submitting safely**: every action carries a ``client_action_id``, so a transport-level
  retry (UNAVAILABLE, a timeout) can never apply it twice; ``expected_seq`` guards against
  acting on a stale view, and :meth:`SeatSession.act` re-decides on the fresh view an ABORTED
  error carries;
* **fair dealing**: :meth:`Client.reveal_deals` (or a session's ``reveal_deals``) fetches the
  cards the table saw of every deck once a match is over, and :func:`verify_deal` checks each
  against the commitment published while it was played (docs/api.md, "Fair dealing");
* **rate limits**: a call the engine's request-rate limits refused (RESOURCE_EXHAUSTED,
  reason RATE_LIMITED: nothing was done) is sent again after the delay the engine names (its
  google.rpc.RetryInfo), within the :class:`RetryPolicy`'s tries, by every method of
  :class:`Client` and the sessions (the admin token is never rate limited);
* **clear errors**: a failed call raises a :class:`CardGamesError` subclass chosen by status
  code, carrying the code, the message, the google.rpc.ErrorInfo ``reason`` and ``metadata``
  and, for a stale sequence number, the current :class:`View`.

Everything is asynchronous (grpc.aio)::

    import asyncio
    from clients.cardgames_client import connect, is_my_turn

    async def main():
        async with connect("127.0.0.1:50051") as client:
            match = await client.create_match("klaberjass", seats=[None, "random"])
            me = await client.join(match.match_id, player_name="ada")
            async for event in me.watch():  # every event's view; the bot may move first
                if is_my_turn(event.view):  # act() decides again when the view was stale
                    await me.act(lambda view: view.legal_actions[0].notation, event.view)

    asyncio.run(main())

The protobuf messages are returned as they are (``View``, ``MatchSummary``, ...): their fields
are documented in proto/cardgames/v1 and docs/api.md.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import inspect
import math
import os
import random
import ssl
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping, Sequence, TypeVar

import grpc
from google.protobuf import duration_pb2, json_format
from google.rpc import error_details_pb2, status_pb2

from engine_service.bounded_read import PEM_LIMIT, read_named
from engine_service.transport.generated import (admin_pb2, admin_pb2_grpc, card_games_pb2,
                                                card_games_pb2_grpc, match_pb2)

View = match_pb2.View
MatchSummary = match_pb2.MatchSummary
Event = card_games_pb2.WatchMatchResponse
DealReveal = card_games_pb2.DealReveal
EventKind = match_pb2.EventKind
MatchStatus = match_pb2.MatchStatus

#: ErrorInfo domain of the engine's errors.
DOMAIN = "cardgames.v1"
_STATUS_DETAILS_KEY = "grpc-status-details-bin"
#: Codes after which a call may be repeated as it was (nothing was applied, or the call is
#: idempotent by its client_action_id): the call failed without an answer (docs/api.md,
#: "Acting": UNAVAILABLE, or a timeout after which the action may or may not have been applied).
_TRANSIENT = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
#: The ErrorInfo reason of a call the engine's request-rate limits refused (RESOURCE_EXHAUSTED):
#: it did nothing, and its google.rpc.RetryInfo says when the same call will be served.
RATE_LIMITED = "RATE_LIMITED"


def _rate_limited(error: "CardGamesError") -> bool:
    return error.code == grpc.StatusCode.RESOURCE_EXHAUSTED and error.reason == RATE_LIMITED


#: Codes after which a watch stream is reopened with after_seq: the connection or the server
#: went away, or the watcher fell behind (UNAVAILABLE, reason WATCH_OVERFLOW).
_RESUMABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                        grpc.StatusCode.CANCELLED})
#: Codes that a broken HTTP/2 stream can also produce (RST_STREAM): resumed too, but only a
#: few times in a row, since a server bug would produce them forever.
_MAYBE_RESUMABLE = frozenset({grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN})
_MAX_UNCLEAR_FAILURES = 3
#: Largest metadata (headers, trailers) accepted. An ABORTED status carries the caller's View in
#: its trailer, and views grow past grpc's default limit (8 KiB, then 16 KiB hard: the call
#: would fail with RESOURCE_EXHAUSTED and lose the view): allow as much as a response message.
MAX_METADATA_BYTES = 4 * 1024 * 1024
#: The channel's longest wait between attempts to reach an engine that is down (grpc's own
#: default grows to 2 minutes); the Node library uses the same value.
CHANNEL_MAX_RECONNECT_BACKOFF_MS = 1000

T = TypeVar("T")


# ---- errors --------------------------------------------------------------------------------


class CardGamesError(Exception):
    """A call failed. ``code`` is the gRPC status, ``reason`` the engine's machine-readable
    ErrorInfo reason (``ILLEGAL_ACTION``, ``STALE_SEQUENCE``, ``SEAT_TAKEN``...; ``""`` when the
    status carried none, e.g. a network failure), ``metadata`` its public details,
    ``request_id`` the call's id in the engine's logs (its google.rpc.RequestInfo; quote it when
    reporting a problem: an INTERNAL error's text names it)."""

    def __init__(self, code: grpc.StatusCode, message: str, reason: str = "",
                 metadata: Mapping[str, str] | None = None, view: View | None = None,
                 retry_delay_s: float | None = None, request_id: str = "") -> None:
        text = f"{code.name}" + (f" {reason}" if reason else "") + f": {message}"
        if request_id and code == grpc.StatusCode.INTERNAL:
            text += f" (request {request_id})"
        super().__init__(text)
        self.request_id = request_id
        self.code = code
        self.message = message
        self.reason = reason
        self.metadata = dict(metadata or {})
        self.view = view
        #: RATE_LIMITED: the google.rpc.RetryInfo delay after which the same call is served.
        self.retry_delay_s = retry_delay_s


class InvalidArgument(CardGamesError):
    """A malformed request or action string, unknown game or option (INVALID_ARGUMENT)."""


class FailedPrecondition(CardGamesError):
    """Not allowed now: an illegal move, not your turn, the match is over (FAILED_PRECONDITION)."""


class StaleSequence(CardGamesError):
    """``expected_seq`` was not the match's sequence number (ABORTED): ``view`` is the current one."""


class NotFound(CardGamesError):
    """No such match (NOT_FOUND)."""


class Unauthenticated(CardGamesError):
    """Missing or unknown token (UNAUTHENTICATED)."""


class PermissionDenied(CardGamesError):
    """The token is not allowed to do this: another seat or match, not the admin (PERMISSION_DENIED)."""


class AlreadyExists(CardGamesError):
    """The seat is taken (ALREADY_EXISTS)."""


class ResourceExhausted(CardGamesError):
    """A limit of the service was reached (RESOURCE_EXHAUSTED)."""


class Unavailable(CardGamesError):
    """The service cannot be reached or is draining (UNAVAILABLE)."""


class Internal(CardGamesError):
    """The server failed (INTERNAL); it logged the details."""


_ERROR_CLASSES: dict[grpc.StatusCode, type[CardGamesError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.ABORTED: StaleSequence,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.INTERNAL: Internal,
}


def error_from_rpc(exc: grpc.RpcError) -> CardGamesError:
    """The :class:`CardGamesError` for a failed call, with the rich status details decoded."""
    code = exc.code() if callable(getattr(exc, "code", None)) else grpc.StatusCode.UNKNOWN
    message = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
    reason, metadata, view, retry_delay_s, request_id = "", {}, None, None, ""
    trailers = exc.trailing_metadata() if callable(getattr(exc, "trailing_metadata", None)) else None
    for key, value in trailers or ():
        if key != _STATUS_DETAILS_KEY:
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                if info.domain == DOMAIN or not reason:
                    reason, metadata = info.reason, dict(info.metadata)
            elif detail.Is(View.DESCRIPTOR):
                view = View()
                detail.Unpack(view)
            elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                retry = error_details_pb2.RetryInfo()
                detail.Unpack(retry)
                retry_delay_s = retry.retry_delay.ToNanoseconds() / 1e9
            elif detail.Is(error_details_pb2.RequestInfo.DESCRIPTOR):
                info = error_details_pb2.RequestInfo()
                detail.Unpack(info)
                request_id = info.request_id
    cls = _ERROR_CLASSES.get(code, CardGamesError)
    return cls(code, message or "", reason, metadata, view, retry_delay_s, request_id)


# ---- values --------------------------------------------------------------------------------


#: The API's int64 fields (``OptionValue.int_value``) hold these integers.
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


def option_value(value: str | int | bool) -> match_pb2.OptionValue:
    """A table option value as the oneof the API expects (bool before int: bool is an int).
    ValueError for an integer beyond the API's int64, named as such: protobuf's own "Value
    out of range" was a traceback of the clients' commands, which each checked the range on
    their own (clients.play, clients.remote_bot) and now ask this."""
    if isinstance(value, bool):
        return match_pb2.OptionValue(bool_value=value)
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"{value} is beyond the API's 64-bit integers")
        return match_pb2.OptionValue(int_value=value)
    if isinstance(value, str):
        return match_pb2.OptionValue(string_value=value)
    raise TypeError(f"an option value is a str, int or bool, not {type(value).__name__}")


def python_value(value: match_pb2.OptionValue) -> str | int | bool | None:
    """The Python value of an OptionValue (None when unset)."""
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


def whole_numbers(value: Any) -> Any:
    """``value`` with its integral floats as ints, recursively: google.protobuf.Struct holds
    every number as a float, and the views' numbers are all integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    return value


def struct_value(message: Any) -> Any:
    """A google.protobuf.Struct / ListValue / Value as plain Python (:func:`whole_numbers`)."""
    return whole_numbers(json_format.MessageToDict(message))


def seat_spec(seat: str | None) -> match_pb2.SeatSpec:
    """``None`` or ``"open"``: an open seat; any other string: the bot of that name."""
    if seat is None or seat == "open":
        return match_pb2.SeatSpec(open=match_pb2.OpenSeat())
    return match_pb2.SeatSpec(bot=match_pb2.BotSeat(name=seat))


def legal_notations(view: View) -> list[str]:
    """The notation strings of a view's legal actions, in the server's order."""
    return [a.notation for a in view.legal_actions]


def is_my_turn(view: View) -> bool:
    return view.HasField("seat") and view.HasField("to_act") and view.to_act == view.seat


def is_finished(status: int) -> bool:
    return status in (MatchStatus.MATCH_STATUS_FINISHED, MatchStatus.MATCH_STATUS_TERMINATED)


def card_hash(salt: str, card: str) -> str:
    """The hash of one card of a committed deck (docs/api.md, "Fair dealing"): the lowercase
    hex SHA-256 of the UTF-8 text ``"<card salt>:<card code>"``."""
    return hashlib.sha256(f"{salt}:{card}".encode("utf-8")).hexdigest()


def _is_hex(text: str, digits: int) -> bool:
    return len(text) == digits and all(c in "0123456789abcdef" for c in text)


def verify_deal(reveal: DealReveal, commitment: str | None = None, *,
                pack: Sequence[str] | None = None) -> bool:
    """Whether a revealed deal (RevealDeals) opens its commitment: ``commitment`` is the one you
    saw while the match was played (``deal_commitments[reveal.deal]`` of a MatchSummary, or a
    View's ``deal_commitment``; None: the one the reveal carries, which proves nothing about
    what was published before the deal). Every shown card is hashed with its salt, every hidden
    position taken as its hash, and the SHA-256 of the hashes (comma-separated, top first) must
    be the commitment. ``pack``: the game's cards (``PACKS[game]``); given, the reveal must have
    one position per card of it and show only cards of it (a commitment to 31 or 33 positions,
    or to a card that is not in the game, opens too: only the pack tells). Card salts must
    differ, and no hidden hash may open with a shown card's salt (with ``pack``): a salt used
    twice would let anyone find a hidden card by trying the pack's cards. False as well for a
    deal that cannot be opened card by card (recorded before commitments existed, or before
    schema 4). Then check that the cards you held and saw played are the revealed ones at their
    places."""
    expected = (reveal.commitment if commitment is None else commitment).lower()
    cards, salts, hashes = list(reveal.cards), list(reveal.card_salts), list(reveal.card_hashes)
    if not expected or not cards or not (len(cards) == len(salts) == len(hashes)):
        return False
    shown = [c for c in cards if c]
    if len(set(shown)) != len(shown):
        return False
    if pack is not None and (len(cards) != len(pack) or not set(shown) <= set(pack)):
        return False
    shown_salts = [s for s in salts if s]
    hidden = [h for h in hashes if h]
    if len(set(shown_salts)) != len(shown_salts) or len(set(hidden)) != len(hidden):
        return False  # a salt (or a salted card) used twice: the salts are not per position
    if pack is not None and hidden and set(hidden) & {card_hash(s, c) for s in shown_salts for c in pack}:
        return False  # a hidden card hashed with a shown card's salt: anyone can find it
    opened = []
    for card, salt, digest in zip(cards, salts, hashes):
        if card and _is_hex(salt, 32) and not digest:
            opened.append(card_hash(salt, card))
        elif not card and not salt and _is_hex(digest, 64):
            opened.append(digest)
        else:
            return False
    return hashlib.sha256(",".join(opened).encode("ascii")).hexdigest() == expected


#: The pack of each game, for :func:`verify_deal`'s ``pack`` (KL-1.1, JJ-1.1, GJ-1.1,
#: JJK-1.1): 32 cards seven to ace; the Jokers' 36 cards six to ace with 6S and 6C replaced by
#: the jokers X1 and X2.
_RANKS32 = ("7", "8", "9", "T", "J", "Q", "K", "A")
_PACK32 = tuple(r + s for s in "SHDC" for r in _RANKS32)
_PACK36 = tuple(r + s for s in "SHDC" for r in ("6",) + _RANKS32 if r != "6" or s in "HD") + ("X1", "X2")
PACKS: Mapping[str, tuple[str, ...]] = {"klaberjass": _PACK32, "jojotte": _PACK32,
                                        "georgian_joker": _PACK36, "japanese_joker": _PACK36}


# ---- the watch stream's connection -------------------------------------------------------

#: :attr:`StreamState.state` values.
RECONNECTING = "reconnecting"
RESUMED = "resumed"
GAVE_UP = "gave_up"


@dataclass(frozen=True)
class MatchPage:
    """One page of a listing (the lobby, the admin's ListMatches): its matches and the token
    of the next page, to pass as ``page_token``; "" when this is the last page. A page may
    hold fewer matches than its limit while more follow (docs/api.md, "Paging")."""

    matches: list[MatchSummary]
    next_page_token: str = ""


@dataclass(frozen=True)
class StreamState:
    """A change of a watch stream's connection, passed to the ``on_connection`` hook of
    :meth:`_Audience.watch` (the stream itself says nothing while it is down: no event comes,
    exactly as when nobody moves).

    ``state``:

    * :data:`RECONNECTING`: the stream dropped (or a reopening failed) and is about to be
      reopened after ``delay_s``; ``attempt`` is the number of that reopening (1, 2, ... in a
      row without an event in between), ``max_attempts`` the watch's ``max_failures`` (None:
      no limit) and ``error`` why it dropped. The events meanwhile are not lost: the
      reopened stream replays them.
    * :data:`RESUMED`: a reopened stream delivered its first event (the replay of what was
      missed follows, or it is that); ``attempt`` is the reopening that succeeded. On an idle
      match that first event is the heartbeat the server sends at once when there is nothing
      to replay (an older server sent it only after its heartbeat interval, 5 s by default).
    * :data:`GAVE_UP`: the reopenings failed ``max_failures`` times in a row (or a stream
      ended INTERNAL / UNKNOWN a fourth time): ``error`` is raised by the iterator right
      after the hook returns. Not sent for errors that reconnecting cannot fix (no such
      match, a revoked token): those are raised as at the first opening.
    """

    state: str
    attempt: int
    max_attempts: int | None = None
    error: "CardGamesError | None" = None
    delay_s: float = 0.0


ConnectionHook = Callable[[StreamState], "None | Awaitable[None]"]


class _Silent(Exception):
    """A watch stream delivered nothing for longer than its silence limit."""

    def __init__(self, limit_s: float) -> None:
        super().__init__()
        self.error = CardGamesError(
            grpc.StatusCode.UNAVAILABLE,
            f"no message for {limit_s:g} s (heartbeats included): the stream is taken for lost",
            "STREAM_SILENT")


async def _messages(call, limit_s: Callable[[], float | None]) -> AsyncIterator[Any]:
    """The messages of a server-streaming ``call``; :class:`_Silent` when none comes within
    ``limit_s()`` (asked before each read; None: wait as long as it takes). Only the reads are
    timed: a caller slow to take the next message does not count against the stream."""
    messages = call.__aiter__()
    while True:
        limit = limit_s()
        try:
            if limit is None:
                message = await anext(messages)
            else:
                try:
                    async with asyncio.timeout(limit):
                        message = await anext(messages)
                except TimeoutError:
                    raise _Silent(limit) from None
        except StopAsyncIteration:
            return
        yield message


async def _tell(hook: ConnectionHook | None, state: StreamState) -> None:
    if hook is None:
        return
    outcome = hook(state)
    if inspect.isawaitable(outcome):
        await outcome


# ---- the client ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """How transient failures are retried: ``attempts`` tries in all, exponential backoff with
    full jitter between ``initial_backoff_s`` and ``max_backoff_s``.

    The default outlasts a restart of the engine (docs/api.md, "Restarts": a crash or an
    upgrade, about a second or two without an engine, then gRPC's own reconnection delay):
    ten tries wait about 5 s in all (rarely under 3 s), where four gave up within half a
    second and a bot's submit or GetView during the restart failed while its watch resumed.

    A call refused by a rate limit (RESOURCE_EXHAUSTED, RATE_LIMITED) counts against the same
    ``attempts``, and its retry waits at least the RetryInfo delay the engine sent (the time
    until the caller's bucket has a call again: sooner is refused again). A delay longer than
    ``max_rate_limit_wait_s`` is not waited: the error is raised at once, for the caller to
    decide (a player would rather be told than see a frozen screen)."""

    attempts: int = 10
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 2.0
    max_rate_limit_wait_s: float = 30.0

    def __post_init__(self) -> None:
        # a policy of no tries would make every call fail without being sent
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int) or self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts must be a whole number of at least 1, got {self.attempts!r}")
        for name in ("initial_backoff_s", "max_backoff_s", "max_rate_limit_wait_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"RetryPolicy.{name} must be a number of seconds, 0 or more, got {value!r}")

    def backoff(self, attempt: int) -> float:
        """The jittered delay before retry ``attempt`` (0 first). The exponent stops at 64,
        past any ``max_backoff_s`` a positive ``initial_backoff_s`` can reach: ``2 ** 1100``
        times a float is an OverflowError, which ended a watch after 1,100 drops in a row."""
        return random.uniform(0, min(self.max_backoff_s, self.initial_backoff_s * 2 ** min(attempt, 64)))


class Client:
    """A connection to one engine. Create it with :func:`connect`; close it (or use ``async
    with``) when done. ``admin_token`` is sent on admin calls (:attr:`admin`) and on
    CreateMatch (where it unlocks explicit decks and the first dealer)."""

    def __init__(self, channel: grpc.aio.Channel, *, admin_token: str | None = None,
                 timeout_s: float = 10.0, retry: RetryPolicy = RetryPolicy(), target: str = "") -> None:
        self.channel = channel
        self.target = target
        self.stub = card_games_pb2_grpc.CardGamesServiceStub(channel)
        self.timeout_s = timeout_s
        self.retry = retry
        # A token from a file or a Secret ends with a newline, which no header can carry (the
        # call failed with grpc's own "execute_batch" error); the engine drops it too.
        admin_token = (admin_token or "").strip() or None
        self._admin_token = admin_token
        self.admin = AdminClient(channel, admin_token, timeout_s) if admin_token else None

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.channel.close()

    async def wait_ready(self, timeout_s: float = 10.0) -> None:
        """Wait until the channel is connected (Unavailable after ``timeout_s``)."""
        try:
            await asyncio.wait_for(self.channel.channel_ready(), timeout_s)
        except asyncio.TimeoutError:
            raise Unavailable(grpc.StatusCode.UNAVAILABLE,
                              f"no connection within {timeout_s:g} s") from None

    # -- calls --------------------------------------------------------------------------

    async def call(self, method: Callable[..., Awaitable[T]], request: Any, *,
                   token: str | None = None, retry: bool = False,
                   retried: list[CardGamesError] | None = None) -> T:
        """One unary call with the token and timeout; errors become CardGamesError.

        ``retry``: repeat it on UNAVAILABLE or a timeout (only for calls that are safe to repeat),
        DRAINING included: a draining engine is going away, and the repeat reaches its successor
        (docs/api.md: "retry with backoff"); and when a rate limit refused it (RESOURCE_EXHAUSTED,
        RATE_LIMITED: nothing was done), after the engine's RetryInfo delay
        (:class:`RetryPolicy`). Up to ``self.retry.attempts`` tries in all; then the last
        error is raised. ``retried``: each error the call was repeated after is appended to it
        (whether an attempt may have been applied: a lost answer, not a refusal).
        """
        metadata = (("authorization", f"Bearer {token}"),) if token else None
        attempts = self.retry.attempts if retry else 1
        for attempt in range(attempts):
            try:
                return await method(request, timeout=self.timeout_s, metadata=metadata)
            except grpc.RpcError as exc:
                error = error_from_rpc(exc)
                limited = _rate_limited(error)
                if (error.code not in _TRANSIENT and not limited) or attempt == attempts - 1:
                    raise error from None
                wait_s = (error.retry_delay_s or 0.0) if limited else 0.0
                if wait_s > self.retry.max_rate_limit_wait_s:
                    raise error from None
                if retried is not None:
                    retried.append(error)
            await asyncio.sleep(max(wait_s, self.retry.backoff(attempt)))
        raise AssertionError("unreachable")

    async def list_games(self) -> list[match_pb2.GameInfo]:
        reply = await self.call(self.stub.ListGames, card_games_pb2.ListGamesRequest(), retry=True)
        return list(reply.games)

    async def list_bots(self, game: str = "") -> list[match_pb2.BotInfo]:
        reply = await self.call(self.stub.ListBots, card_games_pb2.ListBotsRequest(game=game), retry=True)
        return list(reply.bots)

    async def list_bot_load_failures(self) -> list[card_games_pb2.BotLoadFailure]:
        """The bot plugins, and single bots of a plugin, that the service left out when it
        started (plugin, stage, reason): why a bot is missing from :meth:`list_bots`, which
        would otherwise say nothing about it."""
        reply = await self.call(self.stub.ListBots, card_games_pb2.ListBotsRequest(), retry=True)
        return list(reply.load_failures)

    async def create_match(self, game: str, *, options: Mapping[str, str | int | bool] | None = None,
                           seats: Sequence[str | None] = (), turn_time_s: float = 0.0,
                           spectators_allowed: bool = True, name: str = "", listed: bool = False,
                           spectator_delay_actions: int = 0,
                           decks: Sequence[Sequence[str]] = (), first_dealer: int | None = None,
                           client_create_id: str | None = None) -> MatchSummary:
        """Create a match. ``seats``: one entry per seat, ``None``/``"open"`` for an open seat or
        a bot name (empty: every seat open). ``listed``: show it in the lobby
        (:meth:`list_open_matches`) while it waits for players. ``spectator_delay_actions``:
        spectators see the match that many actions late while it is played (0: live).
        ``decks`` and ``first_dealer`` need the admin token.

        The call is retried on UNAVAILABLE or a timeout with the same ``client_create_id`` (a
        fresh UUID unless given; 16 to 128 printable characters, a secret): a retry gets the
        match the lost attempt created, never a second match (docs/api.md, "Reconnecting
        without losing anything"). Give your own id to retry a create after the client itself
        restarted, with the same arguments (another request with the id is ALREADY_EXISTS,
        reason ``CLIENT_CREATE_ID_IN_USE``)."""
        request = card_games_pb2.CreateMatchRequest(
            game=game, options={k: option_value(v) for k, v in (options or {}).items()},
            seats=[seat_spec(s) for s in seats], spectators_allowed=spectators_allowed, name=name,
            listed=listed, spectator_delay_actions=spectator_delay_actions,
            decks=[card_games_pb2.Deck(cards=list(d)) for d in decks],
            client_create_id=client_create_id or str(uuid.uuid4()))
        if turn_time_s:
            request.turn_time.CopyFrom(_duration(turn_time_s))
        if first_dealer is not None:
            request.first_dealer = first_dealer
        reply = await self.call(self.stub.CreateMatch, request, token=self._admin_token, retry=True)
        return reply.match

    async def get_match(self, match_id: str) -> MatchSummary:
        reply = await self.call(self.stub.GetMatch, card_games_pb2.GetMatchRequest(match_id=match_id),
                                retry=True)
        return reply.match

    async def list_open_matches(self, game: str = "", limit: int = 0, page_token: str = "") -> list[MatchSummary]:
        """The lobby: listed matches waiting for players with a seat free, oldest first
        (``game``: only that game; ``limit``: at most that many, 0: the server's 50), from
        ``page_token`` on ("": the first page). :meth:`open_matches_page` also gives the next
        page's token, :meth:`all_open_matches` reads every page."""
        return (await self.open_matches_page(game, limit, page_token)).matches

    async def open_matches_page(self, game: str = "", limit: int = 0, page_token: str = "") -> MatchPage:
        """One page of the lobby and the token of the next ("" after the last page)."""
        reply = await self.call(self.stub.ListOpenMatches,
                                card_games_pb2.ListOpenMatchesRequest(game=game, limit=limit, page_token=page_token),
                                retry=True)
        return MatchPage(list(reply.matches), reply.next_page_token)

    async def all_open_matches(self, game: str = "", limit: int = 0) -> AsyncIterator[MatchSummary]:
        """Every listed match waiting for players, oldest first, page by page (``limit``: the
        page size); a match created meanwhile comes at the end, none is listed twice."""
        token = ""
        while True:
            page = await self.open_matches_page(game, limit, token)
            for m in page.matches:
                yield m
            if not page.next_page_token:
                return
            token = page.next_page_token

    async def join(self, match_id: str, *, seat: int | None = None, player_name: str = "",
                   client_join_id: str | None = None) -> "SeatSession":
        """Take a seat (``None``: the first open one); the session holds the seat token.

        The call is retried on UNAVAILABLE or a timeout with the same ``client_join_id`` (a
        fresh UUID unless given; 16 to 128 printable characters, a secret like the token): a
        retry gets the seat the lost attempt took, with a new token, and never a second seat
        (docs/api.md, "Reconnecting without losing anything"). Give your own id to retry a
        join after the client itself restarted."""
        request = card_games_pb2.JoinMatchRequest(match_id=match_id, player_name=player_name,
                                                  client_join_id=client_join_id or str(uuid.uuid4()))
        if seat is not None:
            request.seat = seat
        reply = await self.call(self.stub.JoinMatch, request, retry=True)
        return SeatSession(self, reply.match_id, reply.seat, reply.seat_token)

    async def reveal_deals(self, match_id: str, *, token: str | None = None) -> list[DealReveal]:
        """Every deal's commitment opened for the cards the table saw, of a match that is over
        (RevealDeals; before the end FailedPrecondition, reason ``MATCH_NOT_OVER``). Sent with
        ``token`` (a seat token), else the client's admin token, else none (a spectator: the
        match must allow spectators). Check each with :func:`verify_deal`."""
        reply = await self.call(self.stub.RevealDeals, card_games_pb2.RevealDealsRequest(match_id=match_id),
                                token=token or self._admin_token, retry=True)
        return list(reply.deals)

    def seat_session(self, match_id: str, seat: int, token: str) -> "SeatSession":
        """A session for a seat joined earlier (e.g. after a restart of the client)."""
        return SeatSession(self, match_id, seat, token)

    def spectate(self, match_id: str) -> "Spectator":
        """A spectator of a match (no token; the match must allow spectators)."""
        return Spectator(self, match_id, None)


class ServerClock:
    """How far the server's clock is ahead of this machine's, read from the ``server_time``
    of HEARTBEAT events. A view's ``deadline`` is on the server's clock: a machine whose clock
    is a minute behind gave its bot a minute too long (the server's timer played first), one
    a minute ahead gave it no time at all; a countdown was off by as much. Each heartbeat's
    reading is short of the offset by the message's transit time, so the largest reading is
    kept (at most the transit time too late: a remote bot keeps a margin back). Before any heartbeat (a server before
    2026-12-04, or none yet), the clocks are taken to agree. The terminal clients' countdowns
    and clients/remote_bot.py's budgets use it."""

    def __init__(self) -> None:
        self.offset_s: float | None = None

    def heard(self, details: Any, received_at: float) -> None:
        value = details.fields.get("server_time") if details is not None else None
        if value is not None and value.HasField("number_value"):
            reading = value.number_value - received_at
            self.offset_s = reading if self.offset_s is None else max(self.offset_s, reading)

    def now(self) -> float:
        """This machine's clock as the server's reads it."""
        return time.time() + (self.offset_s or 0.0)


def header_safe(token: str) -> bool:
    """Whether ``token`` (a seat token, the admin token) can go in a gRPC header as a bearer
    token: printable ASCII without spaces. gRPC refuses any other character in the calling
    process, with an internal ExecuteBatchError and a core log line rather than a status."""
    return all(33 <= ord(c) <= 126 for c in token)


def command_parser(prog: str, description: str, **kwargs: Any) -> argparse.ArgumentParser:
    """The argparse parser of a client command (``python -m clients.play`` ...): flags are
    never abbreviated, as engine_service's commands and clients.admin have it. argparse took
    ``--targ`` for ``--target`` and any unambiguous prefix for the flag it began, so a script's
    prefix came to mean another flag, or failed, once a flag with the same start was added
    (``--list`` beside ``--listed``), and an ambiguous one was refused with its value echoed
    ("ambiguous option: --t=VALUE could match --target, --tls, --token-file")."""
    return argparse.ArgumentParser(prog=prog, description=description, allow_abbrev=False, **kwargs)


#: The engine's own default port (``serve --port``), and the variable that sets it.
DEFAULT_PORT = 50051
PORT_ENV = "CARDGAMES_PORT"


def default_target(environ: Mapping[str, str] | None = None) -> str:
    """The engine beside this command, on the port it listens on (``CARDGAMES_PORT`` of
    ``environ``, else of this process, read as the engine reads it: empty counts as unset,
    50051, and surrounding whitespace is dropped): the default ``--target`` of
    ``clients.health`` (the image's HEALTHCHECK), ``clients.admin`` (``kubectl exec`` into
    the engine's pod) and ``clients.watch``. ``CARDGAMES_PORT=`` made the target
    ``127.0.0.1:``, a usage error, while the engine served on 50051; a fixed 50051 missed an
    engine the ConfigMap moved.

    A value the engine refuses to start with is a ValueError with the engine's message
    (engine_service/settings.py: ``not a whole number: 'http'``, ``must be 0 to 65535``): it
    went into the target unchecked, and gRPC dialled ``http`` as port 80, ``-1`` as 65535 and
    ``' '`` as 50051. So is 0, on which the engine listens on a free port that only its log
    names. The engine's rule is written out here, not imported: engine_service.settings brings
    the engine's modules with it and doubled the health check's run time;
    tests/clients/test_admin_cli.py holds the two to the same answers."""
    raw = (os.environ if environ is None else environ).get(PORT_ENV) or ""
    if not raw:
        return f"127.0.0.1:{DEFAULT_PORT}"
    try:
        port = int(raw)
    except ValueError:
        raise ValueError(f"environment variable {PORT_ENV} (--port): not a whole number: {raw!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"environment variable {PORT_ENV} (--port): must be 0 to 65535, not {raw!r}")
    if port == 0:
        raise ValueError(f"environment variable {PORT_ENV} (--port) is 0: the engine listens on a free port then, "
                         "which only its log names")
    return f"127.0.0.1:{port}"


def target_or_default(parser: argparse.ArgumentParser, target: str | None,
                      environ: Mapping[str, str] | None = None) -> str:
    """``--target`` when given, else :func:`default_target`, whose ValueError is a usage error
    (exit status 2) naming the variable. Read only then: a bad ``CARDGAMES_PORT`` does not stop
    a command told where the engine is."""
    if target is not None:
        return target
    try:
        return default_target(environ)
    except ValueError as exc:
        parser.error(f"the default --target is 127.0.0.1:${PORT_ENV}, and {exc} (or give --target "
                     "HOST:PORT)")


def target_arg(text: str) -> str:
    """argparse ``type`` of the clients' ``--target``: ``host:port`` with a port after its
    ``:``, refused as a usage error otherwise (:func:`connect` would raise ValueError)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the target is empty (host:port, e.g. 127.0.0.1:50051)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a byte that is not UTF-8: the commands' check_text refuses it, unshown
        return text
    problem = _target_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{text!r} {problem} (host:port, e.g. 127.0.0.1:50051)")
    return text


def read_root_certificates(path: str) -> bytes:
    """The clients' ``--ca`` file, checked: ValueError with a one-line reason when it cannot be
    read or holds no PEM certificate. gRPC takes any bytes as root certificates; a wrong file
    (a key, a DER file, garbage) wrote gRPC core's "Update handshaker factory failed" lines on
    stderr, and the call then failed as UNAVAILABLE "Connection refused" or the like, naming
    the engine rather than the file. Python's ssl module reads the PEM as a TLS client does."""
    # bounded: /dev/zero given as --ca filled the memory (UnreadableFile is a ValueError)
    pem = read_named(path, PEM_LIMIT, "the CA file")
    try:  # a comment line may hold other characters; only the PEM blocks count
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(
            cadata=pem.decode("ascii", "ignore"))
    except (ssl.SSLError, ValueError):
        raise ValueError(f"the CA file {path} holds no usable PEM certificate "
                         "('-----BEGIN CERTIFICATE-----' blocks)") from None
    return pem


@dataclass(frozen=True)
class FileArgument:
    """A file named on the command line (``--ca``, clients.play's ``--token-file``) with what
    was read from it as the command line was parsed. Read once: a pipe (``--ca <(...)``) gives
    its content to one reader only. ``str()`` is the path, for messages and the command lines
    the clients print; the repr leaves the value out (a ``--token-file``'s is the seat token, a
    secret: never in a repr)."""

    path: str
    value: Any = field(repr=False)

    def __str__(self) -> str:
        return self.path


def ca_file_arg(path: str) -> FileArgument:
    """argparse ``type`` of the clients' ``--ca``: the file and its certificates
    (:func:`read_root_certificates`), a usage error (exit status 2) naming the file when it
    cannot be read or holds no certificate, before any engine is started or reached.
    clients.health, clients.play, clients.watch and clients.remote_bot said it with exit status
    1, which their callers read as an engine that failed or is unhealthy (the image's
    HEALTHCHECK), clients.admin and the Node client with 2; clients.play started an engine of
    its own first."""
    try:
        return FileArgument(path, read_root_certificates(path))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_arg(unit: str, most: float, *, zero: str | None = None) -> Callable[[str], float]:
    """An argparse ``type`` for a finite number of ``unit`` above zero and at most ``most``: a
    deadline, a time budget. gRPC takes 0, a negative number, ``nan``, ``inf`` and any deadline
    past its clock's range (``1e10`` seconds: int64 nanoseconds) as a deadline and fails the
    call at once with DEADLINE_EXCEEDED: the command exited 1, as if the engine had failed
    (clients.admin) or were unhealthy (clients.health), for what is a typing error; a bot's
    budget of -1 or ``nan`` became no time at all, ``inf`` a bot never told to stop.

    ``zero``: what 0 means where it is taken too (:data:`turn_time_arg`: the game's default),
    named in the refusal; without it 0 is refused."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        lowest_ok = value >= 0 if zero is not None else value > 0
        if not (math.isfinite(value) and lowest_ok and value <= most):
            allowed = f"from 0 ({zero}) to {most:g}" if zero is not None else f"above 0 and at most {most:g}"
            raise argparse.ArgumentTypeError(f"must be a number of {unit} {allowed}, not {text!r}")
        return value

    return parse


#: The longest deadline or budget a client takes: a day is far beyond any call or decision.
DAY_S = 86_400.0

#: argparse ``type`` of the clients' ``--timeout`` (a call's deadline).
seconds_arg = positive_arg("seconds", DAY_S)


#: The API's seat numbers and page sizes are int32 fields.
INT32_MAX = 2**31 - 1


class TableOptionAction(argparse.Action):
    """``--option NAME=VALUE``, repeatable, a name at most once: the same name given twice
    (``--option kl_target_score=300 --option kl_target_score=5``) kept the last value without a
    word; it is a usage error naming the option, as the arena's ``--options`` and a transcript
    refuse a name given twice."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        given = list(getattr(namespace, self.dest, None) or [])
        name = str(values).partition("=")[0]
        if "=" in str(values) and any(g.partition("=")[0] == name for g in given):
            raise argparse.ArgumentError(self, f"the option {name!r} is given twice: give it once")
        setattr(namespace, self.dest, given + [values])


def refuse_with_match(parser: argparse.ArgumentParser, args: argparse.Namespace,
                      new_table: Sequence[tuple[str, str]]) -> None:
    """A usage error (exit status 2) naming the flags of ``new_table`` (each a flag and its
    ``args`` attribute) given with ``--match``: they set up a new match's table, and the match
    joined keeps the one it was created with, so they were dropped without a word (the player
    or bot sat at another table than the one asked for). Each such flag defaults to None (a
    switch to False): a given ``--turn-time 0`` or ``--bots ''`` counts (``0 == False``, hence
    by identity)."""
    if not args.match:
        return
    values = ((flag, getattr(args, dest)) for flag, dest in new_table)
    given = [flag for flag, value in values if value is not None and value is not False]
    if given:
        parser.error(f"{' '.join(given)} {'sets' if len(given) == 1 else 'set'} up a new match, and --match ID "
                     "joins one whose table is set: give one or the other")


def bot_names_arg(text: str) -> str:
    """argparse ``type`` of the bots of a new match's other seats, comma-separated
    (``clients.play --bots``, ``clients.remote_bot --opponents``). Left blank it is the
    command's default; a blank name among them (``heuristic,,search``, ``,``) is a usage error:
    it was dropped without a word, so the names left filled other seats than the ones written
    (or ``,`` meant random bots)."""
    if text.strip() and not all(name.strip() for name in text.split(",")):
        raise argparse.ArgumentTypeError(f"a blank bot name in {text!r}: give names separated by single commas")
    return text


def int32_arg(text: str) -> int:
    """argparse ``type`` of a seat number (``--seat``, ``SEAT``): a whole number the API's
    int32 field holds; which seats a match has, the server or the command says. A larger one
    was protobuf's "Value out of range" traceback building the request."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not -INT32_MAX - 1 <= value <= INT32_MAX:
        raise argparse.ArgumentTypeError(f"{text} is beyond the API's 32-bit integers")
    return value


#: argparse ``type`` of the clients' ``--turn-time`` (clients.play, clients.remote_bot): a
#: finite number of seconds, 0 (the game's default) to a day; the server says which are
#: allowed (10 to 120, JJK-11). ``nan`` or ``inf`` was a ValueError traceback building the
#: request, a larger number a protobuf one.
turn_time_arg = positive_arg("seconds", DAY_S, zero="the game's default")


#: gRPC's own target schemes (``unix:/run/engine.sock``, ``dns:///host:port``, ``ipv4:...``):
#: what follows them is for that resolver to read, a path or a list of addresses, not a port.
_GRPC_SCHEMES = frozenset({"dns", "unix", "unix-abstract", "ipv4", "ipv6", "vsock", "xds", "google-c2p"})


def _target_problem(target: str) -> str | None:
    """What is wrong with the port of ``target``, or None. gRPC refuses none of these: it
    takes port 443 for ``host:``, a port above 65535 modulo 65536 (``:99999`` dialled port
    34463), and a name for a service name (``host:http`` dialled port 80; ``host:-1`` 65535),
    so the call waited on, or reached, another port than the one meant. The text after the
    last ``:`` is the port when it is all digits (a bare IPv6 address ends with a group of at
    most four digits, so never a number above 65535), and when it follows a host without a
    ``:`` of its own or in brackets (``[::1]:50051``), unless that host is one of gRPC's
    schemes (:data:`_GRPC_SCHEMES`); a target without a ``:`` has no port to check."""
    if target.endswith(":"):
        return "has no port after its ':'"
    host, colon, port = target.rpartition(":")
    digits = port.isascii() and port.isdigit()
    if digits and int(port) > 65535:
        return f"has port {port}, above 65535"
    host_port = colon and (":" not in host or (host.startswith("[") and host.endswith("]")))
    if not host_port or host.lower() in _GRPC_SCHEMES or (digits and int(port) > 0):
        return None
    return f"has port {port if digits else repr(port)}, not a number from 1 to 65535"


def connect(target: str, *, tls: bool = False, root_certificates: bytes | None = None,
            server_name: str | None = None, admin_token: str | None = None,
            timeout_s: float = 10.0, retry: RetryPolicy = RetryPolicy()) -> Client:
    """A :class:`Client` for the engine at ``target`` (``host:port``).

    ``tls``: encrypt and verify the server (``root_certificates``: PEM roots, default the
    system's; ``server_name``: the name to verify when it differs from the target's host).
    ``root_certificates`` or ``server_name`` implies ``tls``, as in the Node client: a name to
    verify on a plaintext channel was dropped without a word, and the connection was plain.
    The channel connects lazily; :meth:`Client.wait_ready` waits for it. A target ending in
    ``:`` (``host:``, a port left out of a script's variable), with a port above 65535 or with
    one that is no number from 1 to 65535 (``host:-1``, ``host:http``) is a ValueError: gRPC
    would take port 443 for the first, the port modulo 65536 for the second, a service name's
    port or 65535 for the others, and the call would wait on (or reach) the wrong port
    without a word.
    """
    problem = _target_problem(target)
    if problem:
        raise ValueError(f"the target {target!r} {problem} (host:port, e.g. 127.0.0.1:50051)")
    options: list[tuple[str, Any]] = [
        # Watch streams are long-lived: ping so that a dead connection is noticed (and the
        # stream resumed) within a minute, not at the next TCP timeout.
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.max_metadata_size", MAX_METADATA_BYTES),
        ("grpc.absolute_max_metadata_size", MAX_METADATA_BYTES),
        # While the engine is unreachable the channel waits between its own connection
        # attempts, growing to 2 minutes, and every call fails at once meanwhile: after a 20 s
        # outage the watch stream came back 6 s after the engine (its reopenings used up
        # meanwhile). Capped at a second (and a reopening waiting for the channel, see
        # _pause), it comes back within about a second.
        ("grpc.max_reconnect_backoff_ms", CHANNEL_MAX_RECONNECT_BACKOFF_MS),
    ]
    if tls or root_certificates or server_name:
        if server_name:
            options.append(("grpc.ssl_target_name_override", server_name))
        credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
        channel = grpc.aio.secure_channel(target, credentials, options=options)
    else:
        channel = grpc.aio.insecure_channel(target, options=options)
    return Client(channel, admin_token=admin_token, timeout_s=timeout_s, retry=retry, target=target)


async def _pause(channel: grpc.aio.Channel, delay_s: float, error: CardGamesError | None) -> None:
    """Wait ``delay_s`` before a stream is reopened, or less when the engine was unreachable
    and the channel connects again meanwhile: the jittered delay then only made the stream
    come back up to ``max_backoff_s`` after the engine (a CI run saw 3 s). A server's refusal
    (a rate limit's RetryInfo) is waited out in full: the channel is up already."""
    if error is None or error.code != grpc.StatusCode.UNAVAILABLE \
            or channel.get_state() == grpc.ChannelConnectivity.READY:
        await asyncio.sleep(delay_s)
        return

    async def connected() -> None:
        state = channel.get_state(try_to_connect=True)
        while state != grpc.ChannelConnectivity.READY:
            await channel.wait_for_state_change(state)
            state = channel.get_state(try_to_connect=True)

    try:
        await asyncio.wait_for(connected(), delay_s)
    except asyncio.TimeoutError:
        pass


def _duration(seconds: float) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(round(seconds * 1e9)))
    return d


# ---- audiences -----------------------------------------------------------------------------


@dataclass
class _Audience:
    client: Client
    match_id: str
    token: str | None = field(repr=False)  # a secret: never in a repr

    async def view(self) -> View:
        """The audience's current view (GetView)."""
        reply = await self.client.call(self.client.stub.GetView,
                                       card_games_pb2.GetViewRequest(match_id=self.match_id),
                                       token=self.token, retry=True)
        return reply.view

    async def summary(self) -> MatchSummary:
        return await self.client.get_match(self.match_id)

    async def reveal_deals(self) -> list[DealReveal]:
        """The match's decks, opened for the cards shown, once it is over, as this audience
        (:meth:`Client.reveal_deals`)."""
        reply = await self.client.call(self.client.stub.RevealDeals,
                                       card_games_pb2.RevealDealsRequest(match_id=self.match_id),
                                       token=self.token, retry=True)
        return list(reply.deals)

    async def watch(self, after_seq: int | None = None, *, resume: bool = True,
                    stop_when_ended: bool = True, max_failures: int | None = None,
                    on_connection: ConnectionHook | None = None,
                    silence_timeout_s: float | None = None) -> AsyncIterator[Event]:
        """The match's events for this audience, resuming a dropped stream where it stopped.

        ``after_seq=None`` starts with a SNAPSHOT of the current view; a number replays what
        came after it (or starts with a SNAPSHOT when that is more actions than the server
        replays, its snapshot threshold, 100 by default: docs/api.md). When the stream breaks
        (network, server restart, a watcher that fell behind) it is reopened with ``after_seq``
        = the last sequence number received, after a jittered backoff (at least the RetryInfo
        delay when the reopening was rate limited), so the caller sees no ACTION twice, and
        every one unless the break outlasted the snapshot threshold.

        A resumed stream replays actions only, and the match's start is no action (seq 0
        before and after it; it reaches watchers as the PRESENCE event of the last seat's
        join). So while the view last delivered is still WAITING (or none was delivered and
        the last sequence number is 0), the stream is reopened *without* ``after_seq``: it
        starts with a SNAPSHOT of the current view, the started one if the match started
        meanwhile, instead of staying on the waiting view until the first action. That
        SNAPSHOT is delivered only when it is at the last sequence number received (no action
        came in between); else the stream is opened again with ``after_seq``, and the actions
        played meanwhile come as ACTION events, each once, as after any other break.

        A reopening refused with BAD_AFTER_SEQ (the match is behind the events delivered: the
        operator restored a backup) starts again from a SNAPSHOT of the match as it stands,
        once the server has sent a message on this watch: before that, the ``after_seq`` is
        only the caller's, and BAD_AFTER_SEQ is raised as at the first opening.

        The iterator ends after the MATCH_ENDED event (``stop_when_ended``) or raises
        CardGamesError for a failure that reconnecting cannot fix (no such match, bad token),
        when ``resume`` is False, or after ``max_failures`` reconnections in a row that
        delivered nothing (None: keep trying while the server is unreachable).

        ``on_connection(state)`` (a function or a coroutine function, awaited before the
        iterator goes on) is told each :class:`StreamState` change: ``reconnecting`` before
        every reopening after a drop, ``resumed`` just before the first event of the stream
        that came back, ``gave_up`` just before the error is raised. Without it nothing tells
        a caller that the stream is down: the iterator just waits, as on a quiet table.

        A stream that delivers nothing, not even a heartbeat, for ``silence_timeout_s`` is
        taken for lost and reopened as after a drop (its ``reconnecting`` error: UNAVAILABLE,
        reason ``STREAM_SILENT``). A network that drops every packet without a reset ends no
        call by itself: keepalive notices after up to 40 s, and not at all where a proxy
        answers the pings while its own way to the engine is cut. None (the default): three of
        the heartbeat intervals the server names in its HEARTBEAT events (``interval_s``) plus
        1 s, 16 s at the server's default 5 s, from the first heartbeat on (a server that names
        none, before 2026-12-03: no limit); 0: no limit.
        """
        last = after_seq
        # Whether replaying after ``last`` shows the match as it is: the view last delivered is
        # past WAITING, or actions came after it (a match with actions, last > 0, started too).
        started = False
        first = True  # the first stream opens as asked
        # the server has sent a message: ``last`` is a seq it delivered or accepted, not
        # only the caller's (BAD_AFTER_SEQ then means a restored match, not a caller's bug)
        heard = False
        failures = 0
        down = False  # a drop was reported (reconnecting) and no event has come since
        # the longest wait for a message before the stream counts as lost (None: no limit)
        silence_s = silence_timeout_s or None
        metadata = (("authorization", f"Bearer {self.token}"),) if self.token else None
        while True:
            wait_s = 0.0  # at least this long before reopening (a RATE_LIMITED RetryInfo)
            error: CardGamesError | None = None  # why the stream dropped (None: ended cleanly)
            request = card_games_pb2.WatchMatchRequest(match_id=self.match_id)
            if last is not None and (first or started or last > 0):
                request.after_seq = last
            # reopened without after_seq on a waiting view: its SNAPSHOT must not skip actions
            checking = last is not None and not request.HasField("after_seq")
            behind = False
            first = False
            call = self.client.stub.WatchMatch(request, metadata=metadata)
            try:
                async for event in _messages(call, lambda: silence_s):
                    if silence_timeout_s is None and event.kind == EventKind.EVENT_KIND_HEARTBEAT:
                        interval = event.details.fields.get("interval_s")
                        if interval is not None and interval.number_value > 0:
                            silence_s = 3 * interval.number_value + 1
                    heard = True
                    if down:
                        down = False
                        await _tell(on_connection, StreamState(RESUMED, failures, max_failures))
                    failures = 0
                    if checking:
                        checking = False
                        if event.kind == EventKind.EVENT_KIND_SNAPSHOT and event.seq > last:
                            # actions were played meanwhile: replay them, each an ACTION event
                            started = behind = True
                            break
                    if event.kind in (EventKind.EVENT_KIND_ACTION, EventKind.EVENT_KIND_SNAPSHOT,
                                      EventKind.EVENT_KIND_MATCH_ENDED):
                        if event.kind == EventKind.EVENT_KIND_ACTION and last is not None and event.seq <= last:
                            continue  # already delivered before a reconnect
                        last = event.seq
                    if event.HasField("view"):
                        started = event.view.status != MatchStatus.MATCH_STATUS_WAITING
                    yield event
                    if stop_when_ended and event.kind == EventKind.EVENT_KIND_MATCH_ENDED:
                        return
                else:
                    # The server ended the stream cleanly: it is draining (resume on its
                    # successor), or the match is over and its end was already seen before a
                    # reconnect.
                    if not resume or is_finished((await self.client.get_match(self.match_id)).status):
                        return
                if behind:
                    continue  # reopened at once, with after_seq (no failure)
            except (grpc.RpcError, _Silent) as exc:
                error = exc.error if isinstance(exc, _Silent) else error_from_rpc(exc)
                if (resume and heard and error.reason == "BAD_AFTER_SEQ"
                        and request.HasField("after_seq")):
                    # The match is behind the events already delivered: the operator restored
                    # a backup (docs/operations.md, "Backup and restore"). Start again from a
                    # SNAPSHOT of the match as it now stands (its seq below the last one
                    # delivered) and follow it from there, rather than give up the seat.
                    last = None
                    started = False
                    continue
                unclear = error.code in _MAYBE_RESUMABLE and failures < _MAX_UNCLEAR_FAILURES
                # a reopening refused by a rate limit did nothing: open again after its delay
                limited = _rate_limited(error)
                if not resume or not (error.code in _RESUMABLE or unclear or limited):
                    if resume and error.code in _MAYBE_RESUMABLE:  # the unclear ones ran out
                        await _tell(on_connection, StreamState(GAVE_UP, failures, max_failures, error))
                    raise error from None
                if max_failures is not None and failures >= max_failures:
                    await _tell(on_connection, StreamState(GAVE_UP, failures, max_failures, error))
                    raise error from None
                if limited:
                    wait_s = error.retry_delay_s or 0.0
            finally:
                call.cancel()
            delay_s = max(wait_s, self.client.retry.backoff(failures))
            down = True
            await _tell(on_connection, StreamState(RECONNECTING, failures + 1, max_failures, error, delay_s))
            await _pause(self.client.channel, delay_s, error)
            failures += 1


class Spectator(_Audience):
    """A spectator of one match: :meth:`view` and :meth:`watch` the public information only."""


class SeatSession(_Audience):
    """One seat of one match, authenticated by its seat token."""

    def __init__(self, client: Client, match_id: str, seat: int, token: str) -> None:
        super().__init__(client, match_id, token)
        self.seat = seat

    def __repr__(self) -> str:  # never the token
        return f"SeatSession(match_id={self.match_id!r}, seat={self.seat})"

    async def submit(self, action: str, expected_seq: int | None = None, *,
                     client_action_id: str | None = None) -> card_games_pb2.SubmitActionResponse:
        """Submit one action (its notation string).

        ``expected_seq``: the seq of the view the action was decided on; if the match has moved
        on, :class:`StaleSequence` is raised with the current view (see :meth:`act`). The call
        is retried on UNAVAILABLE or a timeout with the same ``client_action_id`` (a fresh UUID
        unless given), so a retry can never apply the action twice (the reply then has
        ``duplicate=True``).
        """
        request = card_games_pb2.SubmitActionRequest(
            match_id=self.match_id, action=action, client_action_id=client_action_id or uuid.uuid4().hex)
        if expected_seq is not None:
            request.expected_seq = expected_seq
        return await self.client.call(self.client.stub.SubmitAction, request, token=self.token, retry=True)

    async def act(self, decide: Callable[[View], str | Awaitable[str]], view: View | None = None, *,
                  max_stale: int = 5) -> card_games_pb2.SubmitActionResponse | None:
        """Decide on the current view and submit, re-deciding if the view was stale.

        ``decide(view)`` returns a notation string from ``view.legal_actions``. The action is
        sent with ``expected_seq = view.seq``; on ABORTED (someone else acted first: a bot, a
        timeout's auto-move) ``decide`` is asked again on the fresh view the error carries.
        Returns the reply, or None when it is no longer this seat's turn (the match moved on,
        or ended meanwhile: FAILED_PRECONDITION / MATCH_NOT_ACTIVE).
        """
        view = view if view is not None else await self.view()
        for _ in range(max_stale + 1):
            if not is_my_turn(view) or is_finished(view.status):
                return None
            choice = decide(view)
            if inspect.isawaitable(choice):
                choice = await choice
            try:
                return await self.submit(choice, view.seq)
            except StaleSequence as stale:
                view = stale.view if stale.view is not None and stale.view.match_id else await self.view()
            except FailedPrecondition as refused:
                if refused.reason == "MATCH_NOT_ACTIVE":
                    return None
                raise
        raise StaleSequence(grpc.StatusCode.ABORTED, f"the view was stale {max_stale + 1} times in a row",
                            "STALE_SEQUENCE", view=view)

    async def leave(self, resign: bool = False) -> MatchSummary:
        """Leave the match: free the seat while it waits; in an active match, resign (``resign``
        says the caller means it; leaving an active match counts as resigning either way).

        Repeated on UNAVAILABLE or a timeout, and after a rate limit's delay, as
        :meth:`Client.call` repeats: the server answers a repeat after the seat's own leave
        took effect with OK (docs/api.md, "Leaving"): the match as it stands, or for a seat
        freed in a waiting match, the first leave's answer. An engine that no longer remembers
        that leave (it restarted since, or is older than 2026-12-04) answers the freed seat's
        void token UNAUTHENTICATED: after a lost answer that means the first leave went
        through, and the match's public summary is returned instead."""
        request = card_games_pb2.LeaveMatchRequest(match_id=self.match_id, resign=resign)
        retried: list[CardGamesError] = []
        try:
            reply = await self.client.call(self.client.stub.LeaveMatch, request, token=self.token,
                                           retry=True, retried=retried)
        except Unauthenticated:
            if not any(e.code in _TRANSIENT for e in retried):
                raise  # no answer was lost: the token is bad
            return await self.client.get_match(self.match_id)  # the lost leave freed the seat
        return reply.match


# ---- admin ---------------------------------------------------------------------------------


@dataclass
class AdminClient:
    """The AdminService with the admin token (``Client.admin`` when the client has one)."""

    channel: grpc.aio.Channel
    token: str | None = field(repr=False)  # a secret: never in a repr (a traceback's locals)
    timeout_s: float = 10.0
    stub: Any = field(init=False)

    def __post_init__(self) -> None:
        self.token = (self.token or "").strip() or None  # a file's newline: see Client
        self.stub = admin_pb2_grpc.AdminServiceStub(self.channel)

    async def _call(self, method: Callable[..., Awaitable[T]], request: Any) -> T:
        metadata = (("authorization", f"Bearer {self.token}"),) if self.token else None
        try:
            return await method(request, timeout=self.timeout_s, metadata=metadata)
        except grpc.RpcError as exc:
            raise error_from_rpc(exc) from None

    async def list_matches(self, status: int = 0, game: str = "", limit: int = 0,
                           page_token: str = "") -> list[MatchSummary]:
        """Matches, newest first (``status``, ``game``: filters; ``limit``: the page size, 0:
        the server's 100), from ``page_token`` on ("": the first page). :meth:`matches_page`
        also gives the next page's token, :meth:`all_matches` reads every page."""
        return (await self.matches_page(status, game, limit, page_token)).matches

    async def matches_page(self, status: int = 0, game: str = "", limit: int = 0, page_token: str = "") -> MatchPage:
        """One page of ListMatches and the token of the next ("" after the last page); send
        the token with the same ``status`` and ``game`` (else InvalidArgument, BAD_PAGE_TOKEN)."""
        reply = await self._call(self.stub.ListMatches, admin_pb2.ListMatchesRequest(
            status=status, game=game, limit=limit, page_token=page_token))
        return MatchPage(list(reply.matches), reply.next_page_token)

    async def all_matches(self, status: int = 0, game: str = "", limit: int = 0,
                          page_token: str = "") -> AsyncIterator[MatchSummary]:
        """Every match, newest first, page by page (``limit``: the page size), from
        ``page_token`` on: none is listed twice or skipped for matches created or deleted
        meanwhile (docs/api.md, "Paging")."""
        while True:
            page = await self.matches_page(status, game, limit, page_token)
            for m in page.matches:
                yield m
            if not page.next_page_token:
                return
            page_token = page.next_page_token

    async def inspect(self, match_id: str) -> admin_pb2.InspectMatchResponse:
        return await self._call(self.stub.InspectMatch, admin_pb2.InspectMatchRequest(match_id=match_id))

    async def terminate(self, match_id: str, reason: str) -> MatchSummary:
        reply = await self._call(self.stub.TerminateMatch,
                                 admin_pb2.TerminateMatchRequest(match_id=match_id, reason=reason))
        return reply.match

    async def reissue_seat_token(self, match_id: str, seat: int) -> admin_pb2.ReissueSeatTokenResponse:
        """A new token for a player's seat; the old one stops working (admin.proto)."""
        return await self._call(self.stub.ReissueSeatToken,
                                admin_pb2.ReissueSeatTokenRequest(match_id=match_id, seat=seat))

    async def export_transcript(self, match_id: str) -> str:
        reply = await self._call(self.stub.ExportTranscript, admin_pb2.ExportTranscriptRequest(match_id=match_id))
        return reply.transcript_json
