"""The store contract, run against every implementation (memory, SQLite and PostgreSQL), plus
the SQLite specifics: durability across reopen, owner-only file, refusing garbage files. The
PostgreSQL specifics are in test_postgres.py."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
from dataclasses import FrozenInstanceError, fields, replace

import pytest

from engine_service.observability.metrics import STORE_OPERATIONS, Metrics
from engine_service.store import (ActionRecord, CorruptDatabase, DeckRecord, DuplicateClientAction, MatchEnd, MatchExists,
                                  MatchNotWaiting, MatchRecord, MemoryStore, NotADatabase, SeatRecord,
                                  SequenceConflict, SqliteStore, StoreError, UnknownMatch, open_store)
from engine_service.store.base import SCHEME_WHOLE_DECK, MatchListing, PruneCounts, PrunedBatch, StoredMatch, new_salt
from engine_service.store.postgres import PostgresStore
from engine_service.store.sqlite import SCHEMA_VERSION
from tests.crash import crash

KINDS = ["memory", "sqlite", "postgres"]


@pytest.fixture
def make(request, tmp_path):
    """``make(kind, metrics=None)``: a new store of that kind; within one test, every store of
    a kind opens the same database (a SQLite file, or a PostgreSQL schema of its own)."""
    def factory(kind: str, metrics=None):
        if kind == "memory":
            return MemoryStore(metrics)
        if kind == "sqlite":
            return SqliteStore(tmp_path / "db.sqlite3", metrics)
        return PostgresStore(request.getfixturevalue("pg_url"), metrics)
    return factory


def record(match_id="m1", game="klaberjass", created_at=1.0, status="waiting", seats=2) -> MatchRecord:
    return MatchRecord(
        match_id=match_id, game=game, options={"kl_target_score": 300}, first_dealer=1,
        seats=tuple(SeatRecord(seat=i) for i in range(seats)), turn_time_s=12.5,
        reconnect_grace_s=30.0, spectators_allowed=False, name="table one", takeover_bot="",
        created_at=created_at, status=status)


DECK0 = DeckRecord(0, ("JS", "7H", "AD"))
DECK1 = DeckRecord(1, ("7H", "JS", "AD"))


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("kind", KINDS)
def test_round_trip_of_a_match(kind, make):
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(replace(record(), spectators_allowed=True, spectator_delay_actions=7), [DECK0])
        await st.save_seat("m1", SeatRecord(seat=1, player_name="ann", token_hash="h1", joined_at=5.0,
                                            join_hash="j1"))
        await st.append_action("m1", ActionRecord(1, 0, "pass", "player", "c1", "", 6.0))
        await st.append_action("m1", ActionRecord(2, 1, "take", "auto", "", "timeout", 7.0), [DECK1])
        await st.set_status("m1", "active")
        got = await st.load_match("m1")
        listing = await st.list_matches()
        await st.close()
        return got, listing

    got, listing = run(go())
    r = got.record
    assert (r.match_id, r.game, dict(r.options), r.first_dealer) == ("m1", "klaberjass", {"kl_target_score": 300}, 1)
    assert (r.turn_time_s, r.reconnect_grace_s, r.spectators_allowed, r.name, r.status) == (12.5, 30.0, True, "table one", "active")
    assert r.spectator_delay_actions == 7
    assert [(li.record, li.seq) for li in listing] == [(r, 2)]
    assert r.seats[1] == SeatRecord(seat=1, player_name="ann", token_hash="h1", joined_at=5.0, join_hash="j1")
    assert r.seats[0] == SeatRecord(seat=0)
    assert [(s.away_since, s.away_seen, s.taken_over) for s in r.seats] == [(None, None, False)] * 2  # nobody away
    assert got.decks == (DECK0, DECK1)
    assert got.actions == (ActionRecord(1, 0, "pass", "player", "c1", "", 6.0),
                           ActionRecord(2, 1, "take", "auto", "", "timeout", 7.0))


@pytest.mark.parametrize("kind", KINDS)
def test_a_match_created_ended_keeps_its_result_end_time_and_commitments(kind, make):
    """create_match writes every field of the record it is given, those an end writes too:
    the store does not decide which fields a new match may have, so none is dropped; the result
    it keeps is its own, not the caller's dict."""
    ended = replace(record(status="finished"), result={"winners": [1]}, ended_at=9.5,
                    deal_commitments=("c0", "c1"))

    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(ended)
        ended.result["winners"].append(0)  # the caller's, not the stored result
        got = await st.load_match("m1")
        await st.close()
        return got.record

    r = run(go())
    assert (r.status, dict(r.result), r.ended_at) == ("finished", {"winners": [1]}, 9.5)
    assert tuple(r.deal_commitments) == ("c0", "c1")


@pytest.mark.parametrize("kind", KINDS)
def test_a_matchs_client_create_hash_is_unique_found_and_forgotten_when_pruned(kind, make):
    """A match's create hash and request digest (schema 7) are written with it, read back by
    load_match and list_matches and after a reopen; find_created names the match by its hash
    (and says nothing of a match without one); a second match with the hash is CreateIdTaken
    and nothing of it is written, while another hash creates; once retention deletes the match,
    its hash is forgotten and may create a new match."""
    from engine_service.store import CreateIdTaken

    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(replace(record("m1"), create_hash="h1", create_digest="d1"), [DECK0])
        await st.create_match(record("m0", created_at=0.5))
        with pytest.raises(CreateIdTaken, match="a match was created with this client_create_id"):
            await st.create_match(replace(record("m2", created_at=2.0), create_hash="h1", create_digest="d2"),
                                  [DECK0])
        twin = await st.load_match("m2")
        await st.create_match(replace(record("m3", created_at=3.0), create_hash="h3", create_digest="d3"))
        found = [await st.find_created(h) for h in ("h1", "h3", "h9", "")]
        listing = {li.record.match_id: li.record for li in await st.list_matches()}
        if kind != "memory":
            await st.close()
            st = make(kind)
            await st.open()
        again = await st.load_match("m1")
        await st.set_status("m1", "finished", {"winners": [0]}, ended_at=10.0)
        pruned = await st.prune_finished(20.0)
        after = await st.find_created("h1"), await st.find_created("h3")
        await st.create_match(replace(record("m4", created_at=4.0), create_hash="h1", create_digest="d4"))
        reused = await st.find_created("h1")
        await st.close()
        return twin, found, listing, again, pruned, after, reused

    twin, found, listing, again, pruned, after, reused = run(go())
    assert twin is None
    assert found == [("m1", "d1"), ("m3", "d3"), None, None]
    assert (listing["m1"].create_hash, listing["m1"].create_digest) == ("h1", "d1")
    assert (listing["m0"].create_hash, listing["m0"].create_digest) == ("", "")
    assert again.record == listing["m1"]
    assert pruned.match_ids == ("m1",)
    assert after == (None, ("m3", "d3"))
    assert reused == ("m4", "d4")


@pytest.mark.parametrize("kind", KINDS)
def test_a_match_created_with_a_hash_and_no_request_digest_is_found_with_an_empty_digest(kind, make):
    """find_created answers the match's id and its ``create_digest``, "" for none
    (MatchRecord.create_digest), never None: the sessions compare it with a retry's digest."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(replace(record("m1"), create_hash="h1"))
        found = await st.find_created("h1")
        await st.close()
        return found

    assert run(go()) == ("m1", "")


@pytest.mark.parametrize("kind", KINDS)
def test_any_number_of_seats_may_be_freed_the_token_hash_is_unique_among_taken_seats(kind, make):
    """A freed seat (token_hash "": nobody holds it) holds no token hash: the uniqueness of seat
    token hashes across all matches (base.py) is among the seats taken, so two players of a
    waiting match may both leave (save_seat) and two free seats be written by a start
    (start_match), in one match or two."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record("m1", seats=3))
        await st.create_match(record("m2", created_at=2.0))
        for seat, token in enumerate(("t0", "t1", "t2")):
            await st.save_seat("m1", SeatRecord(seat=seat, player_name=f"p{seat}", token_hash=token, joined_at=5.0))
        await st.save_seat("m1", SeatRecord(seat=0))  # left while waiting: free again
        await st.save_seat("m1", SeatRecord(seat=1))
        await st.save_seat("m2", SeatRecord(seat=0))
        await st.start_match("m2", [SeatRecord(seat=0), SeatRecord(seat=1, kind="bot", bot="random")])
        got = await st.load_match("m1"), await st.load_match("m2")
        await st.close()
        return got

    m1, m2 = run(go())
    assert m1.record.seats == (SeatRecord(seat=0), SeatRecord(seat=1),
                               SeatRecord(seat=2, player_name="p2", token_hash="t2", joined_at=5.0))
    assert m2.record.seats == (SeatRecord(seat=0), SeatRecord(seat=1, kind="bot", bot="random"))
    assert m2.record.status == "active"


@pytest.mark.parametrize("kind", KINDS)
def test_a_seats_client_join_hash_is_replaced_and_cleared_with_the_seat(kind, make):
    """A seat's join hash (schema 6) is written with it and read back by load_match and
    list_matches; the next save of the seat replaces it (a new token keeps it, a freed seat
    has none), and it survives a reopen of the store."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        taken = SeatRecord(seat=0, player_name="ann", token_hash="t1", joined_at=5.0, join_hash="j0")
        await st.save_seat("m1", taken)
        await st.save_seat("m1", replace(taken, token_hash="t2"))  # a retried join: a new token
        kept = await st.load_match("m1")
        await st.save_seat("m1", SeatRecord(seat=1, player_name="bob", token_hash="t3", joined_at=6.0))
        await st.save_seat("m1", SeatRecord(seat=0))  # left while waiting: free again
        freed = await st.load_match("m1")
        await st.save_seat("m1", replace(taken, token_hash="t4", join_hash="j9"))
        listing = await st.list_matches()
        if kind != "memory":
            await st.close()
            st = make(kind)
            await st.open()
        again = await st.load_match("m1")
        await st.close()
        return kept, freed, listing, again

    kept, freed, listing, again = run(go())
    assert kept.record.seats[0] == SeatRecord(seat=0, player_name="ann", token_hash="t2", joined_at=5.0,
                                              join_hash="j0")
    assert freed.record.seats == (SeatRecord(seat=0), SeatRecord(seat=1, player_name="bob", token_hash="t3",
                                                                 joined_at=6.0))
    assert [s.join_hash for s in listing[0].record.seats] == ["j9", ""]
    assert again.record == listing[0].record


@pytest.mark.parametrize("kind", KINDS)
def test_a_seats_absence_is_saved_touched_cleared_and_kept_by_save_seat(kind, make):
    """A seat's absence (schema 8) is written by save_absence (away_seen: by default away_since)
    and read back by load_match and list_matches; touch_absences moves away_seen of the seats
    recorded away only; save_seat (a new token) leaves it as it was, a takeover too; a seat
    whose player came back has none; it survives a reopen; an unknown seat or match is
    UnknownMatch. Presence is no part of a seat's comparison (SeatRecord)."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        taken = SeatRecord(seat=0, player_name="ann", token_hash="t1", joined_at=5.0)
        await st.save_seat("m1", taken)
        await st.save_seat("m1", SeatRecord(seat=1, player_name="bob", token_hash="t2", joined_at=6.0))
        await st.save_absence("m1", 0, 100.0)
        await st.save_absence("m1", 1, 50.0, taken_over=True, away_seen=60.0)
        first = await st.load_match("m1")
        await st.touch_absences([("m1", 0), ("m1", 1), ("nope", 0)], 130.0)
        await st.save_seat("m1", replace(taken, token_hash="t3"))  # a reissued token
        await st.save_seat("m1", SeatRecord(seat=1, player_name="bob", token_hash="t4", joined_at=6.0))  # taken over
        touched = await st.load_match("m1")
        await st.save_absence("m1", 1, None, taken_over=True, away_seen=135.0)  # back: nothing is kept
        await st.touch_absences([("m1", 1)], 140.0)  # not away: left alone
        listing = await st.list_matches()
        errors = []
        for match_id, seat in (("nope", 0), ("m1", 5)):
            try:
                await st.save_absence(match_id, seat, 1.0)
            except UnknownMatch as exc:
                errors.append(exc)
        if kind != "memory":
            await st.close()
            st = make(kind)
            await st.open()
        again = await st.load_match("m1")
        await st.close()
        return first, touched, listing, errors, again

    first, touched, listing, errors, again = run(go())
    away = [(s.away_since, s.away_seen, s.taken_over) for s in first.record.seats]
    assert away == [(100.0, 100.0, False), (50.0, 60.0, True)]
    assert [(s.away_since, s.away_seen, s.taken_over) for s in touched.record.seats] == [
        (100.0, 130.0, False), (50.0, 130.0, True)]
    assert [s.token_hash for s in touched.record.seats] == ["t3", "t4"]
    # presence is no part of a seat's comparison (SeatRecord): the seats equal the ones saved
    assert touched.record.seats == (SeatRecord(seat=0, player_name="ann", token_hash="t3", joined_at=5.0),
                                    SeatRecord(seat=1, player_name="bob", token_hash="t4", joined_at=6.0))
    seats = listing[0].record.seats
    assert [(s.away_since, s.away_seen, s.taken_over) for s in seats] == [(100.0, 130.0, False), (None, None, False)]
    assert len(errors) == 2
    assert again.record == listing[0].record


