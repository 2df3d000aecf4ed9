"""CardGamesService and AdminService: thin adapters from gRPC calls to a MatchService.

Each method authenticates the caller, converts the request (codec), makes one call on the
session layer and converts the answer. Every exception leaves through :func:`_fail`, which
applies the one error table (errors.py): the client gets the mapped code, message and
ErrorInfo; an unexpected exception is logged with its traceback and reaches the client as a
bare INTERNAL.
"""

from __future__ import annotations

import contextlib
import functools
import json
from typing import Any, AsyncIterator, Callable

import grpc
import structlog

from ..rules.errors import UnknownGame
from ..sessions import api
from . import codec
from .auth import AdminGate, bearer_token
from .errors import OUT_OF_FILE_DESCRIPTORS, classify, to_status
from .generated import admin_pb2, admin_pb2_grpc, card_games_pb2 as pb, card_games_pb2_grpc
from .interceptors import current_rpc

log = structlog.get_logger("cardgames.transport")

#: Longest accepted action string and client_action_id (longer: INVALID_ARGUMENT).
MAX_ACTION_CHARS = 64
MAX_CLIENT_ACTION_ID_CHARS = 128


async def _fail(exc: BaseException, context: grpc.aio.ServicerContext) -> None:
    mapped = classify(exc)
    rpc = current_rpc()
    rpc.reason, rpc.code = mapped.reason, mapped.code.name
    if not mapped.expected:
        log.error("rpc_internal_error", method=rpc.method, exc_info=exc)
    elif mapped.reason == OUT_OF_FILE_DESCRIPTORS:
        log.warning("rpc_out_of_file_descriptors", method=rpc.method, error=str(exc))
    _drop_tracebacks(exc)
    await context.abort_with_status(to_status(mapped, rpc.request_id))


