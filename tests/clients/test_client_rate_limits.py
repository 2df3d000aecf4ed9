"""The Python client library under the engine's request-rate limits: a call refused with
RESOURCE_EXHAUSTED / RATE_LIMITED did nothing, so every call of the library sends it again
after the RetryInfo delay the engine names, within its RetryPolicy's tries, then raises it; a
delay longer than the policy allows, and every other RESOURCE_EXHAUSTED, is raised at once.
Against a real engine process with its limits switched on, and offline with a scripted stub
for the bounds. A leave refused by a limit and then refused as unauthenticated lost no
answer: it is raised, not taken for a freed seat."""

from __future__ import annotations

import asyncio
import time
import types
from typing import Iterator

import grpc
import pytest
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

from clients import cardgames_client as cg
from clients.local_service import LocalService
from engine_service.transport.generated import match_pb2

from .conftest import run

#: A seat token gets one call at once and five a second (a refusal's delay: up to 0.2 s); an
#: address, two at once and five a second.
LIMITS = ["--rate-limit-seat-per-s", "5", "--rate-limit-seat-burst", "1",
          "--rate-limit-peer-per-s", "5", "--rate-limit-peer-burst", "2"]

#: How many times a scenario whose refusals a loaded machine's stall spared is run again
#: (a stall of 0.2 s between two calls gives their bucket its token back)
TRIES = 3


@pytest.fixture(scope="module")
def limited_engine(tmp_path_factory) -> Iterator[LocalService]:
    log = tmp_path_factory.mktemp("engine") / "engine.log"
    with LocalService(log_path=log, args=LIMITS) as service:
        yield service


class _Counting:
    """Wraps a stub: records the status code of every unary attempt ("OK" for an answer)."""

    def __init__(self, stub) -> None:
        self._stub, self.codes = stub, []

    def __getattr__(self, name):
        method = getattr(self._stub, name)

        async def call(request, **kwargs):
            try:
                reply = await method(request, **kwargs)
            except grpc.RpcError as exc:
                self.codes.append((name, exc.code().name))
                raise
            self.codes.append((name, "OK"))
            return reply

        return call


def test_calls_refused_by_a_rate_limit_are_sent_again_after_the_delay_and_go_through(limited_engine):
    """Creating, joining, viewing, submitting and leaving as fast as a script can: the engine
    refuses some (RATE_LIMITED), the library sends each again after the delay, and every call
    succeeds, applied once. A refusal needs two calls within 0.2 s: a loaded machine's stall
    between them can spare one, so a table whose run was not refused a view and a join is
    played again (once or twice at most)."""

    async def scenario():
        for _ in range(TRIES):
            refused = await table()
            if {"GetView", "JoinMatch"} <= refused:
                return
        raise AssertionError(f"{TRIES} tables, never both a view and a join refused: {refused}")

    async def table() -> set[str]:
        async with cg.connect(limited_engine.target) as client:
            stub = client.stub = _Counting(client.stub)
            match = await client.create_match("japanese_joker", seats=[None, None], options={"target_score": 11})
            sessions = [await client.join(match.match_id) for _ in range(2)]
            assert [s.seat for s in sessions] == [0, 1]  # each join took one seat
            for _ in range(3):
                view = await sessions[0].view()  # one call at once per seat: refused, then served
            mover = sessions[view.to_act]
            view = await mover.view()
            reply = await mover.submit(view.legal_actions[0].notation, view.seq)
            again = await mover.view()
            assert not reply.duplicate and reply.seq == view.seq + 1 == again.seq
            assert (await client.get_match(match.match_id)).seq == view.seq + 1
            summary = await mover.leave(resign=True)
            assert summary.status == match_pb2.MATCH_STATUS_FINISHED
            return {name for name, code in stub.codes if code == "RESOURCE_EXHAUSTED"}

    run(scenario())


def test_a_leave_of_a_waiting_match_refused_by_a_rate_limit_is_sent_again(limited_engine):
    async def scenario():
        async with cg.connect(limited_engine.target) as client:
            stub = client.stub = _Counting(client.stub)
            match = await client.create_match("japanese_joker", seats=[None, None])
            for _ in range(TRIES):  # again while a stall between the view and the leave spared it
                stub.codes.clear()
                seat = await client.join(match.match_id)
                await seat.view()
                summary = await seat.leave()  # the seat's one call a moment is spent: refused first
                assert summary.status == match_pb2.MATCH_STATUS_WAITING and not summary.seats[seat.seat].taken
                leaves = [c for n, c in stub.codes if n == "LeaveMatch"]
                if leaves != ["OK"]:
                    break
            assert leaves == ["RESOURCE_EXHAUSTED", "OK"]

    run(scenario())


