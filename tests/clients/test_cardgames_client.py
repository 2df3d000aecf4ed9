"""The Python client library (clients/cardgames_client.py) against a real engine process:
whole matches of every game, every error class with its status code and ErrorInfo reason,
idempotent submission, re-deciding on a stale view, a watch stream that survives the engine
being killed and restarted, and one cut while its match waits (through a proxy) that resumes
on the started view."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import time
from dataclasses import dataclass, field
from typing import Callable

import grpc
import pytest

from clients import cardgames_client as cg
from clients.local_service import LocalService, free_port
from clients.render import struct_dict
from engine_service.transport.generated import match_pb2

from .conftest import ADMIN_TOKEN, CuttableProxy, run, self_signed_certificate, two_seats

#: Table options that keep a whole match short (the games' own option names).
SHORT = {"japanese_joker": {"target_score": 11}, "jojotte": {"jj_game_target": 20},
         "georgian_joker": {"deal_schedule": "nines"}, "klaberjass": {}}


async def play_out(sessions: list[cg.SeatSession], rng: random.Random, max_actions: int = 5000) -> int:
    """Every seat plays random legal actions (with expected_seq) until the match is over."""
    submitted = 0
    while submitted < max_actions:
        view = await sessions[0].view()
        if view.over or cg.is_finished(view.status):
            return submitted
        if not view.HasField("to_act"):
            await asyncio.sleep(0.01)
            continue
        seat = sessions[view.to_act]
        reply = await seat.act(lambda v: rng.choice(cg.legal_notations(v)))
        submitted += reply is not None
    raise AssertionError("the match did not end")


def test_every_game_plays_to_the_end_with_a_spectator(engine):
    """One whole match per game through the library, every seat a client, while a spectator
    watches: the spectator sees every action exactly once, in order, and the match end."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            games = await client.list_games()
            assert {g.id for g in games} >= {"klaberjass", "jojotte", "georgian_joker", "japanese_joker"}
            for game in games:
                summary = await client.create_match(game.id, options=SHORT.get(game.id, {}))
                assert summary.status == match_pb2.MATCH_STATUS_WAITING
                sessions = [await client.join(summary.match_id, player_name=f"p{i}") for i in range(game.num_seats)]
                assert [s.seat for s in sessions] == list(range(game.num_seats))
                seen: list[int] = []

                async def spectate():
                    async for event in client.spectate(summary.match_id).watch(after_seq=0):
                        if event.kind == match_pb2.EVENT_KIND_ACTION:
                            seen.append(event.seq)
                    return event

                spectator = asyncio.create_task(spectate())
                submitted = await play_out(sessions, random.Random(game.id))
                last = await asyncio.wait_for(spectator, 30)
                final = await client.get_match(summary.match_id)
                assert final.status == match_pb2.MATCH_STATUS_FINISHED, game.id
                assert last.kind == match_pb2.EVENT_KIND_MATCH_ENDED
                assert submitted == final.seq
                assert seen == list(range(1, final.seq + 1)), f"{game.id}: gaps or duplicates in the watch"
                view = await sessions[0].view()
                assert view.over and list(view.winners)
                result = struct_dict(final.result)
                assert sorted(result["winners"]) == sorted(view.winners)
                rows = {row.name: list(row.values) for row in view.scores.totals}
                expected = result["totals"] if isinstance(result["totals"], dict) else {"total": result["totals"]}
                assert rows == expected, game.id

    run(scenario(), timeout_s=300)


def test_an_admin_token_read_from_a_file_works(engine):
    """An admin token taken from a file or a Secret (``os.environ["CARDGAMES_ADMIN_TOKEN"]``,
    as the duplicate-tournament recipe of docs/operations.md reads it) ends with a newline: the
    library drops surrounding whitespace, as the engine and clients.admin do. It used to put it
    in the header, and every admin call failed with grpc's own "execute_batch" error."""
    async def go():
        async with cg.connect(engine.target, admin_token=f" {ADMIN_TOKEN}\n") as client:
            assert client.admin is not None and client.admin.token == ADMIN_TOKEN
            await client.admin.list_matches(limit=1)
            match = await client.create_match("klaberjass", seats=["random", "random"], first_dealer=0)
            await client.admin.terminate(match.match_id, "test done")
        async with cg.connect(engine.target, admin_token="\n") as client:
            assert client.admin is None  # whitespace alone is no token
    run(go())


def test_errors_carry_status_code_and_reason(engine):
    """Each failure is a CardGamesError subclass with the gRPC code and the ErrorInfo reason."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            with pytest.raises(cg.InvalidArgument) as bad_game:
                await client.create_match("no_such_game")
            assert bad_game.value.code == grpc.StatusCode.INVALID_ARGUMENT and bad_game.value.reason

            with pytest.raises(cg.InvalidArgument) as bad_option:
                await client.create_match("japanese_joker", options={"target_score": 12})
            assert bad_option.value.reason == "INVALID_OPTIONS"

            with pytest.raises(cg.NotFound) as missing:
                await client.get_match("no-such-match")
            assert missing.value.reason == "MATCH_NOT_FOUND"
            assert len(missing.value.request_id) == 16  # the engine's id of the call (RequestInfo)

            match = await client.create_match("japanese_joker", seats=[None, None])
            me = await client.join(match.match_id, seat=0)
            other = await client.join(match.match_id, seat=1)
            with pytest.raises(cg.AlreadyExists) as taken:
                await client.join(match.match_id, seat=0)
            assert taken.value.reason == "SEAT_TAKEN"

            view = await me.view()
            mover, waiter = (me, other) if view.to_act == me.seat else (other, me)
            move_view = await mover.view()
            with pytest.raises(cg.FailedPrecondition) as not_yours:
                await waiter.submit(move_view.legal_actions[0].notation)
            assert not_yours.value.reason == "NOT_YOUR_TURN"

            with pytest.raises(cg.InvalidArgument) as malformed:
                await mover.submit("dance:wildly")
            assert malformed.value.reason == "MALFORMED_ACTION"

            legal = set(cg.legal_notations(move_view))
            illegal = next(f"play:{rank}{suit}" for suit in "SHDC" for rank in "AKQJT9876"
                           if f"play:{rank}{suit}" not in legal)
            with pytest.raises(cg.FailedPrecondition) as refused:
                await mover.submit(illegal)
            assert refused.value.reason == "ILLEGAL_ACTION"

            with pytest.raises(cg.StaleSequence) as stale:
                await mover.submit(move_view.legal_actions[0].notation, expected_seq=move_view.seq + 5)
            assert stale.value.code == grpc.StatusCode.ABORTED and stale.value.reason == "STALE_SEQUENCE"
            assert stale.value.view is not None and stale.value.view.seq == move_view.seq
            assert list(stale.value.view.hand) == list(move_view.hand), "the view is the caller's own"

            intruder = client.seat_session(match.match_id, 0, "not-a-token")
            with pytest.raises(cg.Unauthenticated) as unknown_token:
                await intruder.view()
            assert unknown_token.value.code == grpc.StatusCode.UNAUTHENTICATED

            with pytest.raises(cg.PermissionDenied):
                await cg.AdminClient(client.channel, "wrong-token").list_matches()
            with pytest.raises(cg.Unauthenticated):
                await cg.AdminClient(client.channel, None).list_matches()
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as admin:
            listed = await admin.admin.list_matches()
            assert match.match_id in {m.match_id for m in listed}
            inspected = await admin.admin.inspect(match.match_id)
            assert {h.seat for h in inspected.hands} == {0, 1}

    run(scenario())


def test_submit_retries_are_idempotent(engine):
    """The same client_action_id twice applies the action once (duplicate=True, same seq)."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("klaberjass", seats=[None, None])
            seats = [await client.join(match.match_id) for _ in range(2)]
            view = await seats[0].view()
            mover = seats[view.to_act]
            view = await mover.view()
            first = await mover.submit(view.legal_actions[0].notation, view.seq, client_action_id="a-1")
            again = await mover.submit(view.legal_actions[0].notation, view.seq, client_action_id="a-1")
            assert not first.duplicate and again.duplicate
            assert again.seq == first.seq == view.seq + 1
            assert (await client.get_match(match.match_id)).seq == first.seq

    run(scenario())


class _LostAnswers:
    """Wraps a stub: the first ``lost`` LeaveMatch calls reach the engine, but their answers are
    lost (UNAVAILABLE), as across a connection cut after the server applied them."""

    def __init__(self, stub, lost: int = 1) -> None:
        self._stub, self.lost, self.calls = stub, lost, 0

    def __getattr__(self, name):
        return getattr(self._stub, name)

    async def LeaveMatch(self, request, **kwargs):
        self.calls += 1
        reply = await self._stub.LeaveMatch(request, **kwargs)
        if self.lost:
            self.lost -= 1
            raise _Dropped()
        return reply


def test_a_leave_whose_answer_was_lost_is_repeated_and_answers_the_match(engine):
    """SeatSession.leave repeats a LeaveMatch whose answer was lost: a resignation that ended
    the match comes back OK with the resigned result (the server answers the seat's own repeat
    so); a waiting match's leave, whose repeat with the void token the engine answers with the
    first leave's answer, gives the match's summary with the seat free. An error that is no
    lost answer is raised as it is, without a repeat."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match, sessions, _ = await two_seats(client)
            stub = client.stub = _LostAnswers(client.stub)
            summary = await sessions[0].leave(resign=True)
            assert stub.calls == 2 and summary.status == match_pb2.MATCH_STATUS_FINISHED
            assert struct_dict(summary.result)["outcome"] == "resigned", summary.result
            stub.lost = 1
            with pytest.raises(cg.FailedPrecondition):  # not its own leave: no repeat
                await sessions[1].leave(resign=True)
            assert stub.calls == 3

            waiting = await client.create_match("japanese_joker", seats=[None, None])
            seat = await client.join(waiting.match_id)
            stub.lost = 1
            summary = await seat.leave()
            assert summary.match_id == waiting.match_id and summary.status == match_pb2.MATCH_STATUS_WAITING
            assert not any(s.taken for s in summary.seats), summary.seats
            # the engine remembers the leave that voided the token: a repeat, lost answer or
            # not, gets its answer again; a token that never held the seat is refused as it is
            assert await seat.leave() == summary
            stub.calls = 0
            with pytest.raises(cg.Unauthenticated):
                await cg.SeatSession(client, waiting.match_id, seat.seat, "not-a-seat-token").leave()
            assert stub.calls == 1

    run(scenario())


def test_a_listed_match_is_found_in_the_lobby_and_joined(engine):
    """A frontend's lobby: create a listed match, find it with list_open_matches, join it from
    there; full, it leaves the lobby."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("japanese_joker", listed=True, name="ada's table")
            private = await client.create_match("japanese_joker")
            lobby = await client.list_open_matches("japanese_joker", limit=100)
            ids = [m.match_id for m in lobby]
            assert match.listed and match.match_id in ids and private.match_id not in ids
            table = next(m for m in lobby if m.match_id == match.match_id)
            assert table.name == "ada's table" and [s.taken for s in table.seats] == [False, False]
            for _ in table.seats:
                await client.join(table.match_id, player_name="someone")
            assert match.match_id not in [m.match_id for m in await client.list_open_matches(limit=100)]

    run(scenario())


