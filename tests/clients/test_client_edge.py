"""The Python client library (clients/cardgames_client.py) against an in-process server over a
scripted MatchService (tests/transport/test_edge.py): what the library does at the edges a
real engine rarely reaches on demand: a stale-sequence error whose View is large, a call whose
answer never arrives, and a watch stream whose reopening is rate limited."""

from __future__ import annotations

import asyncio
import itertools

import grpc
import pytest

from clients import cardgames_client as cg
from engine_service.rules import get_game
from engine_service.sessions import api
from engine_service.transport.generated import match_pb2
from engine_service.transport.ratelimit import Rate, RateLimits
from tests.transport.harness import ADMIN_TOKEN, running
from tests.transport.test_edge import SEAT_TOKEN, ScriptedService, _summary, _view

from .conftest import run


def _large_view(seq: int, plays: int) -> api.ViewEnvelope:
    """A seat's view with a long public deal log in its table, as late in a Georgian Joker
    match (views of ~8.3 KB there: already past grpc's default 8 KiB metadata limit)."""
    cards = ["AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S", "6S"]
    log = [{"seat": i % 4, "action": f"play:{cards[i % 9]}", "by": "player"} for i in range(plays)]
    return api.ViewEnvelope("m1", seq, "active", dict(_view(seq).view, table={"deal_actions": log}), None, 0)


def test_a_stale_error_brings_its_large_view_to_the_client():
    """ABORTED / STALE_SEQUENCE carries the current View in the status trailer; the library
    must accept a trailer as large as a view (grpc's default: 8 KiB soft, 16 KiB hard, after
    which the call fails with RESOURCE_EXHAUSTED and the view is lost)."""

    async def scenario():
        service = ScriptedService()
        for plays in (150, 600):  # views of ~9 KB (past the soft limit) and ~36 KB (past the hard one)
            service.error = api.StaleSequence("expected_seq 3 is stale", _large_view(9, plays))
            async with running(service) as srv, cg.connect(srv.target) as client:
                me = client.seat_session("m1", 0, SEAT_TOKEN)
                for _ in range(5):
                    with pytest.raises(cg.StaleSequence) as caught:
                        await me.submit("play:AS", expected_seq=3)
                    assert caught.value.reason == "STALE_SEQUENCE"
                    assert caught.value.view.seq == 9 and len(caught.value.view.table["deal_actions"]) == plays

    run(scenario())


# The client's deadline for the call whose answer is lost: what the tests below wait out once.
LOST_DEADLINE_S = 0.5


class _LosesAnAnswer(ScriptedService):
    """A service whose first call of a kind has its answer lost: it outlives the client's
    deadline (:data:`LOST_DEADLINE_S`). ``client`` (the library's client, in this process):
    once that call has arrived, its repeats get a deadline no loaded machine misses (the
    library reads ``timeout_s`` at each attempt), so that the calls counted below are the
    library's repeats, never one more because a repeat's answer came late (a CI run on a
    loaded machine could take over half a second for one)."""

    client: cg.Client | None = None

    async def lose_this_answer(self) -> None:
        assert self.client is not None, "set the service's client"
        self.client.timeout_s = 30.0
        await asyncio.sleep(2.0)


class _SlowFirstAnswer(_LosesAnAnswer):
    """The first SubmitAction is applied but its answer is lost (it outlives the client's
    deadline); a repeat with the same client_action_id gets the first result."""

    async def submit_action(self, match_id, principal, action, expected_seq, client_action_id=""):
        self.calls.append(("submit_action", principal, action, expected_seq, client_action_id))
        first = sum(c[0] == "submit_action" for c in self.calls) == 1
        if first:
            await self.lose_this_answer()
        return api.SubmitResult(4, action, _view(4), duplicate=not first)


def test_submit_repeats_a_timed_out_call_with_the_same_client_action_id():
    """docs/api.md: "If the call fails without an answer (UNAVAILABLE, a timeout), send it
    again with the same id" -- and "The Python library does all of this"."""

    async def scenario():
        service = _SlowFirstAnswer()
        async with running(service) as srv, cg.connect(srv.target, timeout_s=LOST_DEADLINE_S) as client:
            service.client = client
            await client.wait_ready()  # the first deadline is the call's way, not a connection's set-up
            me = client.seat_session("m1", 0, SEAT_TOKEN)
            reply = await me.submit("play:AS", expected_seq=3)
            assert (reply.seq, reply.duplicate) == (4, True)
        ids = [c[4] for c in service.calls if c[0] == "submit_action"]
        assert len(ids) == 2 and ids[0] == ids[1] != ""

    run(scenario())


class _DrainsOnce(ScriptedService):
    """The engine drains while a submit arrives (UNAVAILABLE / DRAINING: nothing applied);
    its successor applies the repeat."""

    async def submit_action(self, match_id, principal, action, expected_seq, client_action_id=""):
        self.calls.append(("submit_action", principal, action, expected_seq, client_action_id))
        if sum(c[0] == "submit_action" for c in self.calls) == 1:
            raise api.Unavailable("the service is shutting down", reason="DRAINING")
        return api.SubmitResult(4, action, _view(4))


def test_submit_repeats_a_call_refused_by_a_draining_engine():
    """docs/api.md: UNAVAILABLE / DRAINING is "retry with backoff" (an upgrade: the draining
    engine's successor serves the repeat); the library raised it at once, so a bot's submit
    during a graceful restart failed."""

    async def scenario():
        service = _DrainsOnce()
        async with running(service) as srv, cg.connect(srv.target) as client:
            reply = await client.seat_session("m1", 0, SEAT_TOKEN).submit("play:AS", expected_seq=3)
            assert reply.seq == 4
        ids = [c[4] for c in service.calls if c[0] == "submit_action"]
        assert len(ids) == 2 and ids[0] == ids[1] != ""

    run(scenario())


class _LosesTheFirstJoin(_LosesAnAnswer):
    """The first JoinMatch takes its seat but its answer is lost (it outlives the client's
    deadline; then UNAVAILABLE once); a repeat with the same client_join_id gets the seat."""

    async def join_match(self, match_id, seat, player_name, client_join_id=""):
        self.calls.append(("join_match", match_id, seat, player_name, client_join_id))
        attempt = len(self.calls)
        if attempt == 1:
            await self.lose_this_answer()
        if attempt == 2:
            raise api.Unavailable("the match could not be saved; try again", reason="STORE_UNAVAILABLE")
        return api.JoinResult(match_id, 1, SEAT_TOKEN, retry=attempt > 1)