def _rate_limited(delay_s: float, code: grpc.StatusCode = grpc.StatusCode.RESOURCE_EXHAUSTED,
                  reason: str = "RATE_LIMITED") -> grpc.RpcError:
    """A refusal as the engine sends it: ErrorInfo (reason), RetryInfo (delay)."""
    details = []
    delay = duration_pb2.Duration()
    delay.FromNanoseconds(int(delay_s * 1e9))
    for message in (error_details_pb2.ErrorInfo(reason=reason, domain=cg.DOMAIN, metadata={"key_kind": "seat"}),
                    error_details_pb2.RetryInfo(retry_delay=delay)):
        packed = any_pb2.Any()
        packed.Pack(message)
        details.append(packed)
    status = status_pb2.Status(code=code.value[0], message="too many requests", details=details)

    class Refused(grpc.RpcError):
        def code(self):
            return code

        def details(self):
            return "too many requests"

        def trailing_metadata(self):
            return (("grpc-status-details-bin", status.SerializeToString()),)

    return Refused()


class _Scripted:
    """A stub whose unary methods fail with the scripted errors in turn, then answer."""

    def __init__(self, failures: list[grpc.RpcError], answer) -> None:
        self.failures, self.answer, self.calls = list(failures), answer, []

    def __getattr__(self, name):
        async def call(request, **kwargs):
            self.calls.append((name, time.monotonic()))
            if name != "GetMatch" and self.failures:
                raise self.failures.pop(0)
            return self.answer

        return call


def _client(stub, **policy) -> cg.Client:
    client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                       retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002, **policy))
    client.stub = stub
    return client


def test_the_retry_waits_the_engines_delay_and_gives_up_after_the_policys_tries():
    async def scenario():
        # served after two refusals, each waited out (0.15 s), not the policy's 2 ms backoff
        stub = _Scripted([_rate_limited(0.15), _rate_limited(0.15)], cg.card_games_pb2.GetViewResponse())
        client = _client(stub)
        await cg.SeatSession(client, "m1", 0, "t").view()
        times = [at for _, at in stub.calls]
        assert len(times) == 3 and all(b - a >= 0.14 for a, b in zip(times, times[1:])), times
        # refused every time: the attempts run out and the last refusal is raised
        stub = _Scripted([_rate_limited(0.01)] * 10, cg.card_games_pb2.GetViewResponse())
        with pytest.raises(cg.ResourceExhausted) as refused:
            await cg.SeatSession(_client(stub, attempts=4), "m1", 0, "t").view()
        assert refused.value.reason == "RATE_LIMITED" and refused.value.retry_delay_s == pytest.approx(0.01)
        assert len(stub.calls) == 4
        # a delay past max_rate_limit_wait_s is not waited: raised at once
        stub = _Scripted([_rate_limited(5.0)], cg.card_games_pb2.GetViewResponse())
        with pytest.raises(cg.ResourceExhausted):
            await cg.SeatSession(_client(stub, max_rate_limit_wait_s=1.0), "m1", 0, "t").view()
        assert len(stub.calls) == 1
        # a delay of exactly max_rate_limit_wait_s is no longer than it: waited, then served
        stub = _Scripted([_rate_limited(0.05)], cg.card_games_pb2.GetViewResponse())
        await cg.SeatSession(_client(stub, max_rate_limit_wait_s=0.05), "m1", 0, "t").view()
        assert len(stub.calls) == 2 and stub.calls[1][1] - stub.calls[0][1] >= 0.04
        # a full server is no rate limit: not repeated
        stub = _Scripted([_rate_limited(0.01, reason="MAX_MATCHES")], cg.card_games_pb2.CreateMatchResponse())
        with pytest.raises(cg.ResourceExhausted) as full:
            await _client(stub).create_match("klaberjass")
        assert full.value.reason == "MAX_MATCHES" and len(stub.calls) == 1

    run(scenario())


