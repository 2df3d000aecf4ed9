"""Request-rate limits over a real channel (engine_service/transport/server.py
RateLimitInterceptor): the call beyond a seat token's burst is RESOURCE_EXHAUSTED with reason
RATE_LIMITED and a RetryInfo, applies nothing, and succeeds once the announced delay has
passed; a peer limit throttles CreateMatch and every call without a seat token (a made-up
token included) but not seats, the admin token, health or reflection; refusals are counted on
the metrics endpoint and logged once per run, without tokens; limits are off by default; the
settings parse from flags and CARDGAMES_* variables."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import urllib.request
from typing import Any
from unittest import mock

import grpc
import pytest
import structlog
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from prometheus_client import start_http_server

from engine_service import settings as S
from engine_service.observability.metrics import Metrics
from engine_service.sessions.config import SessionConfig
from engine_service.sessions.manager import MatchManager
from engine_service.store import MemoryStore
from engine_service.transport import server as server_module
from engine_service.transport.generated import admin_pb2, card_games_pb2 as pb
from engine_service.transport.ratelimit import Rate, RateLimits, parse_networks

from .harness import ADMIN_TOKEN, bearer, error_of, expect_error, expect_rpc_error, run, running
from .players import create_open_match
from .test_edge import SEAT_TOKEN, ScriptedService, rpc_lines_logged

GAMES = "/cardgames.v1.CardGamesService/"


def limited(service: Any, rate_limits: RateLimits, metrics: Metrics | None = None) -> Any:
    """harness.running, with request-rate limits."""
    return running(service, metrics=metrics, rate_limits=rate_limits)


async def refusal(call: Any) -> tuple[Any, float]:
    """The error of a call that must be rate-limited, and its RetryInfo delay in seconds."""
    exc = await expect_rpc_error(call)
    err = error_of(exc)
    raw = next(v for k, v in exc.trailing_metadata() if k == "grpc-status-details-bin")
    retry = [d for d in status_pb2.Status.FromString(raw).details
             if d.Is(error_details_pb2.RetryInfo.DESCRIPTOR)]
    assert err.code == grpc.StatusCode.RESOURCE_EXHAUSTED, err
    assert (err.reason, err.domain) == ("RATE_LIMITED", "cardgames.v1"), err
    assert len(retry) == 1, "a RATE_LIMITED status carries one RetryInfo"
    info = error_details_pb2.RetryInfo()
    retry[0].Unpack(info)
    return err, info.retry_delay.ToMilliseconds() / 1000


def _limited_count(metrics: Metrics, method: str, key_kind: str) -> float:
    return metrics.value("cardgames_rate_limited_total", {"method": GAMES + method, "key_kind": key_kind})


# ---- seat tokens -----------------------------------------------------------------------------

@run
async def test_the_call_beyond_a_seat_burst_is_refused_applies_nothing_and_succeeds_after_the_delay():
    """On the buckets' own clock, which only the test moves: a burst spent over a loaded
    machine's stall of a second would have had a token back, the call beyond it applied. The
    other tests here keep the real clock (and a refill slower than any stall)."""
    metrics = Metrics()
    mgr = MatchManager(SessionConfig(db_path="memory:"), store=MemoryStore(), metrics=metrics,
                       create_bot_host=False)
    await mgr.start()
    now = [1000.0]
    on_the_tests_clock = functools.partial(server_module.RateLimitInterceptor, clock=lambda: now[0])
    with mock.patch.object(server_module, "RateLimitInterceptor", on_the_tests_clock):
        await _seat_burst(mgr, metrics, now)


async def _seat_burst(mgr: MatchManager, metrics: Metrics, now: list[float]) -> None:
    async with limited(mgr, RateLimits(seat=Rate(per_s=1, burst=3)), metrics) as srv:
        stub = srv.games
        match_id, tokens = await create_open_match(stub, "klaberjass")  # peer calls: no limit
        public = (await stub.GetView(pb.GetViewRequest(match_id=match_id))).view  # a spectator
        seat, seq = public.to_act, public.seq
        token = tokens[seat]
        # three calls of the burst: a view, then a bot's loop of refused actions
        view = (await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(token))).view
        legal = view.legal_actions[0].notation
        for _ in range(2):
            err = await expect_error(stub.SubmitAction(
                pb.SubmitActionRequest(match_id=match_id, action="play:1C"), metadata=bearer(token)))
            assert err.code not in (grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED)
        request = pb.SubmitActionRequest(match_id=match_id, action=legal, expected_seq=seq,
                                         client_action_id="after-the-burst")
        err, delay = await refusal(stub.SubmitAction(request, metadata=bearer(token)))
        assert err.metadata == {"key_kind": "seat"}
        assert delay == 1.0  # a whole token's refill: no time has passed on the buckets' clock
        # nothing was applied: the match did not move, no action was counted
        assert (await stub.GetMatch(pb.GetMatchRequest(match_id=match_id))).match.seq == seq
        assert metrics.value("cardgames_actions_total",
                             {"game": "klaberjass", "by": "player", "result": "accepted"}) == 0
        assert _limited_count(metrics, "SubmitAction", "seat") == 1
        # another seat's token has its own bucket
        other = tokens[(seat + 1) % len(tokens)]
        await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(other))
        # a moment before the announced delay it is still refused; after it, it goes through
        now[0] += delay - 0.25  # (sums exact in binary)
        await refusal(stub.SubmitAction(request, metadata=bearer(token)))
        now[0] += 0.25
        res = await stub.SubmitAction(request, metadata=bearer(token))
        assert res.seq == seq + 1 and not res.duplicate and res.action.notation == legal
        assert (await stub.GetMatch(pb.GetMatchRequest(match_id=match_id))).match.seq == seq + 1


@run
async def test_a_seat_refusal_names_the_match_and_seat_in_its_lines():
    """docs/operations.md, Request-rate limits: a refusal has its rpc line, and the first of a
    run logs a rate_limited warning with the match and seat for a seat bucket (never the
    token): both name them although the call never reached the servicer that would."""
    from engine_service.sessions.tokens import token_hash
    from tests.sessions.helpers import capture_logs_with_context

    service = ScriptedService()
    # a token every 20 s: the second call is refused over any stall of a loaded machine
    async with limited(service, RateLimits(seat=Rate(per_s=0.05, burst=1))) as srv:
        with capture_logs_with_context() as logs:
            await srv.games.GetView(pb.GetViewRequest(match_id="m1"), metadata=bearer(SEAT_TOKEN))
            await refusal(srv.games.GetView(pb.GetViewRequest(match_id="m1"), metadata=bearer(SEAT_TOKEN)))
            await rpc_lines_logged(logs, 2)
    (warning,) = [e for e in logs if e["event"] == "rate_limited"]
    refused = [e for e in logs if e["event"] == "rpc" and e["code"] == "RESOURCE_EXHAUSTED"]
    assert (warning["key_kind"], warning["match_id"], warning["seat"]) == ("seat", "m1", 0)
    assert 10_000 < warning["retry_after_ms"] <= 20_000  # milliseconds: the token 20 s away
    assert [(e["match_id"], e["seat"]) for e in refused] == [("m1", 0)]
    assert SEAT_TOKEN not in json.dumps(logs, default=str)
    # the line's fields are the documented ones (the rpc's context bound around it): not the
    # bucket's key, the token's hash, which the database keeps as the seat's credential
    assert set(warning) - {"event", "log_level", "rpc", "request_id"} == {
        "method", "key_kind", "retry_after_ms", "match_id", "seat"}, warning
    assert token_hash(SEAT_TOKEN) not in json.dumps(logs, default=str)


@run
async def test_a_malformed_header_under_a_limit_is_still_malformed_token():
    """docs/api.md, Connecting (authentication): a malformed authorization header is
    UNAUTHENTICATED / MALFORMED_TOKEN. With a limit on, the interceptor reads the header
    first: it counts the call as the peer's and leaves the refusal to the servicer."""
    async with limited(ScriptedService(), RateLimits(seat=Rate(per_s=5, burst=5), peer=Rate(per_s=5, burst=5))) as srv:
        err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"),
                                                   metadata=(("authorization", "Bearer a b"),)))
    assert (err.code, err.reason) == (grpc.StatusCode.UNAUTHENTICATED, "MALFORMED_TOKEN")
    # the peer's call indeed (docs/operations.md, Request-rate limits: a call with a bad token):
    # it spends the peer's bucket, and the refusal, as every error, names the call's
    # x-request-id (docs/api.md, Errors)
    async with limited(ScriptedService(), RateLimits(peer=Rate(per_s=0.02, burst=1))) as srv:
        malformed = (("authorization", "Bearer a b"),)
        await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"), metadata=malformed))
        err, _ = await refusal(srv.games.GetView(pb.GetViewRequest(match_id="m1"),
                                                 metadata=(*malformed, ("x-request-id", "refused-1"))))
    assert err.request_id == "refused-1"


