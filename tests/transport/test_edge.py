"""The transport edge over a real channel, against a scripted MatchService double: the error
table (every row, with its ErrorInfo reason), bearer-token parsing, admin gate, limits (message
size, streams per connection), health, reflection, the per-RPC log line and RPC metrics, and the
drain. The real session layer is exercised in test_service.py; this file pins what the
transport itself decides, whatever the session layer does."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import gzip
import json
import os
import socket
import sys
from pathlib import Path

import grpc
import pytest
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from engine_service.rules import errors as rules_errors
from engine_service.rules.options import BOOL, OptionSpec
from engine_service.sessions import api
from engine_service.transport.auth import bearer_token
from engine_service.transport.generated import admin_pb2, card_games_pb2 as pb, match_pb2
from engine_service.transport.server import ServerLimits

from .harness import ADMIN_TOKEN, bearer, expect_error, run, running

SEAT_TOKEN = "seat-token-0"
OTHER_TOKEN = "seat-token-of-another-match"


def _view(seq: int = 3, seat: int | None = 0) -> api.ViewEnvelope:
    return api.ViewEnvelope(match_id="m1", seq=seq, status="active", seat=seat,
                            view={"game": "g", "phase": "play", "to_act": 0, "seat": seat,
                                  "hand": ["AS"] if seat is not None else [], "legal": ["play:AS"]})


def _summary(status: str = "active") -> api.MatchSummary:
    return api.MatchSummary(match_id="m1", game="g", options={"x": True}, status=status, seq=3,
                            seats=[api.SeatInfo(0, "open", taken=True), api.SeatInfo(1, "bot", bot="random")],
                            turn_time_s=0.0, spectators_allowed=True, created_at=1.5)


class ScriptedService:
    """A MatchService double: answers fixed values, or raises ``self.error`` when set."""

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.calls: list[tuple] = []
        self.drained = False
        self.closed = False
        self.release = asyncio.Event()

    async def start(self) -> None: ...

    async def drain(self) -> None:
        self.drained = True
        self.release.set()

    async def close(self) -> None:
        self.closed = True

    def _maybe_fail(self) -> None:
        if self.error is not None:
            raise self.error

    def list_games(self):
        return [api.GameInfo("g", "G", 2, "a game", "g.md", [OptionSpec("x", BOOL, False, help="h")])]

    def list_bots(self):
        return [api.BotInfo("random", ["g", "h"], "random legal moves"), api.BotInfo("hx", ["h"], "")]

    def list_bot_load_failures(self):
        return [api.BotLoadFailure("broken", "import", "ImportError at broken.py:3 in <module>")]

    def authenticate(self, match_id, token, *, admin=False):
        self.calls.append(("authenticate", match_id, token, admin))
        if admin:
            return api.Principal("admin", match_id)
        if token is None:
            return api.Principal("spectator", match_id)
        if token == SEAT_TOKEN:
            return api.Principal("seat", match_id, 0)
        if token == OTHER_TOKEN:
            raise api.PermissionDenied("this token is for another match", reason="WRONG_MATCH")
        raise api.Unauthenticated("unknown token")

    async def recall(self, match_id):
        self.calls.append(("recall", match_id))
        return False

    async def create_match(self, request, *, admin=False):
        self.calls.append(("create_match", request, admin))
        self._maybe_fail()
        return _summary("waiting")

    async def join_match(self, match_id, seat, player_name, client_join_id=""):
        self.calls.append(("join_match", match_id, seat, player_name, client_join_id))
        self._maybe_fail()
        return api.JoinResult(match_id, 0 if seat is None else seat, SEAT_TOKEN)

    async def get_match(self, match_id):
        self._maybe_fail()
        return _summary()

    async def get_view(self, match_id, principal):
        self._maybe_fail()
        return _view(seat=principal.seat)

    async def submit_action(self, match_id, principal, action, expected_seq, client_action_id=""):
        self.calls.append(("submit_action", principal, action, expected_seq, client_action_id))
        self._maybe_fail()
        return api.SubmitResult(4, action, _view(4))

    async def watch(self, match_id, principal, after_seq):
        self.calls.append(("watch", principal, after_seq))
        try:
            yield api.MatchEvent("snapshot", 3, match_id, view=_view(seat=principal.seat))
            self._maybe_fail()
            await self.release.wait()
            yield api.MatchEvent("match_ended", 3, match_id, reason="terminated")
        finally:
            self.calls.append(("watch_closed", principal))

    async def leave_match(self, match_id, principal, resign):
        return _summary("finished")

    def repeated_leave(self, match_id, token):
        self.calls.append(("repeated_leave", match_id, token))
        return None

    async def matches_page(self, status="", game="", limit=100, page_token=""):
        self.calls.append(("list_matches", status, game, limit))
        return api.Page([_summary()])

    async def inspect_match(self, match_id):
        env = _view(seat=None)
        view = dict(env.view, hands=[["AS"], ["KH"]], zones={"hand0": 1, "hand1": 1 << 10})
        return api.Inspection(_summary(), api.ViewEnvelope("m1", 3, "active", view))

    async def terminate_match(self, match_id, reason):
        self.calls.append(("terminate_match", match_id, reason))
        return _summary("terminated")

    async def export_transcript(self, match_id):
        return {"schema": "card-transcript/1", "game": "g"}


# ---- the error table -------------------------------------------------------------------------

ERROR_TABLE = [
    (rules_errors.MalformedAction("not an action"), grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_ACTION"),
    (rules_errors.InvalidOptions("option 'x'", option="x"), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_OPTIONS"),
    (rules_errors.InvalidDeck("bad deck"), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_DECK"),
    (rules_errors.UnknownGame("unknown game"), grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_GAME"),
    (rules_errors.TranscriptError("not card-transcript/1"), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_TRANSCRIPT"),
    (rules_errors.IllegalAction("not legal", action="play:AS"), grpc.StatusCode.FAILED_PRECONDITION, "ILLEGAL_ACTION"),
    (rules_errors.NotYourTurn("seat 1's turn", to_act=1), grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN"),
    (rules_errors.MatchOver("over"), grpc.StatusCode.FAILED_PRECONDITION, "MATCH_OVER"),
    (rules_errors.DealRequired("dealing"), grpc.StatusCode.FAILED_PRECONDITION, "DEAL_REQUIRED"),
    (api.BadRequest("bad"), grpc.StatusCode.INVALID_ARGUMENT, "BAD_REQUEST"),
    (api.MatchNotActive("ended"), grpc.StatusCode.FAILED_PRECONDITION, "MATCH_NOT_ACTIVE"),
    (api.MatchNotFound("no such match"), grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND"),
    (api.Unauthenticated("who are you"), grpc.StatusCode.UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN"),
    (api.PermissionDenied("no"), grpc.StatusCode.PERMISSION_DENIED, "NOT_ALLOWED"),
    (api.SeatTaken("taken"), grpc.StatusCode.ALREADY_EXISTS, "SEAT_TAKEN"),
    (api.LimitExceeded("too many", limit="max_matches"), grpc.StatusCode.RESOURCE_EXHAUSTED, "LIMIT_EXCEEDED"),
    (api.Unavailable("draining"), grpc.StatusCode.UNAVAILABLE, "DRAINING"),
    (api.StaleSequence("stale", _view(9)), grpc.StatusCode.ABORTED, "STALE_SEQUENCE"),
]


@pytest.mark.parametrize("exc, code, reason", ERROR_TABLE, ids=[type(e[0]).__name__ for e in ERROR_TABLE])
@run
async def test_error_table_maps_code_and_errorinfo(exc, code, reason):
    service = ScriptedService()
    async with running(service) as srv:
        service.error = exc
        err = await expect_error(srv.games.SubmitAction(
            pb.SubmitActionRequest(match_id="m1", action="play:AS", expected_seq=3),
            metadata=bearer(SEAT_TOKEN)))
    assert (err.code, err.reason, err.domain) == (code, reason, "cardgames.v1")
    assert err.message == exc.message
    expected_md = {k: str(v) for k, v in getattr(exc, "details", getattr(exc, "metadata", {})).items()}
    assert err.metadata == expected_md
    if code is grpc.StatusCode.ABORTED:
        assert err.view is not None and err.view.seq == 9 and [c.code for c in err.view.hand] == ["AS"]
    else:
        assert err.view is None


async def rpc_lines_logged(logs: list, n: int) -> None:
    """Wait (up to 10 s: a loaded machine) for ``n`` RPC log lines: the interceptor writes an
    RPC's line once its status is sent, so the client can see the answer first."""
    for _ in range(1000):
        if sum(e["event"] == "rpc" for e in logs) >= n:
            return
        await asyncio.sleep(0.01)


@run
async def test_unexpected_exception_is_internal_logged_and_hides_its_text():
    service = ScriptedService()
    async with running(service) as srv:
        service.error = RuntimeError("db row for hand AS KH QD")
        with structlog.testing.capture_logs() as logs:
            err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"),
                                                       metadata=bearer(SEAT_TOKEN)))
            await rpc_lines_logged(logs, 1)
    assert (err.code, err.reason, err.message) == (grpc.StatusCode.INTERNAL, "INTERNAL", "internal error")
    assert "AS" not in err.message
    internal = [e for e in logs if e["event"] == "rpc_internal_error"]
    assert len(internal) == 1 and isinstance(internal[0]["exc_info"], RuntimeError)
    assert (internal[0]["method"], internal[0]["log_level"]) == ("/cardgames.v1.CardGamesService/GetView", "error")
    line = [e for e in logs if e["event"] == "rpc"][-1]
    assert line["code"] == "INTERNAL" and line["reason"] == "INTERNAL"
    assert srv.metrics.value("cardgames_rpc_requests_total",
                             {"method": "/cardgames.v1.CardGamesService/GetView", "code": "INTERNAL"}) == 1
    # once logged and answered, the error forgets the frames it went through (servicers.
    # _drop_tracebacks: they held a whole match in memory until a full garbage collection)
    assert service.error.__traceback__ is None