def test_a_leave_takes_unauthenticated_for_a_freed_seat_only_after_a_lost_answer():
    """An engine that no longer remembers the leave (restarted since) answers the void token
    UNAUTHENTICATED: after a lost answer that is the seat freed (the public summary); after a
    rate limit's refusal, which did nothing, it is the error it is."""
    unauthenticated = _rate_limited(0.0, grpc.StatusCode.UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN")
    lost = _rate_limited(0.0, grpc.StatusCode.UNAVAILABLE, "")
    answer = cg.card_games_pb2.GetMatchResponse(match=cg.MatchSummary(match_id="m1"))

    async def scenario():
        stub = _Scripted([lost, unauthenticated], answer)
        assert (await cg.SeatSession(_client(stub), "m1", 0, "t").leave()).match_id == "m1"
        assert [name for name, _ in stub.calls] == ["LeaveMatch", "LeaveMatch", "GetMatch"]
        stub = _Scripted([_rate_limited(0.01), unauthenticated], answer)
        with pytest.raises(cg.Unauthenticated):
            await cg.SeatSession(_client(stub), "m1", 0, "t").leave()
        assert [name for name, _ in stub.calls] == ["LeaveMatch", "LeaveMatch"]

    run(scenario())


_NODE_LIMITED = """
const { Client } = require('./cardgames');
(async () => {
  const client = new Client(process.argv[1]);
  const codes = [];
  for (const name of ['CreateMatch', 'JoinMatch', 'GetView', 'SubmitAction', 'LeaveMatch', 'GetMatch']) {
    const method = client.stub[name].bind(client.stub);
    client.stub[name] = (request, metadata, options, callback) => method(request, metadata, options, (error, reply) => {
      codes.push([name, error ? error.code : 0]);
      callback(error, reply);
    });
  }
  const match = await client.createMatch('japanese_joker', { seats: [null, null], options: { target_score: 11 } });
  const seats = [await client.join(match.match_id), await client.join(match.match_id)];
  let view;
  for (let i = 0; i < 3; i += 1) view = await seats[0].view();
  const mover = seats[view.to_act];
  view = await mover.view();
  const reply = await mover.submit(view.legal_actions[0].notation, view.seq);
  const ended = await mover.leave(true);
  const waiting = await client.createMatch('japanese_joker', { seats: [null, null] });
  const seat = await client.join(waiting.match_id);
  await seat.view();
  const left = await seat.leave();
  console.log(JSON.stringify({ seats: seats.map((s) => s.seat), seq: Number(view.seq || 0), applied: Number(reply.seq),
                               duplicate: Boolean(reply.duplicate), ended: ended.status, left: left.status,
                               freed: !left.seats[seat.seat].taken, codes }));
  client.close();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def test_node_client_calls_refused_by_a_rate_limit_are_sent_again_and_go_through(limited_engine):
    """The Node client as the Python library: the engine refuses some of a fast script's calls
    (RATE_LIMITED, code 8), each is sent again after its delay, and all succeed, applied once."""
    import json
    import subprocess

    from .test_node_client import NODE_DIR, npm_ci

    node = npm_ci(NODE_DIR)
    for _ in range(TRIES):  # again while a loaded machine's stall spared a refusal looked for
        result = subprocess.run([node, "-e", _NODE_LIMITED, limited_engine.target], cwd=NODE_DIR,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        out = json.loads(result.stdout.strip().splitlines()[-1])
        assert out["seats"] == [0, 1] and out["applied"] == out["seq"] + 1 and not out["duplicate"]
        assert out["ended"] == "MATCH_STATUS_FINISHED"
        assert out["left"] == "MATCH_STATUS_WAITING" and out["freed"]
        refused = {name for name, code in out["codes"] if code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]}
        last_leave = [c for n, c in out["codes"] if n == "LeaveMatch"][-2:]
        if {"GetView", "JoinMatch", "LeaveMatch"} <= refused and last_leave == [8, 0]:
            break
    assert {"GetView", "JoinMatch", "LeaveMatch"} <= refused, out["codes"]
    assert last_leave == [8, 0]


def test_only_a_resource_exhausted_refusal_is_a_rate_limit():
    """The reason RATE_LIMITED on another status (a FAILED_PRECONDITION) is no refusal by a
    rate limit: it did not say "nothing was done, come back later", so it is raised at once,
    not sent again after its delay."""
    async def scenario():
        stub = _Scripted([_rate_limited(0.01, grpc.StatusCode.FAILED_PRECONDITION)], cg.card_games_pb2.GetViewResponse())
        with pytest.raises(cg.FailedPrecondition):
            await cg.SeatSession(_client(stub), "m1", 0, "t").view()
        assert len(stub.calls) == 1

    run(scenario())


def test_a_call_without_retry_is_sent_once():
    """``Client.call`` repeats a call only when asked (``retry``): a lost answer of a call
    that is not safe to repeat is raised at once; asked, it is sent again, and ``retried``
    lists each error it was repeated after."""
    lost = _rate_limited(0.0, grpc.StatusCode.UNAVAILABLE, "")
    request = cg.card_games_pb2.GetViewRequest(match_id="m1")

    async def scenario():
        stub = _Scripted([lost], cg.card_games_pb2.GetViewResponse())
        with pytest.raises(cg.Unavailable):
            await _client(stub).call(stub.GetView, request)
        assert len(stub.calls) == 1
        stub, retried = _Scripted([lost, lost], cg.card_games_pb2.GetViewResponse()), []
        await _client(stub).call(stub.GetView, request, retry=True, retried=retried)
        assert len(stub.calls) == 3 and [e.code for e in retried] == [grpc.StatusCode.UNAVAILABLE] * 2

    run(scenario())


class _LosesEachFirstAnswer:
    """A stub each of whose unary methods loses its first answer (UNAVAILABLE), then answers
    with a reply holding whatever the library reads; records (method, token, match id) of
    every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, str]] = []

    def __getattr__(self, name):
        async def call(request, *, timeout=None, metadata=None):
            self.calls.append((name, dict(metadata or ()).get("authorization"), getattr(request, "match_id", "")))
            if [c[0] for c in self.calls].count(name) == 1:
                raise _rate_limited(0.0, grpc.StatusCode.UNAVAILABLE, "")
            return types.SimpleNamespace(games=["g"], bots=["b"], load_failures=[], matches=[], next_page_token="",
                                         deals=["d"], view=cg.View(match_id="m7"), match=cg.MatchSummary(match_id="m7"),
                                         match_id="m7", seat=1, seat_token="s")

        return call