@run
async def test_a_fault_authenticating_a_seat_under_a_limit_is_still_internal():
    """docs/api.md, Errors: a server fault is INTERNAL, logged with details on the server. With
    a seat limit on, the interceptor authenticates the token first: an unexpected error there
    (a match whose stored log no longer replays, test_edge) escaped it, and the client got
    UNKNOWN with the exception's own message, and no rpc_internal_error line was written."""

    class Failing(ScriptedService):
        def authenticate(self, match_id, token, *, admin=False):
            if token == SEAT_TOKEN:
                raise RuntimeError("the stored log does not replay")
            return super().authenticate(match_id, token, admin=admin)

    async with limited(Failing(), RateLimits(seat=Rate(per_s=5, burst=5))) as srv:
        with structlog.testing.capture_logs() as logs:
            err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"),
                                                       metadata=bearer(SEAT_TOKEN)))
            await rpc_lines_logged(logs, 1)
    assert (err.code, err.reason) == (grpc.StatusCode.INTERNAL, "INTERNAL")
    assert "does not replay" not in err.message
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["rpc_internal_error"]


@run
async def test_a_method_the_server_does_not_have_is_unimplemented_under_a_limit():
    """docs/api.md, Errors (refusals from gRPC itself): a method the server does not have is
    UNIMPLEMENTED, one of the API's services named or not; the limits' interceptor passes it
    by (nothing to wrap)."""
    async with limited(ScriptedService(), RateLimits(seat=Rate(per_s=5, burst=5), peer=Rate(per_s=5, burst=5))) as srv:
        for method in (GAMES + "NoSuchMethod", "/no.such.v1.Service/Call"):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await srv.channel.unary_unary(method)(b"", timeout=30)
            assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED, method