def test_the_listings_ask_for_the_servers_page_size_and_every_match_unless_told_otherwise():
    """Every listing method's defaults send the API's zero values: ``limit`` 0 (the server's
    page size: the lobby's 50, ListMatches' 100), no game, no status filter, the first page;
    the page-by-page readers follow ``next_page_token`` until it is "" (docs/api.md, "Paging")."""
    from engine_service.transport.generated import admin_pb2, card_games_pb2

    class Listings:
        def __init__(self) -> None:
            self.requests: list = []

        async def ListOpenMatches(self, request, timeout=None, metadata=None):
            self.requests.append(request)
            token = "" if request.page_token else "next"
            return card_games_pb2.ListOpenMatchesResponse(matches=[match_pb2.MatchSummary(match_id=f"o{token}")],
                                                          next_page_token=token)

        async def ListMatches(self, request, timeout=None, metadata=None):
            self.requests.append(request)
            token = "" if request.page_token else "next"
            return admin_pb2.ListMatchesResponse(matches=[match_pb2.MatchSummary(match_id=f"a{token}")],
                                                 next_page_token=token)

    async def go():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"), admin_token="t0ken")
        try:
            client.stub = client.admin.stub = listings = Listings()
            assert [m.match_id for m in await client.list_open_matches()] == ["onext"]
            assert [m.match_id async for m in client.all_open_matches()] == ["onext", "o"]
            assert [m.match_id for m in await client.admin.list_matches()] == ["anext"]
            assert [m.match_id async for m in client.admin.all_matches()] == ["anext", "a"]
            await client.open_matches_page()
            await client.open_matches_page("jojotte", 5, "t")
            await client.admin.matches_page()
            await client.admin.matches_page(2, "jojotte", 7, "t")
            return listings.requests
        finally:
            await client.close()

    requests = asyncio.run(go())
    assert [(r.DESCRIPTOR.name, r.game, r.limit, r.page_token) for r in requests] == [
        ("ListOpenMatchesRequest", "", 0, ""), ("ListOpenMatchesRequest", "", 0, ""),
        ("ListOpenMatchesRequest", "", 0, "next"), ("ListMatchesRequest", "", 0, ""),
        ("ListMatchesRequest", "", 0, ""), ("ListMatchesRequest", "", 0, "next"),
        ("ListOpenMatchesRequest", "", 0, ""), ("ListOpenMatchesRequest", "jojotte", 5, "t"),
        ("ListMatchesRequest", "", 0, ""), ("ListMatchesRequest", "jojotte", 7, "t")]
    assert [r.status for r in requests if r.DESCRIPTOR.name == "ListMatchesRequest"] == [0, 0, 0, 0, 2]


def test_the_lobby_and_the_admin_listing_page_through_every_match(engine):
    """list_open_matches / AdminClient.list_matches take a page_token; open_matches_page and
    matches_page give the next one; all_open_matches and all_matches read every page: the
    same matches, in the same order, as one unpaged listing (docs/api.md, "Paging")."""

    async def scenario():
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as client:
            for _ in range(5):
                await client.create_match("klaberjass", listed=True)
            lobby = [m.match_id for m in await client.list_open_matches(limit=100)]
            first = await client.open_matches_page(limit=2)
            second = await client.list_open_matches(limit=2, page_token=first.next_page_token)
            every_table = [m.match_id async for m in client.all_open_matches(limit=2)]
            admin = client.admin
            listing = [m.match_id for m in await admin.list_matches(limit=1000)]
            page = await admin.matches_page(limit=3)
            next_three = await admin.list_matches(limit=3, page_token=page.next_page_token)
            every_match = [m.match_id async for m in admin.all_matches(limit=3)]
            klaberjass = [m.match_id async for m in admin.all_matches(game="klaberjass", limit=1)]
            with pytest.raises(cg.InvalidArgument) as other_filter:
                await admin.matches_page(game="jojotte", page_token=page.next_page_token)
            with pytest.raises(cg.InvalidArgument) as not_a_token:
                await client.list_open_matches(page_token="not a token")
            last = await admin.matches_page(limit=1000)
        return lobby, first, second, every_table, listing, page, next_three, every_match, klaberjass, \
            other_filter.value, not_a_token.value, last

    (lobby, first, second, every_table, listing, page, next_three, every_match, klaberjass, other_filter,
     not_a_token, last) = run(scenario())
    assert len(lobby) >= 5 and len(listing) >= 5
    assert [m.match_id for m in first.matches] == lobby[:2] and first.next_page_token
    assert [m.match_id for m in second] == lobby[2:4]
    assert every_table == lobby
    assert [m.match_id for m in page.matches] == listing[:3] and page.next_page_token
    assert [m.match_id for m in next_three] == listing[3:6]
    assert every_match == listing
    assert set(klaberjass) <= set(listing) and len(klaberjass) >= 5
    assert other_filter.reason == not_a_token.reason == "BAD_PAGE_TOKEN"
    assert isinstance(last, cg.MatchPage) and last.next_page_token == ""