def test_every_call_of_the_library_repeats_a_lost_answer():
    """Each call the library makes is safe to repeat (a read, or made idempotent by its
    client id) and is repeated after a lost answer, with its match and token each time (the
    client's admin token on CreateMatch and on a RevealDeals without a seat token)."""
    async def scenario():
        client = _client(_LosesEachFirstAnswer())
        client._admin_token = "admin"
        seat = cg.SeatSession(client, "m7", 0, "seat")
        summary = cg.MatchSummary(match_id="m7")
        for name, do, token, match_id, answer in [
                ("ListGames", client.list_games, None, "", ["g"]), ("ListBots", client.list_bots, None, "", ["b"]),
                ("GetMatch", lambda: client.get_match("m7"), None, "m7", summary),
                ("ListOpenMatches", client.list_open_matches, None, "", []),
                ("CreateMatch", lambda: client.create_match("klaberjass"), "Bearer admin", "", summary),
                ("RevealDeals", lambda: client.reveal_deals("m7"), "Bearer admin", "m7", ["d"]),
                ("RevealDeals", lambda: client.reveal_deals("m7", token="seat"), "Bearer seat", "m7", ["d"]),
                ("RevealDeals", seat.reveal_deals, "Bearer seat", "m7", ["d"]),
                ("GetView", seat.view, "Bearer seat", "m7", cg.View(match_id="m7")),
                ("SubmitAction", lambda: seat.submit("7S", 3), "Bearer seat", "m7", None),
                ("LeaveMatch", seat.leave, "Bearer seat", "m7", summary)]:
            client.stub = _LosesEachFirstAnswer()
            reply = await do()
            assert client.stub.calls == [(name, token, match_id)] * 2, name
            assert answer is None or reply == answer, name
        client.stub = _LosesEachFirstAnswer()
        joined = await client.join("m7")
        assert client.stub.calls == [("JoinMatch", None, "m7")] * 2
        assert (joined.match_id, joined.seat, joined.token) == ("m7", 1, "s")

    run(scenario())


