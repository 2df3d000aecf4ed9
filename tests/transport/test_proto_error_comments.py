"""The .proto comments say what the server does: they name the errors of the request fields
that cause them, and what an answer holds where it is not what was sent.

A frontend in Go, Kotlin or C# works from the .proto files (or reflection, which serves them
with their comments): a field whose comment says what it means but not what the server answers
to a bad value leaves the client to find the reason by trial. Each case below provokes one error over a
real channel and checks that the reason the server gave is named in the comment of the field
that caused it (read from the protos with their source info, as any generator sees them).
"""

from __future__ import annotations

import contextlib
import importlib.resources
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
from google.protobuf import descriptor_pb2

from engine_service.observability.metrics import Metrics
from engine_service.sessions.config import SessionConfig
from engine_service.sessions.manager import MatchManager
from engine_service.store import MemoryStore
from engine_service.transport import codegen
from engine_service.transport.generated import admin_pb2, card_games_pb2 as pb, match_pb2

from .harness import ADMIN_TOKEN, bearer, expect_error, run, running

#: DescriptorProto.field, FileDescriptorProto.message_type, .service and .syntax, and
#: ServiceDescriptorProto.method in SourceCodeInfo paths.
_MESSAGE_TYPE, _FIELD, _SERVICE, _METHOD, _SYNTAX = 4, 2, 6, 2, 12


def field_comments(tmp_path: Path) -> dict[str, str]:
    """``{"cardgames.v1.Message.field": its leading comment}`` of every top-level message,
    ``{"cardgames.v1.Service.Method": ...}`` of every method, and ``{"cardgames.v1.<file
    name>": its header}`` (the comment before ``syntax``)."""
    from grpc_tools import protoc

    out = tmp_path / "api.binpb"
    wkt = importlib.resources.files("grpc_tools") / "_proto"
    args = ["grpc_tools.protoc", f"-I{codegen.PROTO_ROOT}", f"-I{wkt}", "--include_source_info",
            f"--descriptor_set_out={out}",
            *(str(p.relative_to(codegen.PROTO_ROOT)) for p in codegen.proto_files())]
    assert protoc.main(args) == 0
    comments = {}
    for file in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        by_path = {tuple(loc.path): loc.leading_comments for loc in file.source_code_info.location}
        for i, service in enumerate(file.service):
            for j, method in enumerate(service.method):
                comments[f"{file.package}.{service.name}.{method.name}"] = " ".join(
                    by_path.get((_SERVICE, i, _METHOD, j), "").split())
        header = next(loc for loc in file.source_code_info.location if list(loc.path) == [_SYNTAX])
        comments[f"{file.package}.{Path(file.name).name}"] = " ".join(
            " ".join([*header.leading_detached_comments, header.leading_comments]).split())
        for i, message in enumerate(file.message_type):
            for j, field in enumerate(message.field):
                name = f"{file.package}.{message.name}.{field.name}"
                comments[name] = " ".join(by_path.get((_MESSAGE_TYPE, i, _FIELD, j), "").split())
    return comments


@contextlib.asynccontextmanager
async def served(**settings: Any) -> AsyncIterator[Any]:
    metrics = Metrics()
    mgr = MatchManager(SessionConfig(db_path="memory:", bot_pace_s=0.0, **settings), store=MemoryStore(),
                       metrics=metrics, create_bot_host=False)
    await mgr.start()
    async with running(mgr, admin_token=ADMIN_TOKEN, metrics=metrics) as srv:
        yield srv


