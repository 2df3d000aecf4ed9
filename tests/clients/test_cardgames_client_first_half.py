"""The Python client library (clients/cardgames_client.py), its values, errors, retries and
requests, offline: what a mutation run of the first half of the module (connection,
RetryPolicy, errors, Client's calls, the match and seat helpers) found no test to pin."""

from __future__ import annotations

import hashlib

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from clients import cardgames_client as cg
from engine_service.transport.generated import match_pb2

from .conftest import run
from .test_cardgames_client import _Dropped, _event, _Recorder, _ScriptedStreams, committed_deal


def _quick_client(stub) -> cg.Client:
    """A client of ``stub`` whose retries wait a millisecond or two."""
    client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                       retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
    client.stub = stub
    return client


def _refused(code: grpc.StatusCode, reason: str) -> grpc.RpcError:
    """A refusal as the engine sends it: its ErrorInfo (domain cardgames.v1, ``reason``)."""
    packed = any_pb2.Any()
    packed.Pack(error_details_pb2.ErrorInfo(reason=reason, domain=cg.DOMAIN))
    status = status_pb2.Status(code=code.value[0], message="refused", details=[packed])

    class Refused(grpc.RpcError):
        def code(self):
            return code

        def details(self):
            return "refused"

        def trailing_metadata(self):
            return (("grpc-status-details-bin", status.SerializeToString()),)

    return Refused()


def test_python_value_of_an_unset_option_value_is_none():
    """python_value's docstring: "None when unset", not an empty value of some type."""
    assert cg.python_value(match_pb2.OptionValue()) is None
    assert cg.python_value(cg.option_value("")) == "" and cg.python_value(cg.option_value(0)) == 0


def test_legal_notations_keep_the_servers_order():
    """legal_notations: "in the server's order" (a bot or --autoplay first takes the first)."""
    view = cg.View(legal_actions=[{"notation": n} for n in ("pass", "bid:80", "bid:100")])
    assert cg.legal_notations(view) == ["pass", "bid:80", "bid:100"]


def test_is_my_turn_needs_a_seat_and_a_seat_to_act():
    """View.seat is "unset for a spectator and the admin", View.to_act "unset while nobody can"
    (proto/cardgames/v1/match.proto): a spectator is never on turn (its unset seat reads 0),
    nor is seat 0 while nobody is to act (its unset to_act reads 0)."""
    assert cg.is_my_turn(cg.View(seat=0, to_act=0)) and cg.is_my_turn(cg.View(seat=2, to_act=2))
    assert not cg.is_my_turn(cg.View(seat=1, to_act=0))
    assert not cg.is_my_turn(cg.View(to_act=0))  # a spectator's view
    assert not cg.is_my_turn(cg.View(seat=0))  # a waiting match, a deal being dealt, the end


def test_a_match_ended_by_the_rules_or_by_the_admin_is_finished():
    """is_finished: FINISHED (the rules, a resignation, a forfeit) and TERMINATED (the admin)
    both end a match; WAITING, ACTIVE and an unspecified status do not."""
    assert cg.is_finished(match_pb2.MATCH_STATUS_FINISHED) and cg.is_finished(match_pb2.MATCH_STATUS_TERMINATED)
    for status in (match_pb2.MATCH_STATUS_UNSPECIFIED, match_pb2.MATCH_STATUS_WAITING, match_pb2.MATCH_STATUS_ACTIVE):
        assert not cg.is_finished(status), status