@pytest.mark.parametrize("kind", KINDS)
def test_an_absence_of_a_seat_number_just_outside_the_match_is_refused_or_left_alone(kind, make):
    """Seat -1 and seat 2 of a two-seat match are no seats: save_absence is UnknownMatch and
    touch_absences skips them (touching the seats that are there), and neither writes the
    absence of another seat (seat -1 is not "the last one")."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        await st.save_absence("m1", 0, 100.0)
        await st.save_absence("m1", 1, 50.0)
        refused = []
        for seat in (-1, 2):
            with pytest.raises(UnknownMatch, match=f"no seat {seat} in match 'm1'"):
                await st.save_absence("m1", seat, 70.0, taken_over=True)
            refused.append(seat)
        await st.touch_absences([("m1", -1), ("m1", 2), ("m1", 0)], 130.0)
        got = await st.load_match("m1")
        await st.close()
        return refused, got

    refused, got = run(go())
    assert refused == [-1, 2]
    assert [(s.away_since, s.away_seen, s.taken_over) for s in got.record.seats] == [
        (100.0, 130.0, False), (50.0, 50.0, False)]


@pytest.mark.parametrize("kind", KINDS)
def test_touch_absences_touches_every_away_seat_listed_after_one_not_away(kind, make):
    """touch_absences moves away_seen of each listed seat recorded away, wherever it is in the
    list: a seat not recorded away before it (or a match not stored) is left alone and the
    seats after it are still touched, in this match and in another (Store.touch_absences: one
    heartbeat covers every away seat of the engine)."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        await st.create_match(record("m2", created_at=2.0))
        await st.save_absence("m1", 1, 100.0)
        await st.save_absence("m2", 1, 50.0, taken_over=True)
        await st.touch_absences([("m1", 0), ("m1", 1), ("m2", 0), ("nope", 0), ("m2", 1)], 130.0)
        got = [await st.load_match(m) for m in ("m1", "m2")]
        await st.close()
        return got

    m1, m2 = run(go())
    assert [(s.away_since, s.away_seen, s.taken_over) for s in m1.record.seats] == [
        (None, None, False), (100.0, 130.0, False)]
    assert [(s.away_since, s.away_seen, s.taken_over) for s in m2.record.seats] == [
        (None, None, False), (50.0, 130.0, True)]


@pytest.mark.parametrize("kind", KINDS)
def test_a_seats_taken_over_flag_reads_back_a_bool_whatever_falsy_value_was_saved(kind, make):
    """SeatRecord.taken_over is a bool: save_absence given a falsy value that is not False (0,
    None) stores and reads back False, and a truthy one True, from every store (the SQL stores
    write bool(taken_over) into a boolean column; the memory store kept a 0 as 0). The flag
    takes no part in a seat's comparison (compare=False), so only its type tells."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record(seats=3))
        await st.save_absence("m1", 0, 100.0, taken_over=0)
        await st.save_absence("m1", 1, 100.0, taken_over=None)
        await st.save_absence("m1", 2, 100.0, taken_over=1)
        got = await st.load_match("m1")
        await st.close()
        return got

    flags = [s.taken_over for s in run(go()).record.seats]
    assert flags == [False, False, True] and [type(f) for f in flags] == [bool] * 3


@pytest.mark.parametrize("kind", KINDS)
def test_an_absence_at_time_zero_is_an_absence(kind, make):
    """save_absence's times are numbers, 0.0 among them: ``away_since`` 0.0 is an absence (only
    None says the player is back), so the seat may be taken over, and ``away_seen`` 0.0 is
    the time given (only None defaults it to ``away_since``); touch_absences moves it. A
    store testing the times for truth instead of None took 0.0 for no time."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        await st.save_absence("m1", 0, 0.0, taken_over=True)
        await st.save_absence("m1", 1, 5.0, away_seen=0.0)
        saved = await st.load_match("m1")
        await st.touch_absences([("m1", 0)], 7.0)
        touched = await st.load_match("m1")
        await st.close()
        return saved, touched

    saved, touched = run(go())
    assert [(s.away_since, s.away_seen, s.taken_over) for s in saved.record.seats] == [
        (0.0, 0.0, True), (5.0, 0.0, False)]
    assert [(s.away_since, s.away_seen, s.taken_over) for s in touched.record.seats] == [
        (0.0, 7.0, True), (5.0, 0.0, False)]


@pytest.mark.parametrize("kind", KINDS)
def test_a_seat_number_the_match_does_not_have_is_refused_and_writes_nothing(kind, make):
    """save_seat and start_match with seat -1 or 2 of a two-seat match are UnknownMatch and
    write nothing: not a seat row of its own (the SQL stores' upsert added one, and the match
    was read back with four seats), not the last seat (the memory store's seats[-1]), not an
    IndexError; a start refused so writes none of its other seats, decks or status either."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        before = await st.load_match("m1")
        refused = []
        for seat in (-1, 2):
            taken = SeatRecord(seat=seat, player_name="x", token_hash=f"t{seat}", joined_at=1.0)
            with pytest.raises(UnknownMatch, match=f"no seat {seat} in match 'm1'"):
                await st.save_seat("m1", taken)
            with pytest.raises(UnknownMatch, match=f"no seat {seat} in match 'm1'"):
                await st.start_match("m1", [replace(LAST, token_hash="t-last"), taken], [DECK0])
            refused.append(seat)
        after = await st.load_match("m1")
        await st.start_match("m1", [replace(LAST, token_hash="t-last")], [DECK0])  # its hash unclaimed
        await st.close()
        return before, refused, after

    before, refused, after = run(go())
    assert refused == [-1, 2]
    assert after == before and [s.seat for s in after.record.seats] == [0, 1]


@pytest.mark.parametrize("kind", KINDS)
def test_a_status_or_a_seat_kind_the_schema_does_not_know_is_refused_and_writes_nothing(kind, make):
    """The schema's CHECKs: a match's status is one of STATUSES, a seat's kind "open" or "bot".
    A write with another (create_match, set_status, an append's end; create_match, save_seat,
    start_match) is a StoreError, not MatchExists (SQLite called every refused insert of a
    match so), and writes nothing: no match, no seat, no status, not the action of the end.
    The memory store used to keep them all."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        before = await st.load_match("m1")
        robot = SeatRecord(seat=1, kind="robot", player_name="r")
        calls = (lambda: st.create_match(record("m2", status="paused")),
                 lambda: st.create_match(replace(record("m3"), seats=(SeatRecord(0), robot))),
                 lambda: st.set_status("m1", "paused"),
                 lambda: st.save_seat("m1", robot),
                 lambda: st.start_match("m1", [robot], [DECK0]),
                 lambda: st.append_action("m1", ActionRecord(1, 0, "pass"), [DECK0], replace(END, status="over")))
        errors = []
        for call in calls:
            with pytest.raises(StoreError) as info:
                await call()
            errors.append(info.value)
        got = [await st.load_match(m) for m in ("m1", "m2", "m3")]
        await st.close()
        return before, errors, got

    before, errors, (m1, m2, m3) = run(go())
    assert not [e for e in errors if isinstance(e, (MatchExists, UnknownMatch, MatchNotWaiting))]
    # each says what it refused (not a later statement's failure, the match row missing)
    assert [("status" in str(e), "kind" in str(e)) for e in errors] == [
        (True, False), (False, True), (True, False), (False, True), (False, True), (True, False)], errors
    assert m1 == before and m2 is None and m3 is None


@pytest.mark.parametrize("kind", KINDS)
def test_a_seat_kind_is_open_or_bot_exactly(kind, make):
    """SeatRecord.kind is "open" or "bot" (the schema's CHECK, case and all): not the other
    names an action's ``by`` has ("player", "auto"), not "Open", not empty. The memory store
    keeps SQLite's semantics: a SEAT_KINDS that took one more was not seen by the test above,
    whose one refused kind is "robot"."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        refused = []
        for seat_kind in ("player", "auto", "Open", "BOT", ""):
            try:
                await st.save_seat("m1", SeatRecord(seat=1, kind=seat_kind))
            except StoreError:
                refused.append(seat_kind)
        await st.save_seat("m1", SeatRecord(seat=1, kind="bot", bot="random"))
        got = await st.load_match("m1")
        await st.close()
        return refused, got.record.seats

    refused, seats = run(go())
    assert refused == ["player", "auto", "Open", "BOT", ""]
    assert [s.kind for s in seats] == ["open", "bot"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_match_status_is_one_of_the_four_exactly(kind, make):
    """A match's status is one of STATUSES exactly (the schema's CHECK, case and all): not
    "Finished", not " active", not empty, whether set_status, create_match or an append's end
    writes it; nothing of the refused call is written. The memory store keeps SQLite's
    semantics: a check that ignored case or spaces, or let an empty status by, was not seen by
    test_a_status_or_a_seat_kind_the_schema_does_not_know_is_refused_and_writes_nothing, whose
    refused statuses are "paused" and "over"."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record(status="active"))
        refused = []
        for status in ("Finished", " active", "active ", ""):
            calls = (lambda: st.set_status("m1", status, {"winners": [0]}, 9.0),
                     lambda: st.create_match(record("m2", status=status)),
                     lambda: st.append_action("m1", ActionRecord(1, 0, "pass"), [], replace(END, status=status)))
            for call in calls:
                try:
                    await call()
                except StoreError:
                    refused.append(status)
        got = await st.load_match("m1"), await st.load_match("m2")
        await st.close()
        return refused, got

    refused, (m1, m2) = run(go())
    assert refused == [s for s in ("Finished", " active", "active ", "") for _ in range(3)]
    assert (m1.record.status, m1.record.result, m1.actions, m2) == ("active", None, (), None)


@pytest.mark.parametrize("kind", KINDS)
def test_the_stored_options_and_result_are_the_ones_written_whatever_the_caller_changes_later(kind, make):
    """The store keeps a match's options and result as they were when written: the caller's
    dicts changed afterwards, or the mappings it read back changed (where they can be), do not
    change what the next read returns."""
    async def go():
        st = make(kind)
        await st.open()
        options, result = {"kl_target_score": 300}, {"winners": [0]}
        await st.create_match(replace(record(), options=options))
        await st.set_status("m1", "finished", result, ended_at=9.0)
        options["kl_target_score"], result["winners"] = 500, [1]
        options["gj_variant"] = "nines"
        read = await st.load_match("m1")
        for mapping in (read.record.options, read.record.result):
            try:
                mapping["winners"] = "changed"
            except TypeError:
                pass
        again = await st.load_match("m1")
        await st.close()
        return again

    again = run(go())
    assert dict(again.record.options) == {"kl_target_score": 300}
    assert dict(again.record.result) == {"winners": [0]}