def test_a_delayed_spectator_sees_the_match_late(engine):
    """create_match(spectator_delay_actions=N): the spectator's view stays N actions behind
    a seat's (docs/api.md, "Spectators")."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("klaberjass", seats=[None, None], spectator_delay_actions=2)
            assert match.spectator_delay_actions == 2
            seats = [await client.join(match.match_id) for _ in range(2)]
            spectator = client.spectate(match.match_id)
            rng = random.Random(2)
            for n in range(1, 6):
                view = await seats[0].view()
                await seats[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
                assert (await seats[0].view()).seq == n
                assert (await spectator.view()).seq == max(0, n - 2)

    run(scenario())


def test_fair_dealing_reveal_and_verify(engine):
    """Commit-reveal through the library: the commitments seen while playing are those the
    reveal verifies against; before the end reveal_deals is FailedPrecondition MATCH_NOT_OVER;
    a changed card, salt or hash does not verify."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("japanese_joker", options=SHORT["japanese_joker"])
            seats = [await client.join(match.match_id) for _ in range(2)]
            with pytest.raises(cg.FailedPrecondition) as early:
                await seats[0].reveal_deals()
            assert early.value.reason == "MATCH_NOT_OVER"
            seen: list[str] = list(match.deal_commitments)
            rng = random.Random(4)
            while not cg.is_finished((summary := await seats[1].summary()).status):
                assert list(summary.deal_commitments[:len(seen)]) == seen  # never changed
                seen = list(summary.deal_commitments)
                view = await seats[0].view()
                if view.HasField("to_act"):
                    await seats[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
            final = list(summary.deal_commitments)
            assert final[:len(seen)] == seen
            deals = await seats[0].reveal_deals()
            assert [d.commitment for d in deals] == final
            assert all(cg.verify_deal(d, final[d.deal]) for d in deals)
            assert all(cg.verify_deal(d) for d in await client.spectate(match.match_id).reveal_deals())
            assert [list(d.cards) for d in await client.reveal_deals(match.match_id)] == [list(d.cards) for d in deals]
            forged = cg.DealReveal()
            forged.CopyFrom(deals[0])
            forged.cards[0], forged.cards[1] = forged.cards[1], forged.cards[0]
            assert not cg.verify_deal(forged)
            forged.CopyFrom(deals[0])
            forged.card_salts[0] = "0" * 32
            assert not cg.verify_deal(forged)
            # a position given by its hash instead of its card opens the same commitment (the
            # reveal of a card the table did not see); a wrong hash does not
            assert all(deals[0].cards), "a deal played to its end showed every card"
            hidden = cg.DealReveal()
            hidden.CopyFrom(deals[0])
            hidden.card_hashes[5] = cg.card_hash(hidden.card_salts[5], hidden.cards[5])
            hidden.cards[5], hidden.card_salts[5] = "", ""
            assert cg.verify_deal(hidden)
            hidden.card_hashes[5] = cg.card_hash("1" * 32, deals[0].cards[5])
            assert not cg.verify_deal(hidden)
            assert not cg.verify_deal(deals[0], final[-1]) or len(final) == 1

    run(scenario())


def test_act_redecides_on_the_view_a_stale_error_carries(engine):
    """A decision made on a view the match has left is refused with ABORTED; act() asks
    decide() again on the fresh view and succeeds. Here the seat's own move, sent by another
    of its programs, and the opponent's answer left it (in play the turn timer's auto-move
    does, in at least 10 s)."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("klaberjass", seats=[None, None])
            me = await client.join(match.match_id, seat=0)
            other = await client.join(match.match_id, seat=1)
            seen_seqs: list[int] = []

            def decide(view):
                seen_seqs.append(view.seq)
                return view.legal_actions[0].notation

            async def until_my_turn() -> match_pb2.View:
                for _ in range(10):  # seat 1 moves until it is seat 0's turn
                    if cg.is_my_turn(view := await me.view()):
                        return view
                    await other.act(lambda v: v.legal_actions[0].notation)
                raise AssertionError(f"never our turn: {view}")

            view = await until_my_turn()
            await me.submit(view.legal_actions[0].notation, view.seq)  # the move made elsewhere
            fresh = await until_my_turn()
            assert fresh.seq > view.seq
            assert not fresh.over  # an auction pass cannot end a Klaberjass match

            async def no_get_view():
                raise AssertionError("act() asked for the view: the error carries it")

            me.view = no_get_view
            reply = await me.act(decide, view)
            assert reply is not None and not reply.duplicate
            assert seen_seqs == [view.seq, fresh.seq]

    run(scenario())


def test_act_on_a_view_from_before_the_end_answers_none(engine):
    """A seat behind on its events may decide on a view from before the match ended: act()
    answers None (MATCH_NOT_ACTIVE: no longer this seat's turn) instead of raising, which the
    terminal, remote-bot and Node clients' loops rely on; other refusals still raise."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match = await client.create_match("japanese_joker", options=SHORT["japanese_joker"])
            sessions = [await client.join(match.match_id, player_name=f"p{i}") for i in range(2)]
            rng = random.Random(5)
            old = None
            while True:
                view = await sessions[0].view()
                if view.over:
                    break
                if cg.is_my_turn(view):
                    old = view  # seat 0's turn, kept past the end
                await sessions[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
            assert old is not None and old.seq < view.seq
            asked: list[int] = []
            assert await sessions[0].act(lambda v: asked.append(v.seq) or v.legal_actions[0].notation, old) is None
            assert asked == [old.seq]  # decided once on the old view, then told the match is over
            with pytest.raises(cg.FailedPrecondition) as info:
                await sessions[0].submit(old.legal_actions[0].notation, None)
            assert info.value.reason == "MATCH_NOT_ACTIVE"

    run(scenario())


def test_watch_resumes_across_an_engine_crash(tmp_path):
    """kill -9 the engine mid-match and start it again on the same database and port: the
    watching client reconnects by itself and sees every action exactly once."""
    port = free_port()
    db = str(tmp_path / "engine.sqlite3")
    log = tmp_path / "engine.log"
    first = LocalService(db=db, port=port, admin_token=ADMIN_TOKEN, log_path=log).start()
    second = None
    try:
        async def scenario():
            nonlocal second
            async with cg.connect(f"127.0.0.1:{port}", retry=cg.RetryPolicy(attempts=20, max_backoff_s=0.5)) as client:
                match = await client.create_match("japanese_joker", seats=[None, None], options={"target_score": 11})
                sessions = [await client.join(match.match_id) for _ in range(2)]
                actions: list[int] = []
                kinds: list[int] = []

                async def watch():
                    async for event in client.spectate(match.match_id).watch(after_seq=None):
                        kinds.append(event.kind)
                        if event.kind == match_pb2.EVENT_KIND_ACTION:
                            actions.append(event.seq)

                watcher = asyncio.create_task(watch())
                rng = random.Random(5)
                for _ in range(15):
                    view = await sessions[0].view()
                    await sessions[view.to_act].act(lambda v: rng.choice(cg.legal_notations(v)))
                await asyncio.sleep(0.3)
                before = (await client.get_match(match.match_id)).seq
                first.kill()
                second = LocalService(db=db, port=port, admin_token=ADMIN_TOKEN, log_path=log).start()
                view = await sessions[0].view()
                assert view.seq == before, "the restarted engine lost acknowledged actions"
                await play_out(sessions, rng)
                await asyncio.wait_for(watcher, 30)
                final = await client.get_match(match.match_id)
                assert actions == list(range(1, final.seq + 1))
                assert kinds[0] == match_pb2.EVENT_KIND_SNAPSHOT and kinds[-1] == match_pb2.EVENT_KIND_MATCH_ENDED

        run(scenario(), timeout_s=180)
    finally:
        first.kill()
        if second is not None:
            assert second.stop() == 0


def test_a_submit_while_the_engine_restarts_goes_through_with_the_default_retry(engine):
    """docs/api.md, "Restarts": the match continues after a crash or an upgrade. A decision
    sent while the engine is away (here 0.8 s of refused connections, less than a restart
    takes) reaches the engine once it is back: the default RetryPolicy outlasts the outage
    (it gave up within 0.7 s, and a bot's act() raised Unavailable while its watch resumed)."""

    async def scenario():
        async with cg.connect(engine.target) as client:
            match, _, mover = await two_seats(client)
            view = await mover.view()
            port = free_port()
            async with cg.connect(f"127.0.0.1:{port}") as away:  # the default RetryPolicy
                me = away.seat_session(match.match_id, mover.seat, mover.token)

                async def engine_back() -> CuttableProxy:
                    await asyncio.sleep(0.8)
                    return await CuttableProxy(engine.target, port).__aenter__()

                back = asyncio.create_task(engine_back())
                try:
                    reply = await me.act(lambda v: v.legal_actions[0].notation, view)
                finally:
                    await (await back).__aexit__(None, None, None)
            assert reply is not None and reply.seq == 1 and not reply.duplicate
            assert (await client.get_match(match.match_id)).seq == 1

    run(scenario(), timeout_s=60)


async def _until(predicate, timeout_s: float = 30.0, what: str | Callable[[], str] = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:g} s: {what() if callable(what) else what}")
        await asyncio.sleep(0.02)


def _kinds(events: list[cg.Event]) -> list[tuple[str, int, str]]:
    return [(cg.EventKind.Name(e.kind), e.seq,
             cg.MatchStatus.Name(e.view.status) if e.HasField("view") else "") for e in events]


def test_a_watch_cut_while_the_match_waits_resumes_on_the_started_view(engine):
    """docs/api.md, "Reconnecting without losing anything": a resumed watch replays actions
    only, and the start is none (seq 0 before and after it). A spectator's stream and a seat's
    second stream (the seat stays present on its first: no presence event when it reconnects),
    cut while their match waits and reopened only after the last seat's join started it, show
    the started view (ACTIVE, a seat to act, the seat's hand) before any action is played, not
    the waiting one until the first action. A second match that started and saw its first
    action meanwhile shows that action (replayed once, not a snapshot standing for it). Then
    every watcher sees every action exactly once."""

    async def scenario():
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as client, \
                CuttableProxy(engine.target) as proxy, \
                cg.connect(proxy.target, retry=cg.RetryPolicy(max_backoff_s=0.3)) as proxied:
            tables = []
            for _ in range(2):  # [0]: only started while cut off; [1]: started and played on
                match = await client.create_match("klaberjass", seats=[None, None])
                first = await client.join(match.match_id)
                seen: dict[str, list[cg.Event]] = {"present": [], "spectator": [], "seat": []}

                async def follow(name, audience, after_seq, seen=seen):
                    async for event in audience.watch(after_seq=after_seq):
                        seen[name].append(event)

                # the seat's first stream, not cut: it keeps the seat present throughout
                tasks = [asyncio.create_task(follow("present", first, 0))]
                await _until(lambda seen=seen: seen["present"], what="the seat's first stream")
                tasks += [asyncio.create_task(follow("spectator", proxied.spectate(match.match_id), None)),
                          asyncio.create_task(follow("seat", proxied.seat_session(match.match_id, first.seat,
                                                                                   first.token), None))]
                tables.append((match, first, seen, tasks))
            for _, _, seen, _ in tables:
                await _until(lambda seen=seen: seen["spectator"] and seen["seat"], what="the streams to open")
                statuses = {e.view.status for e in seen["spectator"] + seen["seat"]}
                assert statuses == {match_pb2.MATCH_STATUS_WAITING}
            proxy.hold()
            proxy.cut()
            cut = {(match.match_id, name): len(events) for match, _, seen, _ in tables
                   for name, events in seen.items()}
            sessions = []
            for match, first, _, _ in tables:
                second = await client.join(match.match_id)  # the last seat: the match starts
                sessions.append([first, second] if first.seat == 0 else [second, first])
            view = await sessions[1][0].view()
            assert view.status == match_pb2.MATCH_STATUS_ACTIVE and view.seq == 0
            played = await sessions[1][view.to_act].act(lambda v: v.legal_actions[0].notation)
            assert played is not None and played.seq == 1
            proxy.release()

            (match, _, seen, _), (other, _, other_seen, _) = tables
            for name in ("spectator", "seat"):
                after_cut = lambda: seen[name][cut[match.match_id, name]:]  # noqa: E731
                # before the first action (none is played): heartbeats alone would come meanwhile
                await _until(lambda: any(e.HasField("view") and e.view.status == match_pb2.MATCH_STATUS_ACTIVE
                                         for e in after_cut()),
                             what=lambda: f"the {name}'s started view; after the cut: {_kinds(after_cut())}")
                resumed = [e for e in after_cut() if e.HasField("view")]
                assert resumed[0].kind == match_pb2.EVENT_KIND_SNAPSHOT and resumed[0].seq == 0, _kinds(resumed)
                assert resumed[0].view.status == match_pb2.MATCH_STATUS_ACTIVE
                assert resumed[0].view.HasField("to_act")
                if name == "seat":
                    assert len(resumed[0].view.hand) > 0
            for name in ("spectator", "seat"):
                await _until(lambda: any(e.kind == match_pb2.EVENT_KIND_ACTION
                                         for e in other_seen[name][cut[other.match_id, name]:]),
                             what=f"the {name}'s replayed action")
                resumed = [e for e in other_seen[name][cut[other.match_id, name]:] if e.HasField("view")]
                # the action played meanwhile comes as itself, with its view: no snapshot at seq 1
                assert _kinds(resumed)[0] == ("EVENT_KIND_ACTION", 1, "MATCH_STATUS_ACTIVE"), _kinds(resumed)

            # play on: every action reaches every watcher once, in order, then the end
            for (match, _, _, _), seats in zip(tables, sessions):
                for _ in range(2):
                    view = await seats[0].view()
                    await seats[view.to_act].act(lambda v: v.legal_actions[0].notation)
                await client.admin.terminate(match.match_id, "test over")
            for match, _, seen, tasks in tables:
                await asyncio.wait_for(asyncio.gather(*tasks), 30)
                final = await client.get_match(match.match_id)
                for name, events in seen.items():
                    actions = [e.seq for e in events if e.kind == match_pb2.EVENT_KIND_ACTION]
                    assert actions == list(range(1, final.seq + 1)), (name, _kinds(events))
                    assert events[-1].kind == match_pb2.EVENT_KIND_MATCH_ENDED

    run(scenario(), timeout_s=90)


def test_tls_connection(tmp_path):
    """The engine serves TLS with --tls-cert/--tls-key; the client verifies it with the CA."""
    cert, key = self_signed_certificate(tmp_path)
    with LocalService(args=["--tls-cert", str(cert), "--tls-key", str(key)]) as service:
        async def scenario():
            async with cg.connect(service.target, tls=True, root_certificates=cert.read_bytes(),
                                  server_name="localhost") as client:
                assert await client.list_games()
            # a deadline past the refusal: UNAVAILABLE, not a DEADLINE_EXCEEDED on a loaded machine
            async with cg.connect(service.target, timeout_s=30,
                                  retry=cg.RetryPolicy(attempts=1)) as plain:
                with pytest.raises(cg.CardGamesError) as refused:
                    await plain.list_games()
                assert refused.value.code == grpc.StatusCode.UNAVAILABLE

        run(scenario())


def test_option_values_keep_their_types():
    """bool is not mistaken for int, and unsupported types are refused."""
    assert cg.option_value(True).WhichOneof("value") == "bool_value"
    assert cg.option_value(11).int_value == 11
    assert cg.option_value("500").string_value == "500"
    assert cg.python_value(cg.option_value(False)) is False
    with pytest.raises(TypeError, match="^an option value is a str, int or bool, not float$"):
        cg.option_value(1.5)  # type: ignore[arg-type]
    # the API's int64, the one check of the range (clients.play's and remote_bot's --option
    # ask it): protobuf's own refusal said "Value out of range", naming no limit
    assert cg.option_value(2**63 - 1).int_value == 2**63 - 1 and cg.option_value(-2**63).int_value == -2**63
    for beyond in (2**63, -2**63 - 1, 10**30):
        with pytest.raises(ValueError, match=f"^{beyond} is beyond the API's 64-bit integers$"):
            cg.option_value(beyond)
    assert cg.seat_spec(None).WhichOneof("kind") == "open"
    assert cg.seat_spec("search").bot.name == "search"


def test_struct_values_come_back_with_their_whole_numbers_as_ints():
    """google.protobuf.Struct holds every number as a float, and the views' numbers are all
    integers: struct_value gives them back as ints, in lists and objects at any depth, and
    leaves fractions, text, booleans and nulls as they are."""
    from google.protobuf import struct_pb2

    details = struct_pb2.Struct()
    details.update({"score": 162, "tricks": [1, 2.5, {"seat": 3}], "name": "x", "over": True, "none": None})
    value = cg.struct_value(details)
    assert value == {"score": 162, "tricks": [1, 2.5, {"seat": 3}], "name": "x", "over": True, "none": None}
    assert [type(v) for v in (value["score"], value["tricks"][0], value["tricks"][1], value["tricks"][2]["seat"],
                              value["over"])] == [int, int, float, int, bool]


def test_the_server_clock_agrees_with_this_machines_until_a_heartbeat_says_otherwise():
    """ServerClock: before any heartbeat naming ``server_time`` (an older server, or none
    yet; one naming something else than a number says nothing either) the clocks are taken
    to agree; then the largest reading of the offset is kept."""
    from google.protobuf import struct_pb2

    clock = cg.ServerClock()
    assert abs(clock.now() - time.time()) < 0.5 and clock.offset_s is None
    clock.heard(None, 100.0)
    clock.heard(struct_pb2.Struct(), 100.0)  # a heartbeat without server_time says nothing
    for odd in ("160.0", None, True):  # nor one whose server_time is no number
        details = struct_pb2.Struct()
        details.update({"server_time": odd})
        clock.heard(details, 100.0)
    assert clock.offset_s is None and abs(clock.now() - time.time()) < 0.5
    for server_time, received_at in ((160.0, 100.0), (150.0, 100.0), (250.0, 200.0)):
        details = struct_pb2.Struct()
        details.update({"deadline": None, "server_time": server_time})
        clock.heard(details, received_at)
    assert clock.offset_s == 60.0 and abs(clock.now() - 60.0 - time.time()) < 0.5


def test_a_header_safe_token_is_printable_ascii_without_spaces():
    """header_safe: what gRPC takes in a header as a bearer token, ``!`` (33) to ``~`` (126);
    a space, a control character, DEL or a letter beyond ASCII made gRPC fail in the calling
    process instead of sending the call."""
    import string

    assert cg.header_safe("!~" + string.ascii_letters + string.digits + string.punctuation)
    for bad in (" ", "a b", "\x1f", "tok\n", "\x7f", "\u00e9", "\u2028"):
        assert not cg.header_safe(bad), repr(bad)


def test_the_stream_states_are_named_as_the_documents_name_them():
    """docs/api.md, "Reconnecting": the ``on_connection`` hook is told ``reconnecting``,
    ``resumed`` and ``gave_up``; a hook may compare the state with those strings."""
    assert (cg.RECONNECTING, cg.RESUMED, cg.GAVE_UP) == ("reconnecting", "resumed", "gave_up")


def test_error_from_rpc_without_details():
    """A transport failure without a rich status still becomes a typed error (reason "")."""

    class Failure(grpc.RpcError):
        def code(self):
            return grpc.StatusCode.UNAVAILABLE

        def details(self):
            return "connection refused"

        def trailing_metadata(self):
            return ()

    error = cg.error_from_rpc(Failure())
    assert isinstance(error, cg.Unavailable) and error.reason == "" and "connection refused" in str(error)


def test_error_from_rpc_of_a_bare_rpc_error():
    """An RpcError that is no call's (no code, details or trailers: raised by a stub or an
    interceptor) is still a CardGamesError: UNKNOWN, its text as the message."""

    class Bare(grpc.RpcError):
        def __str__(self):
            return "something broke"

    error = cg.error_from_rpc(Bare())
    assert type(error) is cg.CardGamesError and error.code == grpc.StatusCode.UNKNOWN
    assert error.message == "something broke" and error.reason == "" and error.view is None
    assert str(error) == "UNKNOWN: something broke"  # no reason, no request id: nothing in between

    class Silent(grpc.RpcError):  # grpc's details() may be None
        def code(self):
            return grpc.StatusCode.INTERNAL

        def details(self):
            return None

    error = cg.error_from_rpc(Silent())
    assert isinstance(error, cg.Internal) and error.message == "" and str(error) == "INTERNAL: "


def test_error_from_rpc_prefers_the_engines_error_info():
    """Of several ErrorInfo details, the engine's (domain cardgames.v1) gives the reason and
    metadata, whichever comes first; another domain's only when the engine's is missing.
    Trailers other than the rich status are ignored, and each detail lands in its field."""
    from google.protobuf import any_pb2, duration_pb2
    from google.rpc import error_details_pb2, status_pb2

    def failure(*messages):
        details = []
        for message in messages:
            packed = any_pb2.Any()
            packed.Pack(message)
            details.append(packed)
        status = status_pb2.Status(code=grpc.StatusCode.ABORTED.value[0], message="stale", details=details)

        class Failure(grpc.RpcError):
            def code(self):
                return grpc.StatusCode.ABORTED

            def details(self):
                return "stale"

            def trailing_metadata(self):
                return (("x-other", b"\x00junk"), ("grpc-status-details-bin", status.SerializeToString()))

        return cg.error_from_rpc(Failure())

    # docs/api.md, "Errors": the engine's ErrorInfo has domain cardgames.v1
    ours = error_details_pb2.ErrorInfo(reason="STALE_SEQUENCE", domain="cardgames.v1", metadata={"seq": "4"})
    theirs = error_details_pb2.ErrorInfo(reason="PROXY", domain="proxy.example", metadata={"hop": "1"})
    for order in ((ours, theirs), (theirs, ours)):
        error = failure(*order)
        assert (error.reason, error.metadata) == ("STALE_SEQUENCE", {"seq": "4"}), order
    assert (failure(theirs).reason, failure(theirs).metadata) == ("PROXY", {"hop": "1"})
    delay = duration_pb2.Duration(seconds=1, nanos=500_000_000)
    error = failure(cg.View(match_id="m1", seq=4), error_details_pb2.RetryInfo(retry_delay=delay),
                    error_details_pb2.RequestInfo(request_id="abc"), ours, error_details_pb2.DebugInfo(detail="x"))
    assert isinstance(error, cg.StaleSequence) and error.view.match_id == "m1" and error.view.seq == 4
    assert error.retry_delay_s == 1.5 and error.request_id == "abc" and error.reason == "STALE_SEQUENCE"
    assert error.message == "stale" and str(error) == "ABORTED STALE_SEQUENCE: stale"


def test_an_internal_error_names_its_request_id():
    """The RequestInfo of a status becomes ``request_id``; an INTERNAL error's text names it,
    so that a user's report leads the operator to the call's log lines."""
    from google.protobuf import any_pb2
    from google.rpc import error_details_pb2, status_pb2

    def failure(code: grpc.StatusCode):
        details = []
        for message in (error_details_pb2.ErrorInfo(reason="INTERNAL", domain=cg.DOMAIN),
                        error_details_pb2.RequestInfo(request_id="0123456789abcdef")):
            packed = any_pb2.Any()
            packed.Pack(message)
            details.append(packed)
        status = status_pb2.Status(code=code.value[0], message="internal error", details=details)

        class Failure(grpc.RpcError):
            def code(self):
                return code

            def details(self):
                return "internal error"

            def trailing_metadata(self):
                return (("grpc-status-details-bin", status.SerializeToString()),)

        return cg.error_from_rpc(Failure())

    internal = failure(grpc.StatusCode.INTERNAL)
    assert isinstance(internal, cg.Internal) and internal.request_id == "0123456789abcdef"
    assert str(internal) == "INTERNAL INTERNAL: internal error (request 0123456789abcdef)"
    other = failure(grpc.StatusCode.NOT_FOUND)
    assert other.request_id == "0123456789abcdef" and "request" not in str(other)


class _Dropped(grpc.RpcError):
    """A stream's failure or a call's refusal as grpc raises it (code, details, no rich
    status: a network failure, a bare status)."""

    def __init__(self, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE) -> None:
        self._code = code

    def code(self):
        return self._code

    def details(self):
        return "Socket closed"

    def trailing_metadata(self):
        return ()


#: A script's failure that is none: the stream goes silent (no message, no end) once its
#: events are out, as through a network that drops every packet.
SILENT = "silent"


class _ScriptedStreams:
    """A stub whose n-th WatchMatch call yields the n-th script's events, then raises its
    failure (None: ends cleanly; :data:`SILENT`: waits forever); records each request's
    after_seq."""

    def __init__(self, scripts: list[tuple[list, grpc.RpcError | None]]) -> None:
        self.scripts = scripts
        self.opened: list[int | None] = []

    def WatchMatch(self, request, metadata=None):
        self.opened.append(request.after_seq if request.HasField("after_seq") else None)
        events, failure = self.scripts[len(self.opened) - 1]

        class Call:
            def cancel(self):
                pass

            async def __aiter__(self):
                for event in events:
                    yield event
                if failure == SILENT:
                    await asyncio.Event().wait()
                if failure is not None:
                    raise failure

        return Call()


def _event(kind: int, seq: int) -> cg.Event:
    return cg.Event(kind=kind, seq=seq, view=cg.View(seq=seq, status=match_pb2.MATCH_STATUS_ACTIVE))


def test_watch_tells_its_hook_when_the_stream_drops_comes_back_and_is_given_up():
    """``on_connection`` hears ``reconnecting`` (try n of max, the error) before each
    reopening, ``resumed`` just before the first event of the stream that came back (the
    replayed actions after it, each once), and ``gave_up`` before the error is raised; a
    watch without the hook works as before (the same events)."""
    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"), retry=cg.RetryPolicy(initial_backoff_s=0.001,
                                                                                          max_backoff_s=0.002))
        try:
            heard: list = []
            client.stub = _ScriptedStreams([
                ([_event(match_pb2.EVENT_KIND_SNAPSHOT, 2), _event(action, 3)], _Dropped()),
                ([], _Dropped()),  # the first reopening fails too
                ([_event(action, 3), _event(action, 4), _event(action, 5)], _Dropped()),  # 3: a replay too many
                ([_event(action, 6), _event(ended, 6)], None),
            ])
            stream = client.spectate("m1").watch(on_connection=heard.append, max_failures=5)
            seen = []
            async for event in stream:
                seen.append((event.kind, event.seq))
                heard.append(("event", event.seq))
            assert client.stub.opened == [None, 3, 3, 5]
            assert [(h.state, h.attempt, h.max_attempts, h.error.code if h.error else None)
                    if isinstance(h, cg.StreamState) else h for h in heard] == [
                ("event", 2), ("event", 3),
                (cg.RECONNECTING, 1, 5, grpc.StatusCode.UNAVAILABLE),
                (cg.RECONNECTING, 2, 5, grpc.StatusCode.UNAVAILABLE),
                (cg.RESUMED, 2, 5, None), ("event", 4), ("event", 5),
                (cg.RECONNECTING, 1, 5, grpc.StatusCode.UNAVAILABLE),
                (cg.RESUMED, 1, 5, None), ("event", 6), ("event", 6)]
            assert all(h.delay_s >= 0 for h in heard if isinstance(h, cg.StreamState))

            # given up: the hook hears it (after max_failures reopenings), then the error is raised
            heard.clear()
            client.stub = _ScriptedStreams([([_event(action, 7)], _Dropped())] + [([], _Dropped())] * 3)

            async def hook(state):  # a coroutine function is awaited
                await asyncio.sleep(0)
                heard.append((state.state, state.attempt))

            with pytest.raises(cg.Unavailable):
                async for event in client.spectate("m1").watch(6, on_connection=hook, max_failures=2):
                    heard.append(("event", event.seq))
            assert heard == [("event", 7), (cg.RECONNECTING, 1), (cg.RECONNECTING, 2), (cg.GAVE_UP, 2)]
            assert client.stub.opened == [6, 7, 7]

            # INTERNAL four times in a row: given up as well; NOT_FOUND is no drop (no hook call)
            for code, expected in ((grpc.StatusCode.INTERNAL, [cg.RECONNECTING] * 3 + [cg.GAVE_UP]),
                                   (grpc.StatusCode.NOT_FOUND, [])):
                heard.clear()
                client.stub = _ScriptedStreams([([], _Dropped(code))] * 4)
                with pytest.raises(cg.CardGamesError) as caught:
                    async for _ in client.spectate("m1").watch(on_connection=lambda s: heard.append(s.state)):
                        pass
                assert caught.value.code == code and heard == expected
        finally:
            await client.close()

    run(scenario(), timeout_s=30)


def test_watch_reopens_a_waiting_view_without_after_seq_and_replays_what_its_snapshot_skipped():
    """Offline, with scripted streams: the caller's ``after_seq`` (0 included) opens the first
    stream; a stream cut on a WAITING view at seq 0 is reopened without ``after_seq`` (the
    start is no action to replay), and its SNAPSHOT is delivered when it is at the last seq;
    a SNAPSHOT past it is not delivered: the stream is opened again with ``after_seq``, the
    actions meanwhile come each once, and the reopening counts no failure."""
    action, snapshot, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_SNAPSHOT, match_pb2.EVENT_KIND_MATCH_ENDED

    def waiting(seq: int) -> cg.Event:
        return cg.Event(kind=snapshot, seq=seq, view=cg.View(seq=seq, status=match_pb2.MATCH_STATUS_WAITING))

    async def watched(after_seq, scripts):
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        try:
            client.stub = _ScriptedStreams(scripts)
            heard: list = []
            seen = [(e.kind, e.seq) async for e in client.spectate("m1").watch(after_seq, on_connection=heard.append)]
            return client.stub.opened, seen, [(h.state, h.attempt) for h in heard]
        finally:
            await client.close()

    async def scenario():
        # nothing happened meanwhile: the started view's SNAPSHOT, at seq 0, is delivered
        opened, seen, heard = await watched(None, [([waiting(0)], _Dropped()),
                                                   ([_event(snapshot, 0), _event(action, 1), _event(ended, 1)], None)])
        assert opened == [None, None] and seen == [(snapshot, 0), (snapshot, 0), (action, 1), (ended, 1)]
        assert heard == [(cg.RECONNECTING, 1), (cg.RESUMED, 1)]
        # two actions meanwhile: their SNAPSHOT is skipped, they come as actions after seq 0
        opened, seen, heard = await watched(0, [([waiting(0)], _Dropped()), ([_event(snapshot, 2)], None),
                                                ([_event(action, 1), _event(action, 2), _event(ended, 2)], None)])
        assert opened == [0, None, 0] and seen == [(snapshot, 0), (action, 1), (action, 2), (ended, 2)]
        assert heard == [(cg.RECONNECTING, 1), (cg.RESUMED, 1)]
        # the caller's seq 1, dropped before any event: reopened after it; a SNAPSHOT there
        # (the gap outgrew the server's threshold) is delivered as it is
        opened, seen, heard = await watched(1, [([], _Dropped()), ([_event(snapshot, 9), _event(ended, 9)], None)])
        assert opened == [1, 1] and seen == [(snapshot, 9), (ended, 9)]
        # the caller's seq 0, dropped before any event: reopened without it (no view was
        # delivered and the last seq is 0: the match may have started since, and no action
        # would replay that)
        opened, seen, heard = await watched(0, [([], _Dropped()), ([_event(snapshot, 0), _event(ended, 0)], None)])
        assert opened == [0, None] and seen == [(snapshot, 0), (ended, 0)]

    run(scenario(), timeout_s=30)


def test_a_seats_watch_sends_its_token_and_a_spectators_none():
    """A :class:`SeatSession` sends its seat token (``authorization: Bearer ...``) on every
    call, its watch streams (the reopenings too) included: the stream is the seat's presence
    and shows its hand; a spectator's carries no authorization."""
    ended = match_pb2.EVENT_KIND_MATCH_ENDED

    class Authorized(_ScriptedStreams):
        def WatchMatch(self, request, metadata=None):
            self.auth = getattr(self, "auth", []) + [dict(metadata or ()).get("authorization")]
            return super().WatchMatch(request, metadata)

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        try:
            seen = []
            for audience in (client.seat_session("m1", 1, "seat-token"), client.spectate("m1")):
                client.stub = Authorized([([_event(match_pb2.EVENT_KIND_ACTION, 1)], _Dropped()),
                                          ([_event(ended, 1)], None)])
                assert [e.seq async for e in audience.watch()] == [1, 1]
                seen.append(client.stub.auth)
            return seen
        finally:
            await client.close()

    assert run(scenario(), timeout_s=30) == [["Bearer seat-token"] * 2, [None, None]]

def test_every_stream_a_watch_opened_is_cancelled_when_it_is_done_with_it():
    """Each WatchMatch call the watch leaves is cancelled, so that the server ends it (a
    seat's open stream counts as its presence): one that dropped, one taken for lost after
    its silence (docs/api.md: "cancelled and reopened as after a drop") and the last, left
    at MATCH_ENDED."""
    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED

    class Cancellable(_ScriptedStreams):
        def WatchMatch(self, request, metadata=None):
            call = super().WatchMatch(request, metadata)
            index = len(self.opened) - 1
            self.cancelled = getattr(self, "cancelled", [])
            call.cancel = lambda: self.cancelled.append(index)
            return call

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        try:
            client.stub = Cancellable([([_event(action, 1)], _Dropped()), ([_event(action, 2)], SILENT),
                                       ([_event(ended, 2)], SILENT)])
            seen = [e.seq async for e in client.spectate("m1").watch(silence_timeout_s=0.1)]
            return seen, client.stub.opened, client.stub.cancelled
        finally:
            await client.close()

    seen, opened, cancelled = run(scenario(), timeout_s=30)
    assert seen == [1, 2, 2] and opened == [None, 1, 2] and cancelled == [0, 1, 2]

def test_a_reopening_waits_its_delay_unless_an_unreachable_engine_comes_back():
    """``_pause``: the delay before a reopening is waited in full after a clean end, a refusal
    (RESOURCE_EXHAUSTED) or an UNAVAILABLE on a channel that is connected (the server said
    so: draining, a watcher behind); after an UNAVAILABLE on a channel that is not, it ends
    as soon as the channel is connected again, and at the latest after the delay."""
    ready, connecting = grpc.ChannelConnectivity.READY, grpc.ChannelConnectivity.CONNECTING

    class Channel:
        def __init__(self, states):
            self.states, self.asked = list(states), []

        def get_state(self, try_to_connect=False):
            self.asked.append(try_to_connect)
            return self.states[0]

        async def wait_for_state_change(self, state):
            await asyncio.sleep(0.01)
            if len(self.states) > 1:
                self.states.pop(0)

    unavailable = cg.Unavailable(grpc.StatusCode.UNAVAILABLE, "down")
    limited = cg.ResourceExhausted(grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down", "RATE_LIMITED")

    async def paused(channel, error, delay_s=0.1) -> float:
        started = time.monotonic()
        await cg._pause(channel, delay_s, error)
        return time.monotonic() - started

    async def scenario():
        for error in (None, limited):  # connected at once: no matter
            channel = Channel([connecting, ready])
            assert await paused(channel, error) >= 0.09
            assert channel.asked == []  # the delay alone: the channel is not asked
        channel = Channel([ready])
        assert await paused(channel, unavailable) >= 0.09
        assert channel.asked == [False]  # asked once, not told to connect
        channel = Channel([connecting, connecting, ready])
        # two state changes of 0.01 s, well within the delay: a wide one, as the bound, that a
        # loaded machine's stall of seconds cannot reach
        assert await paused(channel, unavailable, delay_s=20.0) < 10.0
        assert channel.asked == [False, True, True, True]  # the waits ask the channel to connect
        # never connected: the delay, and no wait for the channel beyond it (a hang guard)
        assert 0.09 <= await paused(Channel([connecting]), unavailable) < 10.0

    run(scenario(), timeout_s=30)


class _StreamsAndSummary(_ScriptedStreams):
    """Scripted streams, and GetMatch answering a summary with ``status``."""

    def __init__(self, scripts, status: int = match_pb2.MATCH_STATUS_ACTIVE) -> None:
        super().__init__(scripts)
        self.status, self.summaries = status, 0

    async def GetMatch(self, request, **kwargs):
        self.summaries += 1
        return cg.card_games_pb2.GetMatchResponse(match=cg.MatchSummary(match_id=request.match_id, status=self.status))


def test_watch_after_a_clean_end_an_ended_match_and_a_view_less_event():
    """Offline: a stream the server ended cleanly is reopened (told as a reconnection) unless
    the match is over or ``resume`` is off; ``stop_when_ended=False`` reads on past
    MATCH_ENDED; an event without a view (a heartbeat) does not make a waiting match started,
    a SNAPSHOT of a started one at seq 0 does; BAD_AFTER_SEQ without ``resume`` is raised."""
    snapshot, ended = match_pb2.EVENT_KIND_SNAPSHOT, match_pb2.EVENT_KIND_MATCH_ENDED
    action = match_pb2.EVENT_KIND_ACTION
    waiting = cg.Event(kind=snapshot, seq=0, view=cg.View(status=match_pb2.MATCH_STATUS_WAITING))

    async def watched(scripts, status=match_pb2.MATCH_STATUS_ACTIVE, **kwargs):
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        try:
            client.stub = _StreamsAndSummary(scripts, status)
            heard: list = []
            seen = [(e.kind, e.seq) async for e in client.spectate("m1").watch(on_connection=heard.append, **kwargs)]
            return client.stub, seen, [(h.state, h.attempt) for h in heard]
        finally:
            await client.close()

    async def scenario():
        stub, seen, heard = await watched([([_event(action, 1)], None), ([_event(action, 2), _event(ended, 2)], None)])
        assert stub.opened == [None, 1] and stub.summaries == 1 and seen == [(action, 1), (action, 2), (ended, 2)]
        assert heard == [(cg.RECONNECTING, 1), (cg.RESUMED, 1)]
        stub, seen, heard = await watched([([_event(action, 1)], None)], match_pb2.MATCH_STATUS_FINISHED)
        assert stub.opened == [None] and stub.summaries == 1 and heard == []
        stub, seen, heard = await watched([([_event(action, 1)], None)], resume=False)
        assert stub.opened == [None] and stub.summaries == 0
        stub, seen, heard = await watched([([_event(ended, 3), _heartbeat(3, None)], None)],
                                          stop_when_ended=False, resume=False)
        assert seen == [(ended, 3), (match_pb2.EVENT_KIND_HEARTBEAT, 3)]
        stub, seen, heard = await watched([([waiting, _heartbeat(0, None)], _Dropped()), ([_event(ended, 0)], None)])
        assert stub.opened == [None, None]  # the heartbeat said nothing of a start
        stub, seen, heard = await watched([([_event(snapshot, 0)], _Dropped()), ([_event(ended, 0)], None)])
        assert stub.opened == [None, 0]  # started at seq 0: resumed after it
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        try:  # what GAVE_UP says: the attempts made, the limit, the error raised next
            for max_failures, code, attempts in ((1, grpc.StatusCode.UNAVAILABLE, 1), (None, grpc.StatusCode.INTERNAL, 3)):
                client.stub = _ScriptedStreams([([], _Dropped(code))] * 4)
                heard = []
                with pytest.raises(cg.CardGamesError) as caught:
                    async for _ in client.spectate("m1").watch(max_failures=max_failures, on_connection=heard.append):
                        pass
                assert heard[-1] == cg.StreamState(cg.GAVE_UP, attempts, max_failures, caught.value)
            for code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL):  # resume=False: raised as it is
                client.stub = _ScriptedStreams([([], _Dropped(code))] * 2)
                heard = []
                with pytest.raises(cg.CardGamesError):
                    async for _ in client.spectate("m1").watch(resume=False, on_connection=heard.append):
                        pass
                assert heard == [] and client.stub.opened == [None]
        finally:
            await client.close()

    run(scenario(), timeout_s=30)


def _heartbeat(seq: int, interval_s: float | None) -> cg.Event:
    event = cg.Event(kind=match_pb2.EVENT_KIND_HEARTBEAT, seq=seq)
    event.details.update({"deadline": None} | ({} if interval_s is None else {"interval_s": interval_s}))
    return event


def test_a_heartbeat_naming_no_positive_interval_sets_no_silence_limit():
    """A HEARTBEAT whose ``interval_s`` is not above zero names no interval: the stream keeps
    waiting, as before any heartbeat, instead of being taken for lost after 3 * interval + 1 s
    (a negative one made that a tenth of a second)."""
    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"))
        heard: list = []
        try:
            client.stub = _ScriptedStreams([([_heartbeat(3, -0.3)], SILENT)])

            async def follow():
                async for _ in client.spectate("m1").watch(on_connection=heard.append):
                    pass

            with pytest.raises(TimeoutError):
                await asyncio.wait_for(follow(), 0.2)  # the negative interval made the limit 0.1 s
            assert heard == [] and client.stub.opened == [None]
        finally:
            await client.close()

    run(scenario(), timeout_s=30)


def test_a_heartbeat_naming_an_interval_of_zero_sets_no_silence_limit(monkeypatch):
    """An ``interval_s`` of 0 is not above zero either: each read of the stream after it
    waits without a limit (3 * 0 + 1 s would have taken a quiet stream for lost after 1 s)."""
    limits: list = []
    messages = cg._messages

    def recorded(call, limit_s):
        return messages(call, lambda: limits.append(limit_s()) or limits[-1])

    monkeypatch.setattr(cg, "_messages", recorded)

    async def scenario():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"))
        try:
            client.stub = _ScriptedStreams([([_heartbeat(3, 0), _heartbeat(3, 0)], SILENT)])

            async def follow():
                async for _ in client.spectate("m1").watch():
                    pass

            with pytest.raises(TimeoutError):
                await asyncio.wait_for(follow(), 0.1)
        finally:
            await client.close()

    run(scenario(), timeout_s=30)
    assert limits == [None, None, None]  # before the first heartbeat, and after each


def test_a_silent_watch_stream_is_taken_for_lost_after_three_heartbeat_intervals():
    """A stream on which nothing comes, not even a heartbeat, for three of the intervals the
    server names in its heartbeats plus 1 s is reopened as after a drop (UNAVAILABLE,
    STREAM_SILENT), after the last sequence number received; before any heartbeat, or with a
    server that names no interval, the stream waits as long as it takes (a quiet table is not
    a lost one), and ``silence_timeout_s`` overrides the limit (0: none). The limit applied is
    the one the reconnecting error names, and no sooner (no upper bound on how much later: a
    loaded machine's timer fires late)."""
    action, ended = match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_MATCH_ENDED

    async def watch(stub: _ScriptedStreams, **kwargs):
        """(reconnecting / resumed states, events) of a watch of ``stub``'s streams, on a client
        of its own."""
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"), retry=cg.RetryPolicy(initial_backoff_s=0.001,
                                                                                          max_backoff_s=0.002))
        try:
            client.stub = stub
            heard, seen = [], []
            started = time.monotonic()
            async for event in client.spectate("m1").watch(
                    4, on_connection=lambda s: heard.append((s.state, s.error and s.error.reason,
                                                             round(time.monotonic() - started, 1),
                                                             s.error and s.error.message)), **kwargs):
                seen.append((event.kind, event.seq))
            return heard, seen
        finally:
            await client.close()

    async def waits_on(events, **kwargs) -> list[int | None]:
        """The openings of a watch that still waits on its silent stream after 2 s."""
        stub = _ScriptedStreams([(events, SILENT), ([], None)])
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(2.0):
                await watch(stub, **kwargs)
        return stub.opened

    async def scenario():
        # interval 0.1 s: silent for 1.3 s -> lost, reopened after seq 5
        lost = _ScriptedStreams([([_heartbeat(4, 0.1), _event(action, 5)], SILENT),
                                 ([_event(action, 6), _event(ended, 6)], None)])
        # given explicitly: it applies from the start, heartbeat or not
        given = _ScriptedStreams([([_event(action, 5)], SILENT), ([_event(ended, 5)], None)])
        # every case at once, each on a client of its own
        (heard, seen), (given_heard, _), *waited = await asyncio.gather(
            watch(lost), watch(given, silence_timeout_s=0.3),
            # no interval named (an older server), none learned yet, or 0: the stream is waited on
            waits_on([_heartbeat(4, None)]), waits_on([_event(action, 5)]),
            waits_on([_heartbeat(4, 0.1)], silence_timeout_s=0))

        assert lost.opened == [4, 5]
        assert seen == [(match_pb2.EVENT_KIND_HEARTBEAT, 4), (action, 5), (action, 6), (ended, 6)]
        assert [h[:2] for h in heard] == [(cg.RECONNECTING, "STREAM_SILENT"), (cg.RESUMED, None)]
        assert heard[0][3].startswith("no message for 1.3 s (heartbeats included)"), heard
        assert heard[0][2] >= 1.2, heard  # 1.3 s, rounded to a tenth

        assert given.opened == [4, 5] and [h[:2] for h in given_heard] == [
            (cg.RECONNECTING, "STREAM_SILENT"), (cg.RESUMED, None)]
        assert given_heard[0][3].startswith("no message for 0.3 s"), given_heard
        assert given_heard[0][2] >= 0.2, given_heard

        assert waited == [[4], [4], [4]]

    run(scenario(), timeout_s=30)