def test_a_full_servers_refusal_is_raised_at_once_not_sent_again():
    """docs/api.md, "Reconnecting", Rate limits: "Other RESOURCE_EXHAUSTED reasons (a full
    server) are not repeated": only RATE_LIMITED says nothing was done, come back later."""
    async def scenario():
        for reason in ("MAX_MATCHES", "MAX_WAITING_MATCHES", "LIMIT_EXCEEDED", ""):
            stub = _Recorder(error=_refused(grpc.StatusCode.RESOURCE_EXHAUSTED, reason))
            client = _quick_client(stub)
            try:
                with pytest.raises(cg.ResourceExhausted) as caught:
                    await client.create_match("klaberjass")
            finally:
                await client.close()
            assert caught.value.reason == reason and [name for name, *_ in stub.calls] == ["CreateMatch"], reason

    run(scenario(), timeout_s=30)


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                                  grpc.StatusCode.CANCELLED])
def test_a_stream_ended_unavailable_deadline_exceeded_or_cancelled_is_reopened_every_time(code):
    """docs/api.md, "Reconnecting": both libraries treat a stream that failed with
    UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED as dropped, and reopen it with after_seq as
    often as it drops (only INTERNAL / UNKNOWN are given up the fourth time in a row)."""
    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED

    async def scenario():
        client = _quick_client(_ScriptedStreams([([_event(action, 3)], _Dropped(code))] + [([], _Dropped(code))] * 4
                                                + [([_event(action, 4), _event(ended, 4)], None)]))
        try:
            seen = [(event.kind, event.seq) async for event in client.spectate("m1").watch(2)]
            return seen, client.stub.opened
        finally:
            await client.close()

    seen, opened = run(scenario(), timeout_s=30)
    assert seen == [(action, 3), (action, 4), (ended, 4)]
    assert opened == [2] + [3] * 5


@pytest.mark.parametrize("code", [grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN])
def test_a_stream_ended_internal_or_unknown_is_reopened_three_times_in_a_row(code):
    """docs/api.md, "Reconnecting": a stream that failed with INTERNAL or UNKNOWN (what a
    broken HTTP/2 stream, RST_STREAM, can end with) is reopened too, but only 3 times in a row
    without an event in between: the fourth such failure is raised."""
    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED

    async def scenario():
        client = _quick_client(_ScriptedStreams([([_event(action, 3)], _Dropped(code))] + [([], _Dropped(code))] * 2
                                                + [([_event(action, 4), _event(ended, 4)], None)]))
        try:
            seen = [(event.kind, event.seq) async for event in client.spectate("m1").watch(2)]
            client.stub = _ScriptedStreams([([], _Dropped(code))] * 5)
            with pytest.raises(cg.CardGamesError) as caught:
                async for _ in client.spectate("m1").watch(2):
                    pass
            return seen, caught.value.code, client.stub.opened
        finally:
            await client.close()

    seen, raised, opened = run(scenario(), timeout_s=30)
    assert seen == [(action, 3), (action, 4), (ended, 4)]
    assert raised == code and opened == [2] * 4


def _salts(count: int) -> list[str]:
    return [hashlib.sha256(f"salt {i}".encode()).hexdigest()[:32] for i in range(count)]


def test_verify_deal_refuses_a_hidden_hash_given_twice():
    """docs/api.md, "Fair dealing": "no card salt twice and no hidden hash twice" (two hidden
    positions of one hash are one salted card twice). The reveal below opens its commitment:
    only that check refuses it, with the pack or without."""
    pack = list(cg.PACKS["klaberjass"])
    salts = _salts(32)
    salts[31] = salts[30]
    reveal, c = committed_deal(pack[:31] + [pack[30]], salts, 20)
    assert reveal.card_hashes[30] == reveal.card_hashes[31] != ""
    assert cg.verify_deal(reveal, c) is False and cg.verify_deal(reveal, c, pack=pack) is False
    genuine, c = committed_deal(pack, _salts(32), 20)
    assert cg.verify_deal(genuine, c, pack=pack)


def test_verify_deal_refuses_a_hidden_position_that_names_a_salt():
    """docs/api.md, "Fair dealing": a hidden position has "no card, no salt and a hash"; one
    that shows its salt is of the wrong form, though the commitment (over its hash) opens."""
    pack = list(cg.PACKS["klaberjass"])
    salts = _salts(32)
    reveal, c = committed_deal(pack, salts, 20)
    reveal.card_salts[25] = salts[25]
    assert cg.verify_deal(reveal, c) is False and cg.verify_deal(reveal, c, pack=pack) is False