@run
async def test_watch_opens_count_and_an_open_stream_is_not_cut():
    service = ScriptedService()
    # a token every 20 s: a loaded machine's stall between the two opens still leaves the
    # delay well above the half of it checked (at 2 s, a 1 s stall did not)
    async with limited(service, RateLimits(seat=Rate(per_s=0.05, burst=1))) as srv:
        first = srv.games.WatchMatch(pb.WatchMatchRequest(match_id="m1"), metadata=bearer(SEAT_TOKEN))
        await first.read()  # the snapshot
        err, delay = await refusal(srv.games.WatchMatch(pb.WatchMatchRequest(match_id="m1"),
                                                        metadata=bearer(SEAT_TOKEN)))
        assert 10.0 < delay <= 20.0
        assert sum(c[0] == "watch" for c in service.calls) == 1  # the second never opened
        service.release.set()  # the open stream carries on: messages are not calls
        assert (await first.read()).seq == 3
        assert await first.read() == grpc.aio.EOF
        assert _limited_count(srv.metrics, "WatchMatch", "seat") == 1


# ---- peers -----------------------------------------------------------------------------------

@run
async def test_a_peer_limit_throttles_calls_without_a_seat_token_only():
    service = ScriptedService()
    # a token every 50 s: the refusals below hold, and the delay stays well above 40 s, over
    # any stall of a loaded machine (at 5 s, a 1 s stall failed the bound)
    async with limited(service, RateLimits(peer=Rate(per_s=0.02, burst=2))) as srv:
        games = srv.games
        with structlog.testing.capture_logs() as logs:
            for _ in range(2):
                await games.CreateMatch(pb.CreateMatchRequest(game="g"))
            err, delay = await refusal(games.CreateMatch(pb.CreateMatchRequest(game="g")))
            assert err.metadata == {"key_kind": "peer"} and 40.0 < delay <= 50.0
            assert sum(c[0] == "create_match" for c in service.calls) == 2  # never reached
            # every call of this address without a seat token shares the bucket, and a
            # made-up token buys no fresh one
            await refusal(games.ListGames(pb.ListGamesRequest()))
            await refusal(games.GetView(pb.GetViewRequest(match_id="m1"), metadata=bearer("made-up")))
            await refusal(games.WatchMatch(pb.WatchMatchRequest(match_id="m1")))  # a spectator
            await refusal(srv.admin.ListMatches(admin_pb2.ListMatchesRequest(),
                                                metadata=bearer("guessing-the-admin-token")))
            await rpc_lines_logged(logs, 7)
        # a seat's calls are its token's, not its address's
        for _ in range(5):
            await games.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="play:AS"),
                                     metadata=bearer(SEAT_TOKEN))
            await games.GetView(pb.GetViewRequest(match_id="m1"), metadata=bearer(SEAT_TOKEN))
        # the admin token, health and reflection are never limited
        for _ in range(5):
            await games.CreateMatch(pb.CreateMatchRequest(game="g"), metadata=bearer(ADMIN_TOKEN))
            await srv.admin.ListMatches(admin_pb2.ListMatchesRequest(), metadata=bearer(ADMIN_TOKEN))
            await health_pb2_grpc.HealthStub(srv.channel).Check(health_pb2.HealthCheckRequest())
        refl = reflection_pb2_grpc.ServerReflectionStub(srv.channel)
        answers = [a async for a in refl.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]))]
        assert answers[0].list_services_response.service

        m = srv.metrics
        assert _limited_count(m, "CreateMatch", "peer") == 1
        assert _limited_count(m, "ListGames", "peer") == 1
        assert _limited_count(m, "GetView", "peer") == 1
        assert m.value("cardgames_rate_limited_total", {"method": "/cardgames.v1.AdminService/ListMatches",
                                                         "key_kind": "peer"}) == 1
        assert m.value("cardgames_rpc_requests_total",
                       {"method": GAMES + "CreateMatch", "code": "RESOURCE_EXHAUSTED"}) == 1

        # one warning for the run of refusals, then the RPC lines say the rest; no token
        warnings = [e for e in logs if e["event"] == "rate_limited"]
        assert len(warnings) == 1
        assert warnings[0]["key_kind"] == "peer" and warnings[0]["peer"] == "127.0.0.1"
        assert warnings[0]["method"] == GAMES + "CreateMatch" and warnings[0]["log_level"] == "warning"
        limited_lines = [e for e in logs if e["event"] == "rpc" and e["code"] == "RESOURCE_EXHAUSTED"]
        assert len(limited_lines) == 5 and {e["reason"] for e in limited_lines} == {"RATE_LIMITED"}
        text = json.dumps(logs, default=str)
        assert "made-up" not in text and "guessing-the-admin-token" not in text

        # and the counter is on the metrics endpoint
        http, thread = start_http_server(0, addr="127.0.0.1", registry=m.registry)
        try:
            url = f"http://127.0.0.1:{http.server_port}/metrics"
            body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=30).read().decode())
        finally:
            http.shutdown()
            thread.join(5)
        assert ('cardgames_rate_limited_total{key_kind="peer",method="/cardgames.v1.CardGamesService/'
                'CreateMatch"} 1.0') in body