@pytest.mark.parametrize("kind", KINDS)
def test_set_status_writes_the_result_end_time_and_commitments_it_is_given_and_keeps_none_from_before(kind, make):
    """set_status replaces the match's status, result, end time and deals' commitments with the
    ones it is given (Store.set_status), as the SQL stores' UPDATE of those columns does: a
    later call without a result or an end time leaves none of the earlier ones, and an empty
    result is read back empty, not as the earlier one."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        await st.create_match(record("m2", created_at=2.0))
        for match_id in ("m1", "m2"):
            await st.set_status(match_id, "finished", {"winners": [0]}, 9.0, ("c0",))
        await st.set_status("m1", "active")
        await st.set_status("m2", "terminated", {}, 10.0)
        got = [(await st.load_match(m)).record for m in ("m1", "m2")]
        await st.close()
        return got

    m1, m2 = run(go())
    assert (m1.status, m1.result, m1.ended_at, tuple(m1.deal_commitments)) == ("active", None, None, ())
    assert (m2.status, dict(m2.result), m2.ended_at, tuple(m2.deal_commitments)) == ("terminated", {}, 10.0, ())


@pytest.mark.parametrize("kind", KINDS)
def test_the_nested_values_of_the_stored_options_and_result_are_the_stores_own(kind, make):
    """Not only the top level: a list or dict inside the options or the result (the winners,
    the scores) that the writer changes in place afterwards, or that a reader of a load or a
    listing changes in place, is not changed in the store (the memory store shared them)."""
    async def go():
        st = make(kind)
        await st.open()
        options = {"kl_target_score": 300, "extras": {"seats": [0, 1]}}
        result = {"winners": [0], "scores": {"team": [10, 20]}}
        end = {"winners": [1], "scores": {"team": [5]}}
        await st.create_match(replace(record(), options=options))
        await st.set_status("m1", "finished", result, ended_at=9.0)
        await st.create_match(record("m2", created_at=2.0, status="active"))
        await st.append_action("m2", ActionRecord(1, 0, "pass"), [], replace(END, result=end))
        options["extras"]["seats"].append(2)
        result["winners"].append(1)
        result["scores"]["team"][0] = 99
        end["winners"].clear()
        read = [(await st.load_match(m)).record for m in ("m1", "m2")]
        read += [li.record for li in await st.list_matches()]
        for r in read:
            r.options.get("extras", {}).get("seats", []).append(7)
            r.result["winners"].append(3)
            r.result["scores"]["team"].append(4)
        again = {m: (await st.load_match(m)).record for m in ("m1", "m2")}
        listed = {li.record.match_id: li.record for li in await st.list_matches()}
        await st.close()
        return again, listed

    again, listed = run(go())
    for r in (again["m1"], listed["m1"]):
        assert dict(r.options) == {"kl_target_score": 300, "extras": {"seats": [0, 1]}}
        assert dict(r.result) == {"winners": [0], "scores": {"team": [10, 20]}}
    for r in (again["m2"], listed["m2"]):
        assert dict(r.result) == {"winners": [1], "scores": {"team": [5]}}


@pytest.mark.parametrize("kind", KINDS)
def test_the_lobby_flag_round_trips(kind, make):
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(replace(record("listed"), listed=True))
        await st.create_match(record("hidden", created_at=2.0))
        got = [await st.load_match(m) for m in ("listed", "hidden")]
        listed = {li.record.match_id: li.record.listed for li in await st.list_matches()}
        await st.close()
        return got, listed
    got, listed = run(go())
    assert [m.record.listed for m in got] == [True, False]
    assert listed == {"listed": True, "hidden": False}


@pytest.mark.parametrize("kind", KINDS)
def test_deck_salts_round_trip(kind, make):
    """Fair dealing: a deck's secret salt and commitment scheme are stored with it (created,
    appended with an action, appended alone) and read back unchanged; a deck without a salt
    keeps ""."""
    salted = [DeckRecord(0, ("JS", "7H", "AD"), new_salt()),
              DeckRecord(1, ("7H", "JS", "AD"), new_salt(), SCHEME_WHOLE_DECK),
              DeckRecord(2, ("AD", "JS", "7H"), new_salt())]

    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record(), [salted[0]])
        await st.append_action("m1", ActionRecord(1, 0, "pass"), [salted[1]])
        await st.append_decks("m1", [salted[2]])
        await st.create_match(record("plain", created_at=2.0), [DECK0])
        got = await st.load_match("m1"), await st.load_match("plain")
        await st.close()
        return got

    got, plain = run(go())
    assert got.decks == tuple(salted)
    assert all(re.fullmatch("[0-9a-f]{32}", d.salt) for d in got.decks)  # new_salt: 32 lowercase hex digits
    assert len({d.salt for d in got.decks}) == 3
    assert [d.scheme for d in got.decks] == [2, 1, 2]
    assert plain.decks == (DECK0,) and plain.decks[0].salt == ""


@pytest.mark.parametrize("kind", KINDS)
def test_decks_of_different_lengths_read_back_as_written(kind, make):
    """A deck's length is its game's pack, not the store's: decks of different lengths in one
    match (the PostgreSQL store reads a match's decks in one statement, where an array of
    arrays would have to be rectangular) and a match with no deck read back as written."""
    decks = (DeckRecord(0, ("JS", "7H", "AD", "X1", "X2")), DeckRecord(1, ("7H",)), DeckRecord(2, ("AD", "JS")))

    async def go():
        st = make(kind)
        await st.open()
        try:
            await st.create_match(record(), decks[:1])
            await st.append_action("m1", ActionRecord(1, 0, "pass"), decks[1:2])
            await st.append_decks("m1", decks[2:])
            await st.create_match(record("bare", created_at=2.0))
            return await st.load_match("m1"), await st.load_match("bare")
        finally:
            await st.close()

    got, bare = run(go())
    assert got.decks == decks and [len(a.action) for a in got.actions] == [4]
    assert bare.decks == () and bare.actions == () and len(bare.record.seats) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_matchs_decks_read_back_by_deal_whatever_the_order_they_were_written(kind, make):
    """Store.load_match gives the decks by deal, as the SQL stores read them (ORDER BY deal),
    not in the order the writes gave them: decks given ahead at the creation (an admin's, several
    deals) and decks appended alone, a later deal's before an earlier one's; in the order
    written they would be [2, 0, 3, 1]. The memory store too (SQLite's semantics: its
    docstring)."""
    decks = [DeckRecord(d, (("JS", "7H", "AD") * 2)[d:d + 3]) for d in range(4)]

    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record(), [decks[2], decks[0]])
        await st.append_decks("m1", [decks[3]])
        await st.append_decks("m1", [decks[1]])
        got = await st.load_match("m1")
        await st.close()
        return got

    assert run(go()).decks == tuple(decks)


def test_a_decks_repr_shows_neither_its_cards_nor_its_salt():
    """A deck is secret (DeckRecord): its repr, which a log line or a failed assertion may
    print, names its deal and scheme only."""
    text = repr(DeckRecord(3, ("JS", "7H", "AD"), "5a" * 16))
    assert text == "DeckRecord(deal=3, scheme=2)"


def test_the_records_cannot_be_changed_in_place():
    """The memory store keeps the records it is given and hands the same ones to every reader
    (seats, decks, actions): a record changed in place would change the stored match."""
    records = [SeatRecord(seat=0), record(), DECK0, ActionRecord(1, 0, "pass"), MatchEnd("finished", {}, 1.0),
               StoredMatch(record()), MatchListing(record()), PruneCounts(), PrunedBatch()]
    for rec in records:
        name = fields(rec)[0].name
        with pytest.raises(FrozenInstanceError):
            setattr(rec, name, getattr(rec, name))


@pytest.mark.parametrize("kind", KINDS)
def test_sequence_numbers_are_unique_and_contiguous(kind, make):
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        await st.append_action("m1", ActionRecord(1, 0, "pass"))
        with pytest.raises(SequenceConflict, match="match 'm1' has an action at seq 1"):
            await st.append_action("m1", ActionRecord(1, 1, "take"))
        with pytest.raises(StoreError, match="match 'm1': seq 3 is not the next one"):
            await st.append_action("m1", ActionRecord(3, 1, "take"))
        # seq 0 is no action's: not the next one, and no conflict with an action at it
        with pytest.raises(StoreError, match="seq 0 is not the next one") as zero:
            await st.append_action("m1", ActionRecord(0, 1, "take"))
        got = await st.load_match("m1")
        await st.close()
        return got, zero.value

    got, zero = run(go())
    assert [a.action for a in got.actions] == ["pass"]
    assert not isinstance(zero, SequenceConflict)


@pytest.mark.parametrize("kind", KINDS)
def test_client_action_id_is_unique_per_seat_and_match(kind, make):
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        await st.create_match(record("m2", created_at=2.0))
        await st.append_action("m1", ActionRecord(1, 0, "pass", client_action_id="x"))
        with pytest.raises(DuplicateClientAction, match="client_action_id reused in match 'm1'"):
            await st.append_action("m1", ActionRecord(2, 0, "take", client_action_id="x"))
        # another seat, another match, or no id at all: fine
        await st.append_action("m1", ActionRecord(2, 1, "pass", client_action_id="x"))
        await st.append_action("m2", ActionRecord(1, 0, "pass", client_action_id="x"))
        await st.append_action("m1", ActionRecord(3, 0, "name:S"))
        await st.append_action("m1", ActionRecord(4, 1, "play:JS"))
        got = await st.load_match("m1")
        await st.close()
        return got

    got = run(go())
    assert [a.seq for a in got.actions] == [1, 2, 3, 4]


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_append_writes_nothing(kind, make):
    """One transaction per call: an action whose deck conflicts is not written either."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record(), [DECK0])
        with pytest.raises(StoreError):
            await st.append_action("m1", ActionRecord(1, 0, "pass"), [DeckRecord(0, ("AS",))])
        got = await st.load_match("m1")
        await st.close()
        return got

    got = run(go())
    assert got.actions == () and got.decks == (DECK0,)


async def refuse_status(st, kind, request, status, message):
    """A trigger that makes the database refuse, with ``message``, an update of a match's
    status to ``status``: in life a lost connection or a full disk in the middle of a write."""
    if kind == "sqlite":
        await st._run(lambda: st._db().execute(
            f"CREATE TRIGGER no_{status} BEFORE UPDATE OF status ON matches WHEN NEW.status = '{status}' "
            f"BEGIN SELECT RAISE(ABORT, '{message}'); END"))
    else:
        db, (schema, _) = request.getfixturevalue("pg_database"), request.getfixturevalue("pg_schema")
        db.execute(f"CREATE FUNCTION no_{status}() RETURNS trigger LANGUAGE plpgsql AS "
                   f"$$ BEGIN RAISE EXCEPTION '{message}'; END $$", schema=schema)
        db.execute(f"CREATE TRIGGER no_{status} BEFORE UPDATE OF status ON matches FOR EACH ROW "
                   f"WHEN (NEW.status = '{status}') EXECUTE FUNCTION no_{status}()", schema=schema)


END = MatchEnd("terminated", {"outcome": "terminated", "reason": "deal_limit", "winners": []}, 9.5, ("c0",))


@pytest.mark.parametrize("kind", KINDS)
def test_an_append_with_the_matchs_end_writes_both_or_neither(kind, make):
    """The end at the deal limit is written with the action that reaches it (MatchEnd): the
    status, result, end time and commitments as set_status writes them. An append refused
    (its seq is taken) writes no end either."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record("m1", status="active"), [DECK0])
        await st.create_match(record("m2", status="active"), [DECK0])
        await st.append_action("m1", ActionRecord(1, 0, "pass"), [], END)
        await st.append_action("m2", ActionRecord(1, 0, "pass"))
        with pytest.raises(SequenceConflict):
            await st.append_action("m2", ActionRecord(1, 1, "pass"), [], END)
        got = await st.load_match("m1"), await st.load_match("m2")
        await st.close()
        return got

    ended, refused = run(go())
    r = ended.record
    assert [a.seq for a in ended.actions] == [1]
    assert (r.status, dict(r.result), r.ended_at, r.deal_commitments) == (
        "terminated", dict(END.result), 9.5, ("c0",))
    assert [a.action for a in refused.actions] == ["pass"] and refused.actions[0].seat == 0
    assert (refused.record.status, refused.record.result, refused.record.ended_at) == ("active", None, None)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_an_append_whose_end_is_refused_undoes_the_action(kind, make, request):
    """A database that refuses the end written with an action (here a trigger on the status;
    in life a lost connection, a full disk) rolls the action back too: the match stays active
    at its seq, to be ended by the action's retry."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record(status="active"), [DECK0])
        refuse = "the match may not end"
        await refuse_status(st, kind, request, "terminated", refuse)
        with pytest.raises(StoreError, match=refuse):
            await st.append_action("m1", ActionRecord(1, 0, "pass"), [DECK1], END)
        got = await st.load_match("m1")
        await st.close()
        return got

    got = run(go())
    assert got.actions == () and got.decks == (DECK0,) and got.record.status == "active"


@pytest.mark.parametrize("kind", KINDS)
def test_appending_a_deck_for_a_deal_that_has_one_is_refused_and_writes_nothing(kind, make):
    """A deal's deck is written once (its commitment was published): append_decks with a deck
    for a deal that has one is a StoreError that neither replaces that deck nor writes the
    other decks of the call."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record(), [DECK0])
        with pytest.raises(StoreError, match="match 'm1' has a deck for deal"):
            await st.append_decks("m1", [DECK1, DeckRecord(0, ("AS",))])
        got = await st.load_match("m1")
        await st.close()
        return got

    got = run(go())
    assert got.decks == (DECK0,)


@pytest.mark.parametrize("kind", KINDS)
def test_a_deck_for_a_deal_that_has_one_is_a_plain_store_error(kind, make):
    """A deck for a deal that has one, whichever write brings it (create_match, start_match,
    append_action, append_decks), is refused as a StoreError of no narrower kind, from every
    store alike: not a SequenceConflict, which tells the session layer that another writer
    appended first (a conflict it settles by reading the match back), nor another refusal it
    acts on (UnknownMatch, MatchExists, DuplicateClientAction...)."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record(), [DECK0])
        calls = (lambda: st.create_match(record("m2", created_at=2.0), [DECK0, DECK0]),
                 lambda: st.start_match("m1", [LAST], [DECK0]),
                 lambda: st.append_action("m1", ActionRecord(1, 0, "pass"), [DeckRecord(0, ("AS",))]),
                 lambda: st.append_decks("m1", [DECK1, DECK0]))
        errors = []
        for call in calls:
            with pytest.raises(StoreError) as info:
                await call()
            errors.append(info.value)
        await st.close()
        return errors

    errors = run(go())
    assert [type(e) for e in errors] == [StoreError] * 4, errors
    assert all("has a deck for deal" in str(e) for e in errors), errors


@pytest.mark.parametrize("kind", KINDS)
def test_a_deal_has_one_deck_whatever_the_salt_of_another_deck_for_it(kind, make):
    """A deal's deck is written once: a deck for a deal that has one is refused however it
    differs from that one (its salt, its cards, its commitment scheme), and the deck stored
    stays (the deal is the key of a match's decks, not the deck with its salt)."""
    salted = DeckRecord(0, ("AS", "7H", "JS"), salt="ab" * 16, scheme=2)

    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record(), [DECK0])
        with pytest.raises(StoreError, match="match 'm1' has a deck for deal 0"):
            await st.append_decks("m1", [salted])
        got = await st.load_match("m1")
        await st.close()
        return got

    got = run(go())
    assert got.decks == (DECK0,)


