"""The SQLite store's opening, refusals, migration, reads and retention, where the contract of
test_store.py (run over every store) does not reach: which refusal a start gets
(docs/operations.md, Backup and restore, When the database fails, Upgrades; the classes of
engine_service/store/base.py), and the SQLite store's own files (its WAL, its size)."""

from __future__ import annotations

import asyncio
import os
import sqlite3

import pytest
from structlog.testing import capture_logs

from engine_service.store import DatabaseReadOnly, MigrationFailed, NotADatabase, SqliteStore, StoreError
from engine_service.store.sqlite import SCHEMA_VERSION

from .test_migrations import _sqlite_v1
from .test_store import record, sqlite_with_matches


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def _refusal(path, store=SqliteStore, **kw) -> StoreError:
    async def go():
        await store(path, **kw).open()
    with pytest.raises(StoreError) as info:
        run(go())
    return info.value


@pytest.mark.parametrize("where", ["a loop of links", "a missing directory"])
def test_a_path_that_leads_to_no_file_is_a_store_error_not_a_verdict_on_a_file(tmp_path, where):
    """NotADatabase (and its CorruptDatabase, MigrationFailed) says that the path holds a file
    that is no database of this service (base.py): what the operator then restores over or
    deletes. A path that reaches no file at all (a loop of symbolic links, a directory that
    does not exist) says nothing of a file: a plain StoreError."""
    if where == "a loop of links":
        path = tmp_path / "cards.sqlite3"
        path.symlink_to(path.name)
    else:
        path = tmp_path / "no" / "db.sqlite3"
    refused = _refusal(path)
    assert type(refused) is StoreError, refused


def test_a_database_of_ours_without_a_schema_version_is_no_failed_migration(tmp_path):
    """user_version 0 with the engine's application_id: no migration path starts there, and
    none was tried: NotADatabase, not MigrationFailed (which says a migration step was
    refused and points the operator to the upgrade notes, base.py)."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version=0")
    conn.close()
    refused = _refusal(path)
    assert type(refused) is NotADatabase, refused


class _ReadOnlyOnceMigrating(SqliteStore):
    """A store whose database turns read-only once its migration's transaction has begun (a
    filesystem the kernel turns read-only, docs/operations.md, When the database fails;
    PRAGMA query_only here, as in test_sqlite_failures.py): the first statement of the
    migration is refused SQLITE_READONLY."""

    def _migrate(self, conn, version):
        class Turning:
            @property
            def in_transaction(self):
                return conn.in_transaction

            def execute(self, sql, *args):
                cursor = conn.execute(sql, *args)
                if sql == "BEGIN IMMEDIATE":
                    conn.execute("PRAGMA query_only=1")
                return cursor
        super()._migrate(Turning(), version)


def test_a_migration_the_database_refuses_as_read_only_is_database_read_only(tmp_path):
    """A migration whose statement SQLite refuses SQLITE_READONLY stops the start as the
    database that cannot be written (DatabaseReadOnly: give it to the engine's user), not as
    an upgrade that went wrong (MigrationFailed, whose next step is the upgrade notes or the
    backup); the file keeps its schema."""
    path = tmp_path / "db.sqlite3"
    _sqlite_v1(path)
    refused = _refusal(path, _ReadOnlyOnceMigrating)
    assert isinstance(refused, DatabaseReadOnly) and not isinstance(refused, MigrationFailed), refused
    assert "attempt to write a readonly database (SQLITE_READONLY); refusing to serve from it" in str(refused)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    conn.close()


def test_a_store_reopened_through_a_link_pointed_elsewhere_watches_the_new_files_wal(tmp_path):
    """The WAL is looked for beside the file the path names when the store opens (_wal_path):
    a store closed, its symbolic link pointed at another database, and opened again keeps
    the deleted-WAL check (docs/operations.md, When the database fails: db_wal_made_again)
    on that file's WAL, not on the first file's, which is gone with its close."""
    first, second = tmp_path / "first.sqlite3", tmp_path / "second.sqlite3"
    link = tmp_path / "db.sqlite3"
    link.symlink_to(first.name)

    async def go():
        st = SqliteStore(link)
        await st.open()
        await st.create_match(record("m1"))
        await st.close()
        link.unlink()
        link.symlink_to(second.name)
        await st.open()
        await st.create_match(record("m2"))
        os.link(f"{second}-wal", tmp_path / "held")  # its inode number is not reused by the new WAL
        os.remove(f"{second}-wal")
        os.remove(f"{second}-shm")
        with capture_logs() as logs:
            await st.create_match(record("m3"))
        await st.create_match(record("m4"))
        made_again = [e["event"] for e in logs] == ["db_wal_made_again"] and os.path.exists(f"{second}-wal")
        space = await st.space()
        wal = os.stat(f"{second}-wal").st_size
        await st.close()
        return made_again, space.wal_bytes, wal

    made_again, measured, wal = run(go())
    assert made_again
    assert measured == wal > 0


def test_a_schema_one_version_newer_is_refused(tmp_path):
    """A database of the very next schema version (the release after this one, rolled back
    to this one without the backup) is refused as newer, as any later one is
    (docs/operations.md, Upgrades: an engine refuses a database of a newer schema)."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    before = path.read_bytes()
    refused = _refusal(path)
    assert isinstance(refused, NotADatabase) and str(refused) == (
        f"{path} has schema version {SCHEMA_VERSION + 1}, newer than this program's {SCHEMA_VERSION}; "
        "upgrade the program")
    assert path.read_bytes() == before


def test_a_file_without_the_services_tables_opened_not_to_create_is_not_a_database(tmp_path):
    """create=False (the offline prune): an empty file has no tables of this service, and that
    is said of the file, NotADatabase (base.py: the path does not hold a database of this
    service), which it is left without."""
    path = tmp_path / "empty.sqlite3"
    path.write_bytes(b"")
    refused = _refusal(path, create=False)
    assert type(refused) is NotADatabase and str(refused) == f"{path} holds no tables of this service"
    assert path.read_bytes() == b""


def test_a_file_with_only_some_of_the_services_tables_is_no_dump_copy(tmp_path):
    """A .dump copy of ours has the four tables of the schema (_has_our_tables); a file with no
    header of ours holding only some of them (matches and seats: another program's tables
    named alike) is another application's, not called a .dump copy of this service."""
    path = tmp_path / "db.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE matches (match_id TEXT PRIMARY KEY)")
    conn.execute("CREATE TABLE seats (match_id TEXT, seat INTEGER)")
    conn.commit()
    conn.close()
    refused = _refusal(path)
    assert type(refused) is NotADatabase and str(refused) == (
        f"{path} is a SQLite database of another application (application_id 0x0); refusing to use it")