ADMIN = bearer(ADMIN_TOKEN)
OPEN = match_pb2.SeatSpec(open=match_pb2.OpenSeat())
#: (field whose comment must name the reason, the reason, the call: (stub, method, request,
#: metadata), MATCH and the tokens filled in when the cases run: _provoke_every_case).
CASES = [
    ("CreateMatchRequest.game", "MISSING_FIELD", ("games", "CreateMatch", pb.CreateMatchRequest(), None)),
    ("CreateMatchRequest.game", "UNKNOWN_GAME",
     ("games", "CreateMatch", pb.CreateMatchRequest(game="chess"), None)),
    ("CreateMatchRequest.options", "INVALID_OPTIONS",
     ("games", "CreateMatch", pb.CreateMatchRequest(
         game="japanese_joker", options={"target_score": match_pb2.OptionValue(int_value=12)}), None)),
    ("CreateMatchRequest.options", "BAD_OPTION_VALUE",
     ("games", "CreateMatch", pb.CreateMatchRequest(
         game="japanese_joker", options={"target_score": match_pb2.OptionValue()}), None)),
    ("CreateMatchRequest.seats", "BAD_SEATS",
     ("games", "CreateMatch", pb.CreateMatchRequest(game="japanese_joker", seats=[OPEN] * 3), None)),
    ("CreateMatchRequest.seats", "MISSING_FIELD",
     ("games", "CreateMatch", pb.CreateMatchRequest(
         game="japanese_joker", seats=[OPEN, match_pb2.SeatSpec(bot=match_pb2.BotSeat())]), None)),
    ("CreateMatchRequest.seats", "UNKNOWN_BOT",
     ("games", "CreateMatch", pb.CreateMatchRequest(
         game="japanese_joker", seats=[OPEN, match_pb2.SeatSpec(bot=match_pb2.BotSeat(name="nobody"))]),
      None)),
    ("CreateMatchRequest.decks", "ADMIN_TOKEN_REQUIRED",
     ("games", "CreateMatch", pb.CreateMatchRequest(game="japanese_joker", decks=[pb.Deck(cards=["AS"])]),
      None)),
    ("CreateMatchRequest.decks", "NOT_ADMIN",
     ("games", "CreateMatch", pb.CreateMatchRequest(game="japanese_joker", decks=[pb.Deck(cards=["AS"])]),
      "OTHER_TOKEN")),
    ("CreateMatchRequest.decks", "INVALID_DECK",
     ("games", "CreateMatch", pb.CreateMatchRequest(game="japanese_joker", decks=[pb.Deck(cards=["AS"])]),
      ADMIN)),
    ("CreateMatchRequest.first_dealer", "BAD_FIRST_DEALER",
     ("games", "CreateMatch", pb.CreateMatchRequest(game="japanese_joker", first_dealer=2), ADMIN)),
    ("ListBotsRequest.game", "UNKNOWN_GAME", ("games", "ListBots", pb.ListBotsRequest(game="chess"), None)),
    ("ListOpenMatchesRequest.game", "UNKNOWN_GAME",
     ("games", "ListOpenMatches", pb.ListOpenMatchesRequest(game="chess"), None)),
    ("ListOpenMatchesRequest.limit", "BAD_LIMIT",
     ("games", "ListOpenMatches", pb.ListOpenMatchesRequest(limit=-1), None)),
    ("GetMatchRequest.match_id", "MISSING_FIELD", ("games", "GetMatch", pb.GetMatchRequest(), None)),
    ("GetMatchRequest.match_id", "FIELD_TOO_LONG",
     ("games", "GetMatch", pb.GetMatchRequest(match_id="m" * 129), None)),
    ("GetMatchRequest.match_id", "MATCH_NOT_FOUND",
     ("games", "GetMatch", pb.GetMatchRequest(match_id="nosuchmatch"), None)),
    ("JoinMatchRequest.match_id", "MATCH_NOT_FOUND",
     ("games", "JoinMatch", pb.JoinMatchRequest(match_id="nosuchmatch"), None)),
    ("JoinMatchRequest.seat", "BAD_SEAT",
     ("games", "JoinMatch", pb.JoinMatchRequest(match_id="MATCH", seat=2), None)),
    ("JoinMatchRequest.seat", "SEAT_TAKEN",
     ("games", "JoinMatch", pb.JoinMatchRequest(match_id="MATCH", seat=0), None)),
    ("GetViewRequest.match_id", "MATCH_NOT_FOUND",
     ("games", "GetView", pb.GetViewRequest(match_id="nosuchmatch"), None)),
    ("SubmitActionRequest.match_id", "MISSING_FIELD",
     ("games", "SubmitAction", pb.SubmitActionRequest(action="pass"), "SEAT_TOKEN")),
    ("SubmitActionRequest.action", "MISSING_FIELD",
     ("games", "SubmitAction", pb.SubmitActionRequest(match_id="MATCH"), "SEAT_TOKEN")),
    ("SubmitActionRequest.action", "FIELD_TOO_LONG",
     ("games", "SubmitAction", pb.SubmitActionRequest(match_id="MATCH", action="p" * 65), "SEAT_TOKEN")),
    ("SubmitActionRequest.action", "MALFORMED_ACTION",
     ("games", "SubmitAction", pb.SubmitActionRequest(match_id="MATCH", action="fold"), "TO_ACT_TOKEN")),
    ("SubmitActionRequest.action", "NOT_YOUR_TURN",
     ("games", "SubmitAction", pb.SubmitActionRequest(match_id="MATCH", action="trump:S"), "SEAT_TOKEN")),
    ("SubmitActionRequest.action", "MATCH_WAITING",
     ("games", "SubmitAction", pb.SubmitActionRequest(match_id="WAITING", action="pass"), "WAITING_TOKEN")),
    ("WatchMatchRequest.match_id", "MATCH_NOT_FOUND",
     ("games", "WatchMatch", pb.WatchMatchRequest(match_id="nosuchmatch"), None)),
    ("LeaveMatchRequest.match_id", "MISSING_FIELD", ("games", "LeaveMatch", pb.LeaveMatchRequest(), None)),
    ("RevealDealsRequest.match_id", "MATCH_NOT_FOUND",
     ("games", "RevealDeals", pb.RevealDealsRequest(match_id="nosuchmatch"), None)),
    ("ListMatchesRequest.status", "BAD_STATUS",
     ("admin", "ListMatches", admin_pb2.ListMatchesRequest(status=99), ADMIN)),
    ("ListMatchesRequest.game", "UNKNOWN_GAME",
     ("admin", "ListMatches", admin_pb2.ListMatchesRequest(game="chess"), ADMIN)),
    ("ListMatchesRequest.limit", "BAD_LIMIT",
     ("admin", "ListMatches", admin_pb2.ListMatchesRequest(limit=-1), ADMIN)),
    ("InspectMatchRequest.match_id", "MATCH_NOT_FOUND",
     ("admin", "InspectMatch", admin_pb2.InspectMatchRequest(match_id="nosuchmatch"), ADMIN)),
    ("TerminateMatchRequest.match_id", "MISSING_FIELD",
     ("admin", "TerminateMatch", admin_pb2.TerminateMatchRequest(), ADMIN)),
    ("ExportTranscriptRequest.match_id", "MATCH_NOT_FOUND",
     ("admin", "ExportTranscript", admin_pb2.ExportTranscriptRequest(match_id="nosuchmatch"), ADMIN)),
    ("ReissueSeatTokenRequest.match_id", "MATCH_NOT_FOUND",
     ("admin", "ReissueSeatToken", admin_pb2.ReissueSeatTokenRequest(match_id="nosuchmatch"), ADMIN)),
    ("CardGamesService.GetView", "SPECTATORS_NOT_ALLOWED",
     ("games", "GetView", pb.GetViewRequest(match_id="CLOSED"), None)),
    ("CardGamesService.GetView", "WRONG_MATCH", ("games", "GetView", pb.GetViewRequest(match_id="MATCH"), "OTHER_TOKEN")),
    ("CardGamesService.GetView", "MISSING_OR_BAD_TOKEN",
     ("games", "GetView", pb.GetViewRequest(match_id="MATCH"), (("authorization", "Bearer nosuchtoken"),))),
    ("CardGamesService.WatchMatch", "SPECTATORS_NOT_ALLOWED",
     ("games", "WatchMatch", pb.WatchMatchRequest(match_id="CLOSED"), None)),
    ("CardGamesService.SubmitAction", "NOT_A_SEAT",
     ("games", "SubmitAction", pb.SubmitActionRequest(match_id="MATCH", action="pass"), ADMIN)),
    ("admin.proto", "ADMIN_TOKEN_REQUIRED", ("admin", "ListMatches", admin_pb2.ListMatchesRequest(), None)),
    ("admin.proto", "NOT_ADMIN", ("admin", "ListMatches", admin_pb2.ListMatchesRequest(), "SEAT_TOKEN")),
    ("admin.proto", "MALFORMED_TOKEN",
     ("admin", "ListMatches", admin_pb2.ListMatchesRequest(), (("authorization", "Basic x"),))),
    ("ReissueSeatTokenRequest.seat", "BAD_SEAT",
     ("admin", "ReissueSeatToken", admin_pb2.ReissueSeatTokenRequest(match_id="MATCH", seat=5), ADMIN)),
]


