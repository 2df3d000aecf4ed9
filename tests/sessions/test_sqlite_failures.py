"""The session layer over the real SQLite store when SQLite itself fails underneath it
(tests/store/sqlite_faults.py: a full disk, a read-only database). The promises: an
action, a join or a new match that could not be written is refused UNAVAILABLE /
STORE_UNAVAILABLE and changes nothing (the match in memory never runs ahead of the
database); the log says why in SQLite's words; once the database can be written again the
same match goes on from the same seq, and a retry with the same client_action_id (or
client_join_id) is applied once (docs/operations.md, "When the database fails")."""

from __future__ import annotations

import asyncio
import os
import random

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.rules.cards import card_code
from engine_service.rules.registry import get_game
from engine_service.sessions.api import CreateMatchRequest, Principal, SessionError
from engine_service.sessions.manager import MatchManager
from engine_service.store import DatabaseReadOnly

from ..store.sqlite_faults import LimitedSqliteStore, held, until_queued
from .helpers import Stream, config, manager, open_match, run, to_act, until

FULL = "database or disk is full (SQLITE_FULL)"


def refused_unavailable(exc: SessionError) -> None:
    assert (exc.code, exc.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE"), exc


def failures(logs: list[dict]) -> list[tuple[str, str]]:
    """(operation, error) of each ``store_write_failed`` line."""
    return [(e["operation"], e["error"]) for e in logs if e["event"] == "store_write_failed"]


async def agrees_with_the_store(mgr, store, match_id: str) -> int:
    """The match in memory is the match stored (status, seats, decks, log); its seq."""
    m = mgr._matches[match_id]
    stored = await store.load_match(match_id)
    assert stored is not None
    assert stored.record.status == m.status
    assert list(stored.record.seats) == [slot.record() for slot in m.seats]
    assert [d.deal for d in stored.decks] == sorted(m.decks)
    assert [(a.seq, a.seat, a.action, a.client_action_id) for a in stored.actions] == \
        [(a.seq, a.seat, a.action, a.client_action_id) for a in m.actions]
    return m.seq


def test_an_action_refused_by_a_full_disk_is_applied_once_when_room_returns(tmp_path):
    """A match is played on a database that cannot grow (small pages, every one in use)
    until an action's write needs one more page: that action is refused UNAVAILABLE, the
    log line names SQLITE_FULL, cardgames_store_errors_total counts it, and the match stays
    where the database has it (seq, log; its watchers see nothing). Its retry is refused
    again while the disk is full. Once there is room, the retry (the same client_action_id
    and expected_seq) is applied once at the next seq, a second retry is answered with that
    result (duplicate), the watchers see the action once, and the match plays on."""
    metrics = Metrics()
    store = LimitedSqliteStore(tmp_path / "db.sqlite3", metrics, page_size=512)

    async def go():
        async with manager(store=store, metrics=metrics) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            other, others = await open_match(mgr, "klaberjass")
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await store.fill_up()
            refused = None
            with capture_logs() as logs:
                for _ in range(100):
                    seat, p, env = await to_act(mgr, match_id, ps)
                    action, cid = env.view["legal"][0], f"c{env.seq}"
                    try:
                        await mgr.submit_action(match_id, p, action, env.seq, cid)
                    except SessionError as exc:
                        refused = exc
                        break
            assert refused is not None, "the disk never filled up"
            refused_unavailable(refused)
            assert failures(logs) == [("append_action", f"write failed: {FULL}")]
            seq = env.seq
            assert await agrees_with_the_store(mgr, store, match_id) == seq
            with pytest.raises(SessionError) as again:
                await mgr.submit_action(match_id, p, action, seq, cid)
            refused_unavailable(again.value)
            assert await agrees_with_the_store(mgr, store, match_id) == seq
            errors = metrics.value("cardgames_store_errors_total", {"operation": "append_action"})

            await store.make_room()
            first = await mgr.submit_action(match_id, p, action, seq, cid)
            second = await mgr.submit_action(match_id, p, action, seq, cid)
            assert (first.seq, first.duplicate, second.seq, second.duplicate) == (seq + 1, False, seq + 1, True)
            assert await agrees_with_the_store(mgr, store, match_id) == seq + 1
            await until(lambda: len(spectator.actions()) == seq + 1)
            await spectator.close()
            # both matches play on
            for mid, principals in ((match_id, ps), (other, others)):
                seat, p, env = await to_act(mgr, mid, principals)
                await mgr.submit_action(mid, p, env.view["legal"][0], env.seq, f"c{env.seq}")
                await agrees_with_the_store(mgr, store, mid)
            return errors, [e.seq for e in spectator.actions()]

    errors, seen = run(go())
    assert errors == 2
    assert seen == list(range(1, len(seen) + 1))


def test_an_action_committed_with_a_write_that_fills_the_disk_is_refused_not_lost(tmp_path):
    """An action and, in the same group commit, the admin's new match with forty decks known
    in advance, which needs pages the full disk cannot give: SQLite rolls the whole
    transaction back. The action used to be acknowledged all the same (and published), its
    match a seq ahead of the database, which held nothing of it: a restart lost it, and
    until then every next action of the match failed ("seq is not the next one"). Now it is
    refused UNAVAILABLE like the new match, the match stays where the database has it, and
    its retry is applied once."""
    store = LimitedSqliteStore(tmp_path / "db.sqlite3")
    pack = [card_code(c) for c in get_game("klaberjass").pack]
    decks = [random.Random(i).sample(pack, len(pack)) for i in range(40)]

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            seat, p, env = await to_act(mgr, match_id, ps)
            await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, f"c{env.seq}")
            seat, p, env = await to_act(mgr, match_id, ps)
            action, seq, cid = env.view["legal"][0], env.seq, f"c{env.seq}"
            await store.fill_up()
            with capture_logs() as logs:
                async with held(store):
                    submit = asyncio.ensure_future(mgr.submit_action(match_id, p, action, seq, cid))
                    await until_queued(store, 1)
                    create = asyncio.ensure_future(mgr.create_match(
                        CreateMatchRequest(game="klaberjass", decks=decks), admin=True))
                    await until_queued(store, 2)
                results = await asyncio.gather(submit, create, return_exceptions=True)
            matches = mgr.match_ids()
            at = await agrees_with_the_store(mgr, store, match_id)
            await store.make_room()
            retried = await mgr.submit_action(match_id, p, action, seq, cid)
            created = await mgr.create_match(CreateMatchRequest(game="klaberjass", decks=decks), admin=True)
            return results, logs, matches, at, seq, retried, await agrees_with_the_store(mgr, store, match_id), created

    (submitted, created_first), logs, matches, at, seq, retried, after, created = run(go())
    assert isinstance(submitted, SessionError), "acknowledged, but rolled back with the new match"
    refused_unavailable(submitted)
    refused_unavailable(created_first)
    assert sorted(failures(logs)) == [("append_action", f"write rolled back with its transaction: write failed: {FULL}"),
                                      ("create_match", f"write failed: {FULL}")]
    assert len(matches) == 1 and at == seq
    assert (retried.seq, retried.duplicate, after) == (seq + 1, False, seq + 1)
    assert created.status == "waiting"