@pytest.mark.parametrize("kind", KINDS)
def test_append_decks_to_an_unknown_match_is_refused_even_with_no_decks(kind, make):
    """append_decks names the match whether or not it writes a deck (PostgreSQL's empty call
    writes nothing and only looks the match up): a caller resuming a deal on a match that was
    pruned meanwhile learns so instead of believing its decks are stored."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record(), [DECK0])
        for decks in ([], [DECK1]):
            with pytest.raises(UnknownMatch):
                await st.append_decks("nope", decks)
        await st.append_decks("m1", [])
        got = await st.load_match("m1")
        await st.close()
        return got

    got = run(go())
    assert got.decks == (DECK0,)


@pytest.mark.parametrize("kind", KINDS)
def test_a_write_giving_two_decks_for_one_deal_is_refused_and_writes_nothing(kind, make):
    """Two decks for the same deal in one call (of create_match, start_match, append_action or
    append_decks) are refused as a deck for a deal that has one is, with nothing of the call
    written: not the match, its seat, its action or its status, and neither deck."""
    twins = [DECK1, DeckRecord(1, ("AS",))]

    async def go():
        st = make(kind)
        await st.open()
        with pytest.raises(StoreError):
            await st.create_match(record("twins"), twins)
        await st.create_match(record(), [DECK0])
        with pytest.raises(StoreError):
            await st.start_match("m1", [LAST], twins)
        with pytest.raises(StoreError):
            await st.append_action("m1", ActionRecord(1, 0, "pass"), twins)
        with pytest.raises(StoreError):
            await st.append_decks("m1", twins)
        got = await st.load_match("m1"), await st.load_match("twins")
        await st.close()
        return got

    m1, twins_match = run(go())
    assert twins_match is None
    assert (m1.record.status, m1.record.seats[1], m1.actions, m1.decks) == ("waiting", SeatRecord(seat=1), (), (DECK0,))


@pytest.mark.parametrize("kind", KINDS)
def test_a_match_refused_for_two_decks_of_one_deal_claims_none_of_its_hashes(kind, make):
    """A create_match refused for its decks (two for one deal) writes nothing, its seats' token
    hashes and its create hash included (Store: one transaction per call): another match may
    be created with them at once. The memory store claimed its seats' hashes before it checked
    the decks, and would have kept them for a match that does not exist."""
    twins = [DECK1, DeckRecord(1, ("AS",))]
    seats = (SeatRecord(seat=0, player_name="ann", token_hash="t-twins", joined_at=1.0), SeatRecord(seat=1))

    async def go():
        st = make(kind)
        await st.open()
        with pytest.raises(StoreError):
            await st.create_match(replace(record("twins"), seats=seats, create_hash="c-twins"), twins)
        refused = await st.load_match("twins"), await st.find_created("c-twins")
        await st.create_match(replace(record("m2"), seats=seats, create_hash="c-twins", create_digest="d2"), [DECK0])
        got = await st.load_match("m2"), await st.find_created("c-twins")
        await st.close()
        return refused, got

    refused, (m2, found) = run(go())
    assert refused == (None, None)
    assert m2.record.seats == seats and found == ("m2", "d2")


LAST = SeatRecord(seat=1, player_name="bob", token_hash="t-last", joined_at=6.0, join_hash="j-last")


@pytest.mark.parametrize("kind", KINDS)
def test_start_match_writes_the_last_seat_the_first_deck_and_the_status_together(kind, make):
    """The join that takes the last seat starts the match with one write: the seat, the first
    deal's deck and the status, read back together (and after a reopen); a seat already
    written and a deck already stored (a match of an older version whose start stopped
    half-way) are started with no seat and no deck given."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        await st.create_match(record("m2", created_at=2.0))
        await st.save_seat("m1", SeatRecord(seat=0, player_name="ann", token_hash="t0", joined_at=5.0))
        await st.start_match("m1", [LAST], [DECK0])
        await st.save_seat("m2", SeatRecord(seat=0, token_hash="u0"))
        await st.save_seat("m2", SeatRecord(seat=1, token_hash="u1"))
        await st.append_decks("m2", [DECK0])
        await st.start_match("m2")
        started = await st.load_match("m1")
        if kind != "memory":
            await st.close()
            st = make(kind)
            await st.open()
        again, legacy = await st.load_match("m1"), await st.load_match("m2")
        await st.close()
        return started, again, legacy

    started, again, legacy = run(go())
    assert started.record.status == "active" and started.decks == (DECK0,)
    assert started.record.seats == (SeatRecord(seat=0, player_name="ann", token_hash="t0", joined_at=5.0), LAST)
    assert again == started
    assert legacy.record.status == "active" and legacy.decks == (DECK0,)
    assert [s.token_hash for s in legacy.record.seats] == ["u0", "u1"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_start_match_writes_nothing(kind, make):
    """All or nothing: a start refused for its deck (the deal has one), its seat (a token hash
    another seat holds), an unknown match, or a match that started already (MatchNotWaiting:
    a start whose answer was lost landed) leaves the match as it was: no seat, no deck, no
    status written."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record(), [DECK0])
        await st.create_match(record("m2", created_at=2.0))
        await st.save_seat("m2", SeatRecord(seat=0, token_hash="t-last"))
        before = await st.load_match("m1")
        errors = []
        for call in (lambda: st.start_match("m1", [replace(LAST, token_hash="t-free")], [replace(DECK0, cards=("AS",))]),
                     lambda: st.start_match("m1", [replace(LAST, token_hash="t-last")], [DECK1]),
                     lambda: st.start_match("nope", [LAST], [DECK1])):
            with pytest.raises(StoreError) as info:
                await call()
            errors.append(info.value)
        refused = await st.load_match("m1")
        await st.start_match("m1", [replace(LAST, token_hash="t-ok")])
        started = await st.load_match("m1")
        with pytest.raises(MatchNotWaiting, match="match 'm1' is active, not waiting"):
            await st.start_match("m1", [SeatRecord(seat=1)], [DECK1])
        after = await st.load_match("m1")
        await st.close()
        return before, errors, refused, started, after

    before, errors, refused, started, after = run(go())
    assert not isinstance(errors[0], (MatchNotWaiting, UnknownMatch))
    assert not isinstance(errors[1], (MatchNotWaiting, UnknownMatch))
    assert isinstance(errors[2], UnknownMatch)
    assert refused == before and refused.record.status == "waiting" and refused.decks == (DECK0,)
    assert started.record.status == "active" and started.record.seats[1].token_hash == "t-ok"
    assert after == started


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_start_match_failing_at_its_status_undoes_the_seat_and_the_deck(kind, make, request):
    """A database that refuses the last statement of the start (here a trigger on the status;
    in life a lost connection, a full disk) rolls back the seat and the deck written before it
    in the same transaction: the match stays waiting with the seat open and no deck."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        refuse = "the status may not change"
        await refuse_status(st, kind, request, "active", refuse)
        with pytest.raises(StoreError, match=refuse):
            await st.start_match("m1", [LAST], [DECK0])
        got = await st.load_match("m1")
        await st.close()
        return got

    got = run(go())
    assert got.record.status == "waiting" and got.decks == ()
    assert got.record.seats == (SeatRecord(seat=0), SeatRecord(seat=1))


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_and_duplicate_matches(kind, make):
    async def go():
        st = make(kind)
        await st.open()
        assert await st.load_match("nope") is None
        await st.create_match(record())
        with pytest.raises(MatchExists, match="match 'm1' exists"):
            await st.create_match(record())
        for seq in (1, 2):  # 1: the next seq of no actions; 2: none the store would take
            with pytest.raises(UnknownMatch, match="no match 'nope'"):
                await st.append_action("nope", ActionRecord(seq, 0, "pass"))
        with pytest.raises(UnknownMatch, match="no match 'nope'"):
            await st.set_status("nope", "active")
        with pytest.raises(UnknownMatch, match="no match 'nope'"):
            await st.start_match("nope")
        with pytest.raises(UnknownMatch, match="^no match 'nope'$"):  # not "no seat 0 in match"
            await st.save_seat("nope", SeatRecord(seat=0))
        with pytest.raises(UnknownMatch, match="^no match 'nope'$"):
            await st.save_absence("nope", 0, 100.0)
        await st.close()
    run(go())


@pytest.mark.parametrize("kind", KINDS)
def test_a_match_created_with_its_seats_taken_reads_them_back_and_a_held_token_hash_is_named(kind, make):
    """create_match writes every field of its seats (a table created with its players and
    bots seated), and a seat whose token hash another match's seat holds is a StoreError
    naming that seat (not MatchExists: the id is free), with nothing of the match written."""
    seats = (SeatRecord(seat=0, kind="bot", bot="search", player_name="robot", joined_at=1.0, left=True),
             SeatRecord(seat=1, player_name="ann", token_hash="h1", joined_at=2.0, join_hash="j1"))

    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(replace(record(), seats=seats))
        with pytest.raises(StoreError, match="seat 1 of match 'm2'") as taken:
            await st.create_match(replace(record("m2", created_at=2.0), seats=(
                SeatRecord(seat=0, token_hash="h0"), replace(seats[1], join_hash="j2"))))
        got, refused = await st.load_match("m1"), await st.load_match("m2")
        await st.create_match(replace(record("m2", created_at=2.0), seats=(SeatRecord(seat=0, token_hash="h0"),
                                                                          SeatRecord(seat=1))))
        await st.close()
        return got, taken.value, refused

    got, taken, refused = run(go())
    assert got.record.seats == seats and not isinstance(taken, MatchExists) and refused is None


@pytest.mark.parametrize("kind", KINDS)
def test_token_hashes_are_unique_across_matches(kind, make):
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        await st.create_match(record("m2", created_at=2.0))
        await st.save_seat("m1", SeatRecord(seat=0, token_hash="same"))
        with pytest.raises(StoreError, match="seat 0 of match 'm2'"):
            await st.save_seat("m2", SeatRecord(seat=0, token_hash="same"))
        with pytest.raises(StoreError, match="seat 1 of match 'm2'"):  # in a start: the same
            await st.start_match("m2", [SeatRecord(seat=1, token_hash="same")])
        # freeing a seat releases its hash
        await st.save_seat("m1", SeatRecord(seat=0))
        await st.save_seat("m2", SeatRecord(seat=0, token_hash="same"))
        await st.close()
    run(go())


@pytest.mark.parametrize("kind", KINDS)
def test_a_seat_refused_a_token_hash_keeps_holding_its_own(kind, make):
    """A save_seat refused (the new hash is another seat's) writes nothing: the seat keeps its
    hash, and that hash stays claimed, so a third seat is refused it as before. The memory
    store (SQLite's semantics) must not let go of the old hash before the new one is taken."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        await st.create_match(record("m2", created_at=2.0))
        await st.save_seat("m1", SeatRecord(seat=0, token_hash="h1"))
        await st.save_seat("m2", SeatRecord(seat=0, token_hash="h2"))
        with pytest.raises(StoreError, match="seat 0 of match 'm1'"):
            await st.save_seat("m1", SeatRecord(seat=0, token_hash="h2"))
        with pytest.raises(StoreError, match="seat 1 of match 'm2'"):
            await st.save_seat("m2", SeatRecord(seat=1, token_hash="h1"))
        got = await st.load_match("m1"), await st.load_match("m2")
        await st.close()
        return got

    m1, m2 = run(go())
    assert [s.token_hash for s in m1.record.seats] == ["h1", ""]
    assert [s.token_hash for s in m2.record.seats] == ["h2", ""]


@pytest.mark.parametrize("kind", KINDS)
def test_token_and_create_hashes_stay_claimed_across_a_close_and_an_open(kind, make):
    """A store closed and opened again (the memory store: the same object, as a MatchManager
    built anew on it; the SQL stores: their database) still holds every seat's token hash and
    every match's create hash: another seat is refused the one, another match the other, and
    find_created names the match. The memory store keeps SQLite's semantics across it."""
    from engine_service.store import CreateIdTaken

    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(replace(record(), create_hash="c1", create_digest="d1"))
        await st.save_seat("m1", SeatRecord(seat=0, token_hash="h1"))
        await st.close()
        if kind != "memory":
            st = make(kind)
        await st.open()
        await st.create_match(record("m2", created_at=2.0))
        with pytest.raises(StoreError, match="seat 0 of match 'm2'"):
            await st.save_seat("m2", SeatRecord(seat=0, token_hash="h1"))
        with pytest.raises(CreateIdTaken):
            await st.create_match(replace(record("m3", created_at=3.0), create_hash="c1", create_digest="d3"))
        found = await st.find_created("c1")
        gone = await st.load_match("m3")
        await st.close()
        return found, gone

    assert run(go()) == (("m1", "d1"), None)


@pytest.mark.parametrize("kind", KINDS)
def test_a_token_hash_stays_claimed_when_its_match_is_created_with_it_and_when_its_seat_is_saved_again(kind, make):
    """A seat written with a token hash by create_match holds it as one written by save_seat
    does; saving the seat again with the same hash (its player resigns, a bot plays the seat:
    GJ-12.4) keeps it held. Another match's seat is refused it in both cases."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(replace(record(), seats=(SeatRecord(seat=0, token_hash="created"), SeatRecord(seat=1))))
        await st.create_match(record("m2", created_at=2.0))
        await st.save_seat("m1", SeatRecord(seat=1, player_name="bob", token_hash="joined", joined_at=5.0))
        await st.save_seat("m1", SeatRecord(seat=1, player_name="bob", token_hash="joined", joined_at=5.0, left=True))
        refused = []
        for token in ("created", "joined"):
            with pytest.raises(StoreError):
                await st.save_seat("m2", SeatRecord(seat=0, token_hash=token))
            refused.append(token)
        with pytest.raises(StoreError):
            await st.create_match(replace(record("m3", created_at=3.0), seats=(SeatRecord(seat=0, token_hash="joined"),)))
        got = await st.load_match("m1"), await st.load_match("m2"), await st.load_match("m3")
        await st.close()
        return refused, got

    refused, (m1, m2, m3) = run(go())
    assert refused == ["created", "joined"]
    assert [(s.token_hash, s.left) for s in m1.record.seats] == [("created", False), ("joined", True)]
    assert [s.token_hash for s in m2.record.seats] == ["", ""] and m3 is None


@pytest.mark.parametrize("kind", KINDS)
def test_a_match_refused_for_a_later_seats_token_claims_none_of_its_seats_tokens(kind, make):
    """All or nothing: a new match whose second seat's token hash another match holds (a
    forced collision) is refused, and its first seat's token hash is not left claimed: another
    match may take it at once, at creation or by a join; so may a start whose second seat
    repeats its first seat's hash, refused likewise."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record("m0", created_at=0.5))
        await st.save_seat("m0", SeatRecord(seat=0, token_hash="held"))
        seats = (SeatRecord(seat=0, token_hash="fresh"), SeatRecord(seat=1, token_hash="held"))
        with pytest.raises(StoreError):
            await st.create_match(replace(record("m1"), seats=seats), [DECK0])
        refused = await st.load_match("m1")
        await st.create_match(replace(record("m2", created_at=2.0), seats=(SeatRecord(seat=0, token_hash="fresh"),
                                                                           SeatRecord(seat=1))))
        await st.create_match(record("m3", created_at=3.0))
        with pytest.raises(StoreError):
            await st.start_match("m3", [SeatRecord(seat=0, token_hash="twice"), SeatRecord(seat=1, token_hash="twice")])
        started = await st.load_match("m3")
        await st.save_seat("m0", SeatRecord(seat=1, token_hash="twice"))
        got = await st.load_match("m2"), await st.load_match("m0")
        await st.close()
        return refused, started, got

    refused, started, (m2, m0) = run(go())
    assert refused is None
    assert started.record.status == "waiting" and started.record.seats == (SeatRecord(seat=0), SeatRecord(seat=1))
    assert m2.record.seats[0].token_hash == "fresh"
    assert [s.token_hash for s in m0.record.seats] == ["held", "twice"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_start_may_give_a_seat_the_token_hash_a_seat_listed_before_it_gives_up(kind, make):
    """start_match writes its seats one after another in one transaction, under the unique
    index on the token hash (store/base.py): a hash that a seat listed earlier in the call
    gives up is free for a seat listed after it, and the start goes through; listed the other
    way round, the hash is still held when the later seat asks for it, and the start is refused
    and writes nothing. The memory store (SQLite's exact semantics, its docstring) checked
    every seat against the hashes held before the call, and refused the first order too."""
    async def go():
        st = make(kind)
        await st.open()
        results = {}
        for match_id, order in (("m1", "given up first"), ("m2", "asked first")):
            await st.create_match(record(match_id, seats=3))
            await st.save_seat(match_id, SeatRecord(seat=1, player_name="bob", token_hash=f"{match_id}-t1"))
            gives_up = SeatRecord(seat=1, player_name="bob", token_hash=f"{match_id}-t9")
            takes = SeatRecord(seat=0, player_name="ann", token_hash=f"{match_id}-t1")
            seats = [gives_up, takes] if order == "given up first" else [takes, gives_up]
            try:
                await st.start_match(match_id, seats, [DECK0])
                outcome = "started"
            except StoreError as exc:
                outcome = type(exc).__name__
            got = (await st.load_match(match_id)).record
            results[order] = outcome, got.status, [s.token_hash for s in got.seats]
        await st.close()
        return results

    results = run(go())
    assert results == {"given up first": ("started", "active", ["m1-t1", "m1-t9", ""]),
                       "asked first": ("StoreError", "waiting", ["", "m2-t1", ""])}


@pytest.mark.parametrize("kind", KINDS)
def test_a_starts_seats_are_checked_in_order_a_seat_listed_twice_included(kind, make):
    """start_match's seats take and give up token hashes in the order listed (one update after
    another in the SQL stores' transaction): a seat that keeps its hash still holds it when a
    later seat asks for it (refused, and nothing written: not the first seat's new name
    either), and a seat listed twice gives up, at its second entry, the hash its first entry
    took, which a seat after it may then take."""
    async def go():
        st = make(kind)
        await st.open()
        for match_id in ("m1", "m2"):
            await st.create_match(record(match_id, seats=3))
            await st.save_seat(match_id, SeatRecord(seat=1, player_name="bob", token_hash=f"{match_id}-t1"))
        with pytest.raises(StoreError):
            await st.start_match("m1", [SeatRecord(seat=1, player_name="bobby", token_hash="m1-t1"),
                                        SeatRecord(seat=0, player_name="ann", token_hash="m1-t1")])
        await st.start_match("m2", [SeatRecord(seat=1, player_name="bob", token_hash="m2-t9"),
                                    SeatRecord(seat=1, player_name="bob", token_hash="m2-t8"),
                                    SeatRecord(seat=0, player_name="ann", token_hash="m2-t9")])
        got = [(await st.load_match(m)).record for m in ("m1", "m2")]
        await st.close()
        return got

    m1, m2 = run(go())
    assert (m1.status, [(s.player_name, s.token_hash) for s in m1.seats]) == (
        "waiting", [("", ""), ("bob", "m1-t1"), ("", "")])
    assert (m2.status, [s.token_hash for s in m2.seats]) == ("active", ["m2-t9", "m2-t8", ""])


@pytest.mark.parametrize("kind", KINDS)
def test_listing_filters_and_orders(kind, make):
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record("a", "klaberjass", 1.0))
        await st.create_match(record("b", "jojotte", 2.0))
        await st.create_match(record("c", "klaberjass", 3.0))
        await st.create_match(record("d", "jojotte", 0.5))  # created last, the oldest
        await st.append_action("c", ActionRecord(1, 0, "pass"))
        await st.set_status("a", "finished", {"winners": [1]}, 9.0, ("c0" * 32, "c1" * 32))
        everything = await st.list_matches()
        kl = await st.list_matches(game="klaberjass")
        part = await st.list_matches(game="klaber")  # a game's id, not a prefix of one
        finished = await st.list_matches(statuses=["finished"])
        one = await st.list_matches(limit=1)
        none = await st.list_matches(limit=0), await st.list_matches(limit=-1)  # not "no limit"
        unfinished = await st.unfinished_match_ids()
        await st.close()
        return everything, kl, part, finished, one, none, unfinished

    everything, kl, part, finished, one, none, unfinished = run(go())
    assert none == ([], []) and part == []
    assert [m.record.match_id for m in everything] == ["c", "b", "a", "d"]
    assert [m.seq for m in everything] == [1, 0, 0, 0]
    assert [m.record.match_id for m in kl] == ["c", "a"]
    assert [(m.record.match_id, dict(m.record.result), m.record.ended_at) for m in finished] == [("a", {"winners": [1]}, 9.0)]
    assert finished[0].record.deal_commitments == ("c0" * 32, "c1" * 32)  # recorded with the end
    assert [m.record.deal_commitments for m in everything[:2]] == [(), ()]
    assert [m.record.match_id for m in one] == ["c"]
    assert unfinished == ["d", "b", "c"]  # oldest first, not in the order of creation