@pytest.fixture(scope="module")
def comments(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return field_comments(tmp_path_factory.mktemp("descriptors"))


@run
async def _provoke_every_case() -> dict[tuple[str, str], str]:
    """The reason each case gets; MATCH is a started Japanese Joker match whose seat 1 is to
    act first (the declarer chooses the trump), SEAT_TOKEN seat 0's token, TO_ACT_TOKEN seat
    1's, OTHER_TOKEN (also WAITING_TOKEN) seat 0's of WAITING, a match still waiting for its
    second player; CLOSED a match without spectators."""
    got = {}
    async with served() as srv:
        created = await srv.games.CreateMatch(pb.CreateMatchRequest(game="japanese_joker", first_dealer=1),
                                              metadata=ADMIN)
        match_id = created.match.match_id
        seat_token = (await srv.games.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=0))).seat_token
        to_act_token = (await srv.games.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=1))).seat_token
        other = await srv.games.CreateMatch(pb.CreateMatchRequest(game="japanese_joker"))
        other_token = (await srv.games.JoinMatch(pb.JoinMatchRequest(match_id=other.match.match_id))).seat_token
        closed = await srv.games.CreateMatch(pb.CreateMatchRequest(game="japanese_joker", spectators_allowed=False))
        tokens = {"SEAT_TOKEN": bearer(seat_token), "TO_ACT_TOKEN": bearer(to_act_token),
                  "OTHER_TOKEN": bearer(other_token), "WAITING_TOKEN": bearer(other_token)}
        for field, reason, (stub, method, request, md) in CASES:
            request = type(request).FromString(request.SerializeToString())
            if getattr(request, "match_id", None) == "MATCH":
                request.match_id = match_id
            elif getattr(request, "match_id", None) == "WAITING":  # one seat of two taken
                request.match_id = other.match.match_id
            elif getattr(request, "match_id", None) == "CLOSED":
                request.match_id = closed.match.match_id
            md = tokens.get(md, md) if isinstance(md, str) else md
            call = getattr(getattr(srv, stub), method)(request, metadata=md)
            got[(field, reason)] = (await expect_error(call)).reason
    return got