def test_join_repeats_a_failed_call_with_the_same_client_join_id():
    """docs/api.md "Joining": a join that failed without an answer (UNAVAILABLE, a timeout)
    is sent again with the same client_join_id, which gets the seat it took back; the library
    sends a fresh id with every join unless given one."""

    async def scenario():
        service = _LosesTheFirstJoin()
        async with running(service) as srv, cg.connect(srv.target, timeout_s=LOST_DEADLINE_S) as client:
            service.client = client
            await client.wait_ready()  # the first deadline is the call's way, not a connection's set-up
            me = await client.join("m1", seat=1, player_name="ada")
            assert (me.match_id, me.seat, me.token) == ("m1", 1, SEAT_TOKEN)
            await client.join("m1")
            await client.join("m1", client_join_id="my-own-join-id-0001")
        return service.calls

    calls = run(scenario())
    ids = [c[4] for c in calls]
    assert len(ids) == 5 and ids[4] == "my-own-join-id-0001"
    assert ids[0] == ids[1] == ids[2] != ids[3] and len(ids[0]) == len(ids[3]) == 36  # UUIDs
    assert [c[2:4] for c in calls[:4]] == [(1, "ada")] * 3 + [(None, "")]


class _LosesTheFirstCreate(_LosesAnAnswer):
    """The first CreateMatch creates its match but its answer is lost (it outlives the client's
    deadline; then UNAVAILABLE once); a repeat with the same client_create_id gets the match."""

    async def create_match(self, request, *, admin=False):
        self.calls.append(("create_match", request, admin))
        attempt = len(self.calls)
        if attempt == 1:
            await self.lose_this_answer()
        if attempt == 2:
            raise api.Unavailable("the match could not be saved; try again", reason="STORE_UNAVAILABLE")
        if attempt == 6:
            raise api.CreateIdInUse("this client_create_id was used for another request; use a fresh one")
        return _summary("waiting")


def test_create_match_repeats_a_failed_call_with_the_same_client_create_id():
    """docs/api.md "Creating": a create that failed without an answer (UNAVAILABLE, a timeout)
    is sent again with the same client_create_id, which gets the match it created; the library
    sends a fresh id with every create unless given one; CLIENT_CREATE_ID_IN_USE is not retried."""

    async def scenario():
        service = _LosesTheFirstCreate()
        async with running(service) as srv, cg.connect(srv.target, timeout_s=LOST_DEADLINE_S) as client:
            service.client = client
            await client.wait_ready()  # the first deadline is the call's way, not a connection's set-up
            match = await client.create_match("klaberjass", name="t")
            assert match.match_id
            await client.create_match("klaberjass")
            await client.create_match("klaberjass", client_create_id="my-own-create-id-01")
            with pytest.raises(cg.CardGamesError) as info:
                await client.create_match("klaberjass", client_create_id="my-own-create-id-01", name="x")
        return service.calls, info.value

    calls, error = run(scenario())
    ids = [c[1].client_create_id for c in calls]
    assert len(ids) == 6 and ids[4] == ids[5] == "my-own-create-id-01"
    assert ids[0] == ids[1] == ids[2] != ids[3] and len(ids[0]) == len(ids[3]) == 36  # UUIDs
    assert [c[1].name for c in calls[:3]] == ["t"] * 3
    assert (error.code, error.reason) == (grpc.StatusCode.ALREADY_EXISTS, "CLIENT_CREATE_ID_IN_USE")


def test_create_match_sends_each_table_setting_as_given():
    """Every argument of ``create_match`` reaches the engine as given (options with their
    types, open seats and bots, the turn time to the nanosecond, the admin's decks and first
    dealer, 0 too, with the admin token); none given, the request holds the API's defaults."""

    async def scenario():
        service = ScriptedService()
        async with running(service) as srv:
            async with cg.connect(srv.target, admin_token=ADMIN_TOKEN) as admin:
                await admin.create_match("klaberjass", options={"n": 300, "b": True, "s": "x"},
                                         seats=[None, "open", "random"], turn_time_s=2.5, spectators_allowed=False,
                                         name="t", listed=True, spectator_delay_actions=3, decks=[["AS", "KS"]],
                                         first_dealer=0)
            async with cg.connect(srv.target) as plain:
                await plain.create_match("klaberjass")
        return [c[1:] for c in service.calls if c[0] == "create_match"]

    (given, as_admin), (default, as_player) = run(scenario())
    assert as_admin and not as_player
    assert (given.game, given.options, given.turn_time_s, given.spectators_allowed, given.name, given.listed,
            given.spectator_delay_actions, given.decks, given.first_dealer) == (
        "klaberjass", {"n": 300, "b": True, "s": "x"}, 2.5, False, "t", True, 3, (("AS", "KS"),), 0)
    assert [(s.kind, s.bot) for s in given.seats] == [("open", ""), ("open", ""), ("bot", "random")]
    assert (default.options, default.seats, default.turn_time_s, default.spectators_allowed, default.name,
            default.listed, default.spectator_delay_actions, default.decks, default.first_dealer) == (
        {}, (), 0.0, True, "", False, 0, (), None)


def test_wait_ready_returns_once_connected_and_is_unavailable_after_its_timeout():
    """``wait_ready`` returns when the channel connects, and raises Unavailable after
    ``timeout_s`` when nothing answers: reason "" (no status carried one, as for any network
    failure) and no request id, its message naming the wait."""
    from clients.local_service import free_port

    async def scenario():
        async with running(ScriptedService()) as srv, cg.connect(srv.target) as client:
            await client.wait_ready(timeout_s=10)
        async with cg.connect(f"127.0.0.1:{free_port()}") as nobody:
            with pytest.raises(cg.Unavailable) as caught:
                await nobody.wait_ready(timeout_s=0.2)
        return caught.value

    error = run(scenario())
    assert (error.code, error.reason, error.request_id, error.metadata, error.view, error.retry_delay_s) == (
        grpc.StatusCode.UNAVAILABLE, "", "", {}, None, None)
    assert str(error) == "UNAVAILABLE: no connection within 0.2 s"
    # an INTERNAL error made without a request id names none
    assert str(cg.Internal(grpc.StatusCode.INTERNAL, "boom")) == "INTERNAL: boom"



@pytest.mark.parametrize("given, waited", [((), 10.0), ((0.25,), 0.25)])
def test_wait_ready_waits_ten_seconds_unless_told(monkeypatch, given, waited):
    """``wait_ready()`` without a timeout gives the channel 10 s, the calls' own default
    (``Client.timeout_s``), ``wait_ready(timeout_s)`` that long, and it says so when the
    time runs out (Unavailable)."""
    waits = []

    async def no_connection(awaitable, timeout):
        waits.append(timeout)
        awaitable.close()
        raise asyncio.TimeoutError

    async def scenario():
        async with cg.connect("127.0.0.1:9") as client:
            monkeypatch.setattr(cg.asyncio, "wait_for", no_connection)
            with pytest.raises(cg.Unavailable) as caught:
                await client.wait_ready(*given)
            monkeypatch.undo()
        return caught.value

    error = run(scenario())
    assert waits == [waited] and str(error) == f"UNAVAILABLE: no connection within {waited:g} s"


