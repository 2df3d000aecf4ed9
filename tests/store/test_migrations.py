"""Upgrades: a database made by the first release (schema 1), the lobby's (schema 2: the decks
have no salt yet), fair dealing's (schema 3: decks committed as a whole), per-card fair
dealing's (schema 4: no spectator delay yet) or the spectator delay's (schema 5: no join
retries yet) or the retried joins' (schema 6: no idempotent creation yet) is migrated in place when the current store opens it, all steps in one
transaction, keeping every match and every deck's commitment scheme (the matches of before
schema 5 keep spectators 0 actions behind, the seats of before schema 6 have no client join id
to retry with, the matches of before schema 7 no client create id, the seats of before schema 8
no stored absence); the migration runs only in the engine that owns the database; a newer schema is
refused (test_store.py, test_postgres.py)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace

import pytest

from engine_service.store import MigrationFailed, NotADatabase, StoreInUse
from engine_service.store import sqlite as sqlite_store
from engine_service.store.pg_ownership import OWNER_LOCK_CLASS
from engine_service.store.postgres import SCHEMA_VERSION as PG_VERSION, PostgresStore
from engine_service.store.sqlite import APPLICATION_ID, SCHEMA_VERSION, SqliteStore

from .pg import connect, url_with
from engine_service.store import DeckRecord, SeatRecord
from engine_service.store.base import SCHEME_WHOLE_DECK, new_salt

from .test_store import record, run
from .v1_schema import POSTGRES_V1, SQLITE_V1
from .v2_schema import POSTGRES_V2, SQLITE_V2
from .v3_schema import POSTGRES_V3, SQLITE_V3
from .v4_schema import POSTGRES_V4, SQLITE_V4
from .v5_schema import POSTGRES_V5, SQLITE_V5
from .v6_schema import POSTGRES_V6, SQLITE_V6
from .v7_schema import POSTGRES_V7, SQLITE_V7


#: A deck recorded by the current release: its salt must be kept after a migration.
SALTED = DeckRecord(0, ("AD", "JS", "7H"), new_salt())


def _sqlite_v1(path) -> None:
    """A database as the first release left it: one waiting match with a deck and an action."""
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_V1)
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA user_version=1")
    conn.execute("INSERT INTO matches VALUES ('old', 'klaberjass', '{}', 1, 30.0, 60.0, 1, 'old table', '', "
                 "1.0, 'active', NULL, NULL)")
    for seat in (0, 1):
        conn.execute("INSERT INTO seats VALUES ('old', ?, 'open', '', ?, ?, 2.0, 0)",
                     (seat, f"p{seat}", f"hash{seat}"))
    conn.execute("INSERT INTO decks VALUES ('old', 0, ?)", (json.dumps(["JS", "7H"]),))
    conn.execute("INSERT INTO match_actions VALUES ('old', 1, 0, 'pass', 'player', 'c1', '', 3.0)")
    conn.commit()
    conn.close()


def _sqlite_v2(path) -> None:
    """A database as the lobby's release (schema 2) left it: a listed match with two decks
    (without salts: commitments came with schema 3) and an action."""
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_V2)
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA user_version=2")
    conn.execute("INSERT INTO matches VALUES ('old', 'klaberjass', '{}', 1, 30.0, 60.0, 1, 'old table', '', "
                 "1.0, 'active', NULL, NULL, 1)")
    for seat in (0, 1):
        conn.execute("INSERT INTO seats VALUES ('old', ?, 'open', '', ?, ?, 2.0, 0)",
                     (seat, f"p{seat}", f"hash{seat}"))
    conn.execute("INSERT INTO decks VALUES ('old', 0, ?)", (json.dumps(["JS", "7H"]),))
    conn.execute("INSERT INTO decks VALUES ('old', 1, ?)", (json.dumps(["7H", "JS"]),))
    conn.execute("INSERT INTO match_actions VALUES ('old', 1, 0, 'pass', 'player', 'c1', '', 3.0)")
    conn.commit()
    conn.close()


def _columns(path, table: str = "matches") -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()


def _user_version(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def test_a_sqlite_database_of_schema_1_is_migrated_keeping_its_matches(tmp_path):
    path = tmp_path / "old.sqlite3"
    _sqlite_v1(path)

    async def go():
        st = SqliteStore(path)
        await st.open()
        migrated_from = st.migrated_from
        old = await st.load_match("old")
        await st.create_match(replace(record("new"), listed=True), [SALTED])
        new = await st.load_match("new")
        await st.close()
        again = SqliteStore(path)
        await again.open()
        await again.close()
        return migrated_from, old, new, again.migrated_from

    migrated_from, old, new, second = run(go())
    assert (migrated_from, second) == (1, None)
    assert _user_version(path) == SCHEMA_VERSION == 8
    assert {"listed", "deal_commitments", "spectator_delay_actions"} <= set(_columns(path))
    assert "join_hash" in _columns(path, "seats")
    assert {"salt", "scheme"} <= set(_columns(path, "decks"))
    assert old.record.name == "old table" and old.record.listed is False and old.record.status == "active"
    assert old.record.spectator_delay_actions == 0
    assert [a.action for a in old.actions] == ["pass"] and old.decks[0].cards == ("JS", "7H")
    assert old.decks[0].salt == ""  # a deck of before schema 3: no commitment
    assert [s.token_hash for s in old.record.seats] == ["hash0", "hash1"]
    assert [s.join_hash for s in old.record.seats] == ["", ""]
    assert new.record.listed is True and new.decks == (SALTED,)


def test_a_sqlite_database_of_schema_2_is_migrated_keeping_its_matches(tmp_path):
    path = tmp_path / "old.sqlite3"
    _sqlite_v2(path)

    async def go():
        st = SqliteStore(path)
        await st.open()
        migrated_from = st.migrated_from
        old = await st.load_match("old")
        await st.append_decks("old", [replace(SALTED, deal=2)])
        after = await st.load_match("old")
        await st.close()
        return migrated_from, old, after

    migrated_from, old, after = run(go())
    assert migrated_from == 2
    assert _user_version(path) == 8 and {"salt", "scheme"} <= set(_columns(path, "decks"))
    assert old.record.name == "old table" and old.record.listed is True and old.record.status == "active"
    assert [a.action for a in old.actions] == ["pass"]
    assert old.decks == (DeckRecord(0, ("JS", "7H"), "", SCHEME_WHOLE_DECK),
                         DeckRecord(1, ("7H", "JS"), "", SCHEME_WHOLE_DECK))
    assert after.decks[2] == replace(SALTED, deal=2)


@pytest.mark.parametrize("version", [1, 2])
def test_a_failing_sqlite_migration_leaves_the_file_as_it_was(tmp_path, monkeypatch, version):
    """The step after ``version`` fails: the file keeps its version and columns."""
    path = tmp_path / "old.sqlite3"
    (_sqlite_v1 if version == 1 else _sqlite_v2)(path)
    step = version + 1
    monkeypatch.setitem(sqlite_store.MIGRATIONS, step,
                        (*sqlite_store.MIGRATIONS[step], "UPDATE no_such_table SET x = 1"))

    async def go():
        await SqliteStore(path).open()
    with pytest.raises(MigrationFailed) as info:
        run(go())
    assert isinstance(info.value, NotADatabase)
    assert str(info.value).startswith(
        f"{path}: migrating the database from schema version {version} to {SCHEMA_VERSION} "
        f"failed at step {step} (no such table: no_such_table (SQLITE_ERROR))"), str(info.value)
    assert _user_version(path) == version
    assert ("listed" in _columns(path)) == (version == 2)
    assert "salt" not in _columns(path, "decks")


def test_a_migration_that_cannot_apply_says_the_migration_failed(tmp_path):
    """A file whose recorded version is behind its tables (here schema 2 with schema 3's
    decks.salt already there: a hand-made fix, a backup restored over a half-done upgrade)
    used to be refused as "... is not a usable SQLite database (duplicate column name: salt)",
    which sends the operator after the wrong problem. The error says the migration failed, from
    which version to which, and that the file is unchanged."""
    path = tmp_path / "old.sqlite3"
    _sqlite_v2(path)
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE decks ADD COLUMN salt TEXT NOT NULL DEFAULT ''")
    conn.commit()
    conn.close()

    async def go():
        await SqliteStore(path).open()
    with pytest.raises(MigrationFailed) as info:
        run(go())
    assert str(info.value) == (
        f"{path}: migrating the database from schema version 2 to {SCHEMA_VERSION} failed at "
        "step 3 (duplicate column name: salt (SQLITE_ERROR)); the file was left as it was (schema version 2)")
    assert _user_version(path) == 2 and "scheme" not in _columns(path, "decks")


def test_a_migration_is_logged_once_with_both_versions_and_the_file(tmp_path):
    """Operators see when (and from which version) a database changed schema: rolling back
    across it means restoring the backup taken before (docs/operations.md, Upgrades)."""
    from structlog.testing import capture_logs

    path = tmp_path / "old.sqlite3"
    _sqlite_v1(path)

    async def open_twice():
        for _ in range(2):
            st = SqliteStore(path)
            await st.open()
            await st.close()
    with capture_logs() as logs:
        run(open_twice())
    migrated = [e for e in logs if e["event"] == "db_migrated"]
    assert migrated == [{"event": "db_migrated", "log_level": "info", "db": str(path),
                         "from_version": 1, "to_version": SCHEMA_VERSION}]


# ---- PostgreSQL ----------------------------------------------------------------------------

def _postgres_schema(pg_database, schema: str, statements, version: int, match_row: str) -> None:
    """A PostgreSQL schema of an earlier version, its meta rows and one match ``'old'``."""
    for statement in statements:
        pg_database.execute(statement, schema=schema)
    pg_database.execute("INSERT INTO engine_meta VALUES ('application', 'cardgames-engine'), "
                        f"('schema_version', '{version}')", schema=schema)
    pg_database.execute(f"INSERT INTO matches VALUES ({match_row})", schema=schema)


def _postgres_v1(pg_database, schema: str) -> None:
    _postgres_schema(pg_database, schema, POSTGRES_V1, 1, "'old', 'klaberjass', '{}', 1, 30.0, 60.0, true, "
                     "'old table', '', 1.0, 'waiting', NULL, NULL")
    pg_database.execute("INSERT INTO seats VALUES ('old', 0, 'open', '', '', NULL, NULL, false)", schema=schema)


def _postgres_v2(pg_database, schema: str) -> None:
    _postgres_schema(pg_database, schema, POSTGRES_V2, 2, "'old', 'klaberjass', '{}', 1, 30.0, 60.0, true, "
                     "'old table', '', 1.0, 'active', NULL, NULL, true")
    pg_database.execute("INSERT INTO seats VALUES ('old', 0, 'open', '', '', NULL, NULL, false)", schema=schema)
    pg_database.execute("INSERT INTO decks VALUES ('old', 0, ARRAY['JS', '7H'])", schema=schema)


#: A deck as fair dealing's first release (schema 3) recorded it: salted, committed as a whole.
WHOLE = DeckRecord(0, ("JS", "7H"), "00112233445566778899aabbccddeeff", SCHEME_WHOLE_DECK)


def _sqlite_v3(path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_V3)
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA user_version=3")
    conn.execute("INSERT INTO matches VALUES ('old', 'klaberjass', '{}', 1, 30.0, 60.0, 1, 'old table', '', "
                 "1.0, 'active', NULL, NULL, 0)")
    conn.execute("INSERT INTO decks VALUES ('old', 0, ?, ?)", (json.dumps(list(WHOLE.cards)), WHOLE.salt))
    conn.commit()
    conn.close()


def _postgres_v3(pg_database, schema: str) -> None:
    _postgres_schema(pg_database, schema, POSTGRES_V3, 3, "'old', 'klaberjass', '{}', 1, 30.0, 60.0, true, "
                     "'old table', '', 1.0, 'active', NULL, NULL, false")
    pg_database.execute("INSERT INTO decks VALUES ('old', 0, ARRAY['JS', '7H'], %s)", (WHOLE.salt,),
                        schema=schema)


def _meta_version(pg_database, schema: str) -> str:
    return pg_database.execute("SELECT value FROM engine_meta WHERE key = 'schema_version'", schema=schema)[0][0]


def _has_listed(pg_database, schema: str) -> bool:
    return _has_column(pg_database, schema, "matches", "listed")


def _has_column(pg_database, schema: str, table: str, column: str) -> bool:
    return bool(pg_database.execute(
        "SELECT 1 FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
        "AND column_name = %s", (schema, table, column)))


def test_a_postgres_schema_of_version_1_is_migrated_keeping_its_matches(pg_database, pg_schema):
    schema, url = pg_schema
    _postgres_v1(pg_database, schema)

    async def go():
        st = PostgresStore(url)
        await st.open()
        try:
            old = await st.load_match("old")
            waiting = await st.list_matches(["waiting"])
            return st.migrated_from, old, waiting
        finally:
            await st.close()

    from structlog.testing import capture_logs

    with capture_logs() as logs:
        migrated_from, old, waiting = run(go())
    assert [(e["from_version"], e["to_version"]) for e in logs if e["event"] == "db_migrated"] == [(1, PG_VERSION)]
    assert migrated_from == 1 and _meta_version(pg_database, schema) == str(PG_VERSION) == "8"
    assert _has_listed(pg_database, schema) and _has_column(pg_database, schema, "decks", "salt")
    assert old.record.name == "old table" and old.record.listed is False
    assert [li.record.match_id for li in waiting] == ["old"]


async def _migrate_and_append(url: str):
    """Open (migrating) a PostgreSQL schema of an older version, read its match, append a deck
    of this release: (migrated_from, the match as read, the match after the append)."""
    st = PostgresStore(url)
    await st.open()
    try:
        old = await st.load_match("old")
        await st.append_decks("old", [replace(SALTED, deal=1)])
        return st.migrated_from, old, await st.load_match("old")
    finally:
        await st.close()


def test_a_postgres_schema_of_version_2_is_migrated_keeping_its_decks(pg_database, pg_schema):
    schema, url = pg_schema
    _postgres_v2(pg_database, schema)

    migrated_from, old, after = run(_migrate_and_append(url))
    assert migrated_from == 2 and _meta_version(pg_database, schema) == "8"
    assert _has_column(pg_database, schema, "decks", "salt") and _has_column(pg_database, schema, "decks", "scheme")
    assert old.record.name == "old table" and old.record.listed is True and old.record.status == "active"
    assert old.decks == (DeckRecord(0, ("JS", "7H"), "", SCHEME_WHOLE_DECK),)  # no salt: no commitment
    assert after.decks[1] == replace(SALTED, deal=1)


def test_a_failing_postgres_migration_says_so_and_leaves_the_schema_as_it_was(pg_database, pg_schema):
    """As on SQLite: a step the server refuses (schema 2 whose decks already have a salt)
    rolls the whole migration back and the error says that the migration failed."""
    schema, url = pg_schema
    _postgres_v2(pg_database, schema)
    pg_database.execute("ALTER TABLE decks ADD COLUMN salt TEXT NOT NULL DEFAULT ''", schema=schema)

    async def go():
        await PostgresStore(url).open()
    with pytest.raises(MigrationFailed, match=rf"migrating from schema version 2 to {PG_VERSION} failed at step 3 "
                                                r"\(.*salt.*\); it was left as it was \(schema version 2\)"):
        run(go())
    assert _meta_version(pg_database, schema) == "2"
    assert not _has_column(pg_database, schema, "decks", "scheme")


def test_only_the_owner_migrates(pg_database, pg_schema):
    """An engine that waits for the lock touches nothing: a running older engine keeps its
    schema until it has stopped."""
    schema, url = pg_schema
    _postgres_v1(pg_database, schema)
    holder = connect(url_with(pg_database.url, schema=schema))  # the running engine's lock
    try:
        holder.execute("SELECT pg_advisory_lock(%s, hashtext(current_schema()))", (OWNER_LOCK_CLASS,))

        async def go():
            await PostgresStore(url).open()
        with pytest.raises(StoreInUse):
            run(go())
        assert _meta_version(pg_database, schema) == "1" and not _has_listed(pg_database, schema)
    finally:
        holder.close()


def test_a_sqlite_database_of_schema_3_keeps_its_decks_committed_as_a_whole(tmp_path):
    """Schema 4 records each deck's commitment scheme: the decks of schema 3 stay scheme 1 (the
    commitments already published must not change), new decks are committed card by card."""
    path = tmp_path / "old.sqlite3"
    _sqlite_v3(path)

    async def go():
        st = SqliteStore(path)
        await st.open()
        old = await st.load_match("old")
        await st.append_decks("old", [replace(SALTED, deal=1)])
        after = await st.load_match("old")
        await st.close()
        return st.migrated_from, old, after

    migrated_from, old, after = run(go())
    assert migrated_from == 3 and _user_version(path) == 8 and "scheme" in _columns(path, "decks")
    assert old.decks == (WHOLE,)
    assert after.decks == (WHOLE, replace(SALTED, deal=1)) and after.decks[1].scheme == 2


def test_a_postgres_schema_of_version_3_keeps_its_decks_committed_as_a_whole(pg_database, pg_schema):
    schema, url = pg_schema
    _postgres_v3(pg_database, schema)

    migrated_from, old, after = run(_migrate_and_append(url))
    assert migrated_from == 3 and _meta_version(pg_database, schema) == "8"
    assert _has_column(pg_database, schema, "matches", "deal_commitments")
    assert old.decks == (WHOLE,)
    assert after.decks == (WHOLE, replace(SALTED, deal=1)) and after.decks[1].scheme == 2


# ---- schema 4 -> 5: the spectator delay -----------------------------------------------------

#: The deals' commitments recorded with the result of a match that ended under schema 4.
COMMITMENTS = ("aa" * 32, "bb" * 32)


def _sqlite_v4(path) -> None:
    """A database as per-card fair dealing's release (schema 4) left it: a finished match with
    its commitments, and an active listed one with seats, a deck committed card by card and an
    action."""
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_V4)
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA user_version=4")
    conn.execute("INSERT INTO matches VALUES ('ended', 'klaberjass', '{}', 0, 30.0, 60.0, 1, 'ended table', '', "
                 "1.0, 'finished', '{\"winners\":[0]}', 4.0, 0, ?)", (json.dumps(list(COMMITMENTS)),))
    conn.execute("INSERT INTO matches VALUES ('old', 'klaberjass', '{}', 1, 30.0, 60.0, 1, 'old table', '', "
                 "2.0, 'active', NULL, NULL, 1, NULL)")
    for seat in (0, 1):
        conn.execute("INSERT INTO seats VALUES ('old', ?, 'open', '', ?, ?, 2.0, 0)",
                     (seat, f"p{seat}", f"hash{seat}"))
    conn.execute("INSERT INTO decks VALUES ('old', 0, ?, ?, 2)", (json.dumps(list(SALTED.cards)), SALTED.salt))
    conn.execute("INSERT INTO match_actions VALUES ('old', 1, 0, 'pass', 'player', 'c1', '', 3.0)")
    conn.commit()
    conn.close()


def _postgres_v4(pg_database, schema: str) -> None:
    _postgres_schema(pg_database, schema, POSTGRES_V4, 4, "'old', 'klaberjass', '{}', 1, 30.0, 60.0, true, "
                     "'old table', '', 2.0, 'active', NULL, NULL, true, NULL")
    pg_database.execute("INSERT INTO matches VALUES ('ended', 'klaberjass', '{}', 0, 30.0, 60.0, true, "
                        "'ended table', '', 1.0, 'finished', '{\"winners\": [0]}', 4.0, false, %s)",
                        (list(COMMITMENTS),), schema=schema)
    for seat in (0, 1):
        pg_database.execute("INSERT INTO seats VALUES ('old', %s, 'open', '', %s, %s, 2.0, false)",
                            (seat, f"p{seat}", f"hash{seat}"), schema=schema)
    pg_database.execute("INSERT INTO decks VALUES ('old', 0, %s, %s, 2)", (list(SALTED.cards), SALTED.salt),
                        schema=schema)
    pg_database.execute("INSERT INTO match_actions VALUES ('old', 1, 0, 'pass', 'player', 'c1', '', 3.0)",
                        schema=schema)


async def _migrate_v4(st):
    """Open (migrating) a store of schema 4, read its matches, then create a match delayed by
    7 actions: (migrated_from, the old matches as loaded, the new one as loaded, the listing)."""
    await st.open()
    try:
        old = {m: await st.load_match(m) for m in ("ended", "old")}
        await st.create_match(replace(record("new", created_at=3.0), spectator_delay_actions=7), [SALTED])
        return st.migrated_from, old, await st.load_match("new"), await st.list_matches()
    finally:
        await st.close()


def _check_v4_migrated(old, new, listing) -> None:
    ended, active = old["ended"].record, old["old"].record
    assert ended.status == "finished" and dict(ended.result) == {"winners": [0]} and ended.ended_at == 4.0
    assert ended.deal_commitments == COMMITMENTS and ended.listed is False
    assert active.name == "old table" and active.listed is True and active.status == "active"
    assert [s.token_hash for s in active.seats] == ["hash0", "hash1"]
    assert old["old"].decks == (SALTED,) and [a.action for a in old["old"].actions] == ["pass"]
    assert ended.spectator_delay_actions == active.spectator_delay_actions == 0  # the column's default
    assert new.record == replace(record("new", created_at=3.0), spectator_delay_actions=7)
    assert new.decks == (SALTED,)
    assert [(li.record.match_id, li.record.spectator_delay_actions, li.seq) for li in listing] == [
        ("new", 7, 0), ("old", 0, 1), ("ended", 0, 0)]
    assert listing[0].record == new.record


def test_a_sqlite_database_of_schema_4_is_migrated_keeping_its_matches(tmp_path):
    """Schema 5 adds matches.spectator_delay_actions: the matches of schema 4 keep every field
    and get 0 (spectators not delayed, as before); a new match records its delay."""
    path = tmp_path / "old.sqlite3"
    _sqlite_v4(path)

    migrated_from, old, new, listing = run(_migrate_v4(SqliteStore(path)))
    assert migrated_from == 4 and _user_version(path) == SCHEMA_VERSION == 8
    assert "spectator_delay_actions" in _columns(path)
    _check_v4_migrated(old, new, listing)


def test_a_postgres_schema_of_version_4_is_migrated_keeping_its_matches(pg_database, pg_schema):
    schema, url = pg_schema
    _postgres_v4(pg_database, schema)

    migrated_from, old, new, listing = run(_migrate_v4(PostgresStore(url)))
    assert migrated_from == 4 and _meta_version(pg_database, schema) == str(PG_VERSION) == "8"
    assert _has_column(pg_database, schema, "matches", "spectator_delay_actions")
    _check_v4_migrated(old, new, listing)


# ---- schema 5 -> 6: retried joins -------------------------------------------------------------

#: The hash of a client_join_id recorded with a seat by the current release.
JOIN_HASH = "cd" * 32


def _sqlite_v5(path) -> None:
    """A database as the spectator delay's release (schema 5) left it: a finished match, an
    active one with both seats taken, and a waiting one with a seat taken and a seat open."""
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_V5)
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA user_version=5")
    conn.execute("INSERT INTO matches VALUES ('ended', 'klaberjass', '{}', 0, 30.0, 60.0, 1, 'ended table', '', "
                 "1.0, 'finished', '{\"winners\":[0]}', 4.0, 0, ?, 3)", (json.dumps(list(COMMITMENTS)),))
    conn.execute("INSERT INTO matches VALUES ('old', 'klaberjass', '{}', 1, 30.0, 60.0, 1, 'old table', '', "
                 "2.0, 'active', NULL, NULL, 1, NULL, 5)")
    conn.execute("INSERT INTO matches VALUES ('wait', 'klaberjass', '{}', 0, 30.0, 60.0, 1, 'waiting table', '', "
                 "2.5, 'waiting', NULL, NULL, 1, NULL, 0)")
    for seat in (0, 1):
        conn.execute("INSERT INTO seats VALUES ('old', ?, 'open', '', ?, ?, 2.0, 0)",
                     (seat, f"p{seat}", f"hash{seat}"))
    conn.execute("INSERT INTO seats VALUES ('wait', 0, 'open', '', 'w0', 'hashw', 2.5, 0)")
    conn.execute("INSERT INTO seats VALUES ('wait', 1, 'open', '', '', NULL, NULL, 0)")
    conn.execute("INSERT INTO decks VALUES ('old', 0, ?, ?, 2)", (json.dumps(list(SALTED.cards)), SALTED.salt))
    conn.execute("INSERT INTO match_actions VALUES ('old', 1, 0, 'pass', 'player', 'c1', '', 3.0)")
    conn.commit()
    conn.close()


def _postgres_v5(pg_database, schema: str) -> None:
    _postgres_schema(pg_database, schema, POSTGRES_V5, 5, "'old', 'klaberjass', '{}', 1, 30.0, 60.0, true, "
                     "'old table', '', 2.0, 'active', NULL, NULL, true, NULL, 5")
    pg_database.execute("INSERT INTO matches VALUES ('ended', 'klaberjass', '{}', 0, 30.0, 60.0, true, "
                        "'ended table', '', 1.0, 'finished', '{\"winners\": [0]}', 4.0, false, %s, 3)",
                        (list(COMMITMENTS),), schema=schema)
    pg_database.execute("INSERT INTO matches VALUES ('wait', 'klaberjass', '{}', 0, 30.0, 60.0, true, "
                        "'waiting table', '', 2.5, 'waiting', NULL, NULL, true, NULL, 0)", schema=schema)
    for seat in (0, 1):
        pg_database.execute("INSERT INTO seats VALUES ('old', %s, 'open', '', %s, %s, 2.0, false)",
                            (seat, f"p{seat}", f"hash{seat}"), schema=schema)
    pg_database.execute("INSERT INTO seats VALUES ('wait', 0, 'open', '', 'w0', 'hashw', 2.5, false)", schema=schema)
    pg_database.execute("INSERT INTO seats VALUES ('wait', 1, 'open', '', '', NULL, NULL, false)", schema=schema)
    pg_database.execute("INSERT INTO decks VALUES ('old', 0, %s, %s, 2)", (list(SALTED.cards), SALTED.salt),
                        schema=schema)
    pg_database.execute("INSERT INTO match_actions VALUES ('old', 1, 0, 'pass', 'player', 'c1', '', 3.0)",
                        schema=schema)


async def _migrate_v5(st):
    """Open (migrating) a store of schema 5, read its matches, then take the waiting match's
    open seat with a client join id and create a match whose seat 0 has one: (migrated_from,
    the old matches as loaded, the waiting one after the join, the new one, the listing)."""
    await st.open()
    try:
        old = {m: await st.load_match(m) for m in ("ended", "old", "wait")}
        await st.save_seat("wait", SeatRecord(1, player_name="w1", token_hash="hashw1", joined_at=3.0,
                                              join_hash=JOIN_HASH))
        joined = await st.load_match("wait")
        seats = (SeatRecord(0, player_name="n0", token_hash="hashn0", joined_at=3.5, join_hash="ef" * 32),
                 SeatRecord(1))
        await st.create_match(replace(record("new", created_at=3.0), seats=seats), [SALTED])
        return st.migrated_from, old, joined, await st.load_match("new"), await st.list_matches()
    finally:
        await st.close()


def _check_v5_migrated(old, joined, new, listing) -> None:
    ended, active, waiting = old["ended"].record, old["old"].record, old["wait"].record
    assert ended.status == "finished" and dict(ended.result) == {"winners": [0]} and ended.ended_at == 4.0
    assert ended.deal_commitments == COMMITMENTS and ended.spectator_delay_actions == 3
    assert active.name == "old table" and active.listed is True and active.status == "active"
    assert active.spectator_delay_actions == 5
    assert [s.token_hash for s in active.seats] == ["hash0", "hash1"]
    assert old["old"].decks == (SALTED,) and [a.action for a in old["old"].actions] == ["pass"]
    assert waiting.status == "waiting" and [s.token_hash for s in waiting.seats] == ["hashw", ""]
    # the seats of schema 5 have no client join id: nothing to retry with
    assert {s.join_hash for m in old.values() for s in m.record.seats} == {""}
    assert joined.record.seats == (waiting.seats[0], SeatRecord(1, player_name="w1", token_hash="hashw1",
                                                                  joined_at=3.0, join_hash=JOIN_HASH))
    assert [s.join_hash for s in new.record.seats] == ["ef" * 32, ""]
    assert [(li.record.match_id, li.seq) for li in listing] == [("new", 0), ("wait", 0), ("old", 1), ("ended", 0)]
    assert listing[0].record == new.record and listing[1].record == joined.record


def test_a_sqlite_database_of_schema_5_is_migrated_keeping_its_matches(tmp_path):
    """Schema 6 adds seats.join_hash: the seats of schema 5 keep every field and have no client
    join id (NULL, read as ""); a seat taken after the upgrade records the hash of its id."""
    path = tmp_path / "old.sqlite3"
    _sqlite_v5(path)

    migrated_from, old, joined, new, listing = run(_migrate_v5(SqliteStore(path)))
    assert migrated_from == 5 and _user_version(path) == SCHEMA_VERSION == 8
    assert "join_hash" in _columns(path, "seats")
    _check_v5_migrated(old, joined, new, listing)


def test_a_postgres_schema_of_version_5_is_migrated_keeping_its_matches(pg_database, pg_schema):
    schema, url = pg_schema
    _postgres_v5(pg_database, schema)

    migrated_from, old, joined, new, listing = run(_migrate_v5(PostgresStore(url)))
    assert migrated_from == 5 and _meta_version(pg_database, schema) == str(PG_VERSION) == "8"
    assert _has_column(pg_database, schema, "seats", "join_hash")
    _check_v5_migrated(old, joined, new, listing)


# ---- schema 6 -> 7: retried creations ---------------------------------------------------------

#: The hash of a client_create_id and the digest of its request, recorded by the current release.
CREATE_HASH, CREATE_DIGEST = "ab" * 32, "12" * 32


def _sqlite_v6(path) -> None:
    """A database as the retried joins' release (schema 6) left it: a finished match and a
    waiting one whose seat 0 was joined with a client join id."""
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_V6)
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA user_version=6")
    conn.execute("INSERT INTO matches VALUES ('ended', 'klaberjass', '{}', 0, 30.0, 60.0, 1, 'ended table', '', "
                 "1.0, 'finished', '{\"winners\":[0]}', 4.0, 0, ?, 3)", (json.dumps(list(COMMITMENTS)),))
    conn.execute("INSERT INTO matches VALUES ('wait', 'klaberjass', '{}', 0, 30.0, 60.0, 1, 'waiting table', '', "
                 "2.5, 'waiting', NULL, NULL, 1, NULL, 0)")
    conn.execute("INSERT INTO seats VALUES ('wait', 0, 'open', '', 'w0', 'hashw', 2.5, 0, ?)", (JOIN_HASH,))
    conn.execute("INSERT INTO seats VALUES ('wait', 1, 'open', '', '', NULL, NULL, 0, NULL)")
    conn.commit()
    conn.close()


def _postgres_v6(pg_database, schema: str) -> None:
    _postgres_schema(pg_database, schema, POSTGRES_V6, 6, "'wait', 'klaberjass', '{}', 0, 30.0, 60.0, true, "
                     "'waiting table', '', 2.5, 'waiting', NULL, NULL, true, NULL, 0")
    pg_database.execute("INSERT INTO matches VALUES ('ended', 'klaberjass', '{}', 0, 30.0, 60.0, true, "
                        "'ended table', '', 1.0, 'finished', '{\"winners\": [0]}', 4.0, false, %s, 3)",
                        (list(COMMITMENTS),), schema=schema)
    pg_database.execute("INSERT INTO seats VALUES ('wait', 0, 'open', '', 'w0', 'hashw', 2.5, false, %s)",
                        (JOIN_HASH,), schema=schema)
    pg_database.execute("INSERT INTO seats VALUES ('wait', 1, 'open', '', '', NULL, NULL, false, NULL)",
                        schema=schema)


async def _migrate_v6(st):
    """Open (migrating) a store of schema 6, read its matches, create a match with a client
    create id and try a second one with the same id: (migrated_from, the old matches, the new
    one, what find_created answers for the new id and for none, the second create's error)."""
    from engine_service.store import CreateIdTaken

    await st.open()
    try:
        old = {m: await st.load_match(m) for m in ("ended", "wait")}
        await st.create_match(replace(record("new", created_at=3.0), create_hash=CREATE_HASH,
                                      create_digest=CREATE_DIGEST), [SALTED])
        with pytest.raises(CreateIdTaken) as taken:
            await st.create_match(replace(record("twin", created_at=3.5), create_hash=CREATE_HASH,
                                          create_digest=CREATE_DIGEST))
        found = await st.find_created(CREATE_HASH), await st.find_created("ef" * 32)
        return (st.migrated_from, old, await st.load_match("new"), found, taken.value,
                await st.load_match("twin"))
    finally:
        await st.close()


def _check_v6_migrated(old, new, found, twin) -> None:
    ended, waiting = old["ended"].record, old["wait"].record
    assert ended.status == "finished" and ended.deal_commitments == COMMITMENTS and ended.spectator_delay_actions == 3
    assert [s.join_hash for s in waiting.seats] == [JOIN_HASH, ""]
    # the matches of schema 6 were created without a client create id
    assert {(m.record.create_hash, m.record.create_digest) for m in old.values()} == {("", "")}
    assert (new.record.create_hash, new.record.create_digest) == (CREATE_HASH, CREATE_DIGEST)
    assert found == (("new", CREATE_DIGEST), None)
    assert twin is None  # the unique index refused the second match with the id


def test_a_sqlite_database_of_schema_6_is_migrated_keeping_its_matches(tmp_path):
    """Schema 7 adds matches.create_hash (unique) and create_digest: the matches of schema 6
    keep every field and have neither (NULL, read as ""); a match created after the upgrade
    records them, and a second match with the same hash is refused (CreateIdTaken)."""
    path = tmp_path / "old.sqlite3"
    _sqlite_v6(path)

    migrated_from, old, new, found, taken, twin = run(_migrate_v6(SqliteStore(path)))
    assert migrated_from == 6 and _user_version(path) == SCHEMA_VERSION == 8
    assert {"create_hash", "create_digest"} <= set(_columns(path))
    _check_v6_migrated(old, new, found, twin)
    conn = sqlite3.connect(path)
    try:
        indexes = {row[1]: row[2] for row in conn.execute("PRAGMA index_list(matches)")}
    finally:
        conn.close()
    assert indexes.get("matches_by_create_hash") == 1  # unique


def test_a_migration_stopped_by_a_full_volume_names_sqlite_full_and_what_to_do(tmp_path):
    """A migration that runs out of disk (its new index needs pages the volume does not have)
    says so as the other refusals of a full volume at open do: SQLite's code (SQLITE_FULL, what
    docs/operations.md is searched for) and the free-space advice; the file is left as it was."""
    from .sqlite_faults import LimitedSqliteStore

    path = tmp_path / "old.sqlite3"
    _sqlite_v6(path)

    async def go():
        await LimitedSqliteStore(path, full=True).open()
    with pytest.raises(MigrationFailed) as info:
        run(go())
    assert str(info.value) == (
        f"{path}: migrating the database from schema version 6 to {SCHEMA_VERSION} failed at "
        "step 7 (database or disk is full (SQLITE_FULL)); the file was left as it was (schema "
        "version 6): check the free space of its volume (df) and its storage, then start again "
        "(docs/operations.md, When the database fails)")
    assert _user_version(path) == 6 and "create_hash" not in _columns(path)


def test_a_migration_sqlite_rolled_back_itself_says_the_migration_failed_and_leaves_the_file(tmp_path):
    """On some errors SQLite rolls back the whole transaction itself, not the failing
    statement alone (SQLITE_IOERR, SQLITE_NOMEM, an interrupted write: sqlite.org/
    lang_transaction.html); here step 7's index is interrupted (an authorizer spots it, a
    progress handler interrupts it). No ROLLBACK is then left for the store to run, and one
    would fail ("no transaction is active"): it is still the migration that failed, from which
    version to which, with SQLite's reason, the file at its version and columns, and the store
    lets go of it: the next open migrates."""
    path = tmp_path / "old.sqlite3"
    _sqlite_v6(path)
    statements = []

    class Interrupted(SqliteStore):
        def _migrate(self, conn, version):
            indexing = []

            def authorize(action, *_):
                if action == sqlite3.SQLITE_CREATE_INDEX:
                    indexing.append(True)
                return sqlite3.SQLITE_OK
            conn.set_authorizer(authorize)
            conn.set_progress_handler(lambda: bool(indexing), 1)
            conn.set_trace_callback(statements.append)
            try:
                super()._migrate(conn, version)
            finally:
                conn.set_authorizer(None)
                conn.set_progress_handler(None, 0)
                conn.set_trace_callback(None)

    async def go():
        await Interrupted(path).open()
    with pytest.raises(MigrationFailed) as info:
        run(go())
    assert str(info.value) == (
        f"{path}: migrating the database from schema version 6 to {SCHEMA_VERSION} failed at "
        "step 7 (interrupted (SQLITE_INTERRUPT)); the file was left as it was (schema version 6)")
    assert statements[-1].startswith("CREATE UNIQUE INDEX matches_by_create_hash")  # no ROLLBACK after it
    assert _user_version(path) == 6 and "create_hash" not in _columns(path)

    migrated_from, *_ = run(_migrate_v6(SqliteStore(path)))
    assert migrated_from == 6 and _user_version(path) == SCHEMA_VERSION


def test_a_postgres_schema_of_version_6_is_migrated_keeping_its_matches(pg_database, pg_schema):
    schema, url = pg_schema
    _postgres_v6(pg_database, schema)

    migrated_from, old, new, found, taken, twin = run(_migrate_v6(PostgresStore(url)))
    assert migrated_from == 6 and _meta_version(pg_database, schema) == str(PG_VERSION) == "8"
    assert _has_column(pg_database, schema, "matches", "create_hash")
    assert _has_column(pg_database, schema, "matches", "create_digest")
    _check_v6_migrated(old, new, found, twin)


# ---- schema 7 -> 8: absences that survive a restart -------------------------------------------

def _sqlite_v7(path) -> None:
    """A database as the idempotent creation's release (schema 7) left it: an active match
    whose two seats are taken (nothing stored of their players' presence)."""
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_V7)
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA user_version=7")
    conn.execute("INSERT INTO matches VALUES ('old', 'klaberjass', '{}', 0, 30.0, 60.0, 1, 'old table', '', "
                 "1.0, 'active', NULL, NULL, 0, NULL, 0, ?, ?)", (CREATE_HASH, CREATE_DIGEST))
    for seat in (0, 1):
        conn.execute("INSERT INTO seats VALUES ('old', ?, 'open', '', ?, ?, 2.0, 0, NULL)",
                     (seat, f"p{seat}", f"hash{seat}"))
    conn.commit()
    conn.close()


