"""The Python client library (clients/cardgames_client.py), offline: what the second half of the
module (the watch's reopenings, the sessions, the admin client, the command-line helpers)
promises and no other test held it to (found by mutation testing)."""

from __future__ import annotations

import argparse
import asyncio
import time

import grpc
import pytest

from clients import cardgames_client as cg
from engine_service.transport.generated import admin_pb2, card_games_pb2, match_pb2

from .conftest import run
from .test_cardgames_client import _Dropped, _event, _ScriptedStreams


def _watch_states(scripts, monkeypatch, **policy) -> tuple[list, list[cg.StreamState]]:
    """The events a spectator's watch delivers over the scripted streams and the states its
    hook hears, the backoff's jitter at its bound (``random.uniform`` answers its high end)."""
    monkeypatch.setattr(cg.random, "uniform", lambda low, high: high)

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"), retry=cg.RetryPolicy(**policy))
        try:
            client.stub = _ScriptedStreams(scripts)
            heard: list[cg.StreamState] = []
            seen = [(e.kind, e.seq) async for e in client.spectate("m1").watch(on_connection=heard.append)]
            return seen, heard
        finally:
            await client.close()

    return run(scenario(), timeout_s=30)


def test_a_watchs_reopenings_back_off_exponentially_from_the_policys_initial_backoff(monkeypatch):
    """RetryPolicy: "exponential backoff with full jitter between initial_backoff_s and
    max_backoff_s", which the watch's reopenings after a drop use too (its docstring: "after a
    jittered backoff"): the bound doubles with each reopening in a row (1, 2, 4, 8, 16 ms) and
    starts again from the initial backoff once an event came."""
    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED
    cut = _Dropped(grpc.StatusCode.CANCELLED)  # resumable; waited in full (no channel to wait on)
    seen, heard = _watch_states([([_event(action, 1)], cut)] + [([], cut)] * 4 + [([_event(action, 2)], cut),
                                                                                     ([_event(ended, 2)], None)],
                                monkeypatch, initial_backoff_s=0.001, max_backoff_s=1.0)
    assert seen == [(action, 1), (action, 2), (ended, 2)]
    assert [(h.state, h.attempt, h.delay_s) for h in heard] == [
        (cg.RECONNECTING, 1, 0.001), (cg.RECONNECTING, 2, 0.002), (cg.RECONNECTING, 3, 0.004),
        (cg.RECONNECTING, 4, 0.008), (cg.RECONNECTING, 5, 0.016), (cg.RESUMED, 5, 0.0),
        (cg.RECONNECTING, 1, 0.001), (cg.RESUMED, 1, 0.0)]


def test_a_watchs_reopenings_reach_the_policys_maximum_backoff(monkeypatch):
    """The watch's backoff grows to the policy's ``max_backoff_s`` (RetryPolicy: "between
    initial_backoff_s and max_backoff_s"), however far that is above the initial backoff: it
    stopped growing at 64 times the initial one, so a policy of 1 ms to 1 s never waited more
    than 64 ms between reopenings of an engine that stayed down."""
    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED
    cut = _Dropped(grpc.StatusCode.CANCELLED)
    waited = []
    monkeypatch.setattr(cg, "_pause", lambda channel, delay_s, error: asyncio.sleep(0, waited.append(delay_s)))
    _, heard = _watch_states([([_event(action, 1)], cut)] + [([], cut)] * 11 + [([_event(ended, 1)], None)],
                             monkeypatch, initial_backoff_s=0.001, max_backoff_s=1.0)
    assert waited == [h.delay_s for h in heard if h.state == cg.RECONNECTING]
    assert waited == [0.001 * 2 ** i for i in range(10)] + [1.0, 1.0]


def test_a_watch_keeps_reopening_however_long_the_engine_stays_unreachable(monkeypatch):
    """``max_failures=None``: "keep trying while the server is unreachable". The 1,100th
    reopening in a row is waited as the others and the stream comes back: the backoff's
    exponent is capped (``2 ** 1100`` times a float is an OverflowError, which ended the
    watch)."""
    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED
    cut = _Dropped(grpc.StatusCode.CANCELLED)
    seen, heard = _watch_states([([_event(action, 1)], cut)] + [([], cut)] * 1100 + [([_event(ended, 1)], None)],
                                monkeypatch, initial_backoff_s=0.0, max_backoff_s=0.0)
    assert seen == [(action, 1), (ended, 1)]
    assert len(heard) == 1102 and heard[-2].attempt == 1101 and heard[-1].state == cg.RESUMED