def test_a_watch_through_a_network_that_drops_every_packet_says_so_and_comes_back(tmp_path):
    """Through a proxy that holds every byte and closes nothing (keepalive would take 40 s to
    notice, and never where a proxy answers its pings), the watch of an engine sending
    heartbeats every 0.1 s reports ``reconnecting`` (STREAM_SILENT) within about 3 intervals
    + 1 s (the limit its error names, and no sooner), and keeps reopening while the network
    stays silent; once the bytes flow again it resumes, and the action played meanwhile comes
    once. The waits are bounded by hang guards only: a loaded machine's timers fire late."""
    service = LocalService(log_path=tmp_path / "engine.log", args=["--heartbeat-interval-s", "0.1"])
    service.start()

    async def scenario():
        async with cg.connect(service.target) as direct, CuttableProxy(service.target) as proxy:
            match, sessions, mover = await two_seats(direct)
            client = cg.connect(proxy.target)
            heard: list[tuple[str, str | None, float, str | None]] = []
            seen: list[tuple[int, int]] = []

            async def follow():
                async for event in client.spectate(match.match_id).watch(on_connection=lambda s: heard.append(
                        (s.state, s.error and s.error.reason, time.monotonic(), s.error and s.error.message))):
                    seen.append((event.kind, event.seq))

            task = asyncio.create_task(follow())
            try:
                while (match_pb2.EVENT_KIND_HEARTBEAT, 0) not in seen:
                    await asyncio.sleep(0.02)
                proxy.freeze()
                frozen = time.monotonic()
                hang_guard = frozen + 45  # expected: under 3 s to the second reconnecting
                await mover.act(lambda v: v.legal_actions[0].notation)
                while sum(state == cg.RECONNECTING for state, *_ in heard) < 2:
                    assert time.monotonic() < hang_guard, heard
                    await asyncio.sleep(0.02)
                assert {(state, reason) for state, reason, *_ in heard} == {(cg.RECONNECTING, "STREAM_SILENT")}
                # the limit learnt from the heartbeats, 3 * 0.1 + 1 s, on each reopening too
                assert all(message.startswith("no message for 1.3 s") for *_, message in heard), heard
                # 1.3 s after the last message, which came up to an interval before the freeze
                assert heard[0][2] - frozen >= 1.1, heard[0][2] - frozen
                proxy.thaw()
                while (match_pb2.EVENT_KIND_ACTION, 1) not in seen:
                    assert time.monotonic() < hang_guard, (heard, seen)
                    await asyncio.sleep(0.02)
                await mover.act(lambda v: v.legal_actions[0].notation)  # live again
                while (match_pb2.EVENT_KIND_ACTION, 2) not in seen:
                    assert time.monotonic() < hang_guard, (heard, seen)
                    await asyncio.sleep(0.02)
                assert heard[-1][0] == cg.RESUMED
                actions = [seq for kind, seq in seen if kind == match_pb2.EVENT_KIND_ACTION]
                assert actions == [1, 2]
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                await client.close()

    try:
        run(scenario(), timeout_s=60)
    finally:
        assert service.stop() == 0, service.log_tail()