def _postgres_v7(pg_database, schema: str) -> None:
    _postgres_schema(pg_database, schema, POSTGRES_V7, 7, "'old', 'klaberjass', '{}', 0, 30.0, 60.0, true, "
                     f"'old table', '', 1.0, 'active', NULL, NULL, false, NULL, 0, '{CREATE_HASH}', "
                     f"'{CREATE_DIGEST}'")
    for seat in (0, 1):
        pg_database.execute("INSERT INTO seats VALUES ('old', %s, 'open', '', %s, %s, 2.0, false, NULL)",
                            (seat, f"p{seat}", f"hash{seat}"), schema=schema)


async def _migrate_v7(st):
    """Open (migrating) a store of schema 7, read its match, record seat 1's absence and touch
    it: (migrated_from, the match as migrated, the match after)."""
    await st.open()
    try:
        old = await st.load_match("old")
        await st.save_absence("old", 1, 10.0, taken_over=True)
        await st.touch_absences([("old", 0), ("old", 1)], 12.0)
        return st.migrated_from, old, await st.load_match("old")
    finally:
        await st.close()


def _check_v7_migrated(old, after) -> None:
    r = old.record
    assert (r.status, r.create_hash, r.create_digest) == ("active", CREATE_HASH, CREATE_DIGEST)
    # the seats of schema 7 keep every field, and nobody is recorded away
    assert [(s.player_name, s.token_hash, s.joined_at) for s in r.seats] == [("p0", "hash0", 2.0), ("p1", "hash1", 2.0)]
    assert [(s.away_since, s.away_seen, s.taken_over) for s in r.seats] == [(None, None, False)] * 2
    assert [(s.away_since, s.away_seen, s.taken_over) for s in after.record.seats] == [
        (None, None, False), (10.0, 12.0, True)]