def test_an_error_chain_that_loops_is_answered_with_its_tracebacks_dropped():
    """``raise first from second`` while handling ``second``, itself raised ``from first``,
    chains the two both ways: first.__cause__ is second, second.__cause__ is first (Python
    breaks such loops of __context__ only). The
    servicer drops the tracebacks of an answered error's whole chain; it must stop at an
    exception it has seen, or the call (and the event loop with it) never ends. Run in a
    thread: a loop that never ends cannot be interrupted in the test's own."""
    import threading

    from engine_service.transport.servicers import _drop_tracebacks

    def looping_chain() -> BaseException:
        try:
            try:
                raise RuntimeError("first")
            except RuntimeError as first:
                try:
                    raise ValueError("second") from first
                except ValueError as second:
                    raise first from second
        except RuntimeError as exc:
            return exc

    exc = looping_chain()
    second = exc.__cause__
    assert second.__cause__ is exc and exc.__traceback__ is not None and second.__traceback__ is not None
    worker = threading.Thread(target=_drop_tracebacks, args=(exc,), daemon=True)
    worker.start()
    worker.join(30)  # microseconds when it works
    assert not worker.is_alive(), "_drop_tracebacks went round the chain's loop"
    assert exc.__traceback__ is None and second.__traceback__ is None


@run
async def test_a_call_refused_for_its_token_is_logged_with_the_match_it_asked_for():
    """docs/operations.md's ``rpc`` line: ``match_id`` when known. A call refused while its
    token was checked left it out, so an operator could not tell which match bad tokens tried."""
    service = ScriptedService()
    async with running(service) as srv:
        with structlog.testing.capture_logs() as logs:
            err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"),
                                                       metadata=bearer("nope")))
            await rpc_lines_logged(logs, 1)
    assert err.reason == "MISSING_OR_BAD_TOKEN"
    line = [e for e in logs if e["event"] == "rpc"][-1]
    assert line["code"] == "UNAUTHENTICATED" and line["match_id"] == "m1" and "seat" not in line


@run
async def test_error_in_the_middle_of_a_stream_is_mapped():
    service = ScriptedService()
    async with running(service) as srv:
        service.error = api.MatchNotActive("the match was terminated")
        call = srv.games.WatchMatch(pb.WatchMatchRequest(match_id="m1"), metadata=bearer(SEAT_TOKEN))
        first = await call.read()
        assert first.kind == match_pb2.EVENT_KIND_SNAPSHOT
        err = await expect_error(call)
    assert (err.code, err.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "MATCH_NOT_ACTIVE")
    assert ("watch_closed", api.Principal("seat", "m1", 0)) in service.calls


# ---- authentication --------------------------------------------------------------------------

@run
async def test_bearer_tokens_and_principals():
    service = ScriptedService()
    async with running(service) as srv:
        g = srv.games
        # no token: a spectator view; a seat token: the seat's view; the admin token: admin
        spectator = await g.GetView(pb.GetViewRequest(match_id="m1"))
        assert not spectator.view.HasField("seat") and not spectator.view.hand
        seat = await g.GetView(pb.GetViewRequest(match_id="m1"), metadata=bearer(SEAT_TOKEN))
        assert seat.view.seat == 0 and [c.code for c in seat.view.hand] == ["AS"]
        await g.GetView(pb.GetViewRequest(match_id="m1"), metadata=bearer(ADMIN_TOKEN))
        assert ("authenticate", "m1", None, True) in service.calls
        # malformed headers never fall back to spectator
        for header in ("Basic abc", "Bearer", "Bearer  ", "token " + SEAT_TOKEN, f"Bearer {SEAT_TOKEN} x",
                       "Bearer a b"):
            err = await expect_error(g.GetView(pb.GetViewRequest(match_id="m1"),
                                               metadata=(("authorization", header),)))
            assert (err.code, err.reason) == (grpc.StatusCode.UNAUTHENTICATED, "MALFORMED_TOKEN"), header
        err = await expect_error(g.GetView(pb.GetViewRequest(match_id="m1"), metadata=bearer("nope")))
        assert (err.code, err.reason) == (grpc.StatusCode.UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN")
        err = await expect_error(g.GetView(pb.GetViewRequest(match_id="m1"), metadata=bearer(OTHER_TOKEN)))
        assert (err.code, err.reason) == (grpc.StatusCode.PERMISSION_DENIED, "WRONG_MATCH")
        # acting needs a seat token
        err = await expect_error(g.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="pass")))
        assert err.code == grpc.StatusCode.UNAUTHENTICATED
        err = await expect_error(g.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="pass"),
                                                metadata=bearer(ADMIN_TOKEN)))
        assert (err.code, err.reason) == (grpc.StatusCode.PERMISSION_DENIED, "NOT_A_SEAT")
        err = await expect_error(g.LeaveMatch(pb.LeaveMatchRequest(match_id="m1")))
        assert err.code == grpc.StatusCode.UNAUTHENTICATED
        err = await expect_error(g.LeaveMatch(pb.LeaveMatchRequest(match_id="m1"), metadata=bearer(ADMIN_TOKEN)))
        assert (err.code, err.reason) == (grpc.StatusCode.PERMISSION_DENIED, "NOT_A_SEAT")
        assert not [c for c in service.calls if c[0] == "submit_action"]


@pytest.mark.parametrize("value", ["Bearer a\x00b", "Bearer abc\x7f", "Bearer t\u00f6ken", "Bearer \ufffd\ufffd",
                                   b"Bearer \xff\xfe", b"Bearer abc\xc3\xa9",
                                   # a raw byte beyond ASCII at the end is the token's, not white space
                                   # after it (U+00A0 and U+0085 in Latin-1, which str.strip() drops)
                                   b"Bearer abc\xa0", b"Bearer abc\x85",
                                   # white space inside the token, of every kind
                                   "Bearer a b", "Bearer a\tb", "Bearer a\nb", "Bearer a\x1fb",
                                   "Bearer a\u00a0b", "Bearer a\u3000b", "Bearer a\u2028b"])
def test_a_token_that_is_not_printable_ascii_is_malformed(value):
    """A Go or C client may send any bytes in a header value (gRPC Python refuses to): a token
    holding a control character or a non-ASCII byte cannot be a token (base64 seat tokens, a
    printable ASCII admin token), so it is MALFORMED_TOKEN, not "unknown or expired seat
    token" (MISSING_OR_BAD_TOKEN), which sent the client looking for a token it never had."""
    with pytest.raises(api.Unauthenticated) as refused:
        bearer_token([("authorization", value)])
    assert refused.value.reason == "MALFORMED_TOKEN"
    assert bearer_token([("authorization", "Bearer aZ09-_.~+/=")]) == "aZ09-_.~+/="


def test_several_authorization_headers_are_malformed_whichever_comes_first():
    """Two ``authorization`` entries (a proxy that added the admin token to a seat's call, a
    client that set it twice) are MALFORMED_TOKEN: the call may not pick one of them and run
    as a principal its caller did not choose. Even two equal well-formed tokens are refused."""
    for values in ([f"Bearer {SEAT_TOKEN}", f"Bearer {ADMIN_TOKEN}"], [f"Bearer {SEAT_TOKEN}"] * 2):
        with pytest.raises(api.Unauthenticated) as refused:
            bearer_token([("authorization", v) for v in values])
        assert refused.value.reason == "MALFORMED_TOKEN"
    assert bearer_token([("x-other", "1"), ("authorization", f"Bearer {SEAT_TOKEN}")]) == SEAT_TOKEN


def test_a_call_without_an_authorization_header_has_no_token():
    """No metadata at all, or none named ``authorization`` (the name in any case is the
    header): no token, a spectator's call, not an error."""
    assert bearer_token(None) is None and bearer_token([]) is None
    assert bearer_token([("x-other", "Bearer " + SEAT_TOKEN)]) is None
    assert bearer_token([("Authorization", "Bearer " + SEAT_TOKEN)]) == SEAT_TOKEN
    # only that name: a proxy's own credentials, or a header named like it, carry no token
    for name in ("proxy-authorization", "x-authorization", "authorization-bin"):
        assert bearer_token([(name, "Bearer " + SEAT_TOKEN)]) is None, name


def test_a_token_longer_than_512_characters_is_malformed_before_any_comparison():
    """auth.MAX_TOKEN_CHARS: a token is ~43 characters, the admin token at most 512 (the
    server refuses a longer one at start); a longer value is MALFORMED_TOKEN, refused before it
    is compared or looked up, not an unknown seat token (MISSING_OR_BAD_TOKEN)."""
    assert bearer_token([("authorization", "Bearer " + "a" * 512)]) == "a" * 512
    with pytest.raises(api.Unauthenticated) as refused:
        bearer_token([("authorization", "Bearer " + "a" * 513)])
    assert refused.value.reason == "MALFORMED_TOKEN"


def test_spaces_around_the_token_are_not_part_of_it():
    """RFC 6750: ``Bearer`` 1*SP token: a header with several spaces before the token, or
    white space after it, carries that token (not a malformed one with a space inside)."""
    for header in (f"Bearer  {SEAT_TOKEN}", f"bearer {SEAT_TOKEN} ", f"  Bearer   {SEAT_TOKEN}\t"):
        assert bearer_token([("authorization", header)]) == SEAT_TOKEN, header


def test_only_the_bearer_scheme_carries_a_token():
    """docs/api.md: ``authorization: Bearer <token>``, the scheme in any case; any other
    scheme is MALFORMED_TOKEN, one that merely starts with "Bearer" too (the token would
    otherwise be read out of a header in a form the client never meant)."""
    for header in (f"Bearers {SEAT_TOKEN}", f"BearerToken {SEAT_TOKEN}", f"bearer-x {SEAT_TOKEN}"):
        with pytest.raises(api.Unauthenticated) as refused:
            bearer_token([("authorization", header)])
        assert refused.value.reason == "MALFORMED_TOKEN", header
    assert bearer_token([("authorization", f"BEARER {SEAT_TOKEN}")]) == SEAT_TOKEN


def test_only_the_admin_token_itself_is_the_admin():
    """auth.AdminGate: the admin token is compared whole and as it is: the token with a
    character more or less, or in another case, is another token (NOT_ADMIN), not the admin's."""
    from engine_service.transport.auth import AdminGate

    gate = AdminGate(ADMIN_TOKEN)
    assert gate.enabled and gate.is_admin(ADMIN_TOKEN)
    gate.require(ADMIN_TOKEN)
    for near in (ADMIN_TOKEN + "x", ADMIN_TOKEN[:-1], ADMIN_TOKEN[:1], ADMIN_TOKEN.upper(), "", SEAT_TOKEN):
        assert not gate.is_admin(near), near
        with pytest.raises(api.PermissionDenied) as refused:
            gate.require(near)
        assert refused.value.reason == "NOT_ADMIN", near