@dataclass(frozen=True)
class SetDelays(cg.RetryPolicy):
    """A retry policy without jitter whose delay the test sets as it goes: each reopening
    waits ``delays[-1]`` seconds (``delays`` is appended to)."""

    delays: list[float] = field(default_factory=lambda: [0.3])

    def backoff(self, attempt: int) -> float:
        return self.delays[-1]


def test_a_watch_comes_back_on_the_pending_reopening_once_the_engine_is_back(engine):
    """After 3 s of refused connections (grpc's own wait between attempts to reach the engine
    is at its cap of a second by then, see the next test: uncapped it grows to ~4 s after 10 s,
    to 2 minutes at most) the stream comes back on the reopening that was waiting when the
    engine returned: a reopening waits for the channel to connect rather than out its own
    jittered delay (up to 2 s more: a CI run took over 3 s). Here that delay is made 600 s, far
    beyond the test's time limit: the stream is back only if the channel connecting cut it
    short."""
    never = 600.0

    async def scenario():
        async with cg.connect(engine.target) as direct:
            match, sessions, mover = await two_seats(direct)
            proxy = CuttableProxy(engine.target)
            await proxy.__aenter__()
            port = proxy.port
            policy = SetDelays()
            client = cg.connect(proxy.target, retry=policy)
            heard: list[cg.StreamState] = []
            seen: list[int] = []

            async def follow():
                async for event in client.spectate(match.match_id).watch(on_connection=heard.append):
                    seen.append(event.seq)

            async def until(what: Callable[[], bool]) -> None:
                while not what():
                    await asyncio.sleep(0.02)

            task = asyncio.create_task(follow())
            try:
                await until(lambda: bool(seen))
                await proxy.__aexit__(None, None, None)  # refused from now on
                await asyncio.sleep(3)
                policy.delays.append(never)
                await until(lambda: any(state.delay_s == never for state in heard))
                pending = heard[-1]  # the reopening now waiting, and the last one reported
                assert (pending.state, pending.delay_s) == (cg.RECONNECTING, never), heard[-3:]
                await mover.act(lambda v: v.legal_actions[0].notation)  # an event to come back with
                proxy = CuttableProxy(engine.target, port=port)
                await proxy.__aenter__()
                await until(lambda: heard[-1].state != cg.RECONNECTING)
                assert (heard[-1].state, heard[-1].attempt) == (cg.RESUMED, pending.attempt), heard[-3:]
                # the reopenings went on while the engine was away, each refused
                assert all(state.state == cg.RECONNECTING and state.error.code == grpc.StatusCode.UNAVAILABLE
                           for state in heard[:-1]), heard
                assert [state.attempt for state in heard[:-1]] == list(range(1, pending.attempt + 1))
                assert pending.attempt >= 5, heard
                await until(lambda: len(seen) >= 2)
                assert seen[-1] > seen[0]  # the action played meanwhile, replayed
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                await client.close()
                await proxy.__aexit__(None, None, None)

    run(scenario(), timeout_s=60)  # a hang guard only: the stream is back about a second after the engine