def _refusal(code: grpc.StatusCode, reason: str, view: cg.View | None = None) -> grpc.RpcError:
    """A refusal with the engine's ErrorInfo (reason) and, for a stale seq, the current View."""
    details = []
    for message in [error_details_pb2.ErrorInfo(reason=reason, domain=cg.DOMAIN)] + ([view] if view is not None else []):
        packed = any_pb2.Any()
        packed.Pack(message)
        details.append(packed)
    status = status_pb2.Status(code=code.value[0], message=reason, details=details)

    class Refused(grpc.RpcError):
        def code(self):
            return code

        def details(self):
            return reason

        def trailing_metadata(self):
            return (("grpc-status-details-bin", status.SerializeToString()),)

    return Refused()


class _Table:
    """A stub for ``act``: SubmitAction fails with the scripted errors in turn, then answers;
    GetView answers ``current``; records each submitted (action, expected_seq)."""

    def __init__(self, failures: list[grpc.RpcError], current: cg.View) -> None:
        self.failures, self.current, self.submitted = list(failures), current, []

    async def SubmitAction(self, request, **kwargs):
        self.submitted.append((request.action, request.expected_seq))
        if self.failures:
            raise self.failures.pop(0)
        return cg.card_games_pb2.SubmitActionResponse(seq=request.expected_seq + 1)

    async def GetView(self, request, **kwargs):
        return cg.card_games_pb2.GetViewResponse(view=self.current)


def test_act_decides_only_on_its_turn_and_again_on_each_fresh_view():
    """Offline: ``act`` asks ``decide`` only while the view is this seat's turn of a match not
    over; a stale seq is decided again on the view the error carries (fetched when it carries
    none), MATCH_NOT_ACTIVE answers None, another refusal is raised, and ``max_stale`` stale
    views in a row more than allowed raise StaleSequence with the last view."""
    active, finished = match_pb2.MATCH_STATUS_ACTIVE, match_pb2.MATCH_STATUS_FINISHED

    def view(seq: int, to_act: int = 0, status: int = active) -> cg.View:
        return cg.View(match_id="m1", seq=seq, seat=0, to_act=to_act, status=status)

    async def scenario():
        decided: list[int] = []

        async def decide(v):  # awaited
            decided.append(v.seq)
            return f"a{v.seq}"

        def act(table, current, **kwargs):
            client = _client(table)
            return cg.SeatSession(client, "m1", 0, "t").act(decide, current, **kwargs)

        for current in (view(1, to_act=1), view(1, status=finished)):
            table = _Table([], view(1))
            assert await act(table, current) is None and table.submitted == [] and decided == []
        table = _Table([_refusal(grpc.StatusCode.ABORTED, "STALE_SEQUENCE", view(4)),
                        _refusal(grpc.StatusCode.ABORTED, "STALE_SEQUENCE", cg.View()),  # empty: fetched
                        _refusal(grpc.StatusCode.ABORTED, "STALE_SEQUENCE")], view(6))  # none: fetched
        assert (await act(table, view(2))).seq == 7
        assert table.submitted == [("a2", 2), ("a4", 4), ("a6", 6), ("a6", 6)] and decided == [2, 4, 6, 6]
        table = _Table([_refusal(grpc.StatusCode.ABORTED, "STALE_SEQUENCE", view(4, to_act=1))], view(9))
        assert await act(table, view(2)) is None and table.submitted == [("a2", 2)]
        table = _Table([_refusal(grpc.StatusCode.FAILED_PRECONDITION, "MATCH_NOT_ACTIVE")], view(9))
        assert await act(table, view(2)) is None
        table = _Table([_refusal(grpc.StatusCode.FAILED_PRECONDITION, "ILLEGAL_ACTION")], view(9))
        with pytest.raises(cg.FailedPrecondition):
            await act(table, view(2))
        table = _Table([_refusal(grpc.StatusCode.ABORTED, "STALE_SEQUENCE", view(s)) for s in (3, 4, 5)], view(9))
        with pytest.raises(cg.StaleSequence) as stale:
            await act(table, view(2), max_stale=2)
        assert stale.value.view.seq == 5 and "stale 3 times" in str(stale.value) and len(table.submitted) == 3
        assert stale.value.reason == "STALE_SEQUENCE"
        table = _Table([_refusal(grpc.StatusCode.ABORTED, "STALE_SEQUENCE", view(s)) for s in range(3, 9)], view(9))
        with pytest.raises(cg.StaleSequence):
            await act(table, view(2))  # by default, six tries
        assert len(table.submitted) == 6
        table = _Table([], view(8))
        reply = await cg.SeatSession(_client(table), "m1", 0, "t").act(lambda v: f"b{v.seq}", view(8))  # not awaited
        assert reply.seq == 9 and table.submitted == [("b8", 8)]
        table = _Table([], view(8))
        assert (await act(table, None)).seq == 9 and table.submitted == [("a8", 8)]  # no view: fetched

    run(scenario())