@run
async def test_a_refused_token_is_never_shown_in_the_error_or_the_log():
    """auth.py: tokens are secrets, never put in an error message nor logged. A malformed
    header (a token followed by a word, another scheme, two headers) and a token that is not
    the admin's are refused without repeating what was sent, to the caller or in the log."""
    secret = "s3cret-token-never-shown"
    service = ScriptedService()
    async with running(service) as srv:
        with structlog.testing.capture_logs() as logs:
            errors = []
            for md in ((("authorization", f"Bearer {secret} x"),), (("authorization", f"Basic {secret}"),),
                       (("authorization", f"Bearer {secret}"), ("authorization", f"Bearer {secret}"))):
                errors.append(await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"), metadata=md)))
            errors.append(await expect_error(srv.admin.ListMatches(admin_pb2.ListMatchesRequest(),
                                                                   metadata=bearer(secret))))
            await rpc_lines_logged(logs, 4)
    assert [(e.code, e.reason) for e in errors] == [(grpc.StatusCode.UNAUTHENTICATED, "MALFORMED_TOKEN")] * 3 + \
        [(grpc.StatusCode.PERMISSION_DENIED, "NOT_ADMIN")]
    for error in errors:
        assert secret not in repr(error), error
    assert secret not in json.dumps(logs, default=str)


def test_an_empty_admin_token_disables_the_admin_api():
    """auth.AdminGate: without a configured token every admin call is refused, ADMIN_DISABLED
    (docs/api.md, errors; there is no default password). An empty token (an empty
    CARDGAMES_ADMIN_TOKEN reaching the server) is no configured token: not one that a call
    without a token is asked for (ADMIN_TOKEN_REQUIRED)."""
    from engine_service.transport.auth import AdminGate

    gate = AdminGate("")
    assert not gate.enabled and not gate.is_admin("")
    with pytest.raises(api.PermissionDenied) as refused:
        gate.require(None)
    assert refused.value.reason == "ADMIN_DISABLED"


@run
async def test_admin_gate():
    service = ScriptedService()
    async with running(service) as srv:
        a = srv.admin
        err = await expect_error(a.ListMatches(admin_pb2.ListMatchesRequest()))
        assert (err.code, err.reason) == (grpc.StatusCode.UNAUTHENTICATED, "ADMIN_TOKEN_REQUIRED")
        err = await expect_error(a.ListMatches(admin_pb2.ListMatchesRequest(), metadata=bearer(SEAT_TOKEN)))
        assert (err.code, err.reason) == (grpc.StatusCode.PERMISSION_DENIED, "NOT_ADMIN")
        ok = await a.ListMatches(admin_pb2.ListMatchesRequest(status=match_pb2.MATCH_STATUS_ACTIVE, game="g"),
                                 metadata=bearer(ADMIN_TOKEN))
        assert [m.match_id for m in ok.matches] == ["m1"]
        assert ("list_matches", "active", "g", 100) in service.calls
        inspected = await a.InspectMatch(admin_pb2.InspectMatchRequest(match_id="m1"), metadata=bearer(ADMIN_TOKEN))
        assert [[c.code for c in h.cards] for h in inspected.hands] == [["AS"], ["KH"]]
        assert {z.name: [c.code for c in z.cards] for z in inspected.zones} == {"hand0": ["AS"], "hand1": ["KH"]}
        exported = await a.ExportTranscript(admin_pb2.ExportTranscriptRequest(match_id="m1"), metadata=bearer(ADMIN_TOKEN))
        assert json.loads(exported.transcript_json)["schema"] == "card-transcript/1"
        # explicit decks / first dealer are admin-only
        req = pb.CreateMatchRequest(game="g", first_dealer=1)
        err = await expect_error(srv.games.CreateMatch(req))
        assert (err.code, err.reason) == (grpc.StatusCode.UNAUTHENTICATED, "ADMIN_TOKEN_REQUIRED")
        err = await expect_error(srv.games.CreateMatch(req, metadata=bearer(SEAT_TOKEN)))
        assert err.code == grpc.StatusCode.PERMISSION_DENIED
        # decks alone, and a first dealer 0 (set, though falsy), are the admin's as well
        # (docs/api.md, errors: "decks or first_dealer with a token that is not the admin's")
        decks_only = pb.CreateMatchRequest(game="g")
        decks_only.decks.add()
        for only in (decks_only, pb.CreateMatchRequest(game="g", first_dealer=0)):
            err = await expect_error(srv.games.CreateMatch(only))
            assert (err.code, err.reason) == (grpc.StatusCode.UNAUTHENTICATED, "ADMIN_TOKEN_REQUIRED"), only
            err = await expect_error(srv.games.CreateMatch(only, metadata=bearer(SEAT_TOKEN)))
            assert (err.code, err.reason) == (grpc.StatusCode.PERMISSION_DENIED, "NOT_ADMIN"), only
        await srv.games.CreateMatch(req, metadata=bearer(ADMIN_TOKEN))
        created = [c for c in service.calls if c[0] == "create_match"]
        assert len(created) == 1 and created[0][2] is True and created[0][1].first_dealer == 1
        await srv.games.CreateMatch(pb.CreateMatchRequest(game="g"))
        assert [c for c in service.calls if c[0] == "create_match"][-1][2] is False


@run
async def test_every_admin_call_refuses_a_caller_without_the_admin_token():
    """InspectMatch shows every hand, TerminateMatch ends a match, ReissueSeatToken hands out a
    seat, ExportTranscript gives the decks: each is refused without the admin token
    (UNAUTHENTICATED) and with a seat token (PERMISSION_DENIED), and reaches no session call."""
    service = ScriptedService()
    async with running(service) as srv:
        a = srv.admin
        calls = [(a.InspectMatch, admin_pb2.InspectMatchRequest(match_id="m1")),
                 (a.TerminateMatch, admin_pb2.TerminateMatchRequest(match_id="m1")),
                 (a.ReissueSeatToken, admin_pb2.ReissueSeatTokenRequest(match_id="m1", seat=0)),
                 (a.ExportTranscript, admin_pb2.ExportTranscriptRequest(match_id="m1"))]
        for method, request in calls:
            err = await expect_error(method(request))
            assert (err.code, err.reason) == (grpc.StatusCode.UNAUTHENTICATED, "ADMIN_TOKEN_REQUIRED"), method
            err = await expect_error(method(request, metadata=bearer(SEAT_TOKEN)))
            assert (err.code, err.reason) == (grpc.StatusCode.PERMISSION_DENIED, "NOT_ADMIN"), method
        joined = await srv.games.JoinMatch(pb.JoinMatchRequest(match_id="m1"))
        assert (joined.match_id, joined.seat_token) == ("m1", SEAT_TOKEN)
    assert service.calls == [("join_match", "m1", None, "", "")]


@run
async def test_create_match_with_the_admin_token_is_the_admins():
    """A CreateMatch with the admin token and no decks is the admin's all the same, so that it
    is never refused MAX_BOT_MATCHES (docs/operations.md, --max-bot-matches: "the admin is never
    refused one"; docs/api.md: MAX_BOT_MATCHES is "for a caller without the admin token"). It
    used to count as the admin's only with decks or first_dealer, and an operator starting bot
    tables with the admin token got RESOURCE_EXHAUSTED at the limit. Any other token, a
    malformed header too, leaves the call an ordinary caller's, refused nothing it was not."""
    service = ScriptedService()
    async with running(service) as srv:
        def last_admin_flag() -> bool:
            return [c for c in service.calls if c[0] == "create_match"][-1][2]

        await srv.games.CreateMatch(pb.CreateMatchRequest(game="g"), metadata=bearer(ADMIN_TOKEN))
        assert last_admin_flag() is True
        for md in (None, bearer(SEAT_TOKEN), bearer("nope"), (("authorization", "Basic x"),)):
            await srv.games.CreateMatch(pb.CreateMatchRequest(game="g"), metadata=md)
            assert last_admin_flag() is False, md
    async with running(ScriptedService(), admin_token=None) as srv:
        # a server without an admin token has no admin: the token sent is nobody's
        await srv.games.CreateMatch(pb.CreateMatchRequest(game="g"), metadata=bearer(ADMIN_TOKEN))


@run
async def test_admin_api_disabled_without_a_token():
    service = ScriptedService()
    with structlog.testing.capture_logs() as logs:
        async with running(service, admin_token=None) as srv:
            for token in (None, ADMIN_TOKEN, ""):
                md = bearer(token) if token else None
                err = await expect_error(srv.admin.ListMatches(admin_pb2.ListMatchesRequest(), metadata=md))
                assert (err.code, err.reason) == (grpc.StatusCode.PERMISSION_DENIED, "ADMIN_DISABLED")
            # the rest serves as ever (docs/operations.md, Metrics: cardgames_serving is 1 while
            # health answers SERVING)
            assert srv.metrics.value("cardgames_serving", {}) == 1
    assert any(e["event"] == "admin_api_disabled" and e["log_level"] == "warning" for e in logs)


@run
async def test_a_server_with_an_admin_token_does_not_warn_that_the_admin_api_is_off():
    """The start's ``admin_api_disabled`` warning is for a server without an admin token
    only: with one (AdminGate.enabled) an operator must not be told the admin API is off."""
    with structlog.testing.capture_logs() as logs:
        async with running(ScriptedService()) as srv:
            await srv.admin.ListMatches(admin_pb2.ListMatchesRequest(), metadata=bearer(ADMIN_TOKEN))
    assert any(e["event"] == "grpc_server_started" for e in logs)
    assert not [e for e in logs if e["event"] == "admin_api_disabled"]


# ---- request checks and limits ---------------------------------------------------------------

@run
async def test_malformed_requests_are_invalid_argument():
    service = ScriptedService()
    async with running(service) as srv:
        g, md = srv.games, bearer(SEAT_TOKEN)
        cases = [
            (g.GetView(pb.GetViewRequest(), metadata=md), "match_id"),
            (g.SubmitAction(pb.SubmitActionRequest(match_id="m1"), metadata=md), "action"),
            (g.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="p" * 65), metadata=md), "action"),
            (g.JoinMatch(pb.JoinMatchRequest(match_id="m1", player_name="n" * 65)), "player_name"),
            (g.CreateMatch(pb.CreateMatchRequest()), "game"),
            (g.WatchMatch(pb.WatchMatchRequest(), metadata=md), "match_id"),
        ]
        for call, field in cases:
            err = await expect_error(call)
            assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.reason in ("MISSING_FIELD", "FIELD_TOO_LONG")
            assert err.metadata.get("field") == field, (field, err)