def test_a_sqlite_database_of_schema_7_is_migrated_keeping_its_matches(tmp_path):
    """Schema 8 adds seats.away_since, away_seen and taken_over (a player's absence, so that a
    restart continues a reconnect grace window instead of starting it over): the seats of
    schema 7 keep every field and have no absence recorded (NULL, NULL, false)."""
    path = tmp_path / "old.sqlite3"
    _sqlite_v7(path)

    migrated_from, old, after = run(_migrate_v7(SqliteStore(path)))
    assert migrated_from == 7 and _user_version(path) == SCHEMA_VERSION == 8
    assert {"away_since", "away_seen", "taken_over"} <= set(_columns(path, "seats"))
    _check_v7_migrated(old, after)


def test_a_postgres_schema_of_version_7_is_migrated_keeping_its_matches(pg_database, pg_schema):
    schema, url = pg_schema
    _postgres_v7(pg_database, schema)

    migrated_from, old, after = run(_migrate_v7(PostgresStore(url)))
    assert migrated_from == 7 and _meta_version(pg_database, schema) == str(PG_VERSION) == "8"
    for column in ("away_since", "away_seen", "taken_over"):
        assert _has_column(pg_database, schema, "seats", column)
    _check_v7_migrated(old, after)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_on_held_runs_before_the_migration_and_its_failure_leaves_the_database_as_it_was(kind, request, tmp_path):
    """Store.on_held (the service binds its ports there) is called once the store holds the
    database and before it migrates anything: an exception it raises ends open() with the
    schema at its old version and the lock released (the next open migrates)."""
    if kind == "sqlite":
        path = tmp_path / "old.sqlite3"
        _sqlite_v1(path)
        make, version = (lambda: SqliteStore(path)), (lambda: _user_version(path))
    else:
        pg_database = request.getfixturevalue("pg_database")
        schema, url = request.getfixturevalue("pg_schema")
        _postgres_v1(pg_database, schema)
        make, version = (lambda: PostgresStore(url)), (lambda: int(_meta_version(pg_database, schema)))

    class PortInUse(OSError):
        pass

    seen = []

    def refuse():
        seen.append(version())
        raise PortInUse("the port is taken")

    async def go():
        st = make()
        st.on_held = refuse
        with pytest.raises(PortInUse):
            await st.open()
        again = make()
        again.on_held = lambda: seen.append("held")
        await again.open()
        await again.close()

    run(go())
    assert seen == [1, "held"]
    assert version() == (SCHEMA_VERSION if kind == "sqlite" else PG_VERSION)