@run
async def test_a_seat_limit_alone_leaves_peers_unlimited_and_a_seat_alone_limited():
    service = ScriptedService()
    async with limited(service, RateLimits(seat=Rate(per_s=0.2, burst=1))) as srv:
        for _ in range(20):
            await srv.games.CreateMatch(pb.CreateMatchRequest(game="g"))
            await srv.games.GetView(pb.GetViewRequest(match_id="m1"))  # a spectator
        await srv.games.LeaveMatch(pb.LeaveMatchRequest(match_id="m1"), metadata=bearer(SEAT_TOKEN))
        await refusal(srv.games.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="play:AS"),
                                             metadata=bearer(SEAT_TOKEN)))
        assert not [c for c in service.calls if c[0] == "submit_action"]
        # a token of another match is no seat of this one: it is the (unlimited) peer's call,
        # refused by the session layer as before
        err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id="m1"),
                                                   metadata=bearer("seat-token-of-another-match")))
        assert err.reason == "WRONG_MATCH"


@run
async def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_bucket():
    """Behind a proxy (the gRPC-web proxy of deploy/envoy) every call comes from the proxy's
    address. Trusted (``trusted_proxies``), the address it appended to x-forwarded-for is the
    client's bucket; what a client wrote to the header itself (to the left) is not read; a
    connection that is not a trusted proxy has its header ignored, so sending one picks no
    bucket."""
    def forwarded(*hops: str) -> tuple[tuple[str, str], ...]:
        return (("x-forwarded-for", ", ".join(hops)),)

    service = ScriptedService()
    proxy = RateLimits(peer=Rate(per_s=0.2, burst=1), trusted_proxies=parse_networks("127.0.0.0/8"))
    async with limited(service, proxy) as srv:
        games = srv.games
        with structlog.testing.capture_logs() as logs:
            await games.ListGames(pb.ListGamesRequest(), metadata=forwarded("203.0.113.7"))
            await refusal(games.ListGames(pb.ListGamesRequest(), metadata=forwarded("203.0.113.7")))
            # another browser behind the same proxy: its own bucket
            await games.ListGames(pb.ListGamesRequest(), metadata=forwarded("198.51.100.2"))
            # a client's own header entries, left of the proxy's, pick nothing
            await refusal(games.ListGames(pb.ListGamesRequest(),
                                          metadata=forwarded("192.0.2.99", "203.0.113.7")))
            # no header: the proxy's own address (its bucket is still full)
            await games.ListGames(pb.ListGamesRequest())
            await refusal(games.ListGames(pb.ListGamesRequest()))
        warnings = [e["peer"] for e in logs if e["event"] == "rate_limited"]
        assert warnings == ["203.0.113.7", "127.0.0.1"]

    untrusted = RateLimits(peer=Rate(per_s=0.2, burst=1))
    async with limited(service, untrusted) as srv:
        await srv.games.ListGames(pb.ListGamesRequest(), metadata=forwarded("203.0.113.7"))
        await refusal(srv.games.ListGames(pb.ListGamesRequest(), metadata=forwarded("198.51.100.2")))