@run
async def test_an_action_over_64_characters_is_refused_with_the_limit_in_the_message():
    """The message names the limit, as every other FIELD_TOO_LONG does (it said "action is too
    long", leaving a client to find the 64 by trial)."""
    service = ScriptedService()
    async with running(service) as srv:
        err = await expect_error(srv.games.SubmitAction(
            pb.SubmitActionRequest(match_id="m1", action="p" * 65), metadata=bearer(SEAT_TOKEN)))
    assert (err.code, err.reason, err.metadata) == (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_TOO_LONG",
                                                    {"field": "action"})
    assert err.message == "action is longer than 64 characters"


@run
async def test_a_refused_number_or_name_is_named_in_the_errorinfo():
    """docs/api.md's metadata table: a refused field is named (``field``), an unknown game
    quoted (``game``), so a client can point at what it sent wrong. Nothing reaches the
    session layer."""
    service = ScriptedService()
    async with running(service) as srv:
        g, md, admin = srv.games, bearer(SEAT_TOKEN), bearer(ADMIN_TOKEN)
        cases = [
            (g.ListOpenMatches(pb.ListOpenMatchesRequest(limit=-1)), "BAD_LIMIT", {"field": "limit"}),
            (srv.admin.ListMatches(admin_pb2.ListMatchesRequest(limit=-1), metadata=admin), "BAD_LIMIT",
             {"field": "limit"}),
            (g.WatchMatch(pb.WatchMatchRequest(match_id="m1", after_seq=-1), metadata=md), "BAD_AFTER_SEQ",
             {"field": "after_seq"}),
            (g.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="pass", expected_seq=-1), metadata=md),
             "BAD_EXPECTED_SEQ", {"field": "expected_seq"}),
            (g.ListBots(pb.ListBotsRequest(game="poker")), "UNKNOWN_GAME", {"game": "poker"}),
        ]
        for call, reason, metadata in cases:
            err = await expect_error(call)
            assert (err.code, err.reason, err.metadata) == (grpc.StatusCode.INVALID_ARGUMENT, reason, metadata)
            assert next(iter(metadata.values())) in err.message  # the message names it too
        # what a caller without a seat token may not do is said, not only that it may not
        missing = await expect_error(g.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="pass")))
        assert (missing.code, missing.message) == (grpc.StatusCode.UNAUTHENTICATED, "a seat token is required to act")
        missing = await expect_error(g.LeaveMatch(pb.LeaveMatchRequest(match_id="m1")))
        assert (missing.code, missing.message) == (grpc.StatusCode.UNAUTHENTICATED,
                                                   "a seat token is required to leave or resign")
        empty = await expect_error(g.SubmitAction(pb.SubmitActionRequest(match_id="m1"), metadata=md))
        assert (empty.reason, empty.message) == ("MISSING_FIELD", "action is required")
    assert not [c for c in service.calls if c[0] in ("list_matches", "watch", "submit_action")]


@run
async def test_each_length_limit_accepts_a_value_of_exactly_its_length():
    """docs/api.md gives the limits as maxima ("up to 128 printable characters"...): a value of
    exactly the limit reaches the session layer, one character more is refused with the
    field named. A limit checked with >= refused the longest value a client was promised."""
    service = ScriptedService()
    async with running(service) as srv:
        g, md, admin = srv.games, bearer(SEAT_TOKEN), bearer(ADMIN_TOKEN)
        await g.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="p" * 64,
                                                    client_action_id="c" * 128), metadata=md)
        await g.JoinMatch(pb.JoinMatchRequest(match_id="m1", player_name="n" * 64))
        await srv.admin.TerminateMatch(admin_pb2.TerminateMatchRequest(match_id="m1", reason="r" * 200),
                                       metadata=admin)
        assert ("submit_action", api.Principal("seat", "m1", 0), "p" * 64, None, "c" * 128) in service.calls
        assert ("join_match", "m1", None, "n" * 64, "") in service.calls
        assert ("terminate_match", "m1", "r" * 200) in service.calls  # the players' "why"
        over = [
            (g.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="p" * 65), metadata=md), "action", 64),
            (g.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="pass", client_action_id="c" * 129),
                            metadata=md), "client_action_id", 128),
            (g.JoinMatch(pb.JoinMatchRequest(match_id="m1", player_name="n" * 65)), "player_name", 64),
            (srv.admin.TerminateMatch(admin_pb2.TerminateMatchRequest(match_id="m1", reason="r" * 201),
                                      metadata=admin), "reason", 200),
        ]
        for call, field, limit in over:
            err = await expect_error(call)
            assert (err.code, err.metadata.get("field")) == (grpc.StatusCode.INVALID_ARGUMENT, field)
            assert err.reason in ("FIELD_TOO_LONG", "BAD_CLIENT_ACTION_ID")
            assert err.message == f"{field} is longer than {limit} characters"  # the limit: the client's to know
    assert len([c for c in service.calls if c[0] in ("submit_action", "join_match")]) == 2


@run
async def test_every_free_text_field_is_capped_before_it_is_quoted():
    """A long bot name, option name or value, or game filter is FIELD_TOO_LONG, which a client
    receives: quoted in a status message whole, 9,000 characters overflowed the client's
    metadata limit and the caller got RESOURCE_EXHAUSTED from its own channel instead."""
    service = ScriptedService()
    long = "B" * 9000
    async with running(service, admin_token=ADMIN_TOKEN) as srv:
        g = srv.games
        bot_seat = pb.CreateMatchRequest(game="klaberjass")
        bot_seat.seats.add().open.SetInParent()
        bot_seat.seats.add().bot.name = long
        option_name = pb.CreateMatchRequest(game="klaberjass")
        option_name.options[long].int_value = 1
        option_value = pb.CreateMatchRequest(game="klaberjass")
        option_value.options["kl_target_score"].string_value = long
        cases = [g.CreateMatch(bot_seat), g.CreateMatch(option_name), g.CreateMatch(option_value),
                 g.ListBots(pb.ListBotsRequest(game=long)), g.ListOpenMatches(pb.ListOpenMatchesRequest(game=long)),
                 srv.admin.ListMatches(admin_pb2.ListMatchesRequest(game=long), metadata=bearer(ADMIN_TOKEN))]
        for call in cases:
            err = await expect_error(call)
            assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "FIELD_TOO_LONG")
            assert len(err.message) < 200 and long not in err.message
    assert not [c for c in service.calls if c[0] in ("create_match", "list_matches")]


@run
async def test_compressed_requests_are_read_and_held_to_the_size_limit_once_decompressed():
    """docs/api.md, Errors: the server reads gzip (and deflate) requests, and the request size
    limit counts the decompressed message: 100 KB of name squeezed into a few hundred bytes is
    RESOURCE_EXHAUSTED from gRPC itself, without details."""
    service = ScriptedService()
    async with running(service) as srv:
        listed = await srv.games.ListGames(pb.ListGamesRequest(), compression=grpc.Compression.Gzip)
        assert listed.games
        huge = pb.CreateMatchRequest(game="klaberjass", name="x" * 100_000)
        assert len(gzip.compress(huge.SerializeToString())) < 65536
        err = await expect_error(srv.games.CreateMatch(huge, compression=grpc.Compression.Gzip))
        assert (err.code, err.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "")
    assert not [c for c in service.calls if c[0] == "create_match"]


@run
async def test_request_bytes_that_do_not_parse_are_invalid_argument():
    """Garbage bytes, or a string field holding bad UTF-8, are INVALID_ARGUMENT with an
    ErrorInfo (MALFORMED_REQUEST), a message saying the request is not a valid message of the
    method (docs/api.md) and the usual rpc line; grpc alone answered UNKNOWN, named its
    parser's exception class and logged a traceback at ERROR level for each call."""
    service = ScriptedService()
    bad_utf8 = b"\x0a\x02\xff\xfe"  # field 1 (a string), two bytes that are not UTF-8
    with structlog.testing.capture_logs() as logs:
        async with running(service, admin_token=ADMIN_TOKEN) as srv:
            errors = []
            for method, payload in (("/cardgames.v1.CardGamesService/GetView", b"\xff" * 16),
                                    ("/cardgames.v1.CardGamesService/CreateMatch", bad_utf8),
                                    ("/cardgames.v1.AdminService/ListMatches", b"\xff" * 16)):
                call = srv.channel.unary_unary(method)(payload, metadata=bearer(ADMIN_TOKEN))
                errors.append(await expect_error(call))
            stream = srv.channel.unary_stream("/cardgames.v1.CardGamesService/WatchMatch")(b"\xff" * 16)
            errors.append(await expect_error(stream))
            await rpc_lines_logged(logs, 4)
    for err in errors:
        assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_REQUEST"), err
        assert "DecodeError" not in err.message
        assert "not a valid message of this method" in err.message, err.message
    assert not service.calls
    assert not [e for e in logs if e["log_level"] in ("error", "critical")]
    lines = [e for e in logs if e["event"] == "rpc"]
    assert len(lines) == 4 and {e["reason"] for e in lines} == {"MALFORMED_REQUEST"}


@run
async def test_a_json_request_is_malformed_request_that_says_json():
    """A client set to the JSON codec (Connect's ``useBinaryFormat: false`` sends
    application/grpc+json) got the garbage answer, "not a valid message of this method
    (protobuf wire format...)", for every call, ListGames' ``{}`` too, which reads as a bug of
    the client's or a proxy's. The status now says the request is JSON and the server reads
    the binary format only; the reason stays MALFORMED_REQUEST, and bytes that are not JSON
    keep the old message."""
    service = ScriptedService()
    async with running(service) as srv:
        errors = {}
        for payload in (b"{}", b'{"matchId": "abc"}', b"\xff" * 16):
            call = srv.channel.unary_unary("/cardgames.v1.CardGamesService/GetMatch")(payload)
            errors[payload] = await expect_error(call)
        stream = srv.channel.unary_stream("/cardgames.v1.CardGamesService/WatchMatch")(b'{"matchId": "abc"}')
        errors[b"stream"] = await expect_error(stream)
    for payload, err in errors.items():
        assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_REQUEST"), err
        assert ("request is JSON" in err.message) == (payload != b"\xff" * 16), (payload, err.message)
    assert not service.calls


def test_a_status_message_is_cut_to_fit_the_trailing_metadata():
    from engine_service.transport.errors import MappedError, to_status
    status = to_status(MappedError(grpc.StatusCode.INVALID_ARGUMENT, "x" * 20_000, "BAD_REQUEST", {}, True))
    assert len(status.details) < 1_000 and status.details.endswith("...")
    # cut to 500 characters, the "..." included; a message of 500 is left whole
    assert status.details == "x" * 497 + "..."
    whole = to_status(MappedError(grpc.StatusCode.INVALID_ARGUMENT, "y" * 500, "BAD_REQUEST", {}, True))
    assert whole.details == "y" * 500