def test_connect_hands_its_settings_to_the_client():
    """The target (named by the terminal clients' messages), the call timeout, the retry policy
    and the admin token (a file's newline dropped) given to ``connect`` are the client's; a
    client made without them waits 10 s per call and has no admin."""
    async def go():
        policy = cg.RetryPolicy(attempts=2)
        client = cg.connect("127.0.0.1:9", timeout_s=3.5, retry=policy, admin_token="secret\n")
        try:
            assert (client.target, client.timeout_s, client.retry) == ("127.0.0.1:9", 3.5, policy)
            assert client._admin_token == "secret" and client.admin.token == "secret"
            assert client.admin.timeout_s == 3.5
        finally:
            await client.close()
        default = cg.connect("127.0.0.1:9")
        try:
            assert (default.timeout_s, default.retry, default.admin) == (10.0, cg.RetryPolicy(), None)
        finally:
            await default.close()
        plain = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"), admin_token=" \n")
        try:
            assert plain.timeout_s == 10.0 and plain.admin is None and plain._admin_token is None
            assert plain.target == "" and plain.retry == cg.RetryPolicy()
            # an AdminClient made directly drops a file's newline too, and takes blanks for none
            assert cg.AdminClient(plain.channel, " secret\n").token == "secret"
            assert cg.AdminClient(plain.channel, " \n").token is None
            assert cg.AdminClient(plain.channel, None).token is None
        finally:
            await plain.close()

    asyncio.run(go())