# ---- off by default --------------------------------------------------------------------------

@run
async def test_limits_are_off_by_default():
    """The benchmarks and the test suite play at machine speed: nothing is ever refused."""
    assert S.Settings().rate_limit_seat_per_s == 0 and S.Settings().rate_limit_peer_per_s == 0
    service = ScriptedService()
    async with running(service) as srv:
        assert not srv.server.rate_limits.enabled
        for _ in range(100):  # any refusal raises (three at a time: streams per connection)
            await asyncio.gather(
                srv.games.CreateMatch(pb.CreateMatchRequest(game="g")),
                srv.games.ListGames(pb.ListGamesRequest()),
                srv.games.SubmitAction(pb.SubmitActionRequest(match_id="m1", action="play:AS"),
                                       metadata=bearer(SEAT_TOKEN)))
        families = [f for f in srv.metrics.registry.collect() if f.name == "cardgames_rate_limited"]
        assert families and not families[0].samples


# ---- settings --------------------------------------------------------------------------------

def _parse(argv: list[str], env: dict[str, str]) -> S.Settings:
    parser = argparse.ArgumentParser()
    S.add_arguments(parser, env)
    return S.from_namespace(parser.parse_args(argv))


def _limits(s: S.Settings) -> tuple:
    return (s.rate_limit_seat_per_s, s.rate_limit_seat_burst, s.rate_limit_peer_per_s,
            s.rate_limit_peer_burst)