def test_a_status_carries_a_request_info_only_with_a_request_id():
    """errors.to_status: ErrorInfo first, the RequestInfo last; a servicer called outside an RPC
    (no request id) gets no RequestInfo, never one naming no call."""
    from google.rpc import status_pb2

    from engine_service.transport.errors import MappedError, to_status

    def details(request_id):
        status = to_status(MappedError(grpc.StatusCode.NOT_FOUND, "no", "MATCH_NOT_FOUND", {}, True), request_id)
        (blob,) = [value for key, value in status.trailing_metadata if key == "grpc-status-details-bin"]
        return [d.type_url.rpartition("/")[2] for d in status_pb2.Status.FromString(blob).details]

    assert details("") == ["google.rpc.ErrorInfo"]
    assert details("r-1") == ["google.rpc.ErrorInfo", "google.rpc.RequestInfo"]


def test_a_status_lists_the_error_info_first_then_the_extra_detail_then_the_request_info():
    """docs/api.md, Errors: the ErrorInfo is the first detail, a RATE_LIMITED status's RetryInfo
    (an ABORTED one's View) the second, the RequestInfo the last (errors.to_status)."""
    from google.rpc import status_pb2

    from engine_service.transport.errors import RateLimited, classify, to_status
    status = to_status(classify(RateLimited(1.5, "seat")), "r-7")
    (blob,) = [value for key, value in status.trailing_metadata if key == "grpc-status-details-bin"]
    details = status_pb2.Status.FromString(blob).details
    assert [d.type_url.rpartition("/")[2] for d in details] == [
        "google.rpc.ErrorInfo", "google.rpc.RetryInfo", "google.rpc.RequestInfo"]


@pytest.mark.parametrize("number, code", [(errno.EMFILE, grpc.StatusCode.UNAVAILABLE),
                                          (errno.ENFILE, grpc.StatusCode.UNAVAILABLE),
                                          (errno.ENOMEM, grpc.StatusCode.INTERNAL),
                                          (errno.ENOBUFS, grpc.StatusCode.INTERNAL)])
def test_only_emfile_and_enfile_in_a_call_are_out_of_file_descriptors(number, code):
    """errors.OUT_OF_DESCRIPTORS (the table of errors.py: "OSError EMFILE / ENFILE"): a call
    that found no file descriptor free is UNAVAILABLE / OUT_OF_FILE_DESCRIPTORS (docs/api.md,
    retryable); any other OSError in a call, ENOMEM or ENOBUFS included, is a fault: INTERNAL,
    logged with its traceback, its text not sent."""
    from engine_service.transport.errors import classify
    mapped = classify(OSError(number, os.strerror(number)))
    assert (mapped.code, mapped.expected) == (code, code is grpc.StatusCode.UNAVAILABLE)
    assert os.strerror(number) not in mapped.message


def test_a_stale_sequence_without_a_view_is_still_aborted():
    """errors.classify: the caller's View rides along only when there is one."""
    from engine_service.transport.errors import classify
    mapped = classify(api.StaleSequence("stale", None, expected_seq="3", seq="4"))
    assert (mapped.code, mapped.reason, mapped.details) == (grpc.StatusCode.ABORTED, "STALE_SEQUENCE", ())


def test_error_metadata_values_are_cut_to_200_characters():
    """errors._MAX_METADATA_CHARS: an ErrorInfo metadata value quoting a request field is cut,
    keeping the status small enough for the trailers; a value of 200 is left whole."""
    from engine_service.transport.errors import classify
    mapped = classify(api.BadRequest("bad", reason="BAD_NAME", field="f" * 1_000, seat="s" * 200))
    assert mapped.metadata == {"field": "f" * 200, "seat": "s" * 200}
    with pytest.raises(dataclasses.FrozenInstanceError):  # a value object, shared by the log and the status
        mapped.message = "changed"


@pytest.mark.parametrize("code", ["OK", "NOT_A_STATUS_CODE"])
def test_a_session_error_naming_no_error_status_code_is_internal(code):
    """A SessionError whose ``code`` is OK or no gRPC status code (a bug in the session layer)
    is sent as INTERNAL and logged with its traceback, never as a status without an error."""
    from engine_service.transport.errors import classify

    class Odd(api.SessionError):
        pass

    Odd.code = code
    mapped = classify(Odd("the session layer's own text", reason="ODD"))
    assert (mapped.code, mapped.reason, mapped.message, mapped.expected) == (
        grpc.StatusCode.INTERNAL, "INTERNAL", "internal error", False)


def test_a_session_error_of_code_internal_keeps_its_reason_and_is_logged_as_a_fault():
    """errors.classify: a session error naming INTERNAL (MATCH_CORRUPT: a stored match that
    does not replay) is sent with its own reason (docs/api.md, Errors: INTERNAL, MATCH_CORRUPT,
    "a server fault, logged with details on the server"), and is not ``expected``: the
    servicer logs it with its traceback like any other fault."""
    from engine_service.transport.errors import classify
    mapped = classify(api.SessionError("match m1 does not replay", reason="MATCH_CORRUPT"))
    assert (mapped.code, mapped.reason, mapped.expected) == (grpc.StatusCode.INTERNAL, "MATCH_CORRUPT", False)
    assert classify(api.Unavailable("draining")).expected is True


@pytest.mark.parametrize("key_kind", ["seat", "peer"])
def test_a_rate_limited_status_names_its_bucket_in_metadata_and_message(key_kind):
    """errors.RateLimited: RESOURCE_EXHAUSTED / RATE_LIMITED with metadata ``key_kind``
    (docs/api.md, Errors: ``seat`` or ``peer``), its message naming the same bucket, and a
    RetryInfo as the only extra detail."""
    from engine_service.transport.errors import RateLimited, classify
    mapped = classify(RateLimited(0.25, key_kind))
    assert (mapped.code, mapped.reason, mapped.metadata) == (
        grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED", {"key_kind": key_kind})
    assert mapped.message == f"too many requests ({key_kind} rate limit): retry later"
    (retry,) = mapped.details
    assert retry.retry_delay.ToMilliseconds() == 250


@pytest.mark.parametrize("delay_s, ms", [(0.0, 1), (0.0001, 1), (0.001, 1), (0.0011, 2), (1.5, 1500), (2.0004, 2001)])
def test_a_retry_delay_is_rounded_up_to_the_millisecond_and_never_zero(delay_s, ms):
    """errors.retry_info: waiting the announced delay is always enough (rounded up, never
    down), and a RetryInfo never says to retry at once (at least 1 ms)."""
    from engine_service.transport.errors import retry_info
    assert retry_info(delay_s).retry_delay.ToMilliseconds() == ms


def test_a_rules_error_is_mapped_by_its_nearest_class_in_the_table():
    """errors._RULES_CODES maps a rules error by class, through its MRO: a subclass of
    IllegalAction a game may define is FAILED_PRECONDITION with its own reason; a RulesError
    of no class in the table is INTERNAL (a bug), its text never sent."""
    from engine_service.transport.errors import classify

    class LeadOutOfTurn(rules_errors.IllegalAction):
        reason = "LEAD_OUT_OF_TURN"

    mapped = classify(LeadOutOfTurn("you may not lead now", card="AS"))
    assert (mapped.code, mapped.reason, mapped.message, mapped.metadata, mapped.expected) == (
        grpc.StatusCode.FAILED_PRECONDITION, "LEAD_OUT_OF_TURN", "you may not lead now", {"card": "AS"}, True)
    bare = classify(rules_errors.RulesError("a secret the rules let slip"))
    assert (bare.code, bare.reason, bare.message, bare.expected) == (
        grpc.StatusCode.INTERNAL, "INTERNAL", "internal error", False)


@run
async def test_a_client_action_id_over_128_characters_is_bad_client_action_id():
    """docs/api.md: up to 128 printable characters; "anything else is INVALID_ARGUMENT /
    BAD_CLIENT_ACTION_ID" (the reason the session layer gives a control character too)."""
    service = ScriptedService()
    async with running(service) as srv:
        req = pb.SubmitActionRequest(match_id="m1", action="pass", client_action_id="c" * 129)
        err = await expect_error(srv.games.SubmitAction(req, metadata=bearer(SEAT_TOKEN)))
        assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_CLIENT_ACTION_ID")
        assert err.metadata.get("field") == "client_action_id"
        await srv.games.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="pass", client_action_id="c" * 128),
                                     metadata=bearer(SEAT_TOKEN))
        assert [c[4] for c in service.calls if c[0] == "submit_action"] == ["c" * 128]


@run
async def test_a_client_action_id_with_a_control_character_names_its_field():
    """The session layer's BAD_CLIENT_ACTION_ID (a control character) carries the ErrorInfo
    metadata ``field`` as the transport's (too long) does (docs/api.md, the metadata table)."""
    from .players import create_open_match
    from .test_service import served

    async with served() as (_, srv):
        match_id, tokens = await create_open_match(srv.games, "klaberjass")
        req = pb.SubmitActionRequest(match_id=match_id, action="pass", client_action_id="id\x07")
        err = await expect_error(srv.games.SubmitAction(req, metadata=bearer(tokens[0])))
        assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_CLIENT_ACTION_ID")
        assert err.metadata.get("field") == "client_action_id"


@run
async def test_join_match_hands_its_client_join_id_to_the_session_layer():
    """JoinMatchRequest.client_join_id (the idempotency key of a join: docs/api.md) reaches
    the session layer as it was sent ("" when unset), with the seat and the name: a seat 0
    sent is seat 0, an unset seat None (card_games.proto, JoinMatchRequest.seat: unset, the
    first open seat)."""
    service = ScriptedService()
    async with running(service) as srv:
        await srv.games.JoinMatch(pb.JoinMatchRequest(match_id="m1", seat=1, player_name="ada",
                                                      client_join_id="0123456789abcdef-join"))
        await srv.games.JoinMatch(pb.JoinMatchRequest(match_id="m1"))
        await srv.games.JoinMatch(pb.JoinMatchRequest(match_id="m1", seat=0))
    assert [c[1:] for c in service.calls if c[0] == "join_match"] == [
        ("m1", 1, "ada", "0123456789abcdef-join"), ("m1", None, "", ""), ("m1", 0, "", "")]