def channels_opened(monkeypatch, **connect_args) -> list[tuple[bool, dict]]:
    """Each channel ``connect(**connect_args)`` opens: whether it is secure, and its options."""
    opened: list[tuple[bool, dict]] = []

    def recording(real, is_secure=False):
        def channel(target, *args, options=(), **kwargs):
            opened.append((is_secure, dict(options)))
            return real(target, *args, options=options, **kwargs)
        return channel

    monkeypatch.setattr(grpc.aio, "insecure_channel", recording(grpc.aio.insecure_channel))
    monkeypatch.setattr(grpc.aio, "secure_channel", recording(grpc.aio.secure_channel, True))

    async def go():
        await cg.connect(f"127.0.0.1:{free_port()}", **connect_args).close()

    asyncio.run(go())
    return opened


@pytest.mark.parametrize("tls", [False, True])
def test_the_channel_waits_at_most_a_second_between_attempts_to_reach_the_engine(monkeypatch, tls):
    """grpc's own wait between attempts to reach an engine that is down grows to 2 minutes:
    after a 20 s outage the watch stream came back 6 s after the engine. Every channel
    ``connect`` opens caps it at CHANNEL_MAX_RECONNECT_BACKOFF_MS (a second, as the Node
    library's; tests/clients/test_docs.py holds the documents to it)."""
    ((secure, options),) = channels_opened(monkeypatch, tls=tls)
    assert secure == tls  # tls alone (no roots, no name) means TLS
    assert options["grpc.max_reconnect_backoff_ms"] == cg.CHANNEL_MAX_RECONNECT_BACKOFF_MS == 1000


@pytest.mark.parametrize("tls", [False, True])
def test_the_channel_pings_and_takes_large_trailers_as_the_documents_say(monkeypatch, tls):
    """docs/api.md: keepalive pings notice a dead connection "only after up to 40 s" (a ping
    every 30 s, 10 s for its answer; README: "not keepalive's 40 s"), never more often than
    the server allows (every 10 s: quicker ones get the connection closed, "Connecting"), and
    an idle connection is pinged too (a watch stream waiting on a quiet table); "The Python
    library accepts up to 4 MiB" of metadata (an ABORTED status's View travels in its trailer)."""
    ((_, options),) = channels_opened(monkeypatch, tls=tls)
    assert options["grpc.keepalive_time_ms"] >= 10_000
    assert (options["grpc.keepalive_time_ms"], options["grpc.keepalive_timeout_ms"]) == (30_000, 10_000)
    assert options["grpc.keepalive_permit_without_calls"] == 1
    assert options["grpc.max_metadata_size"] == options["grpc.absolute_max_metadata_size"] == 4 * 1024 * 1024
    assert cg.MAX_METADATA_BYTES == 4 * 1024 * 1024
    assert "grpc.ssl_target_name_override" not in options  # no name to verify was given


def test_a_server_name_or_roots_open_a_secure_channel_that_verifies_that_name(monkeypatch):
    """``root_certificates`` or ``server_name`` implies ``tls`` (as in the Node client), and
    the name given is the one verified (grpc.ssl_target_name_override); the roots go to the
    channel's credentials."""
    roots: list[bytes | None] = []
    real = grpc.ssl_channel_credentials

    def credentials(root_certificates=None, **kwargs):
        roots.append(root_certificates)
        return real(root_certificates=root_certificates, **kwargs)

    monkeypatch.setattr(grpc, "ssl_channel_credentials", credentials)
    ((secure, options),) = channels_opened(monkeypatch, server_name="engine.example")
    assert secure and options["grpc.ssl_target_name_override"] == "engine.example"
    pem = b"roots: the channel connects lazily, so they are not read here"
    ((secure, options),) = channels_opened(monkeypatch, root_certificates=pem)
    assert secure and "grpc.ssl_target_name_override" not in options
    assert roots == [None, pem]


def test_the_default_retry_policy_is_the_documented_one(monkeypatch):
    """docs/api.md, "Reconnecting": a call has ten tries in all for a lost answer
    (``RetryPolicy.attempts``); a rate limit's delay over 30 s is raised at once
    (``max_rate_limit_wait_s``); each wait is a jittered backoff of up to 0.1 s, 0.2 s,
    0.4 s..., at most 2 s (full jitter: anything from 0 to that bound)."""
    policy = cg.RetryPolicy()
    assert (policy.attempts, policy.max_rate_limit_wait_s) == (10, 30.0)
    monkeypatch.setattr(cg.random, "uniform", lambda low, high: (low, high))
    assert [policy.backoff(n) for n in range(7)] == [(0, 0.1), (0, 0.2), (0, 0.4), (0, 0.8), (0, 1.6), (0, 2.0),
                                                     (0, 2.0)]


def test_no_object_of_the_library_shows_a_token_in_its_repr():
    """The admin token and a seat token never appear in a repr (a debugger, a logged object, a
    traceback that shows locals, as textual's does): AdminClient's dataclass repr showed the
    admin token; SeatSession already left its token out; the FileArgument of clients.play's
    ``--token-file`` (in its parsed arguments) showed the seat token it read."""
    async def go():
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{free_port()}")
        try:
            client = cg.Client(channel, admin_token="admin-token-s3cret")
            seat = client.seat_session("m1", 0, "seat-token-s3cret")
            return [repr(o) for o in (client, client.admin, seat, client.spectate("m1"))]
        finally:
            await channel.close()

    token_file = cg.FileArgument("seat.token", "seat-token-s3cret")
    for text in asyncio.run(go()) + [repr(token_file), repr(argparse.Namespace(token_file=token_file))]:
        assert "s3cret" not in text, text
    assert "seat.token" in repr(token_file)


def committed_deal(cards: list[str], salts: list[str], shown: int) -> tuple[cg.DealReveal, str]:
    """A reveal of the deck ``cards`` committed card by card with ``salts`` (one a position),
    its first ``shown`` cards shown and the rest hidden, and its commitment (docs/api.md,
    "Fair dealing")."""
    hashes = [cg.card_hash(s, c) for s, c in zip(salts, cards)]
    commitment = hashlib.sha256(",".join(hashes).encode()).hexdigest()
    return cg.DealReveal(deal=0, commitment=commitment,
                         cards=[c if i < shown else "" for i, c in enumerate(cards)],
                         card_salts=[s if i < shown else "" for i, s in enumerate(salts)],
                         card_hashes=["" if i < shown else h for i, h in enumerate(hashes)]), commitment


def test_each_games_pack_is_its_rulebooks():
    """PACKS, verify_deal's ``pack``: KL-1.1 and JJ-1.1, 32 cards, ``A K Q J T 9 8 7`` in each
    of the four suits; GJ-1.1 and JJK-1.1, 36 cards, 6 to A with ``6S`` and ``6C`` replaced by
    the jokers ``X1`` and ``X2`` (``6H`` and ``6D`` in the pack); card codes as NOTATION.md's."""
    thirty_two = {rank + suit for rank in "AKQJT987" for suit in "SHDC"}
    thirty_six = thirty_two | {"6H", "6D", "X1", "X2"}
    assert {game: (len(pack), set(pack)) for game, pack in cg.PACKS.items()} == {
        "klaberjass": (32, thirty_two), "jojotte": (32, thirty_two),
        "georgian_joker": (36, thirty_six), "japanese_joker": (36, thirty_six)}


def test_verify_deal_with_the_pack_refuses_a_commitment_to_a_deck_that_is_not_the_pack():
    """A lying server may commit to a deck that is no permutation of the pack: 31 or 33
    positions, or a card the game does not have. Such a reveal opens its own commitment, so
    verify_deal alone accepts it; with ``pack`` it is refused (and a genuine reveal passes)."""

    def committed(cards: list[str], shown: int) -> tuple[cg.DealReveal, str]:
        return committed_deal(cards, [hashlib.sha256(str(i).encode()).hexdigest()[:32] for i in range(len(cards))],
                              shown)

    pack = list(cg.PACKS["klaberjass"])
    assert len(pack) == 32 and len(set(pack)) == 32 and len(cg.PACKS["japanese_joker"]) == 36
    assert {"X1", "X2", "6H", "6D"} <= set(cg.PACKS["georgian_joker"]) and "6S" not in cg.PACKS["georgian_joker"]
    genuine, c = committed(pack, 20)
    assert cg.verify_deal(genuine, c) and cg.verify_deal(genuine, c, pack=pack)
    for deck in (pack[:31], pack + ["X1"], ["ZZ"] + pack[1:], ["AS:1"] + pack[1:]):
        reveal, c = committed(deck, 20)
        assert cg.verify_deal(reveal, c)  # the commitment opens...
        assert cg.verify_deal(reveal, c, pack=pack) is False  # ...to no deck of this game
    reveal, c = committed(pack[:31] + ["ZZ"], 20)  # the odd card hidden: no check can tell
    assert cg.verify_deal(reveal, c, pack=pack)


def test_verify_deal_refuses_a_salt_used_at_two_positions():
    """Each position has a card salt of its own (docs/api.md, "Fair dealing"). A server that
    used one salt twice makes a hidden card findable by hashing the pack's cards with a shown
    salt; such a reveal still opened its commitment and was accepted. A shown salt twice, a
    hidden hash twice, or a hidden hash that opens with a shown salt (given the pack) is
    refused now."""
    pack = list(cg.PACKS["klaberjass"])

    def committed(salts: list[str], shown: int) -> tuple[cg.DealReveal, str]:
        return committed_deal(pack, salts, shown)

    fresh = [hashlib.sha256(f"salt {i}".encode()).hexdigest()[:32] for i in range(32)]
    reveal, c = committed(fresh, 20)
    assert cg.verify_deal(reveal, c, pack=pack)
    shown_twice = fresh[:]
    shown_twice[1] = shown_twice[0]  # two shown cards with one salt
    reveal, c = committed(shown_twice, 20)
    assert cg.verify_deal(reveal, c) is False and cg.verify_deal(reveal, c, pack=pack) is False
    hidden_reused = fresh[:]
    hidden_reused[25] = hidden_reused[3]  # a hidden card salted as a shown one: findable
    reveal, c = committed(hidden_reused, 20)
    assert cg.verify_deal(reveal, c)  # without the pack nobody can try its cards...
    assert not cg.verify_deal(reveal, c, pack=pack)  # ...with it, the hidden card opens
    assert cg.card_hash(fresh[3], pack[25]) == reveal.card_hashes[25]