def test_a_client_closes_its_channel_when_closed_or_its_block_ends():
    """``close()``, and the end of an ``async with`` block, close the client's channel: a call
    made after it fails at once, whatever the retry policy, instead of reaching the engine."""

    async def scenario():
        async with running(ScriptedService()) as srv:
            client = cg.connect(srv.target)
            assert (await client.get_match("m1")).match_id == "m1"
            await client.close()
            async with cg.connect(srv.target) as other:
                assert (await other.get_match("m1")).match_id == "m1"
            for closed in (client, other):
                with pytest.raises(Exception, match="[Cc]losed"):
                    await closed.get_match("m1")

    run(scenario())


class _DropsTheFirstStream(ScriptedService):
    """The first WatchMatch stream breaks after its snapshot; the next one replays the rest."""

    async def watch(self, match_id, principal, after_seq):
        self.calls.append(("watch", principal, after_seq))
        opened = sum(c[0] == "watch" for c in self.calls)
        if opened == 1:
            yield api.MatchEvent("snapshot", 3, match_id, view=_view(seat=principal.seat))
            raise api.Unavailable("fell behind", reason="WATCH_OVERFLOW")
        yield api.MatchEvent("action", 4, match_id, seat=0, action="play:AS", by="player",
                             view=_view(4, seat=principal.seat))
        yield api.MatchEvent("match_ended", 4, match_id, reason="rules", view=_view(4, seat=principal.seat))


def test_watch_waits_out_a_rate_limited_reopen(monkeypatch):
    """A resumed stream whose reopening is refused with RESOURCE_EXHAUSTED / RATE_LIMITED
    ("wait its retry_delay, then send the same request again": nothing was done) is reopened
    after the RetryInfo delay, not given up: every spectator behind one address reconnects at
    once after a server restart. The refusal is seen (a stalled machine that refilled the
    bucket before the reopen made the test pass without one): the limiter's clock moves 0.5 s
    a call, whatever the machine's pace, so that with a 1 s refill the first reopening is
    refused (its retry delay 0.5 s) and the next one taken."""
    from engine_service.transport import server as server_module

    readings = itertools.count(2000.0, 0.5)

    class SteppedClock(server_module.RateLimitInterceptor):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, clock=lambda: next(readings), **kwargs)

    monkeypatch.setattr(server_module, "RateLimitInterceptor", SteppedClock)

    async def scenario():
        service = _DropsTheFirstStream()
        limits = RateLimits(peer=Rate(per_s=1.0, burst=1))
        states = []
        async with running(service, rate_limits=limits) as srv, cg.connect(srv.target) as client:
            events = [(e.kind, e.seq) async for e in client.spectate("m1").watch(on_connection=states.append)]
        assert events == [(match_pb2.EVENT_KIND_SNAPSHOT, 3), (match_pb2.EVENT_KIND_ACTION, 4),
                          (match_pb2.EVENT_KIND_MATCH_ENDED, 4)]
        assert [c[2] for c in service.calls if c[0] == "watch"] == [-1, 3]
        refused = [s for s in states if s.error is not None and s.error.reason == "RATE_LIMITED"]
        assert refused and all(s.state == cg.RECONNECTING and s.delay_s >= 0.5 for s in refused), states

    run(scenario())


def test_rate_limited_errors_carry_the_retry_delay():
    """A refusal the library does not wait out (its delay is over ``max_rate_limit_wait_s``;
    a shorter one is retried: tests/clients/test_client_rate_limits.py) is raised with the
    server's RetryInfo delay. One call in 20 s: a loaded machine taking over a second
    between the two calls (it did, at one a second) still finds the bucket empty."""
    async def scenario():
        service = ScriptedService()
        limits = RateLimits(peer=Rate(per_s=0.05, burst=1))
        no_wait = cg.RetryPolicy(max_rate_limit_wait_s=0.0)
        async with running(service, rate_limits=limits) as srv, cg.connect(srv.target, retry=no_wait) as client:
            await client.get_match("m1")
            with pytest.raises(cg.ResourceExhausted) as caught:
                await client.get_match("m1")
        assert caught.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED and caught.value.reason == "RATE_LIMITED"
        assert 10.0 < caught.value.retry_delay_s <= 20.0  # the token's refill, less the time since

    run(scenario())


@pytest.mark.parametrize("module", ["clients.admin", "clients.health"])
@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "soon", "1e10", "86401"])
def test_a_timeout_grpc_would_expire_at_once_is_a_usage_error(module, timeout, capsys):
    """``--timeout 0`` (or negative, nan, inf, or past gRPC's clock: 1e10 seconds): gRPC fails
    the call at once with DEADLINE_EXCEEDED, and the command exited 1, as if the engine had
    failed or were unhealthy; it is a usage error (exit 2) naming the option. A day at most."""
    import importlib

    main = importlib.import_module(module).main
    args = ["list"] if module == "clients.admin" else []
    with pytest.raises(SystemExit) as info:
        main(["--target", "127.0.0.1:1", "--timeout", timeout, *args])
    assert info.value.code == 2
    assert "argument --timeout: " in capsys.readouterr().err


def test_a_turn_time_or_an_option_the_request_cannot_carry_is_a_usage_error(capsys):
    """clients.play and clients.remote_bot took --turn-time nan, inf or 1e300 and an integer
    option beyond int64 (kl_target_score=99999999999999999999999) and built the request with
    them: a ValueError or OverflowError traceback. Usage errors now, before any call."""
    from clients import play, remote_bot
    from engine_service.transport.generated import match_pb2

    for build in (play.build_parser, remote_bot.build_parser):
        for bad in ("nan", "inf", "1e300", "-1", "soon"):
            with pytest.raises(SystemExit) as info:
                build().parse_args(["--bot", "random"] * (build is remote_bot.build_parser) + ["--turn-time", bad])
            assert info.value.code == 2 and "argument --turn-time" in capsys.readouterr().err
        args = build().parse_args(["--bot", "random"] * (build is remote_bot.build_parser) + ["--turn-time", "30"])
        assert args.turn_time == 30.0
    game = match_pb2.GameInfo(id="klaberjass", options=[match_pb2.OptionSpec(
        name="kl_target_score", type=match_pb2.OPTION_TYPE_INT, allowed_text="an integer >= 1")])
    for bad in ("99999999999999999999999", "-99999999999999999999999", "x"):
        with pytest.raises(SystemExit, match="kl_target_score is an integer"):
            play.parse_option(f"kl_target_score={bad}", game)
    klaberjass = get_game("klaberjass")  # clients.remote_bot types them by its own rules core
    for bad in ("99999999999999999999999", str(-2**63), str(2**63)):
        with pytest.raises(remote_bot.TableRefused, match=f"'kl_target_score': invalid value {bad}; allowed: an integer >= 1"):
            remote_bot._options([f"kl_target_score={bad}"], klaberjass)
    assert play.parse_option(f"kl_target_score={2**63 - 1}", game) == ("kl_target_score", 2**63 - 1)
    with pytest.raises(SystemExit, match="kl_target_score is an integer"):
        play.parse_option(f"kl_target_score={-2**63 - 1}", game)
    assert play.parse_option("kl_target_score=300", game) == ("kl_target_score", 300)
    assert remote_bot._options(["kl_target_score=300"], klaberjass) == {"kl_target_score": 300}
    # a seat or page size beyond the request's int32 fields: protobuf's "Value out of range"
    from clients import admin

    huge = "99999999999999999999"
    for parse, args, flag in ((play.build_parser().parse_args, ["--seat", huge], "--seat"),
                              (remote_bot.build_parser().parse_args, ["--bot", "random", "--seat", huge], "--seat"),
                              (admin.build_parser().parse_args, ["reissue-token", "m1", huge], "SEAT"),
                              (admin.build_parser().parse_args, ["list", "--limit", huge], "--limit")):
        with pytest.raises(SystemExit) as info:
            parse(args)
        err = capsys.readouterr().err
        assert info.value.code == 2 and f"argument {flag}: {huge} is beyond the API's 32-bit integers" in err, err
    assert play.build_parser().parse_args(["--seat", "1"]).seat == 1