@pytest.mark.parametrize("name", ["initial_backoff_s", "max_backoff_s", "max_rate_limit_wait_s"])
def test_a_retry_policy_wait_of_true_or_false_is_refused(name):
    """A RetryPolicy's wait "must be a number of seconds": a bool (an int to Python) is no
    such number, refused where the policy is made, as ``attempts=True`` is."""
    for flag in (True, False):
        with pytest.raises(ValueError, match=rf"^RetryPolicy\.{name} must be a number of seconds"):
            cg.RetryPolicy(**{name: flag})


def test_every_call_carries_the_clients_timeout():
    """Client.call: "One unary call with the token and timeout": each call of the library has
    the client's ``timeout_s`` as its deadline (a call to an engine that never answers fails
    DEADLINE_EXCEEDED then, and is repeated), the first try and every repeat."""
    summary = match_pb2.MatchSummary(match_id="m1")

    class LosesTheFirst(_Recorder):
        def __getattr__(self, name):
            async def call(request, *, timeout=None, metadata=None):
                self.calls.append((name, request, timeout, dict(metadata or ()).get("authorization")))
                if len(self.calls) == 1:
                    raise _Dropped(grpc.StatusCode.DEADLINE_EXCEEDED)
                return cg.card_games_pb2.GetMatchResponse(match=summary)
            return call

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"), timeout_s=4.5,
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        client.stub = stub = LosesTheFirst()
        try:
            assert await client.get_match("m1") == summary
        finally:
            await client.close()
        return stub.calls

    calls = run(scenario(), timeout_s=30)
    assert [(name, timeout) for name, _, timeout, _ in calls] == [("GetMatch", 4.5)] * 2


def test_join_sends_the_seat_asked_for_seat_0_included_the_name_and_the_callers_join_id():
    """``join``: ``seat`` None takes the first open seat (no seat sent), a number asks for
    that seat, 0 too; ``player_name`` is sent; a ``client_join_id`` given is sent as it is (to
    retry a join after the client itself restarted), else a fresh UUID; the session holds the
    seat and token of the answer."""
    answer = cg.card_games_pb2.JoinMatchResponse(match_id="m1", seat=0, seat_token="tok")

    async def scenario():
        client = _quick_client(_Recorder({"JoinMatch": answer}))
        try:
            sessions = [await client.join("m1", seat=0, player_name="ada", client_join_id="my-own-join-id-0001"),
                        await client.join("m1"), await client.join("m1", seat=1)]
            return sessions, [request for _, request, _, _ in client.stub.calls]
        finally:
            await client.close()

    sessions, requests = run(scenario(), timeout_s=30)
    assert [(r.match_id, r.HasField("seat"), r.seat, r.player_name) for r in requests] == [
        ("m1", True, 0, "ada"), ("m1", False, 0, ""), ("m1", True, 1, "")]
    assert requests[0].client_join_id == "my-own-join-id-0001"
    assert requests[1].client_join_id != requests[2].client_join_id and len(requests[1].client_join_id) == 36
    assert [(s.match_id, s.seat, s.token) for s in sessions] == [("m1", 0, "tok")] * 3


def test_create_match_sends_the_callers_create_id():
    """``create_match``: a ``client_create_id`` given is sent as it is (to retry a create after
    the client itself restarted), else a fresh UUID each time."""
    answer = cg.card_games_pb2.CreateMatchResponse(match=match_pb2.MatchSummary(match_id="m1"))

    async def scenario():
        client = _quick_client(_Recorder({"CreateMatch": answer}))
        try:
            for create_id in ("my-own-create-id-01", None, None):
                assert (await client.create_match("klaberjass", client_create_id=create_id)).match_id == "m1"
            return [request.client_create_id for _, request, _, _ in client.stub.calls]
        finally:
            await client.close()

    ids = run(scenario(), timeout_s=30)
    assert ids[0] == "my-own-create-id-01" and ids[1] != ids[2] and len(ids[1]) == len(ids[2]) == 36


