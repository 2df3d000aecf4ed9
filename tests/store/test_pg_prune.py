"""A retention batch on a PostgreSQL server that is slow but works: a batch of many matches
with long logs may take longer than the bound on one call (``call_timeout_s``, 20 s), past
which its connection was severed and the transaction lost: the prune never progressed (each
pass deleted the same rows again and rolled them back) and every batch cost the engine a lost
connection, its writes refused while the lock was checked. Each transaction of a prune is now
bounded well below the call's bound by the server itself (``statement_timeout``), a batch the
server cannot delete in time is split (the server rolls it back, the connection stays), and
the call deletes its ``limit`` matches in as many transactions as it takes."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.store import PruneCounts, StoreError
from engine_service.store.base import MAX_PRUNE_BATCH
from engine_service.store.postgres import PostgresStore

BOUND_S = 2.0  # call_timeout_s here: each statement of a prune gets 1/8 of it, 250 ms
MATCHES, ACTIONS = 120, 2
#: Each action row's delete sleeps this long: 2.4 s for all of them, past the bound, 20 ms for
#: one match, so that one match stays far within a statement's share on a loaded machine (with
#: 20 rows of 1 ms a match, the wake-ups of a loaded server made it overrun 125 ms).
ROW_S = 0.01


def _insert_finished(conn: psycopg.Connection, prefix: str, count: int) -> None:
    """``count`` Klaberjass matches ``prefix1``.. ended at Unix time 2.0, with no seats or actions."""
    conn.execute(
        "INSERT INTO matches (match_id, game, options, first_dealer, turn_time_s, reconnect_grace_s, "
        "spectators_allowed, name, takeover_bot, created_at, status, ended_at) "
        "SELECT %s || i, 'klaberjass', '{}', 0, 10, 30, false, 'x', '', 1.0, 'finished', 2.0 "
        "FROM generate_series(1, %s) i", (prefix, count))


def _fill(url: str) -> None:
    """MATCHES ended matches of ACTIONS actions each, and a slow delete of actions."""
    with psycopg.connect(url, autocommit=True) as conn:
        _insert_finished(conn, 'p', MATCHES)
        conn.execute(
            "INSERT INTO seats (match_id, seat, kind, bot, player_name, left_match) "
            "SELECT 'p' || i, s, 'open', '', 'x', false FROM generate_series(1, %s) i, generate_series(0, 1) s",
            (MATCHES,))
        conn.execute(
            "INSERT INTO match_actions (match_id, seq, seat, action, by_whom, reason, at) "
            "SELECT 'p' || i, s, 0, 'pass', 'player', '', 3.0 "
            "FROM generate_series(1, %s) i, generate_series(1, %s) s", (MATCHES, ACTIONS))
        conn.execute("CREATE FUNCTION slow_delete() RETURNS trigger LANGUAGE plpgsql AS "
                     f"$$BEGIN PERFORM pg_sleep({ROW_S}); RETURN OLD; END$$")
        conn.execute("CREATE TRIGGER slow_delete BEFORE DELETE ON match_actions FOR EACH ROW "
                     "EXECUTE FUNCTION slow_delete()")


def test_a_batch_longer_than_the_bound_on_a_slow_server_is_split_not_cut_off(pg_url):
    """MATCHES ended matches whose deletion takes longer than the bound in one transaction: one
    prune call with that limit deletes them all, in transactions that each end well within the
    bound, on the same healthy connections (none severed, the lock never doubted, no store
    error counted), and reports every match and row deleted."""
    async def go():
        metrics = Metrics()
        st = PostgresStore(pg_url, metrics, call_timeout_s=BOUND_S, ownership_check_s=0.5)
        await st.open()
        try:
            _fill(pg_url)
            before = await st.count_finished(10.0)
            owner = st._owner
            assert owner is not None
            with capture_logs() as logs:
                async with asyncio.timeout(10 * MATCHES * ACTIONS * ROW_S):  # against a hang only
                    batch = await st.prune_finished(10.0, MATCHES)
                assert owner.held
            after = await st.count_finished(10.0)
            errors = metrics.registry.get_sample_value("cardgames_store_errors_total",
                                                       {"operation": "prune_finished"})
            return before, batch, after, logs, st._pool.get_stats(), errors  # type: ignore[union-attr]
        finally:
            await st.close()

    before, batch, after, logs, stats, errors = asyncio.run(go())
    assert before == PruneCounts(MATCHES, MATCHES * ACTIONS, 0, 2 * MATCHES)
    assert len(set(batch.match_ids)) == MATCHES and batch.counts == before
    assert after == PruneCounts()
    # no transaction ran into the bound: none cut off (its connection severed, the lock put
    # in doubt, a commit resolved), whatever the machine's pace
    events = [e["event"] for e in logs]
    assert "db_ownership_connection_lost" not in events and "store_commit_resolved" not in events, events
    assert stats.get("connections_lost", 0) == 0, stats
    assert "store_prune_split" in events, events  # the server's pace learnt, not the bound hit
    splits = [(e["matches"], e["now"]) for e in logs if e["event"] == "store_prune_split"]
    assert all(now == size // 2 for size, now in splits), splits  # halved, each time
    assert not errors, errors


def test_a_batch_size_learnt_smaller_doubles_again_while_batches_are_done_quickly(pg_url):
    """After a split the store prunes in smaller transactions (``prune_size``); each batch of
    that size done in well under its share of the bound doubles it again, up to
    MAX_PRUNE_BATCH, so that one slow moment does not leave retention slow for good. The bound
    here is far above what a batch takes (a guard, not a timing): 25, 50, then 100 asked for
    (45 left), and the next call starts at 200."""
    async def go():
        st = PostgresStore(pg_url, call_timeout_s=600.0)
        await st.open()
        try:
            with psycopg.connect(pg_url, autocommit=True) as conn:
                _insert_finished(conn, 'q', MATCHES)
            small = await st.prune_finished(10.0, 10)  # a batch below the size: no lesson
            unchanged = st.prune_size
            st.prune_size = 25  # as learnt from a slow server
            batch = await st.prune_finished(10.0, 500)
            return small, unchanged, batch, st.prune_size, await st.count_finished(10.0)
        finally:
            await st.close()

    small, unchanged, batch, size, left = asyncio.run(go())
    assert len(small.match_ids) == 10 and unchanged == MAX_PRUNE_BATCH
    assert len(set(batch.match_ids)) == MATCHES - 10 and left == PruneCounts()
    assert size == 200


def test_a_match_that_cannot_be_deleted_in_time_even_alone_fails_the_prune_counted(pg_url):
    """A batch split down to one match that the server still cannot delete within a
    statement's share is a StoreError (counted in cardgames_store_errors_total), nothing
    deleted, after the halvings: not a split to nothing repeated for ever."""
    async def go():
        metrics = Metrics()
        st = PostgresStore(pg_url, metrics, call_timeout_s=BOUND_S)
        await st.open()
        try:
            _fill(pg_url)
            with psycopg.connect(pg_url, autocommit=True) as conn:  # a match's delete: 2 x 250 ms
                conn.execute("DROP TRIGGER slow_delete ON match_actions")
                conn.execute("CREATE OR REPLACE FUNCTION slow_delete() RETURNS trigger LANGUAGE plpgsql AS "
                             "$$BEGIN PERFORM pg_sleep(0.25); RETURN OLD; END$$")
                conn.execute("CREATE TRIGGER slow_delete BEFORE DELETE ON match_actions FOR EACH ROW "
                             "EXECUTE FUNCTION slow_delete()")
            with capture_logs() as logs:
                async with asyncio.timeout(60):  # against a hang only
                    with pytest.raises(StoreError, match="could not be deleted within") as failed:
                        await st.prune_finished(10.0, 4)
            left = await st.count_finished(10.0)
            errors = metrics.registry.get_sample_value("cardgames_store_errors_total",
                                                       {"operation": "prune_finished"})
            return failed.value, logs, left, errors
        finally:
            await st.close()

    failed, logs, left, errors = asyncio.run(go())
    assert [(e["matches"], e["now"]) for e in logs if e["event"] == "store_prune_split"] == [(4, 2), (2, 1)]
    assert left.matches == MATCHES and errors == 1


def test_a_batch_failing_after_others_were_deleted_ends_the_prune_with_those(pg_url):
    """A retention call deletes in several transactions; one failing (here a trigger refusing
    the second; in life a lost connection) after some committed ends the call with what was
    deleted (the caller forgets those matches), the failure counted and logged
    (store_prune_stopped), not raised: the committed deletions are not reported as undone."""
    async def go():
        metrics = Metrics()
        st = PostgresStore(pg_url, metrics)
        await st.open()
        try:
            with psycopg.connect(pg_url, autocommit=True) as conn:
                _insert_finished(conn, 'r', 3)
                conn.execute("CREATE SEQUENCE deletes")  # not rolled back: counts the attempts
                conn.execute("CREATE FUNCTION refuse_second() RETURNS trigger LANGUAGE plpgsql AS "
                             "$$BEGIN IF nextval('deletes') > 1 THEN RAISE EXCEPTION 'refused'; END IF; "
                             "RETURN OLD; END$$")
                conn.execute("CREATE TRIGGER refuse_second BEFORE DELETE ON matches FOR EACH ROW "
                             "EXECUTE FUNCTION refuse_second()")
            st.prune_size = 1
            with capture_logs() as logs:
                batch = await st.prune_finished(10.0, 3)
            left = await st.count_finished(10.0)
            errors = metrics.registry.get_sample_value("cardgames_store_errors_total",
                                                       {"operation": "prune_finished"})
            return batch, left, errors, logs
        finally:
            await st.close()

    batch, left, errors, logs = asyncio.run(go())
    assert len(batch.match_ids) == 1 and batch.counts.matches == 1 and left.matches == 2
    assert errors == 1
    stopped = [e for e in logs if e["event"] == "store_prune_stopped"]
    assert len(stopped) == 1 and stopped[0]["deleted"] == 1 and "refused" in stopped[0]["error"]


def test_a_prune_deletes_at_most_max_prune_batch_whatever_the_limit_asked(pg_url):
    """A limit above MAX_PRUNE_BATCH is capped (one call stays one bounded batch of work),
    whatever the transactions it takes: 501 ended matches, a limit of 1,000: 500 deleted."""
    async def go():
        st = PostgresStore(pg_url, call_timeout_s=600.0)
        await st.open()
        try:
            with psycopg.connect(pg_url, autocommit=True) as conn:
                _insert_finished(conn, 'c', MAX_PRUNE_BATCH + 1)
            st.prune_size = 100
            batch = await st.prune_finished(10.0, 2 * MAX_PRUNE_BATCH)
            return batch, await st.count_finished(10.0)
        finally:
            await st.close()

    batch, left = asyncio.run(go())
    assert len(set(batch.match_ids)) == MAX_PRUNE_BATCH and left.matches == 1