@run
async def test_list_matches_refuses_a_status_outside_the_enum():
    """An unknown MatchStatus value is a bad request (BAD_STATUS), not "any status": an admin
    tool built against a newer enum must not get every match back as if unfiltered."""
    service = ScriptedService()
    async with running(service) as srv:
        err = await expect_error(srv.admin.ListMatches(admin_pb2.ListMatchesRequest(status=99),
                                                       metadata=bearer(ADMIN_TOKEN)))
        assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_STATUS")
        assert err.metadata.get("field") == "status"
        assert not [c for c in service.calls if c[0] == "list_matches"]
        await srv.admin.ListMatches(admin_pb2.ListMatchesRequest(status=match_pb2.MATCH_STATUS_UNSPECIFIED),
                                    metadata=bearer(ADMIN_TOKEN))
        assert ("list_matches", "", "", 100) in service.calls


@run
async def test_message_size_limit():
    service = ScriptedService()
    async with running(service, limits=ServerLimits(max_receive_message_bytes=1024)) as srv:
        err = await expect_error(srv.games.JoinMatch(pb.JoinMatchRequest(match_id="m" * 2000)))
        assert err.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        ok = await srv.games.JoinMatch(pb.JoinMatchRequest(match_id="m1"))
        assert ok.seat_token == SEAT_TOKEN


@run
async def test_a_response_over_the_send_limit_is_an_explained_error():
    """A response (or a stream's message) larger than --max-send-message-bytes is
    RESOURCE_EXHAUSTED RESPONSE_TOO_LARGE, logged as such; grpc alone failed the call with a
    bare status after the handler returned, and the rpc line said OK (seen with the reveal of
    a match of 2,100 thrown-in deals). The status carries the call's request id, as every
    error does."""
    service = ScriptedService()
    with structlog.testing.capture_logs() as logs:
        async with running(service, limits=ServerLimits(max_send_message_bytes=20)) as srv:
            unary = await expect_error(srv.games.ListGames(pb.ListGamesRequest()))
            stream = await expect_error(srv.games.WatchMatch(pb.WatchMatchRequest(match_id="m1")))
            await rpc_lines_logged(logs, 2)
    for err in (unary, stream):
        assert (err.code, err.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RESPONSE_TOO_LARGE")
        assert err.metadata["limit"] == "20" and int(err.metadata["size"]) > 20
    lines = [e for e in logs if e["event"] == "rpc"]
    assert [(e["code"], e.get("reason")) for e in lines] == [("RESOURCE_EXHAUSTED", "RESPONSE_TOO_LARGE")] * 2
    assert [e["request_id"] for e in lines] == [unary.request_id, stream.request_id] and unary.request_id


@run
async def test_a_response_of_exactly_the_send_limit_is_sent():
    """--max-send-message-bytes is the largest response sent: one of exactly that size goes
    out (a unary answer, a stream's message), one byte less of limit refuses it, saying its
    size. grpc's own limit, set to the same value, lets such a message through too."""
    service = ScriptedService()
    async with running(service) as srv:
        games = await srv.games.ListGames(pb.ListGamesRequest())
        watch = srv.games.WatchMatch(pb.WatchMatchRequest(match_id="m1"))
        snapshot = await watch.read()
        watch.cancel()
    for size, read in ((games.ByteSize(), None), (snapshot.ByteSize(), "watch")):
        async with running(ScriptedService(), limits=ServerLimits(max_send_message_bytes=size)) as srv:
            if read is None:
                assert await srv.games.ListGames(pb.ListGamesRequest()) == games
            else:
                watch = srv.games.WatchMatch(pb.WatchMatchRequest(match_id="m1"))
                assert await watch.read() == snapshot
                watch.cancel()
        async with running(ScriptedService(), limits=ServerLimits(max_send_message_bytes=size - 1)) as srv:
            call = (srv.games.ListGames(pb.ListGamesRequest()) if read is None
                    else srv.games.WatchMatch(pb.WatchMatchRequest(match_id="m1")))
            err = await expect_error(call)
            assert (err.code, err.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RESPONSE_TOO_LARGE")
            assert err.metadata == {"size": str(size), "limit": str(size - 1)}


@run
async def test_concurrent_streams_per_connection_are_limited():
    service = ScriptedService()
    async with running(service, limits=ServerLimits(max_concurrent_streams=2)) as srv:
        req = pb.WatchMatchRequest(match_id="m1")
        streams = [srv.games.WatchMatch(req) for _ in range(2)]
        first = await asyncio.gather(*(s.read() for s in streams))
        assert all(e.kind == match_pb2.EVENT_KIND_SNAPSHOT for e in first)
        streams.append(srv.games.WatchMatch(req))
        third = asyncio.ensure_future(streams[2].read())
        await asyncio.sleep(0.5)
        assert not third.done(), "a third stream on one connection must wait for a free slot"
        # another connection is not affected
        async with srv.channel_for() as other:
            from engine_service.transport.generated import card_games_pb2_grpc
            event = await card_games_pb2_grpc.CardGamesServiceStub(other).WatchMatch(req).read()
            assert event.kind == match_pb2.EVENT_KIND_SNAPSHOT
        streams[0].cancel()
        assert (await asyncio.wait_for(third, 30)).kind == match_pb2.EVENT_KIND_SNAPSHOT
        for s in streams[1:]:
            s.cancel()


# ---- catalogue, health, reflection, logs and metrics -----------------------------------------

@run
async def test_catalogue():
    service = ScriptedService()
    async with running(service) as srv:
        games = await srv.games.ListGames(pb.ListGamesRequest())
        assert [(x.id, x.num_seats, x.options[0].name, x.options[0].help) for x in games.games] == [("g", 2, "x", "h")]
        assert [b.name for b in (await srv.games.ListBots(pb.ListBotsRequest())).bots] == ["random", "hx"]
        assert [b.name for b in (await srv.games.ListBots(pb.ListBotsRequest(game="g"))).bots] == ["random"]
        # the plugins that failed to load are said whatever the game filter: they play none
        for game in ("", "g"):
            failed = (await srv.games.ListBots(pb.ListBotsRequest(game=game))).load_failures
            assert [(f.plugin, f.stage, f.reason) for f in failed] == [
                ("broken", "import", "ImportError at broken.py:3 in <module>")]
        # an unknown game is refused, as by the other listings (not an empty list)
        err = await expect_error(srv.games.ListBots(pb.ListBotsRequest(game="poker")))
        assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_GAME")
        assert "known games: g" in err.message
        summary = (await srv.games.GetMatch(pb.GetMatchRequest(match_id="m1"))).match
        assert summary.seats[1].kind == match_pb2.SEAT_KIND_BOT and summary.options["x"].bool_value is True


@run
async def test_health_and_reflection():
    service = ScriptedService()
    async with running(service) as srv:
        hc = health_pb2_grpc.HealthStub(srv.channel)
        for name in ("", "cardgames.v1.CardGamesService", "cardgames.v1.AdminService"):
            resp = await hc.Check(health_pb2.HealthCheckRequest(service=name))
            assert resp.status == health_pb2.HealthCheckResponse.SERVING
        refl = reflection_pb2_grpc.ServerReflectionStub(srv.channel)
        answers = [a async for a in refl.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))]
        names = {s.name for s in answers[0].list_services_response.service}
        # docs/api.md, Connecting: every service is listed, reflection too (v1alpha only: the
        # v1 file's descriptors are not in the process's pool to be described, server.py)
        assert names == {"cardgames.v1.CardGamesService", "cardgames.v1.AdminService", "grpc.health.v1.Health",
                         "grpc.reflection.v1alpha.ServerReflection"}


@run
async def test_a_health_check_of_an_unknown_service_is_counted_and_logged_not_found():
    """grpc's health servicer aborts NOT_FOUND by itself (not through the error table): the
    interceptor reads the code from the context, so the rpc line and rpc_requests say
    NOT_FOUND, as the client saw, not UNKNOWN."""
    service = ScriptedService()
    async with running(service) as srv:
        hc = health_pb2_grpc.HealthStub(srv.channel)
        with structlog.testing.capture_logs() as logs:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await hc.Check(health_pb2.HealthCheckRequest(service="no.such.Service"))
            await rpc_lines_logged(logs, 1)
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
        method = "/grpc.health.v1.Health/Check"
        [line] = [e for e in logs if e["event"] == "rpc"]
        assert (line["method"], line["code"], line["log_level"]) == (method, "NOT_FOUND", "debug")
        assert srv.metrics.value("cardgames_rpc_requests_total", {"method": method, "code": "NOT_FOUND"}) == 1
        assert srv.metrics.value("cardgames_rpc_requests_total", {"method": method, "code": "UNKNOWN"}) == 0


@run
async def test_health_list_answers_every_service_and_says_not_serving_once_draining():
    """grpc.health.v1.Health/List, which reflection describes (grpc's health.proto has it),
    answers every service's status: the servicer did not implement it, and a caller got
    UNIMPLEMENTED "Unexpected <class 'NotImplementedError'>: Method not implemented!"."""
    names = ("", "cardgames.v1.CardGamesService", "cardgames.v1.AdminService")
    service = ScriptedService()
    async with running(service, drain=False) as srv:
        hc = health_pb2_grpc.HealthStub(srv.channel)
        serving = await hc.List(health_pb2.HealthListRequest())
        await srv.server.health.enter_graceful_shutdown()  # the drain's first step
        draining = await hc.List(health_pb2.HealthListRequest())
        # docs/api.md, Connecting (health): Check says NOT_SERVING too while the server drains
        checked = [(await hc.Check(health_pb2.HealthCheckRequest(service=name))).status for name in names]
        await srv.server.drain(grace_s=1)
    assert checked == [health_pb2.HealthCheckResponse.NOT_SERVING] * len(names)
    for listed, status in ((serving, health_pb2.HealthCheckResponse.SERVING),
                           (draining, health_pb2.HealthCheckResponse.NOT_SERVING)):
        assert {k: v.status for k, v in listed.statuses.items()} == dict.fromkeys(names, status)


@run
async def test_a_health_watch_mid_write_when_the_drain_starts_still_sends_not_serving():
    """A Watch stream ended without NOT_SERVING (the client read a bare EOF, once in CI) when
    the drain began while the stream was writing SERVING: the drain's flag, set outside the
    lock the Watch holds while it writes, was seen right after that write, before the new
    status was sent."""
    from engine_service.transport.server import HealthServicer

    class Context:
        def __init__(self):
            self.sent, self.release = [], asyncio.Event()

        async def write(self, message):
            self.sent.append(message.status)
            await self.release.wait()

    servicer, context = HealthServicer(), Context()
    watch = asyncio.create_task(servicer.Watch(health_pb2.HealthCheckRequest(service=""), context))
    while not context.sent:
        await asyncio.sleep(0)
    drain = asyncio.create_task(servicer.enter_graceful_shutdown())  # while SERVING is being written
    for _ in range(20):
        await asyncio.sleep(0)
    context.release.set()
    await asyncio.wait_for(asyncio.gather(watch, drain), 30)
    assert context.sent == [health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING]