def test_one_number_type_serves_deadlines_budgets_and_the_turn_time_that_admits_zero():
    """--turn-time was a near-copy of positive_arg (the deadlines', the budgets') that admitted
    0: one parameterised type now, ``zero`` naming what 0 means where it is taken."""
    import argparse

    strict, lenient = cg.positive_arg("seconds", 10), cg.positive_arg("seconds", 10, zero="no limit")
    assert strict("10") == 10.0 and lenient("0") == 0.0 and lenient("2.5") == 2.5
    assert strict("0.5") == 0.5 and lenient("0.5") == 0.5  # a fraction of a second is a number above 0
    for bad in ("0", "-1", "nan", "inf", "11"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"^must be a number of seconds above 0 and at most 10, "):
            strict(bad)
    for bad in ("-0.5", "nan", "-inf", "11"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"^must be a number of seconds from 0 \(no limit\) to 10, "):
            lenient(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="^not a number: 'soon'$"):
        lenient("soon")
    assert cg.turn_time_arg("0") == 0.0 and cg.turn_time_arg("86400") == 86400.0
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        cg.seconds_arg("0")  # --timeout: a call's deadline, at most a day
    assert str(refused.value) == "must be a number of seconds above 0 and at most 86400, not '0'"
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        cg.turn_time_arg("-1")
    assert str(refused.value) == "must be a number of seconds from 0 (the game's default) to 86400, not '-1'"


def test_a_seat_number_is_any_whole_number_of_the_apis_int32_fields():
    """int32_arg (``--seat``, ``SEAT``, ``--limit``) takes every int32, -2**31 to 2**31 - 1
    (which seats a match has, the server says), and refuses the next integer either side, and
    text that is no whole number, as usage errors naming it."""
    import argparse

    assert cg.INT32_MAX == 2**31 - 1
    for text, value in (("2147483647", 2**31 - 1), ("-2147483648", -2**31), ("0", 0), (" 3 ", 3)):
        assert cg.int32_arg(text) == value
    for text in ("2147483648", "-2147483649"):
        with pytest.raises(argparse.ArgumentTypeError, match=f"^{text} is beyond the API's 32-bit integers$"):
            cg.int32_arg(text)
    for text in ("1.5", "one", ""):
        with pytest.raises(argparse.ArgumentTypeError, match=f"^not a whole number: {text!r}$"):
            cg.int32_arg(text)


def test_a_command_parser_keeps_its_description_and_options_and_never_abbreviates():
    """command_parser: the --help text's description and the caller's own settings
    (clients.play's raw description layout) are the parser's, with ``allow_abbrev`` off."""
    import argparse

    parser = cg.command_parser("python -m x", "Does x.", formatter_class=argparse.RawDescriptionHelpFormatter)
    assert (parser.prog, parser.description, parser.formatter_class, parser.allow_abbrev) == (
        "python -m x", "Does x.", argparse.RawDescriptionHelpFormatter, False)


def test_a_file_argument_reads_as_its_path():
    """A ``--ca`` or ``--token-file`` argument holds what was read, and ``str()`` of it is the
    path, for the messages and the command lines the clients print."""
    ca = cg.FileArgument("/run/ca.pem", b"-----BEGIN CERTIFICATE-----")
    assert str(ca) == f"{ca}" == "/run/ca.pem" and ca.value == b"-----BEGIN CERTIFICATE-----"


def test_an_empty_target_is_a_usage_error_saying_so():
    """``--target ""`` or one of blanks (an unset variable in a script) is refused as empty
    before any check of its port."""
    import argparse

    for text in ("", "  ", "\t"):
        with pytest.raises(argparse.ArgumentTypeError,
                           match=r"^the target is empty \(host:port, e\.g\. 127\.0\.0\.1:50051\)$"):
            cg.target_arg(text)


def test_an_option_given_twice_is_a_usage_error_naming_it(capsys):
    """``--option kl_target_score=300 ... --option kl_target_score=5`` created a match to 5,
    the first value dropped without a word (the arena's --options refuses it as a usage error);
    distinct options still make the list, in order."""
    from clients import play, remote_bot

    twice = ["--option", "kl_target_score=300", "--option", "kl_last_trick=true", "--option", "kl_target_score=5"]
    for parser, base in ((play.build_parser(), ["--game", "klaberjass"]),
                         (remote_bot.build_parser(), ["--bot", "random", "--game", "klaberjass"])):
        with pytest.raises(SystemExit) as info:
            parser.parse_args([*base, *twice])
        err = capsys.readouterr().err.splitlines()[-1]
        assert info.value.code == 2 and err.endswith(
            "error: argument --option: the option 'kl_target_score' is given twice: give it once"), err
        assert parser.parse_args([*base, *twice[:4]]).option == [
            "kl_target_score=300", "kl_last_trick=true"]


@pytest.mark.parametrize("module, flag, base", [
    ("clients.play", "--bots", ["--game", "georgian_joker"]),
    ("clients.remote_bot", "--opponents", ["--bot", "random", "--game", "georgian_joker"]),
])
def test_a_blank_bot_name_among_the_bots_is_a_usage_error(module, flag, base, monkeypatch, capsys):
    """``--bots heuristic,,search`` dropped the blank name without a word, so that Georgian
    Joker's three other seats were refused as two bots, and ``--bots ,`` (``--opponents ,``)
    meant random bots: a usage error naming the flag, before any engine. Left blank, the flag
    is the command's default, and names around commas keep their spaces trimmed."""
    main = _without_an_engine(module, monkeypatch)
    for given in ("heuristic,,search", ",", "heuristic, ,search", "heuristic,search,"):
        with pytest.raises(SystemExit) as info:
            main.main([*base, flag, given])
        err = capsys.readouterr().err.splitlines()[-1]
        assert info.value.code == 2 and err == (
            f"python -m {module}: error: argument {flag}: a blank bot name in {given!r}: give names "
            "separated by single commas"), err
    parser = main.build_parser()
    for given in ("", "  ", "heuristic, search ,random"):
        assert getattr(parser.parse_args([*base, flag, given]), flag[2:]) == given