def test_verify_deal_refuses_a_reveal_of_the_wrong_form_even_when_it_opens_its_commitment():
    """docs/api.md, "Fair dealing": "check its form first": three lists with one entry per
    position, each position a card, its salt (32 lowercase hex digits) and no hash, or no card,
    no salt and a hash (64 lowercase hex digits), no card twice. Each reveal below opens its
    commitment (the hashes are made to match), so only the form check refuses it: False."""
    pack = list(cg.PACKS["klaberjass"])
    salts = [hashlib.sha256(f"salt {i}".encode()).hexdigest()[:32] for i in range(32)]
    genuine, c = committed_deal(pack, salts, 20)
    assert cg.verify_deal(genuine, c) is True and cg.verify_deal(genuine) is True
    assert cg.verify_deal(genuine, c.upper()) is True  # the commitment's hex digits in either case

    def refused(reveal: cg.DealReveal, commitment: str | None) -> bool:
        return cg.verify_deal(reveal, commitment) is False and cg.verify_deal(reveal, commitment, pack=pack) is False

    assert refused(genuine, hashlib.sha256(b"another deck").hexdigest())
    nothing = cg.DealReveal(deal=0, commitment=hashlib.sha256(b"").hexdigest())  # no position at all
    assert refused(nothing, None) and refused(genuine, "")
    for field_name in ("cards", "card_salts", "card_hashes"):  # one list a position longer
        longer = cg.DealReveal()
        longer.CopyFrom(genuine)
        getattr(longer, field_name).append("")
        assert refused(longer, c), field_name
    twice, c2 = committed_deal(["AS"] + pack[:31], salts, 20)  # the ace of spades shown twice
    assert refused(twice, c2)
    for bad_salt in (salts[0][:31], salts[0] + "0", "X1" * 16, salts[0].upper()):
        reveal, c2 = committed_deal(pack, [bad_salt] + salts[1:], 20)
        assert refused(reveal, c2), bad_salt
    for bad_hash in ("0" * 63, "0" * 65, "g" * 64, "A" * 64):  # a hidden position's hash
        reveal = cg.DealReveal()
        reveal.CopyFrom(genuine)
        reveal.card_hashes[31] = bad_hash
        hashes = [cg.card_hash(s, card) for s, card in zip(salts[:20], pack)] + list(reveal.card_hashes[20:])
        assert refused(reveal, hashlib.sha256(",".join(hashes).encode()).hexdigest()), bad_hash
    for position in ({"card_hashes": cg.card_hash(salts[0], pack[0])},  # a shown card with a hash too
                     {"cards": "", "card_salts": ""},  # a position with nothing
                     {"card_salts": ""}):  # a shown card without its salt
        reveal = cg.DealReveal()
        reveal.CopyFrom(genuine)
        for name, value in position.items():
            getattr(reveal, name)[0] = value
        assert refused(reveal, c) and refused(reveal, None), position
    empty_33rd = cg.DealReveal()
    empty_33rd.CopyFrom(genuine)  # a position with nothing at all after the 32 that open c
    for name in ("cards", "card_salts", "card_hashes"):
        getattr(empty_33rd, name).append("")
    assert cg.verify_deal(empty_33rd, c) is False
    every_card, c2 = committed_deal(pack, salts, 32)  # nothing hidden: the whole pack shown
    assert cg.verify_deal(every_card, c2, pack=pack) is True



class _Recorder:
    """A stub that records each unary call (method, request, timeout, authorization header)
    and answers the method's response message, filled by ``answers`` (method -> reply), or
    fails with ``error`` when set."""

    def __init__(self, answers: dict | None = None, error: grpc.RpcError | None = None) -> None:
        self.answers, self.error, self.calls = answers or {}, error, []

    def __getattr__(self, name):
        async def call(request, *, timeout=None, metadata=None):
            self.calls.append((name, request, timeout, dict(metadata or ()).get("authorization")))
            if self.error is not None:
                raise self.error
            return self.answers[name]

        return call


def test_admin_calls_send_the_admin_token_and_their_match_and_answer_what_admin_proto_says():
    """Each AdminService call of ``Client.admin`` carries the admin token (a file's newline
    dropped, as the engine drops it) and the client's timeout, names its match (and seat,
    reason), and answers what docs/api.md says: TerminateMatch's summary, ReissueSeatToken's
    seat and new token, ExportTranscript's JSON text; a refusal is a CardGamesError of its
    status code, sent once (the admin token is never rate limited: nothing to wait out)."""
    from engine_service.transport.generated import admin_pb2

    summary = match_pb2.MatchSummary(match_id="m3", status=match_pb2.MATCH_STATUS_TERMINATED)
    answers = {"InspectMatch": admin_pb2.InspectMatchResponse(match=summary),
               "TerminateMatch": admin_pb2.TerminateMatchResponse(match=summary),
               "ReissueSeatToken": admin_pb2.ReissueSeatTokenResponse(seat=1, seat_token="new-token", match=summary),
               "ExportTranscript": admin_pb2.ExportTranscriptResponse(transcript_json='{"game": "jojotte"}')}

    async def go():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"), admin_token="adm1n\n", timeout_s=7.5)
        try:
            admin = client.admin
            admin.stub = stub = _Recorder(answers)
            inspected = await admin.inspect("m3")
            terminated = await admin.terminate("m3", "cheating")
            reissued = await admin.reissue_seat_token("m3", 1)
            transcript = await admin.export_transcript("m3")
            admin.stub = refusing = _Recorder(error=_Dropped())
            with pytest.raises(cg.Unavailable):
                await admin.terminate("m3", "again")
            return stub.calls, refusing.calls, inspected, terminated, reissued, transcript
        finally:
            await client.close()

    calls, refused, inspected, terminated, reissued, transcript = asyncio.run(go())
    assert [(name, timeout, auth) for name, _, timeout, auth in calls] == [
        (name, 7.5, "Bearer adm1n") for name in ("InspectMatch", "TerminateMatch", "ReissueSeatToken",
                                                 "ExportTranscript")]
    assert [request.match_id for _, request, _, _ in calls] == ["m3"] * 4
    assert calls[1][1].reason == "cheating" and calls[2][1].seat == 1
    assert inspected.match == summary and terminated == summary
    assert (reissued.seat, reissued.seat_token) == (1, "new-token")
    assert transcript == '{"game": "jojotte"}'
    assert [name for name, *_ in refused] == ["TerminateMatch"]


def test_an_admin_client_without_a_token_sends_no_authorization():
    """An AdminClient made with no token, or a blank one (an empty file), sends no
    authorization header rather than ``Bearer `` with nothing after it."""
    from engine_service.transport.generated import admin_pb2

    async def go():
        channel = grpc.aio.insecure_channel("127.0.0.1:9")
        try:
            seen = []
            for token in (None, " \n"):
                admin = cg.AdminClient(channel, token)
                admin.stub = stub = _Recorder({"ExportTranscript": admin_pb2.ExportTranscriptResponse()})
                await admin.export_transcript("m1")
                seen += [(admin.token, admin.timeout_s, auth, timeout) for _, _, timeout, auth in stub.calls]
            return seen
        finally:
            await channel.close()

    assert asyncio.run(go()) == [(None, 10.0, None, 10.0)] * 2


def test_the_bot_load_failures_come_from_an_unfiltered_list_bots():
    """``list_bot_load_failures`` answers ListBots' ``load_failures`` (plugin, stage, reason)
    of a request for every game, repeated after a lost answer as every read is; ``list_bots()``
    asks for every game's bots too, ``list_bots(game)`` for that game's."""
    failure = cg.card_games_pb2.BotLoadFailure(plugin="broken", stage="import", reason="ImportError")

    class LosesTheFirst(_Recorder):
        def __getattr__(self, name):
            async def call(request, *, timeout=None, metadata=None):
                self.calls.append((name, request, timeout, dict(metadata or ()).get("authorization")))
                if len(self.calls) == 1:
                    raise _Dropped()
                return cg.card_games_pb2.ListBotsResponse(bots=[match_pb2.BotInfo(name="random")],
                                                          load_failures=[failure])
            return call

    async def go():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"),
                           retry=cg.RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002))
        try:
            client.stub = stub = LosesTheFirst()
            failures = await client.list_bot_load_failures()
            bots = await client.list_bots()
            await client.list_bots("jojotte")
            return failures, bots, stub.calls
        finally:
            await client.close()

    failures, bots, calls = asyncio.run(go())
    assert failures == [failure] and [b.name for b in bots] == ["random"]
    assert [(name, request.game) for name, request, _, _ in calls] == [("ListBots", "")] * 3 + [
        ("ListBots", "jojotte")]  # list_bots(): every game; list_bots(game): that game's


def test_leave_says_whether_the_seat_resigns_and_answers_the_match():
    """``leave()`` sends ``resign`` false unless told (in a waiting match it frees the seat),
    ``leave(resign=True)`` true; each with the seat's token, answering LeaveMatch's summary."""
    summary = match_pb2.MatchSummary(match_id="m1", status=match_pb2.MATCH_STATUS_FINISHED)

    async def go():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"))
        try:
            client.stub = stub = _Recorder({"LeaveMatch": cg.card_games_pb2.LeaveMatchResponse(match=summary)})
            seat = client.seat_session("m1", 1, "seat-token")
            answers = [await seat.leave(), await seat.leave(resign=True)]
            return answers, stub.calls
        finally:
            await client.close()

    answers, calls = asyncio.run(go())
    assert answers == [summary] * 2
    assert [(name, request.match_id, request.resign, auth) for name, request, _, auth in calls] == [
        ("LeaveMatch", "m1", False, "Bearer seat-token"), ("LeaveMatch", "m1", True, "Bearer seat-token")]


def test_submit_sends_the_callers_action_id_and_expected_seq_when_given():
    """``submit``: a ``client_action_id`` given is sent as it is (to repeat an action after the
    client itself restarted), else each action gets a fresh one; ``expected_seq`` is sent
    when given (0 included) and left unset otherwise."""
    reply = cg.card_games_pb2.SubmitActionResponse(seq=5)

    async def go():
        client = cg.Client(grpc.aio.insecure_channel("127.0.0.1:9"))
        try:
            client.stub = stub = _Recorder({"SubmitAction": reply})
            seat = client.seat_session("m1", 0, "seat-token")
            answers = [await seat.submit("play:7S", 4, client_action_id="my-own-action-id"),
                       await seat.submit("play:8S"), await seat.submit("play:8S", 0)]
            return answers, [request for _, request, _, _ in stub.calls]
        finally:
            await client.close()

    answers, requests = asyncio.run(go())
    assert answers == [reply] * 3
    assert [(r.match_id, r.action, r.HasField("expected_seq"), r.expected_seq) for r in requests] == [
        ("m1", "play:7S", True, 4), ("m1", "play:8S", False, 0), ("m1", "play:8S", True, 0)]
    ids = [r.client_action_id for r in requests]
    assert ids[0] == "my-own-action-id" and len(set(ids)) == 3 and all(ids)


def test_the_librarys_values_are_frozen_and_default_to_nothing_more():
    """MatchPage, StreamState and RetryPolicy are values: none can be changed once made (the
    default ``RetryPolicy()`` of :func:`connect` and ``Client`` is one object shared by every
    client, so a change to one client's policy would change every later client's). A page
    made without a token is the last ("": no next page); a state made without them names no
    limit, error or delay (``resumed`` and ``gave_up`` are told no delay)."""
    import dataclasses

    values = [(cg.MatchPage([]), "next_page_token", "x"), (cg.StreamState(cg.RESUMED, 1), "attempt", 2),
              (cg.RetryPolicy(), "attempts", 1)]
    for value, name, other in values:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, other)
    assert cg.MatchPage([]).next_page_token == ""
    resumed = cg.StreamState(cg.RESUMED, 1)
    assert (resumed.max_attempts, resumed.error, resumed.delay_s) == (None, None, 0.0)


@pytest.mark.parametrize("fields", [dict(attempts=0), dict(attempts=-1), dict(attempts=2.5), dict(attempts=True),
                                    dict(initial_backoff_s=-0.1), dict(max_backoff_s=float("nan")),
                                    dict(max_rate_limit_wait_s="30")])
def test_a_retry_policy_of_no_tries_or_a_negative_wait_is_refused_when_made(fields):
    """A policy of no tries would make every call fail without being sent (``Client.call``
    reached its "unreachable" assertion), and a negative or non-numeric wait fails inside the
    retry, long after the mistake: both are refused where the policy is made, naming the
    field. One try and waits of 0 are fine (no retry; retry at once)."""
    name = next(iter(fields))
    with pytest.raises(ValueError, match=rf"^RetryPolicy\.{name} must be "):
        cg.RetryPolicy(**fields)
    assert cg.RetryPolicy(attempts=1, initial_backoff_s=0, max_backoff_s=0, max_rate_limit_wait_s=0).attempts == 1