def test_rate_limit_settings_from_flags_and_environment():
    assert _limits(_parse([], {})) == (0.0, 0, 0.0, 0)
    env = {"CARDGAMES_RATE_LIMIT_SEAT_PER_S": "20", "CARDGAMES_RATE_LIMIT_SEAT_BURST": "40",
           "CARDGAMES_RATE_LIMIT_PEER_PER_S": "10", "CARDGAMES_RATE_LIMIT_PEER_BURST": "50"}
    assert _limits(_parse([], env)) == (20.0, 40, 10.0, 50)
    s = _parse(["--rate-limit-seat-per-s", "2.5", "--rate-limit-peer-burst", "7"], env)
    assert _limits(s) == (2.5, 40, 10.0, 7)
    for name, bad in (("RATE_LIMIT_SEAT_PER_S", "-1"), ("RATE_LIMIT_PEER_PER_S", "inf"),
                      ("RATE_LIMIT_PEER_PER_S", "nan"), ("RATE_LIMIT_SEAT_BURST", "1.5"),
                      ("RATE_LIMIT_PEER_BURST", "-3")):
        with pytest.raises(ValueError, match="CARDGAMES_" + name):
            _parse([], {"CARDGAMES_" + name: bad})
    with pytest.raises(SystemExit):
        _parse(["--rate-limit-seat-per-s", "-5"], {})


def test_trusted_proxies_from_flags_and_environment():
    assert _parse([], {}).trusted_proxies == ()
    env = {"CARDGAMES_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.7,fd00::/8"}
    assert [str(n) for n in _parse([], env).trusted_proxies] == ["10.0.0.0/8", "192.0.2.7/32", "fd00::/8"]
    assert [str(n) for n in _parse(["--trusted-proxies", "172.30.0.10"], env).trusted_proxies] == [
        "172.30.0.10/32"]
    with pytest.raises(ValueError, match="CARDGAMES_TRUSTED_PROXIES.*'proxy.internal'"):
        _parse([], {"CARDGAMES_TRUSTED_PROXIES": "10.0.0.0/8,proxy.internal"})
    with pytest.raises(SystemExit):
        _parse(["--trusted-proxies", "10.0.0.0/33"], {})


def test_serve_help_lists_the_rate_limits():
    from engine_service.serve_cli import add_parser

    parser = argparse.ArgumentParser(prog="engine_service")
    add_parser(parser.add_subparsers())
    serve = parser._subparsers._group_actions[0].choices["serve"]
    text = " ".join(serve.format_help().split())
    for flag in ("--rate-limit-seat-per-s", "--rate-limit-seat-burst", "--rate-limit-peer-per-s",
                 "--rate-limit-peer-burst", "--trusted-proxies"):
        assert flag in text
        assert "CARDGAMES_" + flag[2:].upper().replace("-", "_") in text


# ---- series at 0 -----------------------------------------------------------------------------