@pytest.mark.parametrize("game", ["klaberjass", "georgian_joker"])
def test_joins_starts_and_new_matches_refused_by_a_full_disk_change_nothing(tmp_path, game):
    """Tables are created and filled on a database that is full again after every write
    that needed room: each creation, seat and start (the last join) that needs a page is
    refused UNAVAILABLE, and leaves the match (or the list of matches) as the database has
    it: the seat still open, the match waiting; then, with room, its retry (the same
    client_join_id) takes the seat, and the last one starts the match once."""
    store = LimitedSqliteStore(tmp_path / "db.sqlite3", page_size=512)
    refused: dict[str, int] = {}

    async def attempt(mgr, call, check):
        """``call()``; refused by the full disk: ``check()``, room, ``call()`` again, full again."""
        with capture_logs() as logs:
            try:
                return await call()
            except SessionError as exc:
                refused_unavailable(exc)
        (operation, error), = failures(logs)
        assert FULL in error
        refused[operation] = refused.get(operation, 0) + 1
        await check()
        await store.make_room()
        try:
            return await call()
        finally:
            await store.fill_up()

    async def go():
        async with manager(store=store) as mgr:
            await store.fill_up()
            for k in range(6):
                known = sorted(mgr.match_ids())

                async def nothing_created():
                    assert sorted(mgr.match_ids()) == known
                    assert sorted(m.record.match_id for m in await store.list_matches()) == known

                summary = await attempt(mgr, lambda: mgr.create_match(CreateMatchRequest(game=game), admin=True),
                                        nothing_created)
                match_id = summary.match_id
                for seat in range(len(summary.seats)):
                    async def still_open():
                        assert await agrees_with_the_store(mgr, store, match_id) == 0
                        assert mgr._matches[match_id].status == "waiting"
                        assert not mgr._matches[match_id].seats[seat].taken

                    joined = await attempt(mgr, lambda: mgr.join_match(
                        match_id, seat, f"player {seat}", client_join_id=f"join-{k}-{seat}-0123456789abcdef"),
                        still_open)
                    assert joined.seat == seat and not joined.retry
                assert mgr._matches[match_id].status == "active"
                await agrees_with_the_store(mgr, store, match_id)

    run(go())
    assert {"save_seat", "start_match"} <= set(refused), refused