def test_a_watch_reopening_refused_by_a_rate_limit_waits_its_delay():
    """docs/api.md, "Rate limits": a reopening of ``watch`` that was refused waits the
    RetryInfo delay, however short the backoff (here 2 ms at most), and counts as a failed
    reopening: the ``reconnecting`` it is told has attempt 2 and a delay of at least 0.3 s; a
    refusal naming no delay waits the backoff."""
    from .test_cardgames_client import _Dropped, _event, _ScriptedStreams

    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED

    class Timed(_ScriptedStreams):
        def WatchMatch(self, request, metadata=None):
            self.at = getattr(self, "at", []) + [time.monotonic()]
            return super().WatchMatch(request, metadata)

    async def scenario():
        stub = Timed([([_event(action, 3)], _Dropped()), ([], _rate_limited(0.3)),
                      ([], _refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")),  # no delay named
                      ([_event(ended, 3)], None)])
        heard = []
        seen = [(e.kind, e.seq) async for e in cg.Spectator(_client(stub), "m1", None).watch(
            on_connection=lambda s: heard.append((s.state, s.attempt, s.error and s.error.reason, s.delay_s)))]
        return stub, heard, seen

    stub, heard, seen = run(scenario())
    assert seen == [(action, 3), (ended, 3)] and stub.opened == [None, 3, 3, 3]
    assert [h[:3] for h in heard] == [(cg.RECONNECTING, 1, ""), (cg.RECONNECTING, 2, "RATE_LIMITED"),
                                      (cg.RECONNECTING, 3, "RATE_LIMITED"), (cg.RESUMED, 3, None)]
    assert heard[0][3] <= 0.002 and heard[1][3] >= 0.3 and heard[2][3] <= 0.002  # the last: the backoff
    assert stub.at[2] - stub.at[1] >= 0.29, stub.at


def test_a_watch_reopening_refused_with_rate_limited_under_another_code_is_raised():
    """A rate limit's refusal is RESOURCE_EXHAUSTED with reason RATE_LIMITED (docs/api.md,
    "Rate limits"): a reopening refused with that reason under another code (here
    FAILED_PRECONDITION) is no rate limit and is raised, as ``Client.call`` raises it (the
    watch took the reason alone and waited to reopen)."""
    from .test_cardgames_client import _Dropped, _event, _ScriptedStreams

    action = match_pb2.EVENT_KIND_ACTION
    stub = _ScriptedStreams([([_event(action, 3)], _Dropped()),
                             ([], _rate_limited(0.0, grpc.StatusCode.FAILED_PRECONDITION))])

    async def scenario():
        return [(e.kind, e.seq) async for e in cg.Spectator(_client(stub), "m1", None).watch()]

    with pytest.raises(cg.CardGamesError) as refused:
        run(scenario())
    assert (refused.value.code, refused.value.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "RATE_LIMITED")
    assert stub.opened == [None, 3]


def test_between_tries_a_call_waits_its_backoff_or_the_rate_limits_longer_delay(monkeypatch):
    """``Client.call`` waits the policy's jittered backoff between two tries, and after a rate
    limit's refusal its RetryInfo delay when that is longer (RetryPolicy's docstring): a lost
    answer waits the backoff only, and so does a RATE_LIMITED refusal that names no delay."""
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay, *args):
        waits.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(cg.random, "uniform", lambda low, high: high)  # the backoff: its bound
    lost = _rate_limited(0.0, grpc.StatusCode.UNAVAILABLE, "")

    async def scenario():
        monkeypatch.setattr(cg.asyncio, "sleep", sleep)
        stub = _Scripted([lost, _refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED"), _rate_limited(0.25)],
                         cg.card_games_pb2.GetViewResponse())
        await cg.SeatSession(_client(stub), "m1", 0, "t").view()
        monkeypatch.undo()
        return len(stub.calls)

    assert run(scenario()) == 4
    assert waits == [0.001, 0.002, 0.25]  # backoffs of 1 ms, 2 ms (the policy's most), then the delay