def test_every_page_of_the_lobby_is_asked_for_the_game_and_page_size_given():
    """``all_open_matches(game, limit)`` reads the lobby page by page, each page asked for
    with the same ``game`` and ``limit`` (a page token sent with other filters is
    BAD_PAGE_TOKEN, docs/api.md, "Paging"), until a page names no next page."""
    pages = {"": (["a", "b"], "p2"), "p2": (["c"], "p3"), "p3": ([], "")}

    class Lobby(_Recorder):
        def __getattr__(self, name):
            async def call(request, *, timeout=None, metadata=None):
                self.calls.append((name, request, timeout, None))
                ids, token = pages[request.page_token]
                return cg.card_games_pb2.ListOpenMatchesResponse(
                    matches=[match_pb2.MatchSummary(match_id=i) for i in ids], next_page_token=token)
            return call

    async def scenario():
        client = _quick_client(Lobby())
        try:
            seen = [m.match_id async for m in client.all_open_matches("jojotte", 2)]
            return seen, [(r.game, r.limit, r.page_token) for _, r, _, _ in client.stub.calls]
        finally:
            await client.close()

    seen, asked = run(scenario(), timeout_s=30)
    assert seen == ["a", "b", "c"]
    assert asked == [("jojotte", 2, ""), ("jojotte", 2, "p2"), ("jojotte", 2, "p3")]


def test_a_seat_session_made_again_is_of_the_seat_and_match_given():
    """``seat_session(match_id, seat, token)``: a session for a seat joined earlier (after a
    restart of the client) is that seat's, of that match, with that token."""
    async def scenario():
        client = _quick_client(_Recorder())
        try:
            session = client.seat_session("m4", 2, "seat-token")
            return session.match_id, session.seat, session.token
        finally:
            await client.close()

    assert run(scenario(), timeout_s=30) == ("m4", 2, "seat-token")


def test_retried_lists_a_rate_limits_refusal_as_well_as_a_lost_answer():
    """Client.call: "``retried``: each error the call was repeated after is appended to it",
    a refusal by a rate limit (RESOURCE_EXHAUSTED, RATE_LIMITED) as well as a lost answer, in
    the order they came (a caller tells them apart by their code: a refusal applied nothing)."""
    from .test_client_rate_limits import _rate_limited, _Scripted

    async def scenario():
        stub = _Scripted([_rate_limited(0.001), _Dropped()], cg.card_games_pb2.GetViewResponse())
        client = _quick_client(stub)
        retried: list[cg.CardGamesError] = []
        try:
            await client.call(stub.GetView, cg.card_games_pb2.GetViewRequest(match_id="m1"), retry=True,
                              retried=retried)
        finally:
            await client.close()
        return [(e.code, e.reason) for e in retried], len(stub.calls)

    assert run(scenario(), timeout_s=30) == (
        [(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED"), (grpc.StatusCode.UNAVAILABLE, "")], 3)


def test_a_silent_stream_is_reported_unavailable_stream_silent():
    """watch's docstring: a stream that delivers nothing for ``silence_timeout_s`` is taken for
    lost and reopened as after a drop, "its ``reconnecting`` error: UNAVAILABLE, reason
    ``STREAM_SILENT``" (a drop, reopened as often as it comes, not an unclear INTERNAL)."""
    from .test_cardgames_client import SILENT

    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED

    async def scenario():
        client = _quick_client(_ScriptedStreams([([_event(action, 3)], SILENT)] + [([], SILENT)] * 4
                                                + [([_event(action, 4), _event(ended, 4)], None)]))
        heard: list[cg.StreamState] = []
        try:
            seen = [event.seq async for event in client.spectate("m1").watch(2, silence_timeout_s=0.02,
                                                                              on_connection=heard.append)]
            return seen, heard
        finally:
            await client.close()

    seen, heard = run(scenario(), timeout_s=30)
    assert seen == [3, 4, 4]
    errors = [(h.error.code, h.error.reason) for h in heard if h.state == cg.RECONNECTING]
    assert errors == [(grpc.StatusCode.UNAVAILABLE, "STREAM_SILENT")] * 5