def test_a_store_that_does_not_migrate_leaves_an_older_schema_version_as_it_was(tmp_path):
    """migrate=False (the offline prune's dry run, which changes nothing: docs/operations.md,
    Retention) opens a database of an older schema as it is: the write check at open rolls back
    the schema version it writes, so the file still says its old version and the next engine
    migrates it (a committed check left version 1's tables marked as the current schema's)."""
    path = tmp_path / "db.sqlite3"
    _sqlite_v1(path)

    async def go():
        st = SqliteStore(path, migrate=False)
        await st.open()
        outdated = st.outdated_from
        await st.close()
        return outdated

    assert run(go()) == 1
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    conn.close()


def test_an_integrity_check_longer_than_a_short_budget_is_abandoned(tmp_path):
    """check_budget_s is seconds: a check that takes longer than its budget is abandoned
    (db_check_skipped) and the store opens unchecked; a budget of a tenth of a millisecond is
    less than the check of a few thousand actions takes."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)
    conn = sqlite3.connect(path)
    conn.executemany("INSERT INTO match_actions (match_id, seq, seat, action, by_whom, reason, at) "
                     "VALUES ('m0', ?, 0, 'pass', 'player', '', 6.0)", [(seq,) for seq in range(2, 5000)])
    conn.commit()
    conn.close()

    async def go():
        st = SqliteStore(path)
        st.check_budget_s = 0.0001
        with capture_logs() as logs:
            await st.open()
        await st.close()
        return st.check_s, [e["event"] for e in logs]

    check_s, events = run(go())
    assert check_s is None and "db_check_skipped" in events


@pytest.mark.parametrize("stray", ["a symbolic link to nothing", "a symbolic link to a device"])
def test_a_wal_name_taken_by_something_that_is_no_file_is_named_as_no_regular_file(tmp_path, stray):
    """The name of the database's WAL taken by something that is no regular file and no
    directory (a link left by a bad restore, to nothing or to /dev/null): SQLite cannot open
    it (SQLITE_CANTOPEN), and the refusal names it as what it is, where SQLite makes its own
    file (docs/operations.md, When the database fails; SqliteStore._stray_companion), not as a
    directory and not with no advice; the file is left as it was."""
    path = tmp_path / "db.sqlite3"
    sqlite_with_matches(path, count=1)
    before = path.read_bytes()
    os.symlink(tmp_path / "nowhere" / "wal" if stray == "a symbolic link to nothing" else "/dev/null",
               f"{path}-wal")
    refused = _refusal(path)
    assert not isinstance(refused, NotADatabase), refused
    assert str(refused) == (f"cannot open database {path}: unable to open database file (SQLITE_CANTOPEN); "
                            f"the file was left as it was: {path}-wal is not a regular file, where SQLite makes "
                            "its own file: move it away, then start again")
    assert path.read_bytes() == before


@pytest.mark.parametrize("content", [b"ab", b"SQLite is not this file\n", b"SQLite format 3 notes, not a database\n"])
def test_a_file_that_only_looks_like_the_start_of_a_sqlite_header_is_refused_before_the_lock_file(tmp_path, content):
    """A file that is not SQLite at all is refused before anything is made beside it
    (docs/operations.md, Backup and restore): two bytes (more than the one SQLite reads as an
    empty file), or text that starts as SQLite's 16-byte header does without being it, which
    SQLite refuses (SQLITE_NOTADB), is refused so, and no ``.lock`` file is left beside it."""
    path = tmp_path / "notes.sqlite3"
    path.write_bytes(content)
    refused = _refusal(path)
    assert type(refused) is NotADatabase and str(refused) == f"{path} is not a SQLite database (file is not a database)"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.sqlite3"] and path.read_bytes() == content
