"""Retention: ``prune_finished`` and ``count_finished``, run against every store (memory, SQLite
and PostgreSQL, as the contract in test_store.py), plus what only SQLite has (VACUUM)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from engine_service.observability.metrics import Metrics
from engine_service.store import (ActionRecord, DeckRecord, MemoryStore, PruneCounts, SeatRecord,
                                  SqliteStore, StoreError)
from engine_service.store.base import MAX_PRUNE_BATCH
from engine_service.store.postgres import PostgresStore

from .test_store import KINDS, make, record, run  # noqa: F401 (make: a fixture)

TABLES = ("matches", "seats", "decks", "match_actions")


async def _populate(st) -> None:
    """Two matches that ended before t=500 (one finished, one terminated), one that ended
    after, one that ended with no recorded time, and two unfinished ones created long before;
    each with 4 seats (one held, one whose player resigned), 2 decks and 3 actions (the last an
    auto move, without a client action id; counts that differ: one counted for another shows)."""
    for i, (mid, status, ended_at) in enumerate([("old-finished", "finished", 100.0),
                                                  ("old-terminated", "terminated", 150.0),
                                                  ("recent", "finished", 1000.0),
                                                  ("no-end-time", "finished", None),
                                                  ("active", "active", None),
                                                  ("waiting", "waiting", None)]):
        await st.create_match(record(mid, created_at=10.0 + i, seats=4), [DeckRecord(0, ("JS", "7H"))])
        await st.save_seat(mid, SeatRecord(seat=0, player_name="ann", token_hash=f"tok-{mid}", joined_at=11.0))
        # a player who resigned keeps the seat's token hash (a bot plays it: GJ-12.4)
        await st.save_seat(mid, SeatRecord(seat=1, player_name="bob", token_hash=f"left-{mid}", joined_at=11.0,
                                           left=True))
        for seq in range(1, 3):
            await st.append_action(mid, ActionRecord(seq, seq % 2, "pass", "player", f"c{seq}", "", 12.0))
        await st.append_action(mid, ActionRecord(3, 1, "pass", "auto", "", "timeout", 12.0))  # no client id
        await st.append_decks(mid, [DeckRecord(1, ("7H", "JS"))])
        if status != "waiting":
            await st.set_status(mid, status, {"winners": [0]} if ended_at else None, ended_at)


@pytest.mark.parametrize("kind", KINDS)
def test_prune_deletes_ended_matches_with_everything_stored_for_them(kind, make):
    async def go():
        st = make(kind)
        await st.open()
        await _populate(st)
        counted = await st.count_finished(500.0)
        batches = [await st.prune_finished(500.0, limit=1) for _ in range(3)]
        after = await st.count_finished(500.0)
        loaded = {mid: await st.load_match(mid) for mid in
                  ("old-finished", "old-terminated", "recent", "no-end-time", "active", "waiting")}
        listed = [li.record.match_id for li in await st.list_matches()]
        unfinished = await st.unfinished_match_ids()
        # the pruned matches' seat-token hashes are free again (a resigned seat's too), and so
        # are their ids
        await st.save_seat("waiting", SeatRecord(seat=2, token_hash="tok-old-finished"))
        await st.save_seat("waiting", SeatRecord(seat=3, token_hash="left-old-terminated"))
        await st.create_match(record("old-terminated", created_at=99.0))
        await st.close()
        if kind != "memory":  # and it is durable
            st = make(kind)
            await st.open()
            reopened = await st.load_match("old-finished"), await st.count_finished(500.0)
            await st.close()
        else:
            reopened = None, PruneCounts()
        return counted, batches, after, loaded, listed, unfinished, reopened

    counted, batches, after, loaded, listed, unfinished, reopened = run(go())
    # per match: 3 actions, 2 decks, 4 seats
    assert counted == PruneCounts(matches=2, actions=6, decks=4, seats=8)
    assert [len(b.match_ids) for b in batches] == [1, 1, 0]
    assert {b.match_ids[0] for b in batches[:2]} == {"old-finished", "old-terminated"}
    assert [b.counts for b in batches[:2]] == [PruneCounts(1, 3, 2, 4)] * 2
    assert batches[2].counts == PruneCounts()
    assert after == PruneCounts()
    assert loaded["old-finished"] is None and loaded["old-terminated"] is None
    for kept in ("recent", "no-end-time", "active", "waiting"):  # untouched, rows and all
        m = loaded[kept]
        assert (len(m.actions), len(m.decks), m.record.seats[0].token_hash) == (3, 2, f"tok-{kept}"), kept
    assert sorted(listed) == ["active", "no-end-time", "recent", "waiting"]
    assert unfinished == ["active", "waiting"]
    assert reopened == (None, PruneCounts())


@pytest.mark.parametrize("kind", KINDS)
def test_a_prune_or_a_listing_without_a_limit_takes_100_matches(kind, make):
    """``limit`` defaults to 100 matches on every store (Store.prune_finished, list_matches)."""
    async def go():
        st = make(kind)
        await st.open()
        for i in range(101):
            await st.create_match(record(f"f{i:03d}", created_at=float(i), status="finished"))
            await st.set_status(f"f{i:03d}", "finished", {}, 200.0)
        listed = await st.list_matches()
        first, second = await st.prune_finished(1e12), await st.prune_finished(1e12)
        await st.close()
        return len(listed), len(first.match_ids), len(second.match_ids)
    assert run(go()) == (100, 100, 1)


@pytest.mark.parametrize("kind", KINDS)
def test_prune_batches_are_capped_and_nothing_unfinished_is_ever_old_enough(kind, make):
    """A batch is at most ``limit`` matches (and at most MAX_PRUNE_BATCH whatever the caller
    asks); an unfinished match is never pruned, however old it is and whatever the cutoff."""
    async def go():
        st = make(kind)
        await st.open()
        for i in range(7):
            await st.create_match(record(f"f{i}", created_at=float(i)))
            await st.set_status(f"f{i}", "finished", {"winners": []}, 20.0 + i)
        await st.create_match(record("live", created_at=0.5, status="active"))
        sizes = [len((await st.prune_finished(1e12, limit=3)).match_ids) for _ in range(4)]
        zero = await st.prune_finished(1e12, limit=0)
        left = [li.record.match_id for li in await st.list_matches()]
        await st.close()
        return sizes, zero, left
    sizes, zero, left = run(go())
    assert sizes == [3, 3, 1, 0] and zero.match_ids == ()
    assert left == ["live"]
    assert MAX_PRUNE_BATCH <= 500  # SQLite's IN list stays far below its variable limit


@pytest.mark.parametrize("kind", ["memory", "sqlite"])  # PostgreSQL's: test_pg_prune.py
def test_a_prune_deletes_at_most_max_prune_batch_whatever_the_limit_asked(kind, make):
    """Store.prune_finished: at most ``limit``, capped at MAX_PRUNE_BATCH: 501 ended matches
    and a limit of 1,000 delete 500 (the memory store, SQLite's semantics, deleted 501);
    count_finished counts all batches together, all 501."""
    async def go():
        st = make(kind)
        await st.open()
        for i in range(MAX_PRUNE_BATCH + 1):
            await st.create_match(replace(record(f"f{i:03d}", created_at=float(i), status="finished"),
                                          result={}, ended_at=1000.0))
        counted = await st.count_finished(1e12)  # all batches together: not capped
        batch = await st.prune_finished(1e12, 2 * MAX_PRUNE_BATCH)
        left = await st.count_finished(1e12)
        await st.close()
        return counted, batch, left
    counted, batch, left = run(go())
    assert MAX_PRUNE_BATCH == 500  # as this docstring and SessionConfig.prune_batch's say
    assert counted.matches == MAX_PRUNE_BATCH + 1
    assert len(set(batch.match_ids)) == batch.counts.matches == MAX_PRUNE_BATCH and left.matches == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_match_that_ended_at_the_cutoff_is_kept_and_a_limit_of_zero_or_below_prunes_nothing(kind, make):
    """Retention deletes what ended strictly before the cutoff: a match that ended at it is
    neither counted nor pruned; a batch limit of 0 or below deletes nothing (not one match,
    not all but one) while prunable matches are there."""
    async def go():
        st = make(kind)
        await st.open()
        for mid, ended_at in (("at-cutoff", 500.0), ("before-a", 499.5), ("before-b", 10.0)):
            await st.create_match(record(mid, created_at=1.0))
            await st.set_status(mid, "finished", {"winners": [0]}, ended_at)
        counted = await st.count_finished(500.0)
        idle = [(await st.prune_finished(500.0, limit=n)).match_ids for n in (0, -1)]
        pruned = await st.prune_finished(500.0)
        left = [li.record.match_id for li in await st.list_matches()]
        await st.close()
        return counted, idle, pruned, left

    counted, idle, pruned, left = run(go())
    assert counted.matches == 2
    assert idle == [(), ()]
    assert sorted(pruned.match_ids) == ["before-a", "before-b"]
    assert left == ["at-cutoff"]


@pytest.mark.parametrize("kind", KINDS)
def test_an_unfinished_match_with_an_end_time_is_neither_counted_nor_pruned(kind, make):
    """Retention goes by the status, not by the end time alone: a match that is waiting or
    active again with an ``ended_at`` left in its row (set_status writes whatever it is
    given) is no ended match, however long ago that time is."""
    async def go():
        st = make(kind)
        await st.open()
        for mid, status in (("ended", "finished"), ("live", "active"), ("lobby", "waiting")):
            await st.create_match(record(mid, created_at=1.0))
            await st.set_status(mid, status, None, 10.0)
        counted = await st.count_finished(500.0)
        pruned = await st.prune_finished(500.0)
        left = sorted(li.record.match_id for li in await st.list_matches())
        await st.close()
        return counted, pruned, left

    counted, pruned, left = run(go())
    assert counted.matches == 1
    assert pruned.match_ids == ("ended",)
    assert left == ["live", "lobby"]


@pytest.mark.parametrize("kind", KINDS)
def test_pruning_is_counted_as_a_store_error_when_it_fails_but_not_timed(kind, make):
    """A prune batch deletes thousands of rows: its time is not an action's write latency
    (store_write_seconds, which an alert watches); a failure is a store error like any."""
    metrics = Metrics()

    async def go():
        st = make(kind, metrics)
        await st.open()
        await st.create_match(record())
        await st.set_status("m1", "finished", {}, 5.0)
        assert len((await st.prune_finished(10.0)).match_ids) == 1
        await st.close()
        with pytest.raises(StoreError):  # a closed store: the memory store's failure too
            await st.prune_finished(10.0)
    run(go())
    assert metrics.value("cardgames_store_write_seconds_count", {"operation": "prune_finished"}) == 0
    assert metrics.value("cardgames_store_errors_total", {"operation": "prune_finished"}) == 1


def test_sqlite_prune_leaves_no_orphan_rows_and_vacuum_gives_the_space_back(tmp_path):
    path = tmp_path / "db.sqlite3"

    async def go():
        st = SqliteStore(path)
        await st.open()
        for i in range(60):
            mid = f"m{i}"
            await st.create_match(record(mid, created_at=float(i)), [DeckRecord(d, ("JS",) * 32) for d in range(8)])
            for seq in range(1, 101):
                await st.append_action(mid, ActionRecord(seq, seq % 2, "play:JS", "player", f"c{seq}", "", 1.0))
            await st.set_status(mid, "finished", {"winners": [0]}, 100.0 + i)
        full = await st.space()
        while (await st.prune_finished(150.0, limit=500)).match_ids:
            pass
        pruned = await st.space()
        await st.vacuum()
        vacuumed = await st.space()
        await st.close()
        return full, pruned, vacuumed

    full, pruned, vacuumed = run(go())
    # deleting only frees pages inside the file (the engine reuses them); VACUUM returns them
    assert pruned.file_bytes >= full.file_bytes * 0.9 and pruned.free_bytes > full.database_bytes / 3
    assert vacuumed.free_bytes == 0 and vacuumed.wal_bytes == 0
    assert vacuumed.file_bytes < pruned.file_bytes * 0.75
    conn = sqlite3.connect(path)
    ids = {f"m{i}" for i in range(50)}
    for table in TABLES:
        left = {r[0] for r in conn.execute(f"SELECT DISTINCT match_id FROM {table}")}
        assert left == {f"m{i}" for i in range(50, 60)}, table
        assert not left & ids
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_postgres_prune_leaves_no_orphan_rows(pg_database, pg_schema):
    schema, url = pg_schema

    async def go():
        st = PostgresStore(url)
        await st.open()
        await _populate(st)
        while (await st.prune_finished(500.0, limit=1)).match_ids:
            pass
        await st.close()

    run(go())
    for table in TABLES:
        left = {r[0] for r in pg_database.execute(f"SELECT DISTINCT match_id FROM {table}", schema=schema)}
        assert left == {"recent", "no-end-time", "active", "waiting"}, table


def test_memory_store_prune_forgets_the_token_hashes():
    async def go():
        st = MemoryStore()
        await st.open()
        await _populate(st)
        await st.prune_finished(500.0)
        # a hash of a pruned match may be claimed by another match; a kept one may not
        await st.save_seat("active", SeatRecord(seat=1, token_hash="tok-old-terminated"))
        with pytest.raises(StoreError):
            await st.save_seat("active", SeatRecord(seat=1, token_hash="tok-recent"))
    run(go())