@pytest.mark.parametrize("kind", KINDS)
def test_unfinished_matches_created_at_one_time_come_in_the_order_of_their_ids(kind, make):
    """Store.unfinished_match_ids: waiting and active matches (not a finished nor a terminated
    one, however old), oldest first, and among matches created at once by id
    (the SQL stores' ORDER BY created_at, match_id: the order is total, as list_matches' is),
    not in the order of creation (b, c, a). The memory store too (SQLite's semantics)."""
    async def go():
        st = make(kind)
        await st.open()
        for mid, created_at in (("b", 1.0), ("c", 1.0), ("a", 1.0), ("z", 0.5), ("y", 2.0)):
            await st.create_match(record(mid, created_at=created_at, status="active" if mid == "c" else "waiting"))
        await st.set_status("y", "finished", {"winners": []}, 3.0)
        await st.create_match(record("x", created_at=0.1))
        await st.set_status("x", "terminated", {"winners": []}, 3.0)  # ended too
        ids = await st.unfinished_match_ids()
        await st.close()
        return ids

    assert run(go()) == ["z", "a", "b", "c"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_limited_listing_of_matches_created_at_one_time_takes_the_highest_ids(kind, make):
    """Ties of ``created_at`` are broken by ``match_id DESC`` before the limit (Store.list_matches:
    the order is total), filtered or not, after a cursor too: which matches a page holds does not
    depend on the order they were created in (here not that of their ids)."""
    async def go():
        st = make(kind)
        await st.open()
        for match_id in ("m5", "m1", "m9", "m3", "m7", "m0", "m8"):
            await st.create_match(record(match_id, created_at=1.0))
        pages = []
        for n in (1, 2, 3, 4):
            for filters in ({}, {"statuses": ["waiting"]}, {"game": "klaberjass"}):
                pages.append([li.record.match_id for li in await st.list_matches(limit=n, **filters)])
                pages.append([li.record.match_id for li in await st.list_matches(limit=n, after=(1.0, "m8"),
                                                                                   **filters)])
        await st.close()
        return pages

    expected = []
    for n in (1, 2, 3, 4):
        expected += [["m9", "m8", "m7", "m5"][:n], ["m7", "m5", "m3", "m1"][:n]] * 3
    assert run(go()) == expected


def _paged(pages: list[list], limit: int) -> list[str]:
    """The ids of ``pages`` read ``limit`` at a time (each read ``limit + 1`` to know whether
    more follow, as the session layer does), checking every page but the last is full."""
    ids = []
    for i, page in enumerate(pages):
        assert len(page) <= limit + 1
        if i < len(pages) - 1:
            assert len(page) == limit + 1
        ids += [li.record.match_id for li in page[:limit]]
    return ids


async def _read_pages(st, limit: int, **filters) -> list[list]:
    pages, after = [], None
    while True:
        page = await st.list_matches(limit=limit + 1, after=after, **filters)
        pages.append(page)
        if len(page) <= limit:
            return pages
        last = page[limit - 1].record
        after = (last.created_at, last.match_id)


@pytest.mark.parametrize("kind", KINDS)
def test_listing_pages_after_a_cursor(kind, make):
    """Keyset paging (ListMatches' page tokens): rows strictly after ``after`` in the order
    ``created_at DESC, match_id DESC``. Pages of 1, 2 and 7 over 21 matches concatenate to the
    unpaged listing, with filters too; equal creation times are ordered, and cut between
    pages, by match id; a cursor past the last row gives an empty page; a row created or
    deleted before the cursor changes nothing after it (no offset)."""
    async def go():
        st = make(kind)
        await st.open()
        # 21 matches; created_at repeats (7 groups of 3) so that ties are cut by pages
        for i in range(21):
            game = ("klaberjass", "jojotte", "georgian_joker")[i % 3]
            await st.create_match(record(f"m{i:02d}", game, 100.0 + i // 3, seats=4 if game == "georgian_joker" else 2))
        for i in (1, 4, 5, 11, 12, 20):
            await st.set_status(f"m{i:02d}", "finished", {"winners": [0]}, 500.0)
        await st.set_status("m07", "active")
        everything = [li.record.match_id for li in await st.list_matches(limit=1000)]
        paged = {n: _paged(await _read_pages(st, n), n) for n in (1, 2, 7)}
        kl = [li.record.match_id for li in await st.list_matches(game="klaberjass", limit=1000)]
        kl_paged = {n: _paged(await _read_pages(st, n, game="klaberjass"), n) for n in (1, 2, 7)}
        fin = [li.record.match_id for li in await st.list_matches(statuses=["finished"], limit=1000)]
        fin_paged = {n: _paged(await _read_pages(st, n, statuses=["finished"]), n) for n in (1, 2, 7)}
        both = [li.record.match_id for li in await st.list_matches(["waiting", "active"], "jojotte", 1000)]
        both_paged = _paged(await _read_pages(st, 2, statuses=["waiting", "active"], game="jojotte"), 2)
        ties = [li.record.match_id for li in await st.list_matches(limit=3, after=(103.0, "m10"))]
        empty = await st.list_matches(after=(100.0, "m00"))
        before_all = await st.list_matches(after=(0.5, "zzz"))
        beyond = [li.record.match_id for li in await st.list_matches(limit=2, after=(1e9, ""))]
        # a match created meanwhile (newer than the cursor) or at the cursor's own time with a
        # higher id is not after the cursor: the next page is what it was
        before = [li.record.match_id for li in await st.list_matches(limit=4, after=(104.0, "m13"))]
        await st.create_match(record("m13z", created_at=104.0))
        await st.create_match(record("new", created_at=900.0))
        after_create = [li.record.match_id for li in await st.list_matches(limit=4, after=(104.0, "m13"))]
        await st.close()
        return (everything, paged, kl, kl_paged, fin, fin_paged, both, both_paged, ties, empty, before_all,
                beyond, before, after_create)

    (everything, paged, kl, kl_paged, fin, fin_paged, both, both_paged, ties, empty, before_all,
     beyond, before, after_create) = run(go())
    assert everything == [f"m{i:02d}" for i in range(20, -1, -1)]  # equal created_at: by id, descending
    assert paged == {1: everything, 2: everything, 7: everything}
    assert kl == [f"m{i:02d}" for i in range(18, -1, -3)] and kl_paged == {1: kl, 2: kl, 7: kl}
    assert fin == ["m20", "m12", "m11", "m05", "m04", "m01"] and fin_paged == {1: fin, 2: fin, 7: fin}
    assert both == ["m19", "m16", "m13", "m10", "m07"] and both_paged == both
    assert ties == ["m09", "m08", "m07"]  # after m10 (created 103.0): its tie m09 at 103.0, then 102.0
    assert empty == [] and before_all == []
    assert beyond == ["m20", "m19"]
    assert before == after_create == ["m12", "m11", "m10", "m09"]


def _open_refused(path, error, **raises):
    """Open a SQLite store on ``path``, which must be refused with ``error``; its ExceptionInfo."""
    async def go():
        await SqliteStore(path).open()
    with pytest.raises(error, **raises) as info:
        run(go())
    return info


def _open_refused_unchanged(path, error, **raises):
    """:func:`_open_refused`, and the file left byte for byte as it was (a refused database is
    the operator's to restore or inspect, never repaired or touched)."""
    before = path.read_bytes()
    info = _open_refused(path, error, **raises)
    assert path.read_bytes() == before
    return info


def _open_close(path, **kw):
    async def go():
        st = SqliteStore(path, **kw)
        await st.open()
        await st.close()
    run(go())


def _listing_plan(path, statuses, after):
    """The EXPLAIN QUERY PLAN of the listing query _list_sync runs for these arguments."""
    conn = sqlite3.connect(path)
    captured = {}

    class Spy:  # the SQL and arguments _list_sync runs, for EXPLAIN
        def execute(self, text, params=()):
            captured["sql"], captured["args"] = text, params
            return conn.execute(text, params)

    store = SqliteStore(path)
    store._db = lambda: Spy()  # noqa: SLF001 (the query text is what this test checks)
    store._list_sync(statuses, "", 101, after)
    try:
        return " / ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + captured["sql"], captured["args"]))
    finally:
        conn.close()


def test_sqlite_paging_reads_the_status_index_from_the_cursor(tmp_path):
    """With a status filter (the common admin listing), a page after a cursor range-scans
    matches_by_status (status, created_at) from the cursor, not from the newest match: a late
    page costs what the first does (EXPLAIN QUERY PLAN)."""
    _open_close(tmp_path / "db.sqlite3")
    plan = _listing_plan(tmp_path / "db.sqlite3", ("active",), (100.0, "m1"))
    assert "matches_by_status (status=? AND created_at<?)" in plan, plan


def test_sqlite_paging_without_a_status_reads_the_creation_index_from_the_cursor(tmp_path):
    """Without a status filter (every match, newest first), a page is read backwards from the
    cursor along matches_by_creation (created_at, match_id), not sorted: before the index
    every page sorted every match older than its cursor (a temporary B-tree)."""
    _open_close(tmp_path / "db.sqlite3")
    for after in (None, (100.0, "m1")):
        plan = _listing_plan(tmp_path / "db.sqlite3", (), after)
        assert "matches_by_creation" in plan and "TEMP B-TREE" not in plan, plan


def _indexes(path):
    conn = sqlite3.connect(path)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        return names, conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def test_sqlite_adds_the_creation_index_to_a_database_of_its_schema_without_a_new_version(tmp_path):
    """A database of the current schema made without matches_by_creation gets the index when an
    engine opens it, and keeps its schema version, so that the release before still opens it
    (a rollback needs no restore). A dry run (migrate=False) and a reader beside a running
    engine (exclusive=False) leave the file as it is."""
    from engine_service.store.sqlite import SCHEMA_VERSION
    path = tmp_path / "db.sqlite3"
    _open_close(path)
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX matches_by_creation")
    conn.commit()
    conn.close()
    _open_close(path, migrate=False)
    _open_close(path, exclusive=False)
    assert "matches_by_creation" not in _indexes(path)[0]
    _open_close(path)
    names, version = _indexes(path)
    assert "matches_by_creation" in names and version == SCHEMA_VERSION == 8


@pytest.mark.parametrize("kind", KINDS)
def test_write_latency_and_errors_are_measured(kind, make):
    metrics = Metrics()

    async def go():
        st = make(kind, metrics)
        await st.open()
        await st.create_match(record())
        await st.append_action("m1", ActionRecord(1, 0, "pass"))
        with pytest.raises(SequenceConflict):
            await st.append_action("m1", ActionRecord(1, 0, "pass"))
        await st.close()
    run(go())
    assert metrics.value("cardgames_store_write_seconds_count", {"operation": "append_action"}) == 1
    assert metrics.value("cardgames_store_write_seconds_count", {"operation": "create_match"}) == 1
    assert metrics.value("cardgames_store_errors_total", {"operation": "append_action"}) == 1


def test_a_write_whose_caller_is_cancelled_is_neither_a_store_error_nor_a_latency(tmp_path):
    """A caller cancelled while its write waits (a client gone, a drain) says nothing of the
    database: cardgames_store_errors_total, which alerts watch, does not count it, and no
    latency is observed for it; a write that fails is counted."""
    metrics = Metrics()

    async def go():
        st = SqliteStore(tmp_path / "db.sqlite3", metrics)
        await st.open()
        await st.create_match(record())
        task = asyncio.create_task(st.append_action("m1", ActionRecord(1, 0, "pass")))
        await asyncio.sleep(0)  # the write is queued: the task waits for its commit
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(StoreError):
            await st.append_action("nope", ActionRecord(1, 0, "pass"))
        await st.close()
    run(go())
    assert metrics.value("cardgames_store_errors_total", {"operation": "append_action"}) == 1
    assert metrics.value("cardgames_store_write_seconds_count", {"operation": "append_action"}) == 0


@pytest.mark.parametrize("kind", KINDS)
def test_the_database_file_and_its_volume_are_measured_for_sqlite_only(kind, make, tmp_path):
    """cardgames_store_database_bytes (file + WAL) and the free / total bytes of its
    filesystem, read at each scrape, for the CardgamesStoreVolume* alerts. A store without a
    file of its own exports none of them (a free space of 0 would fire the alerts)."""
    import math

    from prometheus_client import generate_latest

    metrics = Metrics()
    names = ("cardgames_store_database_bytes", "cardgames_store_volume_free_bytes",
             "cardgames_store_volume_size_bytes")

    def sample(name):
        return metrics.registry.get_sample_value(name)

    async def go():
        st = make(kind, metrics)
        await st.open()
        if kind != "sqlite":
            assert [sample(n) for n in names] == [None, None, None]
            await st.close()
            return
        path = str(tmp_path / "db.sqlite3")
        before = sample("cardgames_store_database_bytes")
        assert before == os.stat(path).st_size + (os.stat(path + "-wal").st_size
                                                 if os.path.exists(path + "-wal") else 0)
        for i in range(200):
            await st.create_match(record(match_id=f"m{i}"), [DECK0])
        assert sample("cardgames_store_database_bytes") > before + 200 * 100
        vfs = os.statvfs(tmp_path)
        assert sample("cardgames_store_volume_size_bytes") == vfs.f_blocks * vfs.f_frsize
        free = sample("cardgames_store_volume_free_bytes")
        assert 0 < free <= vfs.f_blocks * vfs.f_frsize
        assert abs(free - vfs.f_bavail * vfs.f_frsize) < 64 << 20  # other writers meanwhile
        await st.close()
        assert not os.path.exists(path + "-wal")  # the last connection's close removed it
        assert sample("cardgames_store_database_bytes") == os.stat(path).st_size  # no WAL: the file
        os.rename(path, path + ".moved")  # unreadable: NaN, and the scrape still works
        assert math.isnan(sample("cardgames_store_database_bytes"))
        assert b"cardgames_store_volume_free_bytes" in generate_latest(metrics.registry)
        again = SqliteStore(tmp_path / "other.sqlite3", metrics)  # a later store: moves the gauges
        await again.open()
        assert sample("cardgames_store_database_bytes") == os.stat(tmp_path / "other.sqlite3").st_size + (
            os.stat(str(tmp_path / "other.sqlite3") + "-wal").st_size
            if os.path.exists(str(tmp_path / "other.sqlite3") + "-wal") else 0)
        await again.close()
    run(go())


def test_a_database_reached_through_a_symbolic_link_is_measured_where_it_is(tmp_path):
    """The path a symbolic link to a database on another volume (a data disk mounted
    elsewhere): the gauges measure that file with its WAL, and that volume, whose filling up
    the CardgamesStoreVolume* alerts are for. They measured the link's volume (another disk)
    and no WAL (SQLite keeps it beside the file, not beside the link)."""
    shm = "/dev/shm"
    if not os.path.isdir(shm) or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs a directory on another filesystem (/dev/shm)")
    metrics = Metrics()
    data = tempfile.mkdtemp(dir=shm)
    real = os.path.join(data, "db.sqlite3")
    link = tmp_path / "db.sqlite3"
    link.symlink_to(real)

    def sample(name):
        return metrics.registry.get_sample_value(name)

    async def go():
        st = SqliteStore(link, metrics)
        await st.open()
        for i in range(20):
            await st.create_match(record(match_id=f"m{i}"), [DECK0])
        on_disk = os.stat(real).st_size, os.stat(real + "-wal").st_size
        measured = sample("cardgames_store_database_bytes"), sample("cardgames_store_volume_size_bytes")
        await st.close()
        return on_disk, measured

    try:
        (file, wal), (size, volume) = run(go())
        vfs = os.statvfs(data)
        assert wal > 0 and size == file + wal
        assert volume == vfs.f_blocks * vfs.f_frsize
    finally:
        shutil.rmtree(data)


@pytest.mark.parametrize("kind", KINDS)
def test_touching_no_absence_is_no_write(kind, make):
    """touch_absences with no seat (a heartbeat with nobody away) goes to no database: no
    write latency observed, and it is not even refused by a closed store; with a seat it is
    a write, timed."""
    metrics = Metrics()

    async def go():
        st = make(kind, metrics)
        await st.open()
        await st.create_match(record())
        await st.touch_absences([], 5.0)
        idle = metrics.value("cardgames_store_write_seconds_count", {"operation": "touch_absences"})
        await st.touch_absences([("m1", 0)], 5.0)
        await st.close()
        await st.touch_absences([], 6.0)
        return idle

    idle = run(go())
    assert idle == 0
    assert metrics.value("cardgames_store_write_seconds_count", {"operation": "touch_absences"}) == 1
    assert metrics.value("cardgames_store_errors_total", {"operation": "touch_absences"}) == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_ping_answers_on_an_open_store_writes_nothing_and_is_refused_once_closed(kind, make):
    """Store.ping: the heartbeat's question while an outage of the absence writes is open and
    nobody is away (MatchManager._touch_absences). It answers while the store would take a
    write, changes nothing, and is a StoreError when it would not (closed here)."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        before = await st.list_matches()
        await st.ping()
        after = await st.list_matches()
        await st.close()
        with pytest.raises(StoreError):
            await st.ping()
        return before, after

    before, after = run(go())
    assert before == after and len(after) == 1


def test_the_memory_store_says_it_holds_its_data_once_per_open_and_not_if_that_refuses():
    """Store.on_held (the service binds its ports there) is called by the open that makes the
    memory store usable, not by another open while it is; one that raises leaves the store
    closed (its calls refused) and the next open calls it again."""
    seen = []

    def refuse():
        seen.append("refused")
        raise OSError("the port is taken")

    async def go():
        st = MemoryStore()
        st.on_held = refuse
        with pytest.raises(OSError):
            await st.open()
        with pytest.raises(StoreError):
            await st.create_match(record())
        st.on_held = lambda: seen.append("held")
        await st.open()
        await st.open()
        await st.create_match(record())
        await st.close()
        await st.open()
        await st.close()

    run(go())
    assert seen == ["refused", "held", "held"]


@pytest.mark.parametrize("kind", KINDS)
def test_opening_an_open_store_changes_nothing(kind, make):
    """A second ``open()`` of an open store does nothing (Store.open): it neither takes the
    database again (the engine's own lock would refuse it as another engine's) nor reopens
    what is open, and one ``close()`` still closes the store."""
    async def go():
        st = make(kind)
        await st.open()
        await st.create_match(record())
        await st.open()
        assert (await st.load_match("m1")).record.match_id == "m1"
        assert [m.record.match_id for m in await st.list_matches()] == ["m1"]
        await st.close()
        with pytest.raises(StoreError, match="closed"):
            await st.load_match("m1")
    run(go())


@pytest.mark.parametrize("kind", KINDS)
def test_closed_store_refuses_work(kind, make):
    """Every call of a closed store, read or write, is a StoreError (a manager that goes on
    after its store closed must not write into, or serve from, what no longer persists),
    counted in store_errors under its operation by every store alike (and under no other),
    saying the store is closed; a second close changes nothing."""
    metrics = Metrics()

    async def go():
        st = make(kind, metrics)
        await st.open()
        await st.create_match(replace(record(), create_hash="h1"))
        await st.close()
        await st.close()  # idempotent
        calls = {
            "create_match": lambda: st.create_match(record("m2")),
            "find_created": lambda: st.find_created("h1"),
            "save_seat": lambda: st.save_seat("m1", SeatRecord(seat=0, token_hash="t0")),
            "save_absence": lambda: st.save_absence("m1", 0, 5.0),
            "touch_absences": lambda: st.touch_absences([("m1", 0)], 6.0),
            "ping": lambda: st.ping(),
            "set_status": lambda: st.set_status("m1", "active"),
            "start_match": lambda: st.start_match("m1"),
            "append_action": lambda: st.append_action("m1", ActionRecord(1, 0, "pass")),
            "append_decks": lambda: st.append_decks("m1", [DECK0]),
            "load_match": lambda: st.load_match("m1"),
            "list_matches": lambda: st.list_matches(),
            "unfinished_match_ids": lambda: st.unfinished_match_ids(),
            "prune_finished": lambda: st.prune_finished(1e12),
            "count_finished": lambda: st.count_finished(1e12),
        }
        served, counted, said = [], {}, set()
        for name, call in calls.items():
            try:
                await call()
            except StoreError as exc:
                counted[name] = metrics.value("cardgames_store_errors_total", {"operation": name})
                said.add((type(exc).__name__, str(exc)))
                continue
            served.append(name)
        counted_in_all = sum(s.value for m in metrics.registry.collect() if m.name == "cardgames_store_errors"
                             for s in m.samples if s.name == "cardgames_store_errors_total")
        st = st if kind == "memory" else make(kind)  # (a new memory store is empty)
        await st.open()
        after = await st.load_match("m1"), await st.list_matches()
        await st.close()
        return served, counted, said, counted_in_all, after

    served, counted, said, counted_in_all, (m1, listing) = run(go())
    assert served == []
    # the same words from every store, and a plain StoreError: no refusal of another kind
    # (UnknownMatch would tell the session layer the match's rows are gone: sessions/clock.py)
    assert said == {("StoreError", "the store is closed")}
    # each refusal counted once under its operation, a read's as a write's (Store.close); the
    # memory and SQLite stores counted no refused read, the PostgreSQL store every one
    assert counted == {name: 0.0 if name == "ping" else 1.0 for name in counted}
    assert sorted(counted) == sorted(STORE_OPERATIONS + ("ping",))
    assert counted_in_all == len(STORE_OPERATIONS)  # under no other operation either
    assert m1.record.status == "waiting" and m1.actions == () and m1.decks == ()
    assert m1.record.seats == (SeatRecord(seat=0), SeatRecord(seat=1))
    assert [li.record.match_id for li in listing] == ["m1"]


# ---- SQLite specifics ----------------------------------------------------------------------

def test_sqlite_data_survives_reopen_and_uses_wal_full_sync(tmp_path):
    path = tmp_path / "db.sqlite3"

    async def write():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record(), [DECK0])
        await st.append_action("m1", ActionRecord(1, 0, "pass", client_action_id="c"))
        crash(st)  # no close(): a crash right after the acknowledgement

    async def read():
        st = SqliteStore(path)
        await st.open()
        got = await st.load_match("m1")
        with pytest.raises(DuplicateClientAction):
            await st.append_action("m1", ActionRecord(2, 0, "take", client_action_id="c"))
        await st.close()
        return got

    run(write())
    got = run(read())
    assert [a.action for a in got.actions] == ["pass"] and got.decks == (DECK0,)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_sqlite_files_carry_the_application_id_every_release_wrote(tmp_path):
    """The header's application_id tells the engine's files from other programs': 0x43474531
    ("CGE1"), as in every file an earlier release made, which another value would refuse as
    another application's."""
    path = tmp_path / "db.sqlite3"

    _open_close(path)
    conn = sqlite3.connect(path)
    try:
        application_id = conn.execute("PRAGMA application_id").fetchone()[0]
    finally:
        conn.close()
    assert application_id == 0x43474531 and application_id.to_bytes(4, "big") == b"CGE1"


def test_sqlite_synchronous_is_full(tmp_path):
    st = SqliteStore(tmp_path / "db.sqlite3")

    async def go():
        await st.open()
        value = await st._run(lambda: st._db().execute("PRAGMA synchronous").fetchone()[0])
        await st.close()
        return value
    assert run(go()) == 2  # FULL


def test_sqlite_a_write_that_reaches_the_store_as_it_closes_is_refused_and_the_store_reopens(tmp_path):
    """A write queued behind close() (a match's last action racing a shutdown) finds the
    connection closed: it is a StoreError, not a writer thread that dies and leaves it (and
    close) waiting for ever; the next open serves, without that write."""
    async def go():
        st = SqliteStore(tmp_path / "db.sqlite3")
        await st.open()
        await st.create_match(record())
        closing = asyncio.create_task(st.close())
        await asyncio.sleep(0)  # close() has queued its job
        with pytest.raises(StoreError, match="closed"):
            await st.append_action("m1", ActionRecord(1, 0, "pass"))
        await closing
        await st.open()
        got = await st.load_match("m1")
        await st.close()
        return got

    got = run(asyncio.wait_for(go(), 60))  # (only against a hang)
    assert got.actions == ()


def test_sqlite_runs_off_the_event_loop_thread(tmp_path):
    st = SqliteStore(tmp_path / "db.sqlite3")

    async def go():
        await st.open()
        thread = await st._run(lambda: threading.get_ident())
        await st.close()
        return thread
    assert run(go()) != threading.get_ident()


def test_a_process_that_ends_without_closing_its_sqlite_store_exits(tmp_path):
    """The store's thread does not hold the process: one whose main ends without closing the
    store (an engine stopped by a fatal error) exits, rather than waiting for ever on a
    thread that waits for work."""
    code = ("import asyncio, sys\n"
            "from engine_service.store import SqliteStore\n"
            "asyncio.run(SqliteStore(sys.argv[1]).open())\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "db.sqlite3")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("through_a_link", [False, True])
def test_new_sqlite_file_is_private(tmp_path, through_a_link):
    """A new database file (it holds every deck) is readable by its owner only, also when
    the path is a symbolic link to a file not made yet (a volume's first start): the link
    made O_EXCL fail, and SQLite created the file as the umask lets it, readable by all."""
    path = tmp_path / "db.sqlite3"
    opened = path
    if through_a_link:
        opened = tmp_path / "link.sqlite3"
        opened.symlink_to(path)

    async def go():
        st = SqliteStore(opened)
        await st.open()
        await st.create_match(record())
        await st.close()
    old = os.umask(0o022)
    try:
        run(go())
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@pytest.mark.parametrize("content", [b"this is not a database at all, just text\n" * 50,
                                     bytes(range(256)) * 20])
def test_garbage_file_is_a_clear_error(tmp_path, content):
    path = tmp_path / "garbage.sqlite3"
    path.write_bytes(content)

    info = _open_refused(path, NotADatabase)
    assert str(path) in str(info.value) and "not a SQLite database" in str(info.value)
    assert path.read_bytes() == content  # untouched
    # and nothing made beside it: the lock file (garbage.sqlite3.lock) stayed
    assert [p.name for p in tmp_path.iterdir()] == ["garbage.sqlite3"]


@pytest.mark.parametrize("damage, says", [
    ("DROP TABLE seats", "no table seats"),
    ("ALTER TABLE match_actions RENAME TO kept_actions", "no table match_actions"),
    ("ALTER TABLE seats DROP COLUMN away_seen", "table seats lacks away_seen"),
    ("ALTER TABLE seats DROP COLUMN away_since; ALTER TABLE seats DROP COLUMN away_seen; DROP TABLE decks",
     "table seats lacks away_seen, away_since; no table decks"),
])
def test_a_database_of_ours_that_lacks_part_of_its_schema_is_refused_unchanged(tmp_path, damage, says):
    """A file of this service whose seats table had been dropped (a partial restore, a manual
    repair) passed every check at open, PRAGMA quick_check included: the engine served, and
    every CreateMatch then failed. Refused now as corrupt, naming what is missing, the file
    left as it was."""
    path = tmp_path / "cards.sqlite3"

    async def make():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record("m1"))
        await st.close()
    run(make())
    conn = sqlite3.connect(path)
    conn.executescript(damage)
    conn.commit()
    conn.close()
    info = _open_refused_unchanged(path, CorruptDatabase)
    assert str(info.value) == (f"{path} lacks part of this service's schema (version {SCHEMA_VERSION}: {says}); "
                               "refusing to use it: restore the latest backup (docs/operations.md, Backup and restore)")


def test_a_database_of_ours_its_own_content_keeps_from_being_prepared_is_refused_unchanged(tmp_path):
    """Preparing a sound file of ours can fail because of what it holds (here a table, made by
    hand, with the name of the index the engine adds): SQLite's SQLITE_ERROR is about the
    file, not its volume, so the file is refused as not usable, naming SQLite's reason."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX matches_by_creation")
    conn.execute("CREATE TABLE matches_by_creation (note TEXT)")
    conn.commit()
    conn.close()
    info = _open_refused_unchanged(path, NotADatabase)
    assert str(info.value) == (f"{path} is not a usable SQLite database "
                               "(there is already a table named matches_by_creation)")


def test_a_loop_of_symbolic_links_is_a_clear_error(tmp_path):
    """--db naming a symbolic link that names itself (or a loop of them): resolving the path
    raised RuntimeError, a traceback out of the engine's start (exit 1) instead of
    store_unavailable; now a StoreError naming the loop, and nothing made beside it."""
    loop = tmp_path / "cards.sqlite3"
    loop.symlink_to(loop.name)

    async def go():
        await SqliteStore(loop).open()
    with pytest.raises(StoreError) as info:
        run(go())
    assert str(info.value) == f"cannot open database {loop}: its path is a loop of symbolic links"
    assert [p.name for p in tmp_path.iterdir()] == ["cards.sqlite3"]


@pytest.mark.parametrize("content", [b"", b"\n", b"S"])
def test_a_file_sqlite_reads_as_empty_is_made_a_database(tmp_path, content):
    """The header check refuses before the lock file only what SQLite refuses: an empty file
    (``touch``) and a file of one byte, whose size SQLite reports as 0 (the byte it writes
    into a new file on some file systems, os_unix.c), are empty databases to SQLite and were
    made the engine's; the one-byte file was refused as "not a SQLite database"."""
    path = tmp_path / "cards.sqlite3"
    path.write_bytes(content)

    _open_close(path)
    assert path.read_bytes().startswith(b"SQLite format 3\x00") or (tmp_path / "cards.sqlite3-wal").exists()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
    finally:
        conn.close()


def test_another_applications_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()

    _open_refused(path, NotADatabase, match="another application")


def test_another_applications_sqlite_file_is_refused_before_it_has_a_table(tmp_path):
    """An application_id is a program's claim on its file (SQLite's header): another
    program's empty database, tables not made yet, is refused unchanged as theirs, where it
    was given this service's schema and id. An empty file of no application (id 0) is still
    made a database, whatever its user_version."""
    theirs, nobodys = tmp_path / "theirs.sqlite3", tmp_path / "nobodys.sqlite3"
    for path, app_id in ((theirs, 0x12345678), (nobodys, 0)):
        conn = sqlite3.connect(path)
        conn.execute(f"PRAGMA application_id={app_id}")
        conn.execute("PRAGMA user_version=3")
        conn.commit()
        conn.close()

    info = _open_refused_unchanged(theirs, NotADatabase)
    assert str(info.value) == (f"{theirs} is a SQLite database of another application "
                               "(application_id 0x12345678); refusing to use it")
    _open_close(nobodys)
    conn = sqlite3.connect(nobodys)
    try:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x43474531
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()


@pytest.mark.parametrize("app_id, version", [(0x12345678, 0), (0, SCHEMA_VERSION)])
def test_a_file_with_our_tables_and_a_header_we_did_not_write_is_another_applications(tmp_path, app_id, version):
    """Tables named as this service's are not enough to call a file a .dump copy of ours:
    with another program's application_id, or with a schema version (which a .dump copy
    lacks), it is refused as another application's, naming the id it has; left as it was."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA application_id={app_id}")
    conn.execute(f"PRAGMA user_version={version}")
    conn.commit()
    conn.close()

    info = _open_refused_unchanged(path, NotADatabase)
    assert str(info.value) == (f"{path} is a SQLite database of another application "
                               f"(application_id {app_id:#x}); refusing to use it")


def test_a_file_with_sqlites_header_and_garbage_after_it_is_not_a_database(tmp_path):
    """The header check lets a file starting with SQLite's 16 bytes through; SQLite then finds
    no database after them (SQLITE_NOTADB): refused as not a SQLite database, naming SQLite's
    reason, not as a damaged database of ours, and left as it was."""
    path = tmp_path / "db.sqlite3"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)

    info = _open_refused_unchanged(path, NotADatabase)
    assert not isinstance(info.value, CorruptDatabase)
    assert str(info.value) == f"{path} is not a SQLite database (file is not a database)"


def test_a_copy_made_with_dump_is_refused_saying_so_not_as_another_applications(tmp_path):
    """A database copied with .dump / iterdump into a new file has this service's tables and
    rows but neither application_id nor user_version (SQLite's header is not dumped): it was
    refused as "a SQLite database of another application", which sent the operator after the
    wrong file. It is refused still (its schema version is unknown), saying what it is and
    which copy to restore; the file is left as it was."""
    original, copy = tmp_path / "db.sqlite3", tmp_path / "dumped.sqlite3"
    sqlite_with_matches(original, count=2)
    src, dst = sqlite3.connect(original), sqlite3.connect(copy)
    try:
        dst.executescript("\n".join(src.iterdump()))
    finally:
        src.close()
        dst.close()
    before = copy.read_bytes()

    async def go():
        await SqliteStore(copy).open()
    with pytest.raises(NotADatabase) as info:
        run(go())
    assert str(info.value) == (
        f"{copy} holds this service's tables but no application_id nor schema version, as a copy made with "
        ".dump or iterdump has (those leave SQLite's header out); refusing to use it: restore a copy made "
        "with SQLite's online backup (docs/operations.md, Backup and restore)")
    assert copy.read_bytes() == before


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "db.sqlite3"

    _open_close(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version=99")
    conn.commit()
    conn.close()
    info = _open_refused_unchanged(path, NotADatabase)
    assert str(info.value) == (f"{path} has schema version 99, newer than this program's {SCHEMA_VERSION}; "
                               "upgrade the program")


def sqlite_with_matches(path, count: int = 30) -> None:
    """A database of this program holding ``count`` matches, closed (no -wal left)."""
    async def go():
        st = SqliteStore(path)
        await st.open()
        for i in range(count):
            await st.create_match(record(f"m{i}", created_at=float(i)), [DECK0])
            await st.append_action(f"m{i}", ActionRecord(1, 0, "pass", "player", "c1", "", 6.0))
        await st.close()
    run(go())


def overwrite_page(path, page: int, page_size: int = 4096) -> None:
    """Garbage over one whole page (1-based), as a failing disk or a bad copy leaves it."""
    with open(path, "r+b") as f:
        f.seek((page - 1) * page_size)
        f.write(bytes([0xDE, 0xAD, 0xBE, 0xEF]) * (page_size // 4))


def test_a_corrupt_database_is_refused_at_open(tmp_path):
    """A database of ours with page 3 (an index's root) overwritten: its header and schema
    read fine, so it used to open, the engine served, and every write failed "database disk
    image is malformed". quick_check at open refuses it, naming the file and SQLite's
    report, and leaves the file as it was."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path)
    overwrite_page(path, 3)
    info = _open_refused_unchanged(path, CorruptDatabase)
    message = str(info.value)
    assert str(path) in message and "is corrupt" in message and "Page 3" in message, message
    assert isinstance(info.value, NotADatabase)


def _open_descriptors_of(path) -> list[str]:
    """The descriptors of this process open on ``path`` or a file beside it (-wal, -shm, .lock)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed since
            continue
        if target.startswith(str(path)):
            found.append(target)
    return found


def test_a_refused_database_is_not_left_open(tmp_path):
    """A file refused once SQLite has opened it (here a corrupt one) is closed at once, not
    when the refusal's traceback is let go: the process keeps no descriptor of it (nor of a
    WAL or lock file beside it) while it reports the error."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path)
    overwrite_page(path, 3)
    info = _open_refused_unchanged(path, CorruptDatabase)
    assert info.value.__traceback__ is not None  # the refusal is still held here
    assert _open_descriptors_of(path) == []


def test_a_database_too_damaged_for_the_check_to_report_is_refused_as_corrupt(tmp_path):
    """Pages of several tables overwritten: quick_check itself stops with "database disk image
    is malformed" instead of listing problems. That is still a corrupt file of ours, refused
    so and left as it was."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path)
    for page in (3, 5, 7, 9):
        overwrite_page(path, page)
    info = _open_refused_unchanged(path, CorruptDatabase)
    assert str(info.value) == (
        f"{path} is corrupt (SQLite PRAGMA quick_check: database disk image is malformed); refusing to use it: "
        "restore the latest backup (docs/operations.md, Backup and restore)")


def test_an_integrity_check_sqlite_cannot_run_is_a_refusal_not_a_skipped_check(tmp_path):
    """quick_check stopped by anything but its budget (here an index in a collation this
    program does not have, added by another program) is no reason to serve unchecked: the
    file is refused with SQLite's words, and left as it was."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)
    conn = sqlite3.connect(path)
    conn.create_collation("their_order", lambda a, b: (a > b) - (a < b))
    conn.execute("CREATE INDEX matches_by_their_name ON matches (name COLLATE their_order)")
    conn.commit()
    conn.close()
    info = _open_refused_unchanged(path, CorruptDatabase)
    assert str(info.value).startswith(
        f"{path} is corrupt (SQLite PRAGMA quick_check: no such collation sequence: their_order)")


def test_a_database_damaged_in_its_schema_is_called_corrupt_not_garbage(tmp_path):
    """A database of ours cut short (a copy that stopped half-way, a failing disk): SQLite
    reads its header but not its schema ("database disk image is malformed"), before the
    quick_check runs. It used to be refused as "not a SQLite database", the error meant for
    another program's file, which sent the operator after the path instead of the backup."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path)
    with open(path, "r+b") as f:  # page 1 (SQLite's header) whole, the rest of the schema gone
        f.truncate(4096 + 100)
    info = _open_refused_unchanged(path, CorruptDatabase)
    message = str(info.value)
    assert str(path) in message and "is corrupt" in message and "restore the latest backup" in message, message
    assert "SQLITE_CORRUPT" in message and "not a SQLite database" not in message
    # what found it, in docs/operations.md's words (not the quick_check, which never ran)
    assert "(SQLite reading its schema: database disk image is malformed (SQLITE_CORRUPT))" in message, message
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"hello, not a database at all" * 200)
    with pytest.raises(NotADatabase) as info:
        run(SqliteStore(garbage).open())
    assert not isinstance(info.value, CorruptDatabase)
    assert str(info.value) == f"{garbage} is not a SQLite database (file is not a database)"


def test_the_integrity_check_is_abandoned_past_its_budget(tmp_path):
    """The check reads the whole file; past its budget the store opens anyway (and warns) so
    that a large database does not hold the start-up hostage. A sound file is checked in
    full otherwise."""
    from structlog.testing import capture_logs

    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path)

    async def open_close(budget_s):
        st = SqliteStore(path)
        if budget_s is not None:
            st.check_budget_s = budget_s
        await st.open()
        await st.close()
        return st.check_s

    assert SqliteStore(path).check_budget_s == 10.0  # docs/operations.md: "It is given 10 s"
    assert run(open_close(None)) is not None  # checked
    with capture_logs() as logs:
        assert run(open_close(-1.0)) is None  # abandoned at once
    skipped = [e for e in logs if e["event"] == "db_check_skipped"]
    # docs/operations.md's fields: the budget it ran past, and how to run the check offline
    assert skipped == [{"event": "db_check_skipped", "log_level": "warning", "db": str(path), "budget_s": -1.0,
                        "reason": "PRAGMA quick_check did not finish within -1 s",
                        "hint": f"run: sqlite3 {path} 'PRAGMA quick_check' with the engine stopped"}]


def test_the_integrity_checks_deadline_does_not_outlive_the_check(tmp_path):
    """The check's budget is enforced by a SQLite progress handler that interrupts once the
    deadline is past; it is removed when the check ends, so that the store's reads and writes
    after the budget's time are not interrupted ("interrupted" on every larger statement,
    from ten seconds after the start on)."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path)

    async def go():
        st = SqliteStore(path)
        st.check_budget_s = 0.05
        await st.open()
        try:
            await asyncio.sleep(0.1)  # past the deadline (whether the check finished or was abandoned)
            listed = await st.list_matches(limit=1000)
            await st.create_match(record("late", created_at=99.0))
            return len(listed), (await st.load_match("late")).record.match_id
        finally:
            await st.close()

    assert run(go()) == (30, "late")


def test_a_path_that_is_no_regular_file_is_refused_before_anything_is_made_beside_it(tmp_path):
    """A FIFO (or a device: --db /dev/null) was handed to SQLite after the store had made its
    lock file beside it: SQLite answered a bare "disk I/O error" (and made a journal in /dev
    for /dev/null). It is refused by name, and nothing is created next to it."""
    path = tmp_path / "fifo.sqlite3"
    os.mkfifo(path)

    async def go():
        await SqliteStore(path).open()
    with pytest.raises(NotADatabase) as info:
        run(asyncio.wait_for(go(), 30))
    assert str(info.value) == f"{path} is not a regular file, not a SQLite database"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo.sqlite3"]


def test_missing_directory_is_a_clear_error(tmp_path):
    path = tmp_path / "no" / "such" / "dir" / "db.sqlite3"

    async def go():
        await SqliteStore(path).open()
    with pytest.raises(StoreError) as info:
        run(go())
    assert str(info.value) == f"cannot open database {path}: directory {path.parent} does not exist"


def test_a_file_name_longer_than_the_file_system_allows_is_a_store_error_naming_it(tmp_path):
    """A name over NAME_MAX (ENAMETOOLONG from the first look at the path) is refused as the
    store's own StoreError naming the path and why, as a missing directory is (serve and prune
    report a StoreError as a usage error), not a raw OSError; nothing is made beside it."""
    path = tmp_path / ("x" * 300 + ".sqlite3")

    info = _open_refused(path, StoreError, match="File name too long")
    assert str(info.value).startswith(f"cannot open database {path}: ")
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_refused_as_no_database_and_left_alone(tmp_path):
    path = tmp_path / "cards.sqlite3"
    path.mkdir()

    info = _open_refused(path, NotADatabase)
    assert str(info.value) == f"{path} is a directory, not a SQLite database"
    assert [p.name for p in tmp_path.iterdir()] == ["cards.sqlite3"] and list(path.iterdir()) == []


def test_a_sqlite_store_of_no_file_writes_reads_and_makes_none(tmp_path, monkeypatch):
    """``":memory:"`` (a private database) names no file: nothing to lock, create, check for
    a move or measure, and its writes are committed and read back as a file's are; it says
    it holds its data (Store.on_held) once per open, as every store does."""
    monkeypatch.chdir(tmp_path)
    held = []

    async def go():
        st = SqliteStore(":memory:")
        st.on_held = lambda: held.append("held")
        await st.open()
        await st.create_match(record(), [DECK0])
        await st.append_action("m1", ActionRecord(1, 0, "pass", "player", "c1", "", 6.0))
        got, space = await st.load_match("m1"), await st.space()
        await st.close()
        return got, space

    got, space = run(go())
    assert [a.action for a in got.actions] == ["pass"] and got.decks == (DECK0,)
    assert (space.file_bytes, space.wal_bytes) == (0, 0) and space.database_bytes > 0
    assert held == ["held"]
    assert list(tmp_path.iterdir()) == []


def test_a_sqlite_store_of_no_file_exports_no_database_or_volume_gauge(tmp_path, monkeypatch):
    """A store without a file of its own (``":memory:"``) exports none of the database file's
    and its volume's gauges, as the memory store does not (a free space of 0, or the volume of
    the working directory, would fire the CardgamesStoreVolume* alerts for a file there is not)."""
    monkeypatch.chdir(tmp_path)
    metrics = Metrics()

    async def go():
        st = SqliteStore(":memory:", metrics)
        await st.open()
        await st.create_match(record())
        await st.close()
    run(go())
    assert [metrics.registry.get_sample_value(name) for name in (
        "cardgames_store_database_bytes", "cardgames_store_volume_free_bytes",
        "cardgames_store_volume_size_bytes")] == [None, None, None]


def test_closing_a_sqlite_store_waits_for_the_work_queued_before_it(tmp_path):
    """close() returns once the writer thread has done every job queued before the close and
    ended: not while a job asked for during the close is still running on the store's thread
    (the writer outliving the store that owns it)."""
    done = []

    def slow():
        threading.Event().wait(0.3)  # widens the window a close that does not wait would leave
        done.append(True)

    def writers():
        return [t for t in threading.enumerate() if t.name == "sqlite-store"]

    async def go():
        before = writers()  # (a crashed store's of an earlier test)
        st = SqliteStore(tmp_path / "db.sqlite3")
        await st.open()
        closing = asyncio.ensure_future(st.close())
        await asyncio.sleep(0)  # the close's job is queued first
        late = asyncio.ensure_future(st._run(slow))
        await closing
        finished, left = list(done), writers() == before
        await asyncio.gather(late, return_exceptions=True)
        return finished, left

    assert run(go()) == ([True], True)


def test_opening_an_open_sqlite_store_again_changes_nothing(tmp_path):
    """A second open() of the same store is a no-op: not a second writer thread (left
    waiting for ever once the store closes), nor a second Store.on_held."""
    path = tmp_path / "db.sqlite3"
    held = []

    def writers():
        return [t for t in threading.enumerate() if t.name == "sqlite-store"]

    async def go():
        before = writers()
        st = SqliteStore(path)
        st.on_held = lambda: held.append("held")
        await st.open()
        await st.create_match(record())
        await st.open()
        assert len(writers()) == len(before) + 1  # one writer thread, named so in a thread dump
        await st.append_action("m1", ActionRecord(1, 0, "pass"))
        await st.close()
        assert writers() == before
        again = SqliteStore(path)  # the lock was let go: another store (engine) opens it
        await again.open()
        got = await again.load_match("m1")
        await again.close()
        return got

    assert [a.seq for a in run(asyncio.wait_for(go(), 60)).actions] == [1]
    assert held == ["held"]


def test_a_read_that_reaches_the_store_as_it_closes_is_a_store_error(tmp_path):
    """A read queued behind close() finds the connection closed: a StoreError as a write's
    is (the caller sees STORE_UNAVAILABLE), not an AttributeError out of the store."""
    async def go():
        st = SqliteStore(tmp_path / "db.sqlite3")
        await st.open()
        await st.create_match(record())
        closing = asyncio.create_task(st.close())
        await asyncio.sleep(0)  # close() has queued its job
        with pytest.raises(StoreError, match="closed"):
            await st.load_match("m1")
        await closing

    run(asyncio.wait_for(go(), 60))  # (only against a hang)


def test_a_database_of_ours_without_a_schema_version_is_refused_unchanged(tmp_path):
    """The engine's application_id with user_version 0 (a header edited by hand): no
    migration path starts there, so the file is refused, not migrated from nothing."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version=0")
    conn.close()
    info = _open_refused_unchanged(path, NotADatabase)
    assert str(info.value) == f"{path} has no schema version; refusing to use it"


@pytest.mark.parametrize("pages, more", [((3, 4, 5), ""), ((3, 4, 5, 6), " (and 1 more)")])
def test_a_corrupt_database_report_quotes_its_first_problems_and_counts_the_rest(tmp_path, pages, more):
    """quick_check's report can run to thousands of lines: the error quotes the first
    ``CHECK_REPORT_LINES`` (3) problems and says how many more there are, if any."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path)
    for page in pages:  # roots of the matches table's indexes
        overwrite_page(path, page)

    info = _open_refused(path, CorruptDatabase)
    quoted = "; ".join(f"Page {n}: btreeInitPage() returns error code 11" for n in sorted(pages, reverse=True)[:3])
    assert f"(SQLite PRAGMA quick_check: {quoted}{more}); refusing" in str(info.value), str(info.value)


def test_open_store_picks_the_implementation(tmp_path):
    assert isinstance(open_store("memory:"), MemoryStore)
    assert isinstance(open_store(tmp_path / "x.db"), SqliteStore)
    for url in ("postgresql://u@db.example:5432/cards", "postgres://u@db/cards", "PostgreSQL://db/x"):
        store = open_store(url)
        assert isinstance(store, PostgresStore) and store.dsn == url
    assert isinstance(open_store(tmp_path / "postgresql:"), SqliteStore)  # a file name, not a URL


def test_sqlite_group_commit_shares_fsyncs_and_isolates_failures(tmp_path):
    """Concurrent writes of many matches share commits; a failing write in the same batch
    rolls back alone; everything acknowledged is there after a reopen."""
    path = tmp_path / "db.sqlite3"
    metrics = Metrics()

    async def go():
        st = SqliteStore(path, metrics)
        await st.open()
        await asyncio.gather(*(st.create_match(record(f"m{i}", created_at=float(i))) for i in range(40)))
        commits_before = st.commits
        writes = [st.append_action(f"m{i}", ActionRecord(1, 0, "pass")) for i in range(40)]
        writes.append(st.append_action("m0", ActionRecord(1, 1, "take")))  # conflicts with m0 seq 1
        results = await asyncio.gather(*writes, return_exceptions=True)
        commits = st.commits - commits_before
        await st.close()
        st2 = SqliteStore(path)
        await st2.open()
        loaded = [await st2.load_match(f"m{i}") for i in range(40)]
        await st2.close()
        return results, commits, loaded

    results, commits, loaded = run(go())
    assert all(r is None for r in results[:40])
    assert isinstance(results[40], SequenceConflict)
    assert commits < 40  # shared
    assert [[a.action for a in m.actions] for m in loaded] == [["pass"]] * 40
    assert metrics.value("cardgames_store_write_seconds_count", {"operation": "append_action"}) == 40
    assert metrics.value("cardgames_store_errors_total", {"operation": "append_action"}) == 1


def test_sqlite_a_write_failing_outside_sqlite_is_a_store_error_saying_why_and_changes_nothing(tmp_path):
    """A write whose data cannot be encoded (an option no JSON holds) fails in the store's
    own code, not in SQLite: a StoreError with the reason as Python said it (no SQLite error
    code to add), the match not created."""
    async def go():
        st = SqliteStore(tmp_path / "db.sqlite3")
        await st.open()
        with pytest.raises(StoreError) as info:
            await st.create_match(replace(record(), options={"kl_target_score": {300}}))
        got = await st.load_match("m1")
        await st.close()
        return str(info.value), got

    error, got = run(go())
    assert error == "write failed: Object of type set is not JSON serializable"
    assert got is None


def test_sqlite_reads_see_only_committed_writes(tmp_path):
    async def go():
        st = SqliteStore(tmp_path / "db.sqlite3")
        await st.open()
        await st.create_match(record())
        write = asyncio.ensure_future(st.append_action("m1", ActionRecord(1, 0, "pass")))
        read = asyncio.ensure_future(st.load_match("m1"))
        await write
        got = await read
        await st.close()
        return got

    got = run(go())
    assert [a.action for a in got.actions] == ["pass"]


def test_sqlite_a_failed_savepoint_release_fails_that_write_alone(tmp_path):
    """A write whose savepoint cannot be released is refused and rolled back; the writer
    thread lives on and the next writes are acknowledged and durable."""
    path = tmp_path / "db.sqlite3"

    class FailingRelease:
        """The store's connection, but the first ``RELEASE write`` after arming fails."""

        def __init__(self, conn):
            self._conn, self.armed = conn, False

        def execute(self, sql, *args):
            if self.armed and sql == "RELEASE write":
                self.armed = False
                raise sqlite3.OperationalError("disk I/O error")
            return self._conn.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self._conn, name)

    async def go():
        st = SqliteStore(path)
        await st.open()
        await st.create_match(record())
        proxy = FailingRelease(st._conn)
        st._conn = proxy
        proxy.armed = True
        with pytest.raises(StoreError, match="write failed: disk I/O error"):
            await asyncio.wait_for(st.append_action("m1", ActionRecord(1, 0, "pass")), 30)
        # a dead writer thread would leave these waiting forever
        await asyncio.wait_for(st.append_action("m1", ActionRecord(1, 0, "take")), 30)
        await asyncio.wait_for(st.append_action("m1", ActionRecord(2, 1, "pass")), 30)
        st._conn = proxy._conn
        await st.close()
        st2 = SqliteStore(path)
        await st2.open()
        got = await st2.load_match("m1")
        await st2.close()
        return got

    got = run(go())
    assert [(a.seq, a.action) for a in got.actions] == [(1, "take"), (2, "pass")]