@run
async def test_a_peer_limit_is_declared_for_the_api_alone_and_logged_at_start():
    """docs/operations.md, Request-rate limits: health and reflection are never limited, so a
    peer limit declares ``rate_limited`` series (peer) for every API method and none for the
    health service; the settings in force are in the grpc_server_started line
    (``rate_limit_seat``, ``rate_limit_peer``, ``trusted_proxies``)."""
    metrics = Metrics()
    limits = RateLimits(peer=Rate(per_s=5, burst=6), trusted_proxies=parse_networks("10.0.0.0/8"))
    with structlog.testing.capture_logs() as logs:
        async with limited(ScriptedService(), limits, metrics):
            pass
    (started,) = [e for e in logs if e["event"] == "grpc_server_started"]
    assert (started["rate_limit_seat"], started["rate_limit_peer"], started["trusted_proxies"]) == (
        "off", "5/s burst 6", ["10.0.0.0/8"])
    with structlog.testing.capture_logs() as logs:  # and a seat limit alone, its own figures
        async with limited(ScriptedService(), RateLimits(seat=Rate(per_s=2, burst=3))):
            pass
    (started,) = [e for e in logs if e["event"] == "grpc_server_started"]
    assert (started["rate_limit_seat"], started["rate_limit_peer"], started["trusted_proxies"]) == (
        "2/s burst 3", "off", [])

    def sample(method: str) -> float | None:
        return metrics.registry.get_sample_value("cardgames_rate_limited_total",
                                                 {"method": method, "key_kind": "peer"})

    assert sample(GAMES + "ListGames") == 0 and sample("/cardgames.v1.AdminService/ListMatches") == 0
    # a seat method too: without a seat token (a spectator's GetView) it is the peer's call
    assert sample(GAMES + "GetView") == 0 and sample(GAMES + "WatchMatch") == 0
    for name in ("Check", "Watch", "List"):
        assert sample(f"/grpc.health.v1.Health/{name}") is None, name


@run
async def test_every_rpc_series_exists_at_0_once_the_server_has_started():
    """As for the session's closed label sets (tests/sessions/test_observability.py): an RPC
    series that only appeared at its first use had no earlier sample, so ``increase()`` or a
    ratio over it missed the first refusal of a method. The server creates, for every API and
    health method, ``rpc_requests`` for every status code, the duration histogram and the
    in-flight gauge; ``rpc_stream_messages`` for WatchMatch only; ``rate_limited`` for the
    buckets that are on. The first real call then counts on the declared series."""
    from engine_service.observability import metrics as M

    metrics = Metrics()
    async with limited(ScriptedService(), RateLimits(seat=Rate(per_s=5, burst=5)), metrics) as srv:
        methods = ([GAMES + m.name for m in pb.DESCRIPTOR.services_by_name["CardGamesService"].methods]
                   + ["/cardgames.v1.AdminService/" + m.name
                      for m in admin_pb2.DESCRIPTOR.services_by_name["AdminService"].methods]
                   + ["/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"])
        assert GAMES + "WatchMatch" in methods and len(methods) > 15

        def sample(name: str, **labels: str) -> float | None:
            return metrics.registry.get_sample_value(name, labels)

        for method in methods:
            for code in M.RPC_CODES:
                assert sample("cardgames_rpc_requests_total", method=method, code=code) == 0, (method, code)
            assert sample("cardgames_rpc_duration_seconds_count", method=method) == 0, method
            assert sample("cardgames_rpc_in_flight", method=method) == 0, method
            streams = method == GAMES + "WatchMatch"
            assert (sample("cardgames_rpc_stream_messages_sent_total", method=method) == 0) is streams, method
            seat = method.rsplit("/", 1)[1] in ("SubmitAction", "GetView", "LeaveMatch", "WatchMatch")
            # sample(), not metrics.value(): value() reads an absent series as 0
            assert sample("cardgames_rate_limited_total", method=method, key_kind="seat") == (0 if seat else None)
            assert sample("cardgames_rate_limited_total", method=method, key_kind="peer") is None  # off
        assert len(grpc.StatusCode) == len(M.RPC_CODES)
        assert {c.name for c in grpc.StatusCode} == set(M.RPC_CODES)

        await health_pb2_grpc.HealthStub(srv.channel).Check(health_pb2.HealthCheckRequest())
        assert sample("cardgames_rpc_requests_total", method="/grpc.health.v1.Health/Check", code="OK") == 1
        await srv.games.ListGames(pb.ListGamesRequest())
        assert sample("cardgames_rpc_requests_total", method=GAMES + "ListGames", code="OK") == 1
        assert sample("cardgames_rpc_stream_messages_sent_total", method=GAMES + "ListGames") is None
