"""What MatchManager's leave and lobby calls answer in cases the other tests never reached:
the opponent of a two-player resignation wins also when a bot plays it (JJK-10.1, KL: "a
two-player match ends and the opponent wins", docs/api.md), a seat freed in a waiting
match is open again for everyone (no name left on it, the store and the memory agreeing, a
``left`` presence event), and the lobby never lists a table with no seat free (docs/api.md,
"A lobby"; card_games.proto ListOpenMatchesResponse), and the admin's listing filtered by
status or game lists only what matches the filter as the match stands (docs/api.md,
"Paging"; admin.proto ListMatchesRequest)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from engine_service.sessions.api import CreateMatchRequest, Principal, SeatConfig, SessionError
from engine_service.store import MemoryStore

from .helpers import Stream, capture_logs_with_context, manager, run, until
from .test_bots import ScriptedHost
from .test_store_failures import FailingStart


def test_resigning_against_a_bot_makes_the_bot_seat_the_winner():
    """LeaveMatch in a started two-player match is a resignation: the match ends and the
    opponent wins (docs/api.md, LeaveMatch; JJK-10.1), whoever plays the other seat: here a
    bot. Kills the mutant of leave_match naming only non-bot seats among the winners."""

    async def go():
        async with manager(host=ScriptedHost("ok")) as mgr:
            s = await mgr.create_match(CreateMatchRequest(
                game="klaberjass", seats=(SeatConfig("open"), SeatConfig("bot", "scripted"))))
            token = (await mgr.join_match(s.match_id, 0, "a")).token
            return await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, token), resign=True)

    ended = run(go())
    assert ended.status == "finished"
    assert ended.result["outcome"] == "resigned" and ended.result["winners"] == [1]


def test_a_seat_freed_in_a_waiting_match_is_open_again_for_everyone():
    """Leaving a waiting match frees the seat (docs/api.md: "the seat becomes free again"):
    its summary shows an open seat with no player name (not the name of who left), the
    memory holds the seat as the store does (no client join id kept), and the table gets
    the ``left`` presence event (docs/api.md, PRESENCE ``change``). Kills the mutants of
    leave_match keeping the player name, keeping the join hash in memory, and sending no
    presence event."""

    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            spectator = Stream(mgr, s.match_id, Principal("spectator", s.match_id))
            await until(lambda: spectator.events)
            token = (await mgr.join_match(s.match_id, 1, "leaver", str(uuid.uuid4()))).token
            left = await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, token), resign=False)
            await until(lambda: any(e.kind == "presence" and e.details["change"] == "left" for e in spectator.events))
            got = await mgr.get_match(s.match_id)
            memory = mgr._matches[s.match_id].seats[1].record()
            stored = (await mgr._store.load_match(s.match_id)).record.seats[1]
            await spectator.close()
            return left, got, memory, stored, spectator.events

    left, got, memory, stored, events = run(go())
    for summary in (left, got):
        assert summary.status == "waiting"
        assert (summary.seats[1].taken, summary.seats[1].player_name) == (False, "")
    assert memory == stored and (memory.token_hash, memory.join_hash, memory.player_name) == ("", "", "")
    presence = [(e.details["change"], e.seat) for e in events if e.kind == "presence"]
    assert presence == [("joined", 1), ("left", 1)]


def test_the_lobby_lists_no_table_whose_seats_are_all_taken():
    """A listed table whose last seat is taken but whose start is in doubt (the store write
    failed and could not be read back: FailingStart) still waits, with no seat free: the
    lobby lists only tables "with at least one open seat" (docs/api.md, "A lobby";
    ListOpenMatchesResponse), so it is not listed. Kills the mutant of open_matches_page
    dropping the open-seat check."""

    async def go():
        store = FailingStart()
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True, name="t"))
            await mgr.join_match(s.match_id, 0, "a")
            before = [x.match_id for x in mgr.list_open_matches()]
            store.fail, store.unreadable = True, 1
            with pytest.raises(SessionError):
                await mgr.join_match(s.match_id, 1, "b")
            m = mgr._matches[s.match_id]
            stalled = (m.status, [slot.taken for slot in m.seats])
            return s.match_id, before, stalled, [x.match_id for x in mgr.list_open_matches()]

    match_id, before, stalled, after = run(go())
    assert before == [match_id]
    assert stalled == ("waiting", [True, True])
    assert after == []


class GatedList(MemoryStore):
    """A store whose list_matches, once its rows are read, waits for ``gate`` (a match then
    changes while its row is on the way)."""

    gate: asyncio.Event | None = None
    reading: asyncio.Event | None = None

    async def list_matches(self, *args, **kwargs):
        rows = await super().list_matches(*args, **kwargs)
        if self.gate is not None:
            self.reading.set()
            await self.gate.wait()
        return rows


def test_a_status_listing_leaves_out_a_match_that_left_the_status_while_the_store_was_read():
    """ListMatches(status): "a match that left the status before its page was read is not
    listed" (docs/api.md, "Paging"; admin.proto ListMatchesRequest.page_token). The store
    read the match waiting; its last seat was taken (it started) before the answer: the
    waiting page does not list it, the unfiltered listing lists it as it stands (active).
    Kills the mutant of matches_page dropping the status check of the summaries."""
    store = GatedList()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
            await mgr.join_match(s.match_id, 0, "a")
            store.gate, store.reading = asyncio.Event(), asyncio.Event()
            page = asyncio.ensure_future(mgr.matches_page(status="waiting"))
            await store.reading.wait()
            await mgr.join_match(s.match_id, 1, "b")
            store.gate.set()
            waiting = await page
            store.gate = None
            return waiting, await mgr.matches_page()

    waiting, every = run(go())
    assert waiting.matches == [] and waiting.next_page_token == ""
    assert [m.status for m in every.matches] == ["active"]


def test_the_admin_listing_filtered_by_game_lists_that_game_only():
    """MatchManager.list_matches (the first page of ListMatches) passes its ``game`` filter
    on (admin.proto ListMatchesRequest.game: "Only matches of this game id"). Kills the
    mutant of list_matches dropping it."""

    async def go():
        async with manager() as mgr:
            kl = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
            return kl.match_id, await mgr.list_matches(game="klaberjass")

    match_id, listed = run(go())
    assert [(m.match_id, m.game) for m in listed] == [(match_id, "klaberjass")]


def test_a_token_the_operator_replaced_is_unknown_from_then_on():
    """ReissueSeatToken: "later calls with it get MISSING_OR_BAD_TOKEN" (docs/api.md, Errors,
    TOKEN_REVOKED; admin.proto: "later calls with it fail UNAUTHENTICATED"): the old token
    is forgotten, not kept as a seat's token that every call then refuses as revoked; the new
    one opens the seat. Kills the mutant of MatchManager._replace_token keeping the old
    token's hash."""

    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="japanese_joker"))
            old = [(await mgr.join_match(s.match_id, seat, f"p{seat}")).token for seat in (0, 1)]
            result, summary = await mgr.reissue_seat_token(s.match_id, 1)
            with pytest.raises(SessionError) as refused:
                mgr.authenticate(s.match_id, old[1])
            view = await mgr.get_view(s.match_id, mgr.authenticate(s.match_id, result.token))
            other = await mgr.get_view(s.match_id, mgr.authenticate(s.match_id, old[0]))
            return result, refused.value, view.seat, other.seat

    result, refused, seat, other = run(go())
    assert (result.seat, refused.code, refused.reason) == (1, "UNAUTHENTICATED", "MISSING_OR_BAD_TOKEN")
    assert (seat, other) == (1, 0)


def test_a_reissued_token_is_logged_by_seat_never_the_token():
    """docs/operations.md (events): ``seat_token_reissued`` (info; ``match_id``, ``seat``)
    records the operator's new token; tokens are never logged. Kills the mutant of
    reissue_seat_token dropping the line."""

    async def go():
        with capture_logs_with_context() as logs:
            async with manager() as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
                for seat in (0, 1):
                    await mgr.join_match(s.match_id, seat, f"p{seat}")
                result, _ = await mgr.reissue_seat_token(s.match_id, 0)
        return s.match_id, result.token, logs

    match_id, token, logs = run(go())
    lines = [e for e in logs if e["event"] == "seat_token_reissued"]
    assert [(e["log_level"], e["match_id"], e["seat"]) for e in lines] == [("info", match_id, 0)]
    assert token not in repr(logs)