def test_each_provoked_reason_is_named_in_its_fields_comment(comments):
    got = _provoke_every_case()
    for field, reason, _ in CASES:
        assert got[(field, reason)] == reason, (field, reason, got[(field, reason)])
        assert reason in comments[f"cardgames.v1.{field}"], \
            f"cardgames.v1.{field}'s comment does not name {reason}: {comments[f'cardgames.v1.{field}']!r}"


def test_the_comments_are_read_with_their_fields(comments):
    """The reader finds the comments it checks (a wrong source-info path would find none)."""
    assert comments["cardgames.v1.SubmitActionRequest.expected_seq"].startswith("The seq of the view")
    assert all(f"cardgames.v1.{field}" in comments for field, _, _ in CASES)


def test_the_recorded_action_says_it_may_not_be_the_one_sent(comments):
    """SubmitActionResponse.action said "The action applied." while the server answers (and
    publishes) a "declare" that states nothing as "conceal" (tests/sessions/
    test_secret_choices.py): a client comparing the answer with what it sent took it for a
    bug. Both action fields say so."""
    for field in ("SubmitActionResponse.action", "WatchMatchResponse.action"):
        comment = comments[f"cardgames.v1.{field}"]
        assert "records" in comment and '"conceal"' in comment, (field, comment)


def test_the_player_apis_header_names_every_detail_an_error_carries(comments):
    """card_games.proto's header told of ErrorInfo and the View of STALE_SEQUENCE only: a
    client reading the protos did not learn of the RetryInfo of RATE_LIMITED (the delay to
    wait) nor of the RequestInfo every error ends with (the id to quote in a report)."""
    header = comments["cardgames.v1.card_games.proto"]
    for detail in ("google.rpc.ErrorInfo", "View", "google.rpc.RetryInfo", "google.rpc.RequestInfo"):
        assert detail in header, detail


@run
async def _a_create_on_a_full_server() -> str:
    async with served(max_waiting_matches=1) as srv:
        await srv.games.CreateMatch(pb.CreateMatchRequest(game="japanese_joker"))
        return (await expect_error(srv.games.CreateMatch(pb.CreateMatchRequest(game="japanese_joker")))).reason


def test_a_full_servers_refusal_is_named_in_create_matchs_comment(comments):
    """CreateMatch's comment did not say how a full server refuses it (nor what a store
    failure means for a retry)."""
    reason = _a_create_on_a_full_server()
    assert reason == "MAX_WAITING_MATCHES"
    assert reason in comments["cardgames.v1.CardGamesService.CreateMatch"]
    assert "STORE_UNAVAILABLE" in comments["cardgames.v1.CardGamesService.CreateMatch"]