class _HealthWatchContext:
    """What HealthServicer.Watch writes to: the statuses it sent."""

    def __init__(self):
        self.sent = []

    async def write(self, message):
        self.sent.append(message.status)


async def _watch_until_drained(servicer, service: str, between) -> list[int]:
    """The statuses a Watch of ``service`` sends from its start, through ``between()``, to the drain."""
    context = _HealthWatchContext()
    watch = asyncio.create_task(servicer.Watch(health_pb2.HealthCheckRequest(service=service), context))
    while not context.sent:
        await asyncio.sleep(0)
    await between()
    for _ in range(20):  # the Watch, woken, runs (or would) before the drain
        await asyncio.sleep(0)
    await servicer.enter_graceful_shutdown()
    await asyncio.wait_for(watch, 30)
    return context.sent


@run
async def test_a_health_watch_sends_a_status_only_when_it_changes():
    """grpc's health.proto (Watch): a message is sent when the service's serving status
    changes, so a status set again, or another service's status, sends the watcher nothing."""
    from engine_service.transport.server import HealthServicer

    serving, not_serving = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING
    servicer = HealthServicer()
    await servicer.set("cardgames.v1.CardGamesService", serving)

    async def unchanged():
        await servicer.set("cardgames.v1.CardGamesService", serving)
        await servicer.set("cardgames.v1.AdminService", serving)

    sent = await _watch_until_drained(servicer, "cardgames.v1.CardGamesService", unchanged)
    assert sent == [serving, not_serving]


@run
async def test_a_health_watch_is_sent_the_status_set_while_it_watches():
    """grpc's health.proto (Watch): future changes are sent. A client watching while the
    server starts (its port is open before it marks its services SERVING) is sent SERVING
    when it is set, then NOT_SERVING at the drain."""
    from engine_service.transport.server import HealthServicer

    status = health_pb2.HealthCheckResponse
    servicer = HealthServicer()

    async def started():
        await servicer.set("cardgames.v1.CardGamesService", status.SERVING)

    sent = await _watch_until_drained(servicer, "cardgames.v1.CardGamesService", started)
    assert sent == [status.SERVICE_UNKNOWN, status.SERVING, status.NOT_SERVING]


@run
async def test_a_health_watch_of_an_unknown_service_says_service_unknown():
    """grpc's health.proto (Watch): a service the server does not know is answered
    SERVICE_UNKNOWN (not NOT_SERVING), the call left open until the drain ends it
    (docs/operations.md, Health, start-up and shutdown)."""
    from engine_service.transport.server import HealthServicer

    servicer = HealthServicer()

    async def nothing():
        pass

    sent = await _watch_until_drained(servicer, "no.such.Service", nothing)
    assert sent[0] == health_pb2.HealthCheckResponse.SERVICE_UNKNOWN


@run
async def test_a_health_status_set_once_draining_is_ignored():
    """Once the drain began, health stays NOT_SERVING (docs/operations.md, Health, start-up and
    shutdown): a status set later (a start still marking its services SERVING when the signal
    came) is ignored, as grpc's own servicer ignores it for Check, so List and Watch do not
    send a load balancer back to a server that is going away."""
    from engine_service.transport.server import HealthServicer

    serving, not_serving = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING
    servicer = HealthServicer()
    await servicer.set("cardgames.v1.CardGamesService", serving)
    await servicer.enter_graceful_shutdown()
    await servicer.set("cardgames.v1.CardGamesService", serving)
    await servicer.set("cardgames.v1.AdminService", serving)
    listed = await servicer.List(health_pb2.HealthListRequest(), None)
    assert {k: v.status for k, v in listed.statuses.items()} == {
        "": not_serving, "cardgames.v1.CardGamesService": not_serving}


@run
async def test_reflection_describes_the_api_with_its_comments():
    """A client with reflection alone (grpcurl describe, buf curl) gets the documentation of
    the .proto files: the descriptors it was served came from the _pb2 modules, which hold
    no comments. Other files (the well-known types an API file imports) are served as before."""
    from google.protobuf import descriptor_pb2

    service = ScriptedService()
    async with running(service) as srv:
        refl = reflection_pb2_grpc.ServerReflectionStub(srv.channel)
        requests = [reflection_pb2.ServerReflectionRequest(file_containing_symbol="cardgames.v1.SubmitActionRequest"),
                    reflection_pb2.ServerReflectionRequest(file_by_filename="cardgames/v1/match.proto")]
        answers = [a async for a in refl.ServerReflectionInfo(iter(requests))]
    files, answered = {}, []
    for answer in answers:
        for raw in answer.file_descriptor_response.file_descriptor_proto:
            f = descriptor_pb2.FileDescriptorProto.FromString(raw)
            files[f.name] = f
            answered.append(f)
    # every API file with its comments, the dependencies sent with the one asked for too
    # (server.py, CommentedReflectionServicer: they replace the pool's copies in every answer)
    ours = [f for f in answered if f.name.startswith("cardgames/")]
    assert {f.name for f in ours} >= {"cardgames/v1/card_games.proto", "cardgames/v1/cards.proto"}
    assert all(f.source_code_info.location for f in ours), [f.name for f in ours]
    api_file = files["cardgames/v1/card_games.proto"]
    message = [m.name for m in api_file.message_type].index("SubmitActionRequest")
    field = [f.name for f in api_file.message_type[message].field].index("expected_seq")
    comments = {tuple(loc.path): loc.leading_comments for loc in api_file.source_code_info.location}
    assert "The seq of the view the action was decided on" in comments[(4, message, 2, field)]
    assert files["cardgames/v1/match.proto"].source_code_info.location
    assert "google/protobuf/duration.proto" in files  # a dependency, answered from the pool
    assert [m.name for m in files["google/protobuf/duration.proto"].message_type] == ["Duration"]


@run
async def test_reflection_v1_answers_as_v1alpha_does():
    """grpc.reflection.v1 (the stable name tools try first) is served beside grpcio-reflection's
    v1alpha with the same answers, byte for byte: a client told to use v1 used to get
    UNIMPLEMENTED."""
    requests = [reflection_pb2.ServerReflectionRequest(list_services=""),
                reflection_pb2.ServerReflectionRequest(file_containing_symbol="cardgames.v1.CardGamesService"),
                reflection_pb2.ServerReflectionRequest(file_containing_symbol="no.such.Symbol")]
    async with running(ScriptedService()) as srv:
        answers = {}
        for version in ("v1alpha", "v1"):
            call = srv.channel.stream_stream(f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo")
            answers[version] = [raw async for raw in call(iter([r.SerializeToString() for r in requests]))]
        assert answers["v1"] == answers["v1alpha"] and len(answers["v1"]) == 3
        listed, described, missing = (reflection_pb2.ServerReflectionResponse.FromString(a) for a in answers["v1"])
        assert "cardgames.v1.CardGamesService" in {s.name for s in listed.list_services_response.service}
        assert described.file_descriptor_response.file_descriptor_proto
        assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]


@run
async def test_buf_curl_lists_and_calls_through_either_reflection_protocol():
    """The tool docs/api.md shows (buf curl, from the buf-bin package the lint uses), with each
    reflection protocol forced: it lists the API's methods and calls one by name."""
    buf = Path(sys.executable).with_name("buf")
    async with running(ScriptedService()) as srv:
        url = f"http://127.0.0.1:{srv.server.port}"
        for protocol in ("grpc-v1", "grpc-v1alpha"):
            base = [str(buf), "curl", "--protocol", "grpc", "--http2-prior-knowledge", "--reflect-protocol", protocol]
            for args, expected in ((["--list-methods", url], "cardgames.v1.CardGamesService/SubmitAction"),
                                   ([f"{url}/cardgames.v1.CardGamesService/ListGames"], '"numSeats": 2')):
                proc = await asyncio.create_subprocess_exec(*base, *args, stdout=asyncio.subprocess.PIPE,
                                                            stderr=asyncio.subprocess.PIPE)
                out, err = await asyncio.wait_for(proc.communicate(), 60)
                assert proc.returncode == 0, (protocol, args, err.decode())
                assert expected in out.decode(), (protocol, args, out.decode())


@run
async def test_one_log_line_and_metrics_per_rpc_without_secrets():
    service = ScriptedService()
    async with running(service) as srv:
        with structlog.testing.capture_logs() as logs:
            await srv.games.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="play:AS", expected_seq=3),
                                         metadata=bearer(SEAT_TOKEN))
            await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"), metadata=bearer("nope")))
            await rpc_lines_logged(logs, 2)
        lines = [e for e in logs if e["event"] == "rpc"]
        assert len(lines) == 2
        ok, bad = lines
        assert ok["method"] == "/cardgames.v1.CardGamesService/SubmitAction" and ok["code"] == "OK"
        assert (ok["match_id"], ok["seat"], ok["seq"]) == ("m1", 0, 4) and ok["duration_ms"] >= 0
        assert bad["code"] == "UNAUTHENTICATED" and bad["reason"] == "MISSING_OR_BAD_TOKEN"
        text = json.dumps(logs, default=str)
        assert SEAT_TOKEN not in text and "nope" not in text and "AS" not in text
        m = srv.metrics
        assert m.value("cardgames_rpc_requests_total", {"method": ok["method"], "code": "OK"}) == 1
        assert m.value("cardgames_rpc_duration_seconds_count", {"method": ok["method"]}) == 1
        assert m.value("cardgames_rpc_in_flight", {"method": ok["method"]}) == 0