@pytest.mark.parametrize("module,base,abbreviated,spelt_out", [
    ("clients.play", ["--list"], ["--targ", "127.0.0.1:1"], ["--target", "127.0.0.1:1"]),
    ("clients.play", ["--match", "M"], ["--token", "seat.token"], ["--token-file", "seat.token"]),
    ("clients.watch", ["MATCH"], ["--from"], ["--from-start"]),
    ("clients.health", [], ["--serv", "x"], ["--service", "x"]),
    ("clients.remote_bot", ["--bot", "random", "--game", "klaberjass"], ["--budget", "5"], ["--budget-ms", "5"]),
    ("clients.admin", ["list"], ["--stat", "active"], ["--status", "active"]),
])
def test_a_flag_is_never_abbreviated(module, base, abbreviated, spelt_out, capsys, tmp_path, monkeypatch):
    """The clients took any unambiguous prefix of a flag for it (argparse's allow_abbrev), as
    engine_service's commands and clients.admin do not: ``--targ`` was --target, a prefix in a
    script came to mean another flag once one with the same start was added, and an ambiguous
    one was refused with its value echoed. A prefix is an unrecognized argument (exit 2)."""
    import importlib

    monkeypatch.chdir(tmp_path)
    (tmp_path / "seat.token").write_text("t0ken\n")  # --token-file's file is read as it is parsed
    parser = importlib.import_module(module).build_parser()
    with pytest.raises(SystemExit) as info:
        parser.parse_args([*base, *abbreviated])
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"unrecognized arguments: {abbreviated[0]}" in err, err
    parser.parse_args([*base, *spelt_out])


def _without_an_engine(module: str, monkeypatch):
    """The client's module with every way to an engine (connect, LocalService, health's
    check) failing the test: its usage errors must come before any engine is reached."""
    import importlib

    def no_engine(*args, **kwargs):
        raise AssertionError("an engine was started or reached")

    main = importlib.import_module(module)
    for name in ("connect", "LocalService", "check"):
        if hasattr(main, name):
            monkeypatch.setattr(main, name, no_engine)
    return main


@pytest.mark.parametrize("module,argv,flag", [
    ("clients.health", ["--service", "x\udcff"], "--service"),
    ("clients.watch", ["M\udcff"], "MATCH_ID"),
    ("clients.play", ["--list", "--target", "127.0.0.1:1\udcff"], "--target"),
    ("clients.play", ["--game", "klaberjass", "--name", "ad\udce9"], "--name"),
    ("clients.remote_bot", ["--bot", "random", "--game", "klaberjass", "--option", "a=\udcff"], "--option"),
    ("clients.admin", ["terminate", "M1", "--reason", "gone\udcff"], "--reason"),
    ("clients.admin", ["inspect", "\udcff"], "MATCH_ID"),
])
def test_an_argument_that_is_not_utf8_text_is_a_usage_error(module, argv, flag, monkeypatch, capsys):
    """A byte that is not UTF-8 on the command line (a terminal in Latin-1, a mistyped byte):
    Python keeps it as a lone surrogate, which went into a protobuf string of the request and
    ended the command with a UnicodeEncodeError traceback (the engine reached, or started, by
    then). A usage error naming the argument, before any engine; a file's path may hold any
    bytes and is left to the file's own error."""
    main = _without_an_engine(module, monkeypatch)
    monkeypatch.setenv("CARDGAMES_ADMIN_TOKEN", "t0ken")
    with pytest.raises(SystemExit) as info:
        main.main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"error: argument {flag}: not UTF-8 text (it has a byte that is not UTF-8; " \
        "the value is not shown)" in err, err


@pytest.mark.parametrize("argv", [[], ["--autoplay", "first"]])
def test_a_seed_without_autoplay_random_is_a_usage_error(argv, monkeypatch, capsys):
    """clients.play's --seed seeds --autoplay random; without it (the screen, --autoplay first)
    it was dropped without a word, and a run its author took for repeatable was not. A usage
    error, before any engine."""
    play = _without_an_engine("clients.play", monkeypatch)
    with pytest.raises(SystemExit) as info:
        play.main(["--game", "klaberjass", "--seed", "7", *argv])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.endswith(
        "python -m clients.play: error: --seed seeds the choices of --autoplay random: give both\n"), err
    assert play.build_parser().parse_args(["--game", "klaberjass", "--seed", "7", "--autoplay", "random"]).seed == 7


@pytest.mark.parametrize("module, argv, table, says", [
    ("clients.play", [], ["--bots", "heuristic"], "--bots sets"),
    ("clients.play", [], ["--option", "kl_target_score=300"], "--option sets"),
    ("clients.play", [], ["--turn-time", "0"], "--turn-time sets"),
    ("clients.play", [], ["--listed"], "--listed sets"),
    ("clients.play", [], ["--game", "klaberjass"], "--game sets"),
    ("clients.play", [], ["--bots", "", "--turn-time", "30", "--listed"], "--bots --turn-time --listed set"),
    ("clients.remote_bot", ["--bot", "random"], ["--opponents", "heuristic"], "--opponents sets"),
    ("clients.remote_bot", ["--bot", "random"], ["--option", "kl_target_score=300"], "--option sets"),
    ("clients.remote_bot", ["--bot", "random"], ["--turn-time", "0"], "--turn-time sets"),
    ("clients.remote_bot", ["--bot", "random"], ["--game", "klaberjass", "--opponents", ""], "--game --opponents set"),
])
def test_a_new_tables_flags_with_match_are_a_usage_error(module, argv, table, says, monkeypatch, capsys):
    """clients.play --match ID joins a match whose table was set when it was created: --bots,
    --option, --turn-time, --listed (and --game) were dropped without a word, and the player
    sat at a table other than the one asked for (no bots, another target score, no timer, not
    in the lobby); clients.remote_bot's --game, --opponents, --option and --turn-time alike. A
    usage error naming them, before any engine, as --db with --target is."""
    main = _without_an_engine(module, monkeypatch)
    with pytest.raises(SystemExit) as info:
        main.main([*argv, "--target", "127.0.0.1:1", "--match", "M1", *table])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.endswith(
        f"python -m {module}: error: {says} up a new match, and --match ID joins one whose table is set: "
        "give one or the other\n"), err
    # with it, the seat and the name are still taken
    parser = main.build_parser()
    main.refuse_with_match(parser, parser.parse_args([*argv, "--match", "M1", "--seat", "1", "--name", "b"]),
                           main.NEW_TABLE_FLAGS)