def test_the_admins_page_by_page_listing_sends_its_filters_page_size_and_token_with_every_page():
    """:meth:`AdminClient.all_matches` ("``limit``: the page size, from ``page_token`` on") and
    :meth:`AdminClient.list_matches` ask each page with the caller's status, game, page size
    and, for the first, the caller's page token; the next pages follow ``next_page_token``
    with the same filters (docs/api.md, "Paging": else BAD_PAGE_TOKEN)."""
    class Listings:
        def __init__(self) -> None:
            self.requests: list = []

        async def ListMatches(self, request, timeout=None, metadata=None):
            self.requests.append((request.status, request.game, request.limit, request.page_token))
            token = {"t": "u", "u": ""}.get(request.page_token, "")
            return admin_pb2.ListMatchesResponse(matches=[match_pb2.MatchSummary(match_id=request.page_token)],
                                                 next_page_token=token)

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"), admin_token="t0ken")
        try:
            client.admin.stub = listings = Listings()
            assert [m.match_id async for m in client.admin.all_matches(2, "jojotte", 5, "t")] == ["t", "u"]
            assert [m.match_id for m in await client.admin.list_matches(2, "jojotte", 5, "u")] == ["u"]
            return listings.requests
        finally:
            await client.close()

    assert run(scenario()) == [(2, "jojotte", 5, "t"), (2, "jojotte", 5, "u"), (2, "jojotte", 5, "u")]


def test_a_session_for_a_seat_joined_earlier_is_that_seats():
    """:meth:`Client.seat_session` ("a session for a seat joined earlier"): the session is the
    seat given, with its match and token (its repr names the seat, never the token)."""

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"))
        try:
            session = client.seat_session("m1", 1, "seat-token")
            return session.match_id, session.seat, session.token, repr(session)
        finally:
            await client.close()

    assert run(scenario()) == ("m1", 1, "seat-token", "SeatSession(match_id='m1', seat=1)")


def test_a_turn_time_reaches_the_engine_to_the_nanosecond():
    """``create_match(turn_time_s=33.3)`` asks for a turn of 33.3 s, not 33.299999999 s
    (``33.3 * 1e9`` is 33299999999.999996 as a float: the nanoseconds are rounded, not cut)."""
    class Creating:
        async def CreateMatch(self, request, timeout=None, metadata=None):
            self.turn_time = (request.turn_time.seconds, request.turn_time.nanos)
            return card_games_pb2.CreateMatchResponse()

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"))
        try:
            client.stub = stub = Creating()
            await client.create_match("japanese_joker", turn_time_s=33.3)
            return stub.turn_time
        finally:
            await client.close()

    assert run(scenario()) == (33, 300_000_000)


def test_a_port_of_digits_that_are_not_ascii_is_no_port():
    """``_target_problem``: the text after the last ``:`` is the port "when it is all digits",
    the ASCII digits a port is written with: ``host:١٢٣`` (Arabic-Indic digits, which Python's
    ``int`` reads as 123) names no port gRPC would dial, and is refused as one that is no
    number, by :func:`connect` and by the clients' ``--target``."""
    target = "127.0.0.1:\u0661\u0662\u0663"
    with pytest.raises(ValueError) as refused:
        cg.connect(target)
    assert "has port '\u0661\u0662\u0663', not a number from 1 to 65535" in str(refused.value)
    with pytest.raises(argparse.ArgumentTypeError):
        cg.target_arg(target)


class _LostLeave:
    """A stub whose LeaveMatch loses its first answer (UNAVAILABLE) and then refuses the retry
    with ``then`` (a code and reason); GetMatch answers the match asked about, recorded."""

    def __init__(self, then: grpc.StatusCode, reason: str) -> None:
        from .test_client_rate_limits import _rate_limited

        self.failures = [_rate_limited(0.0, grpc.StatusCode.UNAVAILABLE, ""), _rate_limited(0.0, then, reason)]
        self.asked: list[str] = []

    async def LeaveMatch(self, request, timeout=None, metadata=None):
        raise self.failures.pop(0)

    async def GetMatch(self, request, timeout=None, metadata=None):
        self.asked.append(request.match_id)
        return card_games_pb2.GetMatchResponse(match=match_pb2.MatchSummary(match_id=request.match_id))


def _with_stub(stub, act):
    """``act(client)`` on a client over ``stub`` whose retries wait at most 2 ms."""
    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        try:
            client.stub = stub
            return await act(client)
        finally:
            await client.close()
    return run(scenario())