@run
async def test_every_call_has_a_request_id_in_its_log_line_and_its_error():
    """x-request-id: a usable one is kept, anything else (too long, spaces, empty) replaced by
    16 hex digits; the rpc line carries it, and an error status returns it as its last detail,
    a google.rpc.RequestInfo, after the ErrorInfo."""
    service = ScriptedService()
    async with running(service) as srv:
        with structlog.testing.capture_logs() as logs:
            given = await expect_error(srv.games.GetView(
                pb.GetViewRequest(match_id="m1"), metadata=(("x-request-id", "web-42:a/b"), *bearer("nope"))))
            drawn = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"),
                                                         metadata=bearer("nope")))
            refused = [await expect_error(srv.games.GetView(
                pb.GetViewRequest(match_id="m1"), metadata=(("x-request-id", bad), *bearer("nope"))))
                for bad in ("x" * 65, "two words", "")]
            # only x-request-id is read: another header's plain value (a key, a tag) is no id
            refused.append(await expect_error(srv.games.GetView(
                pb.GetViewRequest(match_id="m1"), metadata=(("x-api-key", "k3y-in-a-header"), *bearer("nope")))))
            await srv.games.ListGames(pb.ListGamesRequest(), metadata=(("x-request-id", "ok-1"),))
            await rpc_lines_logged(logs, 7)
        lines = [e for e in logs if e["event"] == "rpc"]
        assert given.request_id == "web-42:a/b" and given.reason == "MISSING_OR_BAD_TOKEN"
        ids = [drawn.request_id] + [r.request_id for r in refused]
        assert all(len(i) == 16 and int(i, 16) >= 0 for i in ids) and len(set(ids)) == 5
        assert [line["request_id"] for line in lines] == ["web-42:a/b", *ids, "ok-1"]


@run
async def test_health_turns_not_serving_before_the_session_layer_drains():
    """docs/operations.md, Health, start-up and shutdown: on a signal health turns NOT_SERVING
    (and cardgames_serving 0), then new work is refused: a load balancer stops routing first,
    rather than its calls being refused UNAVAILABLE by a server it still sees SERVING."""

    class Observing(ScriptedService):
        async def drain(self) -> None:
            listed = await self.server.health.List(health_pb2.HealthListRequest(), None)
            self.seen = ({k: v.status for k, v in listed.statuses.items()},
                         self.server.metrics.value("cardgames_serving", {}))
            await super().drain()

    service = Observing()
    async with running(service) as srv:
        service.server = srv.server
        assert srv.metrics.value("cardgames_serving", {}) == 1
    names = ("", "cardgames.v1.CardGamesService", "cardgames.v1.AdminService")
    assert service.seen == (dict.fromkeys(names, health_pb2.HealthCheckResponse.NOT_SERVING), 0)


@pytest.mark.parametrize("failing", [None, "drain", "ports_closed"])
@run
async def test_the_drain_lets_the_ports_go_before_the_store_closes_whatever_fails(failing):
    """GrpcServer.drain (server.py; docs/operations.md, Health, start-up and shutdown): the
    gRPC server stops, then ``ports_closed`` (the metrics endpoint), then the session layer
    closes its store, so a successor waiting for the database finds the ports free. A step
    that fails does not skip the later ones: the port and the store are let go all the same."""
    steps: list[str] = []

    class Recording(ScriptedService):
        async def drain(self) -> None:
            await super().drain()
            if failing == "drain":
                raise RuntimeError("the session layer's drain failed")

        async def close(self) -> None:
            steps.append("store closed")
            await super().close()

    def ports_closed() -> None:
        steps.append("ports closed")
        if failing == "ports_closed":
            raise OSError("the metrics endpoint's close failed")

    async with running(Recording(), drain=False) as srv:
        port = srv.server.port
        if failing is None:
            await srv.server.drain(grace_s=1, ports_closed=ports_closed)
        else:
            with pytest.raises((RuntimeError, OSError)):
                await srv.server.drain(grace_s=1, ports_closed=ports_closed)
        assert steps == ["ports closed", "store closed"]
    with socket.socket() as probe:  # the gRPC port is free again
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))


@run
async def test_a_call_in_flight_when_the_drain_stops_the_server_finishes_within_the_grace():
    """docs/operations.md, Health, start-up and shutdown: the drain stops the gRPC server
    leaving --drain-grace-s to running calls: one still running then (a slow read) is
    answered, not cancelled; the store closes after it."""
    answering = asyncio.Event()

    class Slow(ScriptedService):
        async def get_match(self, match_id):
            self.calls.append(("slow_get_match", match_id))
            await answering.wait()
            return await super().get_match(match_id)

    service = Slow()
    async with running(service, drain=False) as srv:
        call = srv.games.GetMatch(pb.GetMatchRequest(match_id="m1"), timeout=60)
        while ("slow_get_match", "m1") not in service.calls:
            await asyncio.sleep(0.01)
        drain = asyncio.ensure_future(srv.server.drain(grace_s=60))
        while not service.drained:
            await asyncio.sleep(0.01)
        for _ in range(50):  # the drain goes on to stop the server
            await asyncio.sleep(0.01)
        assert not service.closed  # waiting for the call
        answering.set()
        assert (await call).match.match_id == "m1"
        await drain
    assert service.closed


@run
async def test_a_second_drain_does_nothing():
    """GrpcServer.drain is safe to call twice (server.py): the second call, while the first
    runs or after it, neither drains nor closes the session layer again (its store closed
    twice) nor calls ``ports_closed`` again."""

    class Counting(ScriptedService):
        def __init__(self) -> None:
            super().__init__()
            self.drains = self.closes = 0

        async def drain(self) -> None:
            self.drains += 1
            await super().drain()

        async def close(self) -> None:
            self.closes += 1
            await super().close()

    service, ports_closed = Counting(), []
    async with running(service, drain=False) as srv:
        with structlog.testing.capture_logs() as logs:
            await asyncio.gather(*(srv.server.drain(grace_s=1, ports_closed=lambda: ports_closed.append(1))
                                   for _ in range(2)))
            await srv.server.drain(grace_s=1, ports_closed=lambda: ports_closed.append(1))
    assert (service.drains, service.closes, ports_closed) == (1, 1, [1])
    # docs/operations.md, Logs: one draining line with the grace given, one stopped line
    assert [(e["event"], e.get("grace_s")) for e in logs if e["event"] in ("draining", "stopped")] == [
        ("draining", 1), ("stopped", None)]


@run
async def test_a_watch_without_after_seq_asks_for_a_snapshot():
    """card_games.proto, WatchMatchRequest.after_seq: unset is "start with a snapshot of the
    current view", so the session layer is asked from -1 (api.MatchService.watch: a snapshot
    first when after_seq < 0), not after 0, which replays the match from its start; a set 0
    stays 0."""
    service = ScriptedService()
    async with running(service) as srv:
        for request, after in ((pb.WatchMatchRequest(match_id="m1"), -1),
                               (pb.WatchMatchRequest(match_id="m1", after_seq=0), 0)):
            call = srv.games.WatchMatch(request)
            assert (await call.read()).kind == match_pb2.EVENT_KIND_SNAPSHOT
            call.cancel()
            assert [c[2] for c in service.calls if c[0] == "watch"][-1] == after


@run
async def test_stream_metrics_and_drain_closes_streams():
    service = ScriptedService()
    async with running(service, drain=False) as srv:
        method = "/cardgames.v1.CardGamesService/WatchMatch"
        call = srv.games.WatchMatch(pb.WatchMatchRequest(match_id="m1", after_seq=2), metadata=bearer(SEAT_TOKEN))
        assert (await call.read()).kind == match_pb2.EVENT_KIND_SNAPSHOT
        assert ("watch", api.Principal("seat", "m1", 0), 2) in service.calls
        assert srv.metrics.value("cardgames_rpc_in_flight", {"method": method}) == 1
        hc = health_pb2_grpc.HealthStub(srv.channel)
        watch_health = hc.Watch(health_pb2.HealthCheckRequest(service="cardgames.v1.CardGamesService"))
        assert (await watch_health.read()).status == health_pb2.HealthCheckResponse.SERVING
        drain = asyncio.ensure_future(srv.server.drain(grace_s=5))
        assert (await watch_health.read()).status == health_pb2.HealthCheckResponse.NOT_SERVING
        watch_health.cancel()  # else the server waits out the grace period for it
        last = await call.read()  # the session layer ended the stream: MATCH_ENDED then EOF
        assert last.kind == match_pb2.EVENT_KIND_MATCH_ENDED
        assert await call.read() == grpc.aio.EOF
        await drain
        assert service.drained and service.closed
        assert srv.metrics.value("cardgames_rpc_stream_messages_sent_total", {"method": method}) == 2
        assert srv.metrics.value("cardgames_rpc_requests_total", {"method": method, "code": "OK"}) == 1


@run
async def test_tls_only_when_certificate_and_key_are_given(tmp_path):
    import subprocess

    from engine_service.transport.server import GrpcServer, TlsFiles
    from engine_service.observability.metrics import Metrics
    from engine_service.transport.generated import card_games_pb2_grpc

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    server = GrpcServer(ScriptedService(), metrics=Metrics(), admin_token=None, host="127.0.0.1",
                        port=0, tls=TlsFiles(cert, key))
    port = await server.start()
    try:
        creds = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        async with grpc.aio.secure_channel(f"localhost:{port}", creds) as ch:
            games = await card_games_pb2_grpc.CardGamesServiceStub(ch).ListGames(pb.ListGamesRequest())
            assert [g.id for g in games.games] == ["g"]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            err = await expect_error(card_games_pb2_grpc.CardGamesServiceStub(ch).ListGames(
                pb.ListGamesRequest(), timeout=5))
            assert err.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    finally:
        await server.drain(grace_s=1)


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_an_internal_error_logs_no_local_variable_of_its_frames(fmt):
    """An unexpected error is logged with its traceback (``rpc_internal_error``), but not with
    the locals of its frames, which structlog renders by default: the servicer's frame holds
    the caller's bearer token (and other frames requests, client join ids, views). A match
    whose stored log no longer replays did it for every seat-token call (seen on a real
    server: the seat token in the JSON line)."""
    from tests.sessions.helpers import configured_logging

    secret = "seat-token-that-must-never-be-logged-0123456789"

    class Failing(ScriptedService):
        def authenticate(self, match_id, token, *, admin=False):
            if token == secret:
                raise RuntimeError("the stored log does not replay")
            return super().authenticate(match_id, token, admin=admin)

    with configured_logging(fmt, "info") as stream:
        @run
        async def go():
            async with running(Failing()) as srv:
                err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"),
                                                           metadata=bearer(secret)))
                assert err.code == grpc.StatusCode.INTERNAL
                for _ in range(1000):  # the rpc line is written after the answer
                    if '"rpc"' in stream.getvalue() or " rpc " in stream.getvalue():
                        break
                    await asyncio.sleep(0.01)

        go()
    text = stream.getvalue()
    assert "rpc_internal_error" in text and "the stored log does not replay" in text
    assert "_principal" in text  # the traceback is there, with its frames
    assert secret not in text
    if fmt == "json":  # docs/operations.md, Logs: the API's handlers write as cardgames.transport
        line = next(json.loads(x) for x in text.splitlines() if '"rpc_internal_error"' in x)
        assert (line["logger"], line["level"]) == ("cardgames.transport", "error")