def _drop_tracebacks(exc: BaseException | None) -> None:
    """Forget the frames an answered error went through (its chain's tracebacks).

    grpc keeps the AbortError of an aborted call on the call's state, which the servicer's
    frames reference: a reference cycle, freed only by the garbage collector. Through the
    answered error's traceback that cycle reached the session layer's frames and with them a
    whole match (its log, its states): a match evicted from memory stayed in it until a full
    collection, which a busy server runs rarely (a soak counted up to 20 such matches). The
    traceback has served its purpose once the error is mapped and logged."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        e.__traceback__ = None
        stack.extend((e.__cause__, e.__context__))


def unary(fn: Callable) -> Callable:
    """Apply the error table to a unary method."""

    @functools.wraps(fn)
    async def method(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return await fn(self, request, context)
        except (grpc.aio.AbortError, grpc.aio.UsageError):  # AbortError: already aborted
            raise
        except Exception as exc:
            await _fail(exc, context)

    return method


def stream(fn: Callable) -> Callable:
    """Apply the error table to a server-streaming method (also to errors mid-stream)."""

    @functools.wraps(fn)
    async def method(self: Any, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        try:
            async with contextlib.aclosing(fn(self, request, context)) as messages:
                async for message in messages:
                    yield message
        except (grpc.aio.AbortError, grpc.aio.UsageError):
            raise
        except Exception as exc:
            await _fail(exc, context)

    return method


class _Base:
    def __init__(self, service: api.MatchService, admin: AdminGate) -> None:
        self._service = service
        self._admin = admin

    async def _principal(self, match_id: str, context: grpc.aio.ServicerContext) -> api.Principal:
        """The caller for ``match_id``: admin (admin token), a seat (seat token) or a
        spectator (no token); the session layer resolves seat tokens. A token it does not know
        may belong to an ended match no longer held in memory: the match is recalled from the
        store once, and the token asked again (a player can still reveal and verify the deals
        of a match that ended long ago). A match that is not stored (any more: retention)
        is NOT_FOUND whatever the token: another match's seat token on an id that names no
        match is NOT_FOUND too (the error table's "unknown match"), not WRONG_MATCH. The
        match id (already checked well-formed) goes to the call's ``rpc`` line first, so a call
        refused here is logged with the match it asked for."""
        current_rpc().note(match_id=match_id)
        token = bearer_token(context.invocation_metadata())
        if self._admin.is_admin(token):
            principal = self._service.authenticate(match_id, None, admin=True)
        else:
            try:
                principal = self._service.authenticate(match_id, token)
            except api.Unauthenticated:
                if not await self._service.recall(match_id):
                    raise
                principal = self._service.authenticate(match_id, token)
            except api.PermissionDenied as exc:
                if exc.reason == "WRONG_MATCH":
                    await self._service.recall(match_id)  # MatchNotFound when no match has the id
                raise
        current_rpc().note(seat=principal.seat)
        return principal

    async def _seat_principal(self, match_id: str, context: grpc.aio.ServicerContext,
                              what: str) -> api.Principal:
        """The caller, who must hold a seat token: no token is UNAUTHENTICATED, the admin or a
        spectator PERMISSION_DENIED (they have no seat to act for)."""
        principal = await self._principal(match_id, context)
        if principal.kind != "seat":
            if bearer_token(context.invocation_metadata()) is None:
                raise api.Unauthenticated(f"a seat token is required to {what}")
            raise api.PermissionDenied(f"only a seat's player may {what}", reason="NOT_A_SEAT")
        return principal


class CardGamesServicer(_Base, card_games_pb2_grpc.CardGamesServiceServicer):
    """The player-facing API (proto/cardgames/v1/card_games.proto)."""

    @unary
    async def ListGames(self, request: pb.ListGamesRequest, context) -> pb.ListGamesResponse:
        return pb.ListGamesResponse(games=[codec.game_message(g) for g in self._service.list_games()])

    @unary
    async def ListBots(self, request: pb.ListBotsRequest, context) -> pb.ListBotsResponse:
        game = codec.game_filter(request.game)
        if game:  # an unknown id is refused, as by ListOpenMatches and ListMatches
            known = [g.id for g in self._service.list_games()]
            if game not in known:
                raise UnknownGame(f"unknown game {game!r}; known games: {', '.join(known)}", game=game)
        bots = [b for b in self._service.list_bots() if not game or game in b.games]
        # every failure whatever the game: a plugin that did not load plays no game at all
        failures = [codec.bot_load_failure_message(f) for f in self._service.list_bot_load_failures()]
        return pb.ListBotsResponse(bots=[codec.bot_message(b) for b in bots], load_failures=failures)

    @unary
    async def CreateMatch(self, request: pb.CreateMatchRequest, context) -> pb.CreateMatchResponse:
        req = codec.create_request(request)
        if req.decks or req.first_dealer is not None:
            # explicit decks decide every hand: only the admin may choose them
            self._admin.require(bearer_token(context.invocation_metadata()))
            admin = True
        else:
            # Anyone may create a match; the admin token, when sent, lifts the limit on matches
            # of bots only (tournaments, tests: --max-bot-matches). Any other token, even a
            # malformed header, leaves the call what it was, an ordinary caller's.
            try:
                admin = self._admin.is_admin(bearer_token(context.invocation_metadata()))
            except api.SessionError:
                admin = False
        summary = await self._service.create_match(req, admin=admin)
        current_rpc().note(match_id=summary.match_id, seq=summary.seq)
        return pb.CreateMatchResponse(match=codec.summary_message(summary))

    @unary
    async def GetMatch(self, request: pb.GetMatchRequest, context) -> pb.GetMatchResponse:
        match_id = codec.require_match_id(request.match_id)
        current_rpc().note(match_id=match_id)
        summary = await self._service.get_match(match_id)
        current_rpc().note(seq=summary.seq)
        return pb.GetMatchResponse(match=codec.summary_message(summary))

    @unary
    async def JoinMatch(self, request: pb.JoinMatchRequest, context) -> pb.JoinMatchResponse:
        match_id = codec.require_match_id(request.match_id)
        current_rpc().note(match_id=match_id)
        name = request.player_name
        if len(name) > codec.MAX_NAME_CHARS:
            raise api.BadRequest(f"player_name is longer than {codec.MAX_NAME_CHARS} characters",
                                 reason="FIELD_TOO_LONG", field="player_name")
        seat = request.seat if request.HasField("seat") else None
        joined = await self._service.join_match(match_id, seat, name, request.client_join_id)
        current_rpc().note(seat=joined.seat)
        return pb.JoinMatchResponse(match_id=joined.match_id, seat=joined.seat,
                                    seat_token=joined.token)

    @unary
    async def GetView(self, request: pb.GetViewRequest, context) -> pb.GetViewResponse:
        match_id = codec.require_match_id(request.match_id)
        principal = await self._principal(match_id, context)
        env = await self._service.get_view(match_id, principal)
        current_rpc().note(seq=env.seq)
        return pb.GetViewResponse(view=codec.view_message(env))

    @unary
    async def SubmitAction(self, request: pb.SubmitActionRequest, context) -> bytes:
        """Answers with the response's wire bytes (see server.add_with_encoded_responses)."""
        match_id = codec.require_match_id(request.match_id)
        if not request.action:
            raise api.BadRequest("action is required", reason="MISSING_FIELD", field="action")
        if len(request.action) > MAX_ACTION_CHARS:
            # named like every other length refusal: the limit is the client's to know
            raise api.BadRequest(f"action is longer than {MAX_ACTION_CHARS} characters",
                                 reason="FIELD_TOO_LONG", field="action")
        if len(request.client_action_id) > MAX_CLIENT_ACTION_ID_CHARS:
            # docs/api.md: up to 128 printable characters, "anything else is BAD_CLIENT_ACTION_ID"
            raise api.BadRequest(f"client_action_id is longer than {MAX_CLIENT_ACTION_ID_CHARS} "
                                 "characters", reason="BAD_CLIENT_ACTION_ID", field="client_action_id")
        principal = await self._seat_principal(match_id, context, "act")
        expected = request.expected_seq if request.HasField("expected_seq") else None
        if expected is not None and expected < 0:
            raise api.BadRequest("expected_seq is a match's seq: 0 or more", reason="BAD_EXPECTED_SEQ",
                                 field="expected_seq")
        result = await self._service.submit_action(match_id, principal, request.action, expected,
                                                   request.client_action_id)
        current_rpc().note(seq=result.seq)
        return codec.submit_response_bytes(result)

    @stream
    async def WatchMatch(self, request: pb.WatchMatchRequest, context) -> AsyncIterator[bytes]:
        """Yields each message's wire bytes, encoded once for every watcher of an audience
        (see server.add_with_encoded_responses)."""
        match_id = codec.require_match_id(request.match_id)
        principal = await self._principal(match_id, context)
        after = request.after_seq if request.HasField("after_seq") else -1
        if request.HasField("after_seq") and after < 0:
            raise api.BadRequest("after_seq is the seq of an event received: 0 or more (unset: a "
                                 "snapshot first)", reason="BAD_AFTER_SEQ", field="after_seq")
        rpc = current_rpc()
        events = self._service.watch(match_id, principal, after)
        async with contextlib.aclosing(events):  # ends the seat's presence on disconnect
            async for event in events:
                rpc.seq = event.seq
                yield codec.event_bytes(event)

    @unary
    async def LeaveMatch(self, request: pb.LeaveMatchRequest, context) -> pb.LeaveMatchResponse:
        match_id = codec.require_match_id(request.match_id)
        try:
            principal = await self._seat_principal(match_id, context, "leave or resign")
        except api.Unauthenticated as refused:
            # a retry of a leave that freed its seat in a waiting match (its answer was lost):
            # that answer again; any other token keeps its error as it was
            summary = self._repeated_leave(match_id, context)
            if summary is None:
                raise refused
        else:
            summary = await self._service.leave_match(match_id, principal, request.resign)
        current_rpc().note(seq=summary.seq)
        return pb.LeaveMatchResponse(match=codec.summary_message(summary))

    def _repeated_leave(self, match_id: str, context: grpc.aio.ServicerContext) -> api.MatchSummary | None:
        """The first answer of the leave that voided the call's seat token (None: none did).
        Only a refused token gets here: the admin's is never refused as unknown (it is
        NOT_A_SEAT), so it is not told apart."""
        try:
            token = bearer_token(context.invocation_metadata())
        except api.SessionError:
            return None
        return None if token is None else self._service.repeated_leave(match_id, token)

    @unary
    async def ListOpenMatches(self, request: pb.ListOpenMatchesRequest, context) -> pb.ListOpenMatchesResponse:
        if request.limit < 0:
            raise api.BadRequest("limit must not be negative", reason="BAD_LIMIT", field="limit")
        game = codec.game_filter(request.game)
        page = self._service.open_matches_page(game=game, limit=request.limit or 50,
                                               page_token=request.page_token)
        return pb.ListOpenMatchesResponse(matches=[codec.summary_message(m) for m in page.matches],
                                          next_page_token=page.next_page_token)

    @unary
    async def RevealDeals(self, request: pb.RevealDealsRequest, context) -> pb.RevealDealsResponse:
        match_id = codec.require_match_id(request.match_id)
        principal = await self._principal(match_id, context)
        reveals = await self._service.reveal_deals(match_id, principal)
        return codec.reveal_deals_response(reveals)


class AdminServicer(_Base, admin_pb2_grpc.AdminServiceServicer):
    """The operator API (proto/cardgames/v1/admin.proto); every call needs the admin token."""

    def _require_admin(self, context: grpc.aio.ServicerContext) -> None:
        self._admin.require(bearer_token(context.invocation_metadata()))

    @unary
    async def ListMatches(self, request: admin_pb2.ListMatchesRequest, context) -> admin_pb2.ListMatchesResponse:
        self._require_admin(context)
        if request.limit < 0:
            raise api.BadRequest("limit must not be negative", reason="BAD_LIMIT", field="limit")
        status = codec.STATUS_NAMES.get(request.status, "")
        if request.status and not status:  # a value outside the enum is not "any status"
            raise api.BadRequest(f"unknown status {request.status}", reason="BAD_STATUS", field="status")
        page = await self._service.matches_page(status=status, game=codec.game_filter(request.game),
                                                limit=request.limit or 100, page_token=request.page_token)
        return admin_pb2.ListMatchesResponse(matches=[codec.summary_message(m) for m in page.matches],
                                             next_page_token=page.next_page_token)

    @unary
    async def InspectMatch(self, request: admin_pb2.InspectMatchRequest, context) -> admin_pb2.InspectMatchResponse:
        self._require_admin(context)
        match_id = codec.require_match_id(request.match_id)
        current_rpc().note(match_id=match_id)
        inspection = await self._service.inspect_match(match_id)
        current_rpc().note(seq=inspection.envelope.seq)
        return codec.inspect_message(inspection)

    @unary
    async def TerminateMatch(self, request: admin_pb2.TerminateMatchRequest,
                             context) -> admin_pb2.TerminateMatchResponse:
        self._require_admin(context)
        match_id = codec.require_match_id(request.match_id)
        current_rpc().note(match_id=match_id)
        if len(request.reason) > 200:
            raise api.BadRequest("reason is longer than 200 characters", reason="FIELD_TOO_LONG",
                                 field="reason")
        summary = await self._service.terminate_match(match_id, request.reason)
        current_rpc().note(seq=summary.seq)
        return admin_pb2.TerminateMatchResponse(match=codec.summary_message(summary))

    @unary
    async def ReissueSeatToken(self, request: admin_pb2.ReissueSeatTokenRequest,
                               context) -> admin_pb2.ReissueSeatTokenResponse:
        self._require_admin(context)
        match_id = codec.require_match_id(request.match_id)
        # the seat the operator named, refused or not: the rpc line is the audit trail of
        # whose seat got a new token (seat_token_reissued only says so when one was given)
        current_rpc().note(match_id=match_id, seat=request.seat)
        joined, summary = await self._service.reissue_seat_token(match_id, request.seat)
        return admin_pb2.ReissueSeatTokenResponse(seat=joined.seat, seat_token=joined.token,
                                                  match=codec.summary_message(summary))

    @unary
    async def ExportTranscript(self, request: admin_pb2.ExportTranscriptRequest,
                               context) -> admin_pb2.ExportTranscriptResponse:
        self._require_admin(context)
        match_id = codec.require_match_id(request.match_id)
        current_rpc().note(match_id=match_id)
        transcript = await self._service.export_transcript(match_id)
        return admin_pb2.ExportTranscriptResponse(
            transcript_json=json.dumps(transcript, ensure_ascii=False, indent=1))