def test_a_leave_whose_answer_was_lost_answers_the_summary_of_its_own_match():
    """:meth:`SeatSession.leave`: an engine that no longer remembers a leave whose answer was
    lost answers the freed seat's token UNAUTHENTICATED, and "the match's public summary is
    returned instead": GetMatch of the session's match, as :meth:`SeatSession.summary` asks."""
    stub = _LostLeave(grpc.StatusCode.UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN")

    async def act(client):
        session = client.seat_session("m7", 1, "seat-token")
        return (await session.leave()).match_id, (await session.summary()).match_id

    assert _with_stub(stub, act) == ("m7", "m7") and stub.asked == ["m7", "m7"]


def test_a_leave_whose_answer_was_lost_raises_a_refusal_other_than_unauthenticated():
    """Only the void token's UNAUTHENTICATED means that the lost leave freed the seat
    (:meth:`SeatSession.leave`): another refusal after a lost answer (NOT_FOUND: the match is
    gone) is raised, no summary fetched in its place."""
    stub = _LostLeave(grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND")

    async def act(client):
        with pytest.raises(cg.NotFound):
            await client.seat_session("m7", 1, "seat-token").leave()

    _with_stub(stub, act)
    assert stub.asked == []


def test_a_watch_whose_first_opening_a_rate_limit_refused_waits_the_delay_it_names():
    """The watch's docstring: a reopening waits "at least the RetryInfo delay when the
    reopening was rate limited", and the first opening refused by a rate limit (it did
    nothing, as every refused call: the module's docstring) is opened again after that delay
    too, however short the backoff: ``reconnecting`` (attempt 1) names a delay of at least
    0.3 s."""
    from .test_client_rate_limits import _rate_limited

    ended = match_pb2.EVENT_KIND_MATCH_ENDED

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        try:
            client.stub = _ScriptedStreams([([], _rate_limited(0.3)), ([_event(ended, 4)], None)])
            heard: list[cg.StreamState] = []
            seen = [(e.kind, e.seq) async for e in client.spectate("m1").watch(on_connection=heard.append)]
            return seen, client.stub.opened, heard
        finally:
            await client.close()

    seen, opened, heard = run(scenario(), timeout_s=30)
    assert seen == [(ended, 4)] and opened == [None, None]
    assert [(h.state, h.attempt, h.error and h.error.reason) for h in heard] == [
        (cg.RECONNECTING, 1, "RATE_LIMITED"), (cg.RESUMED, 1, None)]
    assert heard[0].delay_s >= 0.3


def test_a_cleanly_ended_stream_asks_whether_its_own_match_is_over():
    """A stream the server ended cleanly is reopened unless "the match is over" (the watch's
    code: a draining server, or a match whose end was seen before a reconnect): the match
    asked about (GetMatch) is the watched one, here a finished one, so nothing is reopened."""
    action = match_pb2.EVENT_KIND_ACTION

    class Over(_ScriptedStreams):
        asked: list[str] = []

        async def GetMatch(self, request, timeout=None, metadata=None):
            self.asked = self.asked + [request.match_id]
            finished = match_pb2.MATCH_STATUS_FINISHED if request.match_id == "m1" else match_pb2.MATCH_STATUS_ACTIVE
            return card_games_pb2.GetMatchResponse(match=match_pb2.MatchSummary(match_id=request.match_id,
                                                                                status=finished))

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        try:
            client.stub = Over([([_event(action, 1)], None), ([_event(action, 2)], None)])
            seen = [e.seq async for e in client.spectate("m1").watch()]
            return seen, client.stub.opened, client.stub.asked
        finally:
            await client.close()

    assert run(scenario(), timeout_s=30) == ([1], [None], ["m1"])


def test_act_gives_up_on_views_stale_too_often_with_the_stale_sequence_status():
    """``act`` past ``max_stale`` raises :class:`StaleSequence` as the server's own stale
    refusal is raised: status ABORTED, reason STALE_SEQUENCE (docs/api.md), the last view."""
    from .test_client_rate_limits import _client, _refusal, _Table

    def view(seq: int) -> cg.View:
        return cg.View(match_id="m1", seq=seq, seat=0, to_act=0, status=match_pb2.MATCH_STATUS_ACTIVE)

    async def scenario():
        table = _Table([_refusal(grpc.StatusCode.ABORTED, "STALE_SEQUENCE", view(3))], view(9))
        with pytest.raises(cg.StaleSequence) as stale:
            await cg.SeatSession(_client(table), "m1", 0, "t").act(lambda v: "a", view(2), max_stale=0)
        return stale.value

    stale = run(scenario())
    assert (stale.code, stale.reason, stale.view.seq) == (grpc.StatusCode.ABORTED, "STALE_SEQUENCE", 3)


def test_a_watch_cut_on_a_view_of_an_ended_match_at_seq_0_reopens_after_seq_0():
    """The watch's docstring: only "while the view last delivered is still WAITING (or none
    was delivered and the last sequence number is 0)" is a stream reopened without
    ``after_seq``. A match terminated before its first action is no longer WAITING at seq 0:
    its stream, cut before MATCH_ENDED, reopens after seq 0, not with a second SNAPSHOT."""
    snapshot, ended = match_pb2.EVENT_KIND_SNAPSHOT, match_pb2.EVENT_KIND_MATCH_ENDED
    terminated = cg.Event(kind=snapshot, seq=0, view=cg.View(seq=0, status=match_pb2.MATCH_STATUS_TERMINATED))

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        try:
            client.stub = _ScriptedStreams([([terminated], _Dropped()), ([_event(ended, 0)], None)])
            seen = [(e.kind, e.seq) async for e in client.spectate("m1").watch()]
            return seen, client.stub.opened
        finally:
            await client.close()

    assert run(scenario(), timeout_s=30) == ([(snapshot, 0), (ended, 0)], [None, 0])


def test_a_watch_allowed_no_reconnection_gives_up_at_the_first_drop():
    """``max_failures``: the iterator raises "after ``max_failures`` reconnections in a row that
    delivered nothing (None: keep trying ...)": 0 allows none, so the first drop is given up
    (``gave_up``, attempt 0) and raised, the stream never reopened."""
    ended = match_pb2.EVENT_KIND_MATCH_ENDED

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        try:
            client.stub = _ScriptedStreams([([], _Dropped()), ([_event(ended, 1)], None)])
            heard: list[cg.StreamState] = []
            with pytest.raises(cg.Unavailable):
                async for _ in client.spectate("m1").watch(max_failures=0, on_connection=heard.append):
                    pass
            return client.stub.opened, [(h.state, h.attempt, h.max_attempts) for h in heard]
        finally:
            await client.close()

    assert run(scenario(), timeout_s=30) == ([None], [(cg.GAVE_UP, 0, 0)])


def test_a_reopening_waits_for_an_unreachable_engine_no_longer_than_its_delay():
    """``_pause`` after an UNAVAILABLE on a channel that never connects again: the delay, "at the
    latest" (its docstring: the wait for the channel only cuts the delay short). A delay of
    1 s ends well before 10 s, ten times it, however loaded the machine."""

    class NeverConnects:
        def get_state(self, try_to_connect=False):
            return grpc.ChannelConnectivity.TRANSIENT_FAILURE

        async def wait_for_state_change(self, state):
            await asyncio.Event().wait()

    async def paused() -> float:
        started = time.monotonic()
        await cg._pause(NeverConnects(), 1.0, cg.Unavailable(grpc.StatusCode.UNAVAILABLE, "down"))
        return time.monotonic() - started

    assert 0.99 <= run(paused(), timeout_s=30) < 9.5


def test_the_server_clock_takes_an_event_without_details_as_no_reading():
    """clients/remote_bot.py hands :meth:`ServerClock.heard` None for an event without
    ``details`` (a server before 2026-12-04 names no ``server_time``): no reading, and the
    clocks are still taken to agree (the class's docstring), not an AttributeError of None."""
    clock = cg.ServerClock()
    clock.heard(None, time.time())
    assert clock.offset_s is None
    assert abs(clock.now() - time.time()) < 1.0


def test_a_spectator_of_a_client_with_the_admin_token_sends_no_token():
    """:meth:`Client.spectate`: "a spectator of a match (no token ...)", which sees "the public
    information only" (:class:`Spectator`). A client made with the admin token spectates
    without it, its view and its watch alike: the admin's audience sees everything, every
    hand included (docs/api.md, The view), which a spectator's screen must never get."""
    ended = match_pb2.EVENT_KIND_MATCH_ENDED

    class Recording(_ScriptedStreams):
        sent: list = []

        def WatchMatch(self, request, metadata=None):
            self.sent = self.sent + [("WatchMatch", dict(metadata or ()).get("authorization"))]
            return super().WatchMatch(request, metadata)

        async def GetView(self, request, timeout=None, metadata=None):
            self.sent = self.sent + [("GetView", dict(metadata or ()).get("authorization"))]
            return card_games_pb2.GetViewResponse(view=cg.View(match_id=request.match_id))

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"), admin_token="admin-secret")
        try:
            client.stub = Recording([([_event(ended, 1)], None)])
            spectator = client.spectate("m1")
            await spectator.view()
            assert [e.seq async for e in spectator.watch()] == [1]
            return spectator.token, client.stub.sent
        finally:
            await client.close()

    assert run(scenario(), timeout_s=30) == (None, [("GetView", None), ("WatchMatch", None)])