def test_a_read_only_database_refuses_writes_until_it_is_writable_again(tmp_path):
    """The database turns read-only under a running engine (SQLITE_READONLY; here PRAGMA
    query_only on the store's connection: as root a chmod stops nothing, and a running
    engine's files are open already): an action and a new match are refused UNAVAILABLE
    with SQLite's reason in the log, nothing changes, reads go on; writable again, the
    retry is applied once."""
    store = LimitedSqliteStore(tmp_path / "db.sqlite3")

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            seat, p, env = await to_act(mgr, match_id, ps)
            action, cid = env.view["legal"][0], "first"
            await store.read_only()
            with capture_logs() as logs:
                with pytest.raises(SessionError) as action_refused:
                    await mgr.submit_action(match_id, p, action, env.seq, cid)
                with pytest.raises(SessionError) as create_refused:
                    await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            at = await agrees_with_the_store(mgr, store, match_id)
            view = await mgr.get_view(match_id, p)
            await store.read_only(False)
            done = await mgr.submit_action(match_id, p, action, env.seq, cid)
            return action_refused.value, create_refused.value, logs, at, view.seq, done.seq, len(mgr.match_ids())

    action_refused, create_refused, logs, at, read_seq, done_seq, matches = run(go())
    refused_unavailable(action_refused)
    refused_unavailable(create_refused)
    assert sorted(op for op, _ in failures(logs)) == ["append_action", "create_match"]
    assert all("attempt to write a readonly database (SQLITE_READONLY)" in e for _, e in failures(logs))
    assert at == read_seq == 0 and done_seq == 1 and matches == 1


def test_the_engine_does_not_start_on_a_database_it_cannot_write(tmp_path):
    """A database the engine's process cannot write (a file restored as root and left
    root's, a read-only file; here PRAGMA query_only): the start fails with
    DatabaseReadOnly (the service exits 2 with ``store_unavailable`` naming it) instead of
    resuming its matches and answering health SERVING while every write fails."""
    path = tmp_path / "db.sqlite3"

    async def go():
        async with manager(store=LimitedSqliteStore(path)) as mgr:
            await open_match(mgr, "klaberjass")
        mgr = MatchManager(config(), store=LimitedSqliteStore(path, read_only=True), metrics=Metrics(),
                           create_bot_host=False)
        with pytest.raises(DatabaseReadOnly) as refused:
            await mgr.start()
        async with manager(store=LimitedSqliteStore(path)) as again:  # the file was let go of
            return str(refused.value), len((await again.list_matches("", "", 10)))

    error, listed = run(go())
    assert "SQLITE_READONLY" in error and listed == 1


def test_a_database_file_deleted_under_the_engine_is_rescued_and_the_match_goes_on_from_it(tmp_path):
    """The database file is deleted under the running engine (its WAL left beside it). The
    engine used to acknowledge every later action into the deleted file, and the restart
    found an empty database. Now the next action is refused UNAVAILABLE, the match stays
    where the store has it, and ``db_file_moved`` names a rescued copy holding everything
    the engine held. The operator's steps (docs/operations.md): stop the engine, move the
    copy into place, start it: the match resumes at the same seq, and the retry of the
    refused action (same client_action_id) is applied once."""
    path = tmp_path / "db.sqlite3"

    async def go():
        async with manager(store=LimitedSqliteStore(path)) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            for _ in range(3):
                seat, p, env = await to_act(mgr, match_id, ps)
                await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, f"c{env.seq}")
            seat, p, env = await to_act(mgr, match_id, ps)
            action, seq, cid = env.view["legal"][0], env.seq, f"c{env.seq}"
            path.unlink()
            with capture_logs() as logs:
                with pytest.raises(SessionError) as refused:
                    await mgr.submit_action(match_id, p, action, seq, cid)
                with pytest.raises(SessionError) as refused_too:
                    await mgr.submit_action(match_id, p, action, seq, cid)
            rescued, = [e["rescued"] for e in logs if e["event"] == "db_file_moved"]
            rescue = LimitedSqliteStore(rescued, exclusive=False)
            await rescue.open()
            at = await agrees_with_the_store(mgr, rescue, match_id)
            await rescue.close()
        os.replace(rescued, path)
        async with manager(store=LimitedSqliteStore(path)) as mgr:
            resumed = (await mgr.get_match(match_id)).seq
            done = await mgr.submit_action(match_id, p, action, seq, cid)
            again = await mgr.submit_action(match_id, p, action, seq, cid)
            return refused.value, refused_too.value, seq, at, resumed, done, again, failures(logs)

    refused, refused_too, seq, at, resumed, done, again, failed = run(go())
    refused_unavailable(refused)
    refused_unavailable(refused_too)
    assert all("was deleted while the engine had it open" in error for _, error in failed)
    assert at == resumed == seq
    assert (done.seq, done.duplicate, again.seq, again.duplicate) == (seq + 1, False, seq + 1, True)