@pytest.mark.parametrize("argv, says", [
    (["--match", "M1", "--seat", "1"],
     "--seat picks the seat a join takes, and --token-file returns to the seat its token holds: give one or the other"),
    (["--match", "M1", "--name", "Ann"],
     "--name names the player a join seats, and --token-file returns to a seat whose player is named: give one "
     "or the other"),
    (["--lobby", "--match", "M1"],
     "--lobby lists the matches waiting for people, and --match ID joins one: give one or the other"),
    (["--list", "--match", "M1"],
     "--list lists the games and bots, and --match ID joins a match: give one or the other"),
], ids=["seat-with-token-file", "name-with-token-file", "match-with-lobby", "match-with-list"])
def test_a_flag_the_command_would_drop_is_a_usage_error(argv, says, tmp_path, monkeypatch, capsys):
    """clients.play dropped without a word a --seat given with --token-file (the seat is the
    token's: the player came back to another seat than the one asked for), a --name given with
    it (the seat's player is named at its first join) and a --match given
    with --lobby or --list (those list and exit: no match was joined). A usage error naming
    both flags, before any engine, as --match with a new table's flags is."""
    play = _without_an_engine("clients.play", monkeypatch)
    token = tmp_path / "seat.token"
    token.write_text("t0ken\n")
    extra = ["--token-file", str(token)] if "--seat" in argv or "--name" in argv else []
    with pytest.raises(SystemExit) as info:
        play.main(["--target", "127.0.0.1:1", *argv, *extra])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.endswith(f"python -m clients.play: error: {says}\n"), err
    assert "t0ken" not in err


@pytest.mark.parametrize("module, argv", [("clients.play", ["--game", "klaberjass"]),
                                          ("clients.remote_bot", ["--bot", "random", "--game", "klaberjass"])])
def test_a_db_with_a_target_is_a_usage_error(module, argv, tmp_path, monkeypatch, capsys):
    """--db is the database of the engine a client starts without --target; with --target it
    was dropped without a word (the engine there keeps its own), the file never made. A usage
    error, before any engine."""
    main = _without_an_engine(module, monkeypatch)
    with pytest.raises(SystemExit) as info:
        main.main([*argv, "--target", "127.0.0.1:1", "--db", str(tmp_path / "kept.sqlite3")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.endswith(
        f"python -m {module}: error: --db is the database of the engine started without --target: give one of "
        "them\n"), err


def test_a_path_argument_may_hold_any_bytes():
    import subprocess
    import sys
    from pathlib import Path

    # the file's own error, not "not UTF-8 text" (a subprocess: stderr shows the byte as \xff)
    result = subprocess.run([sys.executable, "-m", "clients.play", "--target", "127.0.0.1:1", "--match", "M",
                             "--token-file", b"/nonexistent/\xff.token"], capture_output=True, timeout=60,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (b"python -m clients.play: error: argument --token-file: cannot read the seat "
                                              b"token file /nonexistent/\\udcff.token: No such file or directory")


@pytest.mark.parametrize("content, says", [
    (None, "cannot read the seat token file {path}: No such file or directory"),
    (b"", "the seat token file {path} is empty"),
    (b"\xff\xfe", "the seat token file {path} is not text: no seat token"),
    (b"two words", "the seat token file {path} has characters a seat token never has (spaces, control or "
                   "non-ASCII characters): no seat token"),
])
def test_a_token_file_without_a_seat_token_is_a_usage_error(content, says, tmp_path, monkeypatch, capsys):
    """clients.play --token-file names a file that holds no seat token: a usage error (exit 2)
    naming it, before any engine, as a bad --ca file and clients.admin's --admin-token-file; it
    exited 1, as if the engine had refused something, and started an engine of its own first
    when no --target was given. The file's content is never shown."""
    play = _without_an_engine("clients.play", monkeypatch)
    path = tmp_path / "seat.token"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SystemExit) as info:
        play.main(["--match", "M", "--token-file", str(path)])
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert err.splitlines()[-1] == f"python -m clients.play: error: argument --token-file: {says.format(path=path)}"
    assert "two" not in err.replace(str(path), "")


@pytest.mark.parametrize("module,args", [
    ("clients.play", ["--list"]), ("clients.watch", ["MATCH"]), ("clients.health", []),
    ("clients.remote_bot", ["--bot", "random", "--game", "klaberjass"]),
])
def test_an_unknown_flag_is_named_without_its_value(module, args, capsys):
    """``--token SEAT_TOKEN`` (the seat token pasted after a flag no client has: they read it
    from --token-file) or a stray word: argparse echoed every unrecognized argument on the
    terminal or a CI log, the token with them. The flags are named, the values counted, as
    engine_service's commands and clients.admin say it (engine_service.command_line)."""
    import importlib

    secret = "s3cret-seat-token"
    with pytest.raises(SystemExit) as info:
        importlib.import_module(module).main([*args, "--token", secret, f"--seat-token={secret}", secret])
    err = capsys.readouterr().err
    assert info.value.code == 2 and secret not in err, err
    assert "unrecognized arguments: --token --seat-token (3 values not shown: they may hold a secret)" in err, err


@pytest.mark.parametrize("module,args", [
    ("clients.admin", ["list"]), ("clients.health", []), ("clients.play", ["--list"]),
    ("clients.watch", ["MATCH"]), ("clients.remote_bot", []),
])
def test_a_target_without_its_port_is_a_usage_error(module, args, capsys):
    """``--target host:`` (a port variable left empty in a script): gRPC takes port 443 for it
    and the command waited on the wrong port, saying nothing; a port above 65535 likewise
    (gRPC dials it modulo 65536). Every client refuses it as a
    usage error (exit 2) naming what is missing, and the library's connect() raises."""
    import importlib

    from clients.cardgames_client import connect

    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as info:
        main(["--target", "127.0.0.1:", *args])
    assert info.value.code == 2
    assert "argument --target: '127.0.0.1:' has no port after its ':'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="has no port"):
        connect("[::1]:")
    # a port above 65535: gRPC dialled it modulo 65536 (99999: port 34463), another port
    with pytest.raises(SystemExit) as info:
        main(["--target", "127.0.0.1:99999", *args])
    assert info.value.code == 2
    assert "argument --target: '127.0.0.1:99999' has port 99999, above 65535" in capsys.readouterr().err
    with pytest.raises(ValueError, match="above 65535"):
        connect("[::1]:65536")


@pytest.mark.parametrize("module,args", [
    ("clients.admin", ["list"]), ("clients.health", []), ("clients.play", ["--list"]),
    ("clients.watch", ["MATCH"]), ("clients.remote_bot", []),
])
@pytest.mark.parametrize("target, port", [("127.0.0.1:-1", "'-1'"), ("localhost:http", "'http'"),
                                          ("[::1]:0", "0"), (":x50051", "'x50051'")])
def test_a_target_whose_port_is_no_port_number_is_a_usage_error(module, args, target, port, capsys):
    """``--target host:-1`` or ``host:http``: gRPC took the text after the ':' for a service
    name or wrapped it (``http`` dialled port 80, ``-1`` port 65535), so the command reached
    another port than the one meant, or waited on it, saying nothing. Every client refuses a
    port that is no number from 1 to 65535 as a usage error (exit 2), as it refuses ``host:``,
    and the library's connect() raises."""
    import importlib

    from clients.cardgames_client import connect

    with pytest.raises(SystemExit) as info:
        importlib.import_module(module).main(["--target", target, *args])
    assert info.value.code == 2
    assert (f"argument --target: {target!r} has port {port}, not a number from 1 to 65535 (host:port, "
            "e.g. 127.0.0.1:50051)") in capsys.readouterr().err
    with pytest.raises(ValueError, match="not a number from 1 to 65535"):
        connect(target)


@pytest.mark.parametrize("target", ["127.0.0.1:1", "[::1]:65535", "::1", "fe80::beef", "unix:/run/engine.sock",
                                    "unix:engine.sock", "dns:///engine.test:50051", "dns:engine.test", "engine.test",
                                    "unix-abstract:engine", "ipv4:127.0.0.1", "xds:///engine.test",
                                    "google-c2p:///engine.test", "UNIX:/run/engine.sock", "Unix:engine.sock"])
def test_targets_whose_end_is_no_port_are_taken(target):
    """What follows the last ':' is a port only after a host (``[::1]`` in brackets): a bare
    IPv6 address, a gRPC scheme's path or name and a target without a ':' are not refused;
    gRPC reads a scheme in any case (``UNIX:/run/engine.sock`` reaches the socket)."""
    from clients.cardgames_client import target_arg

    assert target_arg(target) == target


def test_watch_finds_the_engine_on_cardgames_port(monkeypatch, capsys):
    """clients.watch without --target watched 127.0.0.1:50051 whatever CARDGAMES_PORT said,
    while clients.health and clients.admin ask the engine beside them on its port: it now
    does as they do, and a CARDGAMES_PORT the engine refuses is the same usage error, read
    only when no --target is given."""
    from clients import watch

    targets = []

    async def watched(args, console):
        targets.append(args.target)
        return 0

    monkeypatch.setattr(watch, "run", watched)
    monkeypatch.setenv("CARDGAMES_PORT", "50099")
    assert watch.main(["M1"]) == 0 and targets == ["127.0.0.1:50099"]
    monkeypatch.delenv("CARDGAMES_PORT")
    assert watch.main(["M1", "--plain"]) == 0 and targets[-1] == "127.0.0.1:50051"
    monkeypatch.setenv("CARDGAMES_PORT", "http")
    assert watch.main(["M1", "--target", "engine.test:1"]) == 0 and targets[-1] == "engine.test:1"
    with pytest.raises(SystemExit) as info:
        watch.main(["M1"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(targets) == 3, err
    assert err.splitlines()[-1] == (
        "python -m clients.watch: error: the default --target is 127.0.0.1:$CARDGAMES_PORT, and environment "
        "variable CARDGAMES_PORT (--port): not a whole number: 'http' (or give --target HOST:PORT)"), err


def test_health_names_the_service_the_server_does_not_know(engine, capsys):
    """grpc.health.v1 answers an unknown service NOT_FOUND with no message: the command printed
    "NOT_FOUND: " and nothing more, leaving a mistyped --service to guess."""
    from clients import health

    assert health.main(["--target", engine.target, "--service", "cardgames.v1.CardGameService"]) == 1
    err = capsys.readouterr().err
    assert err == (f"{engine.target}: NOT_FOUND: the server has no service named "
                   "'cardgames.v1.CardGameService'\n"), err
    assert health.main(["--target", engine.target, "--service", "cardgames.v1.CardGamesService"]) == 0


def test_a_server_name_to_verify_means_tls_as_in_the_node_client(engine, capsys):
    """``server_name`` / ``--server-name`` alone (no ``tls``, no CA) was dropped without a word
    and the connection was plaintext, a name to verify verifying nothing; the Node client takes
    it for TLS (serverName). Against the plaintext engine both now fail the TLS handshake."""
    from clients import health

    async def scenario():
        async with cg.connect(engine.target, server_name="engine.test") as client:
            with pytest.raises(cg.Unavailable):
                await client.call(client.stub.ListGames, cg.card_games_pb2.ListGamesRequest())

    run(scenario())
    assert health.main(["--target", engine.target, "--server-name", "engine.test"]) == 1
    assert "UNAVAILABLE" in capsys.readouterr().err
    assert health.main(["--target", engine.target]) == 0


class _Health:
    """A grpc.health.v1 server answering ``status`` to every Check (a (code, message) pair: it
    fails the call so), recording the service asked about and the seconds the call had left
    when it arrived."""

    def __init__(self, status: str, tls: tuple | None = None) -> None:
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        outer = self
        self.status, self.asked = status, []

        class Servicer(health_pb2_grpc.HealthServicer):
            def Check(self, request, context):
                outer.asked.append((request.service, context.time_remaining()))
                if isinstance(outer.status, tuple):
                    context.abort(*outer.status)
                return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.ServingStatus.Value(
                    outer.status))

        from concurrent import futures

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        health_pb2_grpc.add_HealthServicer_to_server(Servicer(), self.server)
        if tls is None:
            port = self.server.add_insecure_port("127.0.0.1:0")
        else:  # (cert, key) files
            cert, key = (path.read_bytes() for path in tls)
            port = self.server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([(key, cert)]))
        self.target = f"127.0.0.1:{port}"

    def __enter__(self) -> "_Health":
        self.server.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.stop(None)


def test_health_asks_about_the_service_given_within_its_timeout_and_says_why_it_is_unhealthy(capsys):
    """clients.health: exit 0 only when the answer is SERVING (docs/operations.md); otherwise
    status 1 and the reason on stderr (the module's docstring: NOT_SERVING while draining).
    It asks about ``--service`` (the whole server without it) and waits ``--timeout`` seconds
    at most: the call carries that deadline."""
    from clients import health

    with _Health("NOT_SERVING") as server:
        assert health.main(["--target", server.target, "--service", "cardgames.v1.CardGamesService",
                            "--timeout", "0.5"]) == 1
        assert capsys.readouterr() == ("", f"{server.target}: NOT_SERVING\n")
        server.status = "SERVICE_UNKNOWN"  # 1 as well: only SERVING is healthy
        assert health.main(["--target", server.target, "--service", "x"]) == 1
        assert capsys.readouterr() == ("", f"{server.target}: SERVICE_UNKNOWN\n")
        server.status = "SERVING"
        assert health.main(["--target", server.target]) == 0
        assert capsys.readouterr() == ("", "")
    # the seconds left as the server reckons them: the deadline sent, give or take the clocks' grain
    (service, left_s), _, (whole, default_left_s) = server.asked
    assert service == "cardgames.v1.CardGamesService" and 0 < left_s < 1.0, server.asked
    assert whole == "" and 1.5 < default_left_s < 3.5, server.asked  # the default: 3 s


def test_health_says_a_failed_check_as_the_server_said_it(capsys):
    """A failed Check is the status and the server's message (exit status 1); a status without
    a message is the status alone. Only NOT_FOUND without a message, grpc.health.v1's answer to a
    name it does not know, is said as that: a server's own NOT_FOUND message is kept."""
    from clients import health

    with _Health((grpc.StatusCode.PERMISSION_DENIED, "")) as server:
        assert health.main(["--target", server.target, "--service", "x"]) == 1
        assert capsys.readouterr().err == f"{server.target}: PERMISSION_DENIED\n"
        server.status = (grpc.StatusCode.NOT_FOUND, "no such tenant")
        assert health.main(["--target", server.target, "--service", "x"]) == 1
        assert capsys.readouterr().err == f"{server.target}: NOT_FOUND: no such tenant\n"
        server.status = (grpc.StatusCode.NOT_FOUND, "")
        assert health.main(["--target", server.target, "--service", "x"]) == 1
        assert capsys.readouterr().err == f"{server.target}: NOT_FOUND: the server has no service named 'x'\n"


def test_health_verifies_the_tls_name_given_with_the_ca_given(tmp_path, capsys):
    """``--server-name``: the TLS name verified instead of the target's host (an engine reached
    by its address whose certificate names it otherwise), against the ``--ca`` given; without
    it the handshake fails, the name matching neither."""
    from clients import health

    from .conftest import self_signed_certificate

    cert, key = self_signed_certificate(tmp_path, names="DNS:engine.test")
    with _Health("SERVING", tls=(cert, key)) as server:
        assert health.main(["--target", server.target, "--ca", str(cert), "--server-name", "engine.test"]) == 0
        assert capsys.readouterr().err == ""
        assert health.main(["--target", server.target, "--ca", str(cert)]) == 1
        assert capsys.readouterr().err.startswith(f"{server.target}: UNAVAILABLE")
    assert [service for service, _ in server.asked] == [""]


def test_health_speaks_tls_with_tls_or_a_ca_given(tmp_path, capsys):
    """``--tls`` connects with TLS, and so does ``--ca`` alone (roots to verify imply TLS, as
    for the other clients: connect(), docs/operations.md), and ``--server-name`` alone (its
    help: "implies --tls"; a name to verify on a plaintext channel would verify nothing): a
    plaintext server then fails the handshake (exit status 1, UNAVAILABLE), a TLS server whose
    certificate the CA signs answers."""
    from clients import health

    from .conftest import self_signed_certificate

    cert, key = self_signed_certificate(tmp_path)
    with _Health("SERVING") as plain:
        for flags in (["--tls"], ["--ca", str(cert)], ["--server-name", "localhost"]):
            assert health.main(["--target", plain.target, "--timeout", "1", *flags]) == 1, flags
            assert capsys.readouterr().err.startswith(f"{plain.target}: UNAVAILABLE"), flags
    assert plain.asked == []
    with _Health("SERVING", tls=(cert, key)) as secure:
        assert health.main(["--target", secure.target, "--ca", str(cert)]) == 0
        assert capsys.readouterr().err == ""


class _RestoredFromABackup(ScriptedService):
    """The first stream delivers up to seq 6 and drops (the engine stops); the engine comes back
    on a backup taken at seq 2: after_seq 6 is ahead of the match (BAD_AFTER_SEQ), and a stream
    opened without after_seq starts with the snapshot at seq 2."""

    async def watch(self, match_id, principal, after_seq):
        self.calls.append(("watch", principal, after_seq))
        opened = sum(c[0] == "watch" for c in self.calls)
        if opened == 1:
            yield api.MatchEvent("snapshot", 6, match_id, view=_view(6, seat=principal.seat))
            raise api.Unavailable("the engine stops", reason="DRAINING")
        if after_seq > 2:  # -1: none given
            raise api.BadRequest(f"after_seq {after_seq} is ahead of the match (seq 2)", reason="BAD_AFTER_SEQ",
                                 field="after_seq")
        if after_seq < 0:
            yield api.MatchEvent("snapshot", 2, match_id, view=_view(2, seat=principal.seat))
        yield api.MatchEvent("action", 3, match_id, seat=0, action="play:AS", by="player",
                             view=_view(3, seat=principal.seat))
        yield api.MatchEvent("match_ended", 3, match_id, reason="rules", view=_view(3, seat=principal.seat))


def test_watch_follows_a_match_restored_from_a_backup():
    """docs/operations.md, Backup and restore: a restored match resumes at the seq it had in the
    backup, and its players carry on. The library's resumed stream asked for the actions after
    the last seq it had delivered, ahead of the restored match: INVALID_ARGUMENT BAD_AFTER_SEQ,
    raised, so that every watching client gave its seat up. It now starts again from a snapshot
    of the match as restored, and the actions after it come as ACTION events (3 is delivered,
    though an action 3 came before the restore)."""

    async def scenario():
        service = _RestoredFromABackup()
        async with running(service) as srv, cg.connect(srv.target) as client:
            events = [(e.kind, e.seq) async for e in client.spectate("m1").watch()]
        assert events == [(match_pb2.EVENT_KIND_SNAPSHOT, 6), (match_pb2.EVENT_KIND_SNAPSHOT, 2),
                          (match_pb2.EVENT_KIND_ACTION, 3), (match_pb2.EVENT_KIND_MATCH_ENDED, 3)]
        assert [c[2] for c in service.calls if c[0] == "watch"] == [-1, 6, -1]

    run(scenario())


def test_watch_still_raises_an_after_seq_the_caller_gave_ahead_of_the_match():
    async def scenario():
        service = _RestoredFromABackup()
        service.calls.append(("watch", None, None))  # as if its first stream had been opened
        async with running(service) as srv, cg.connect(srv.target) as client:
            with pytest.raises(cg.InvalidArgument) as info:
                async for _ in client.spectate("m1").watch(after_seq=6):
                    pass
        assert info.value.reason == "BAD_AFTER_SEQ"

    run(scenario())


class _DownThenAhead(_RestoredFromABackup):
    """The first stream fails before any message (the engine is restarting); the reopening,
    with the caller's after_seq, is refused as ahead of the match (BAD_AFTER_SEQ)."""

    async def watch(self, match_id, principal, after_seq):
        if not any(c[0] == "watch" for c in self.calls):
            self.calls.append(("watch", principal, after_seq))
            raise api.Unavailable("the engine is starting", reason="DRAINING")
        async for event in super().watch(match_id, principal, after_seq):
            yield event


def test_watch_still_raises_the_callers_after_seq_ahead_of_the_match_after_a_drop():
    """BAD_AFTER_SEQ starts again from a snapshot only once the server has sent a message
    (the seq is one it delivered or took): a caller's own after_seq ahead of the match, refused
    on the reopening after a first stream that failed at once, is the caller's error as when
    the first stream is refused, not replaced by a snapshot without a word."""

    async def scenario():
        service = _DownThenAhead()
        async with running(service) as srv, cg.connect(srv.target) as client:
            with pytest.raises(cg.InvalidArgument) as info:
                async for _ in client.spectate("m1").watch(after_seq=6):
                    pass
        assert info.value.reason == "BAD_AFTER_SEQ"
        assert [c[2] for c in service.calls if c[0] == "watch"] == [6, 6]

    run(scenario())
