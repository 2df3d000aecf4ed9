"""The embedded default store: one SQLite file (standard library ``sqlite3``).

* **Durable before acknowledged**: WAL journal with ``synchronous=FULL``, so a committed
  transaction survives a power cut, not only a process crash; each call is one transaction.
* **Never blocks the event loop**: the connection lives on one dedicated thread and every
  call runs there (which also serializes them, as SQLite wants one writer).
* **Group commit**: writes that queue up while a commit is in progress (from other matches)
  go into the next transaction together, each in its own savepoint (one failing write rolls
  back alone), and share one fsync. A write is acknowledged only after its commit, so
  durability is unchanged while throughput grows with the number of concurrent writers
  instead of being capped at one fsync per action.
* **Refuses what it does not own**: the file carries an ``application_id`` and a schema
  version; garbage, another application's database or a newer schema is a
  :class:`~.base.NotADatabase` error naming the path, never a silent overwrite.
* **Refuses a corrupt file**: ``PRAGMA quick_check`` runs when the store opens (within
  :data:`CHECK_BUDGET_S`), so that a damaged database stops the engine at start with one
  clear error instead of letting it serve while every write fails
  (:class:`~.base.CorruptDatabase`).
* A new file is created readable by its owner only: it holds the decks (every hidden card).
* **One engine per database**: the store holds ``<path>.lock`` exclusively while it is open
  (:mod:`.ownership`); another engine process's store waits ``lock_wait_s`` for it, then
  refuses with :class:`~.base.StoreInUse` naming the holder.

The tables mirror the PostgreSQL layout of ARCHITECTURE.md section 7 (see :mod:`.base`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import queue
import sqlite3
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

import structlog

from ..observability.metrics import Metrics
from .base import (FINISHED, MAX_PRUNE_BATCH, UNFINISHED, ActionRecord, CorruptDatabase, CreateIdTaken, DatabaseReadOnly,
                   DeckRecord, DuplicateClientAction, MatchEnd, MatchExists, MatchListing, MatchNotWaiting, MatchRecord,
                   MigrationFailed, NotADatabase, PruneCounts, PrunedBatch, SeatRecord, SequenceConflict, Store,
                   StoredMatch, StoreError, UnknownMatch)
from .ownership import FileOwnership

T = TypeVar("T")
log = structlog.get_logger("engine_service.store")

#: How long the integrity check at open (``PRAGMA quick_check``) may take. It reads every
#: page of the file once: about 0.5 s (page cache warm) to 2.3 s (cold) for 5,000 matches
#: (118 MB) on the development machine, so files up to roughly 0.5-2 GB are checked in full.
#: A check that runs past the budget is abandoned with a ``db_check_skipped`` warning rather
#: than holding the start-up (and the Kubernetes startup probe's 120 s) hostage to the
#: file's size; the operator can then run it offline (docs/operations.md, Backup and restore).
CHECK_BUDGET_S = 10.0
#: Most problems quoted from quick_check's report in the error (the report can be long).
CHECK_REPORT_LINES = 3
#: Most rescued copies (SqliteStore._rescue) named for one UTC second: past that many, the
#: file is being moved back and forth by something gone wrong, and the copy is refused.
_RESCUES_A_SECOND = 100

APPLICATION_ID = 0x43474531  # "CGE1"
SCHEMA_VERSION = 8

SCHEMA = """
CREATE TABLE matches (
    match_id           TEXT PRIMARY KEY,
    game               TEXT NOT NULL,
    options            TEXT NOT NULL,          -- JSON object: non-default table options
    first_dealer       INTEGER NOT NULL,
    turn_time_s        REAL NOT NULL,
    reconnect_grace_s  REAL NOT NULL,
    spectators_allowed INTEGER NOT NULL,
    name               TEXT NOT NULL,
    takeover_bot       TEXT NOT NULL,
    created_at         REAL NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('waiting', 'active', 'finished', 'terminated')),
    result             TEXT,                   -- JSON object once the match has ended
    ended_at           REAL,
    listed             INTEGER NOT NULL DEFAULT 0,  -- in the lobby while waiting (schema 2)
    deal_commitments   TEXT,                   -- JSON list, recorded at the end (schema 4)
    spectator_delay_actions INTEGER NOT NULL DEFAULT 0, -- spectators' lag in actions (schema 5)
    create_hash        TEXT,                   -- sha256 hex of the client_create_id (NULL: none; schema 7)
    create_digest      TEXT                    -- sha256 hex of the request it created (schema 7)
);
CREATE INDEX matches_by_status ON matches (status, created_at);
CREATE INDEX matches_by_creation ON matches (created_at, match_id);
CREATE UNIQUE INDEX matches_by_create_hash ON matches (create_hash) WHERE create_hash IS NOT NULL;

CREATE TABLE seats (
    match_id    TEXT NOT NULL REFERENCES matches (match_id),
    seat        INTEGER NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('open', 'bot')),
    bot         TEXT NOT NULL,
    player_name TEXT NOT NULL,
    token_hash  TEXT,                           -- sha256 hex of the seat token (NULL: free)
    joined_at   REAL,
    left_match  INTEGER NOT NULL,
    join_hash   TEXT,                           -- sha256 hex of the client_join_id (NULL: none; schema 6)
    away_since  REAL,                           -- Unix time its player's grace window started (schema 8)
    away_seen   REAL,                           -- newest Unix time the engine served meanwhile (schema 8)
    taken_over  INTEGER NOT NULL DEFAULT 0,     -- the takeover bot plays it, GJ-12.4 (schema 8)
    PRIMARY KEY (match_id, seat)
);
CREATE UNIQUE INDEX seats_by_token ON seats (token_hash) WHERE token_hash IS NOT NULL;

CREATE TABLE decks (
    match_id TEXT NOT NULL REFERENCES matches (match_id),
    deal     INTEGER NOT NULL,
    cards    TEXT NOT NULL,                     -- JSON list of card codes, top card first
    salt     TEXT NOT NULL DEFAULT '',          -- commitment salt, 32 hex ('': none; schema 3)
    scheme   INTEGER NOT NULL DEFAULT 1,        -- commitment scheme (schema 4; 1: whole deck)
    PRIMARY KEY (match_id, deal)
);

CREATE TABLE match_actions (
    match_id         TEXT NOT NULL REFERENCES matches (match_id),
    seq              INTEGER NOT NULL,
    seat             INTEGER NOT NULL,
    action           TEXT NOT NULL,
    by_whom          TEXT NOT NULL,
    client_action_id TEXT,                      -- NULL for bot and auto moves
    reason           TEXT NOT NULL,
    at               REAL NOT NULL,
    PRIMARY KEY (match_id, seq)
);
CREATE UNIQUE INDEX match_actions_by_client_id
    ON match_actions (match_id, seat, client_action_id) WHERE client_action_id IS NOT NULL;
"""


#: How a database of an older schema version becomes the current one: the statements taking
#: version ``n - 1`` to ``n``, applied in order in one transaction when the store opens
#: (docs/operations.md, Upgrades). A new file gets SCHEMA at once.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: ("ALTER TABLE matches ADD COLUMN listed INTEGER NOT NULL DEFAULT 0",),
    3: ("ALTER TABLE decks ADD COLUMN salt TEXT NOT NULL DEFAULT ''",),
    4: ("ALTER TABLE decks ADD COLUMN scheme INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE matches ADD COLUMN deal_commitments TEXT"),
    5: ("ALTER TABLE matches ADD COLUMN spectator_delay_actions INTEGER NOT NULL DEFAULT 0",),
    6: ("ALTER TABLE seats ADD COLUMN join_hash TEXT",),
    7: ("ALTER TABLE matches ADD COLUMN create_hash TEXT",
        "ALTER TABLE matches ADD COLUMN create_digest TEXT",
        "CREATE UNIQUE INDEX matches_by_create_hash ON matches (create_hash) WHERE create_hash IS NOT NULL"),
    8: ("ALTER TABLE seats ADD COLUMN away_since REAL",
        "ALTER TABLE seats ADD COLUMN away_seen REAL",
        "ALTER TABLE seats ADD COLUMN taken_over INTEGER NOT NULL DEFAULT 0"),
}


#: Indexes that only make queries faster, created on a database of the current schema when
#: the engine opens it for writing, without a new schema version: an index changes no
#: query's answer, so an older release of the same schema still opens the file (SQLite keeps
#: an index it does not use up to date) and a rollback needs no restore.
#: ``matches_by_creation`` serves the admin listing without a status filter page by page
#: (newest first, after a cursor) instead of sorting every match.
SUPPLEMENTARY_INDEXES: tuple[str, ...] = (
    "CREATE INDEX IF NOT EXISTS matches_by_creation ON matches (created_at, match_id)",
)


def _statements(script: str) -> list[str]:
    """Split a SQL script into complete statements (comments may hold semicolons)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        raise ValueError("incomplete SQL statement in the schema")
    return out


@functools.cache
def _schema_columns() -> dict[str, frozenset[str]]:
    """The columns of every table of :data:`SCHEMA`, read from SQLite itself."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in _statements(SCHEMA):
            conn.execute(statement)
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: frozenset(row[1] for row in conn.execute(f"PRAGMA table_info({t})")) for t in tables}
    finally:
        conn.close()


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


class _Job:
    """One call for the store thread: ``fn(conn)`` for a write, ``fn()`` otherwise."""

    __slots__ = ("fn", "write", "future", "loop")

    def __init__(self, fn: Callable[..., Any], write: bool, future: asyncio.Future,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.fn, self.write, self.future, self.loop = fn, write, future, loop


_STOP = object()
MAX_BATCH = 256


def _reason(exc: BaseException) -> str:
    """SQLite's message with its error code's name, e.g. "database or disk is full
    (SQLITE_FULL)": the code tells apart what the messages word alike (SQLITE_IOERR_WRITE
    from SQLITE_IOERR_FSYNC, SQLITE_READONLY_DIRECTORY from a read-only file), and it is
    what SQLite's documentation and docs/operations.md are searched for."""
    name = getattr(exc, "sqlite_errorname", None)
    return f"{exc} ({name})" if name else str(exc)


def _volume_hint(exc: BaseException) -> str:
    """What to do about a full volume or failing storage (SQLITE_FULL, SQLITE_IOERR_*), for a
    refusal at open that left the file as it was; "" for any other error."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    if name == "SQLITE_FULL" or name.startswith("SQLITE_IOERR"):
        return ": check the free space of its volume (df) and its storage, then start again " \
               "(docs/operations.md, When the database fails)"
    return ""


def _rolled_back(pending: list[tuple[_Job, Any, BaseException | None]],
                 cause: BaseException) -> list[tuple[_Job, Any, BaseException | None]]:
    """The writes of a transaction that SQLite rolled back as a whole, each with its error.

    A failing statement is normally undone alone (its write's savepoint then), but on
    SQLITE_FULL, SQLITE_IOERR or SQLITE_NOMEM SQLite may have to roll back the whole
    transaction (sqlite.org/lang_transaction.html, "Response To Errors Within A
    Transaction"): every write of the batch before the failing one is gone with it. They
    used to be acknowledged all the same at the end of the batch (the commit found no
    transaction, so it failed nothing): a full disk that refused one match's write lost
    the actions of the other matches written with it, and their matches ran on in memory
    ahead of the database. Now each of them is answered with the error; nothing of them
    was written, and their callers retry."""
    error = StoreError(f"write rolled back with its transaction: {cause}")
    return [(job, result, err or error) for job, result, err in pending]


def _resolve_all(items: list[tuple[asyncio.Future, Any, BaseException | None]]) -> None:
    for future, result, error in items:
        if future.done():  # the caller was cancelled
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


class SqliteStore(Store):
    """A store in one SQLite file at ``path`` (``":memory:"`` for a private in-memory db).

    ``lock_wait_s``: how long :meth:`open` waits for another engine process holding the
    file to let go before it refuses (:class:`~.base.StoreInUse`). ``exclusive=False``: no
    ownership lock, for what must work beside a running engine (tools that only read, tests
    of the database's own guarantees); an engine never opens its store so."""

    def __init__(self, path: str | os.PathLike[str], metrics: Metrics | None = None,
                 lock_wait_s: float = 0.0, exclusive: bool = True, create: bool = True,
                 migrate: bool = True) -> None:
        super().__init__(metrics)
        self.path = str(path)
        self.lock_wait_s = lock_wait_s
        #: ``create=False``: a file without the engine's tables is refused (NotADatabase), not
        #: given them; ``migrate=False``: a database of an older schema is opened as it is
        #: (:attr:`outdated_from` says which) instead of migrated. The offline prune's dry run
        #: opens with both False, so that it changes nothing.
        self.create = create
        self.migrate = migrate
        self.outdated_from: int | None = None  # the older schema version left as it was
        self._ownership = FileOwnership(self.path) if self.path != ":memory:" and exclusive else None
        self._jobs: queue.SimpleQueue | None = None
        self._thread: threading.Thread | None = None
        self._conn: sqlite3.Connection | None = None
        self.commits = 0  # transactions committed (diagnostics: writes per commit)
        self.migrated_from: int | None = None  # the schema version open() upgraded, if any
        self.check_s: float | None = None  # how long open()'s integrity check took, if it ran
        self.check_budget_s = CHECK_BUDGET_S
        # the inode numbers of the file and its WAL as opened (_file_moved), and how the file
        # was found changed under the store (None: it was not)
        self._inode: int | None = None
        self._wal_inode: int | None = None
        self._moved: str | None = None
        self._wal_file: str | None = None  # the WAL's path (_wal_path), fixed when the store opens
        self._rescued = ""  # the copy made of the database once it was found moved

    # ---- plumbing: one thread owns the connection ------------------------------------------

    async def _submit(self, fn: Callable[..., T], write: bool = False) -> T:
        if self._jobs is None:
            raise StoreError("the store is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        self._jobs.put(_Job(fn, write, future, loop))
        return await future

    async def _run(self, fn: Callable[[], T]) -> T:
        """Run ``fn()`` on the store thread (reads and administration)."""
        return await self._submit(fn)

    async def _write(self, operation: str, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` inside a committed transaction; the latency measured is what the
        caller waits for (queueing and the shared commit included)."""
        with self._timer.write(operation):
            return await self._submit(fn, write=True)

    def _serve(self) -> None:
        jobs = self._jobs
        assert jobs is not None
        stopping = False
        while not stopping:
            first = jobs.get()
            if first is _STOP:
                break
            batch = [first]
            while len(batch) < MAX_BATCH:
                try:
                    nxt = jobs.get_nowait()
                except queue.Empty:
                    break
                if nxt is _STOP:
                    stopping = True
                    break
                batch.append(nxt)
            pending: list[tuple[_Job, Any, BaseException | None]] = []
            for job in batch:
                if job.write:
                    outcome = self._write_in_transaction(job, begin=not pending)
                    if outcome[2] is not None and not self._in_transaction():
                        # SQLite undid the whole transaction, not just this write's savepoint
                        self._deliver(_rolled_back(pending, outcome[2]) + [outcome])
                        pending = []
                        continue
                    pending.append(outcome)
                    continue
                self._commit(pending)  # a read sees only committed writes
                pending = []
                try:
                    self._deliver([(job, job.fn(), None)])
                except BaseException as exc:  # delivered to the caller
                    self._deliver([(job, None, exc)])
            self._commit(pending)

    def _write_in_transaction(self, job: _Job, begin: bool) -> tuple[_Job, Any, BaseException | None]:
        """Run one write in its own savepoint of the batch's transaction (``begin``: the
        batch's first write, which opens it). A write that fails is undone alone when SQLite
        lets it be; when SQLite has rolled back the whole transaction instead, or its
        savepoint cannot be undone, the transaction is gone when this returns, and
        :meth:`_serve` fails the batch's earlier writes too (:func:`_rolled_back`)."""
        conn = self._conn
        if conn is None:
            return job, None, StoreError("the store is closed")
        try:
            if begin:
                conn.execute("BEGIN IMMEDIATE")
            conn.execute("SAVEPOINT write")
        except sqlite3.Error as exc:
            return job, None, StoreError(f"cannot start a transaction: {_reason(exc)}")
        try:
            result = job.fn(conn)
        except BaseException as exc:
            self._undo_write(conn)
            return job, None, exc if isinstance(exc, StoreError) else StoreError(f"write failed: {_reason(exc)}")
        try:
            conn.execute("RELEASE write")
        except sqlite3.Error as exc:  # the writer thread must outlive any one write
            self._undo_write(conn)
            return job, None, StoreError(f"write failed: {_reason(exc)}")
        return job, result, None

    def _undo_write(self, conn: sqlite3.Connection) -> None:
        """Undo a failed write's savepoint; the whole transaction when that fails (a write
        half done must never be committed with the others)."""
        if not conn.in_transaction:  # SQLite rolled it all back already (SQLITE_FULL, ...)
            return
        try:
            conn.execute("ROLLBACK TO write")
            conn.execute("RELEASE write")
        except sqlite3.Error:
            self._abandon(conn)

    @staticmethod
    def _abandon(conn: sqlite3.Connection) -> None:
        """Roll back whatever transaction is open (none: nothing to do)."""
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def _in_transaction(self) -> bool:
        return self._conn is not None and self._conn.in_transaction

    def _commit(self, pending: list[tuple[_Job, Any, BaseException | None]]) -> None:
        if not pending:
            return
        conn = self._conn
        failure: BaseException | None = None
        if conn is not None and conn.in_transaction:
            moved = self._file_moved()
            if moved is not None:
                self._abandon(conn)
                failure = self._refuse_moved(conn, moved)
            else:
                self._moved, self._rescued = None, ""  # (put back: written to again)
                try:
                    conn.execute("COMMIT")
                    self.commits += 1
                except sqlite3.Error as exc:
                    failure = StoreError(f"commit failed: {_reason(exc)}")
                    self._abandon(conn)
                else:
                    if self._wal_inode is not None and _inode(self._wal_path()) != self._wal_inode:
                        failure = self._make_wal_again(conn)
        if failure is not None:
            pending = [(job, result, error or failure) for job, result, error in pending]
        self._deliver(pending)

    def _file_moved(self) -> str | None:
        """Whether the database file at :attr:`path` is still the one this store opened:
        None if it is, "deleted" or "replaced" if not (the inode number at the path, as
        SQLite's own check compares it; one ``stat`` per commit, next to its fsync).

        The store writes through the file it opened, whatever the path names now. Deleted
        by mistake (a cleanup of the volume, ``rm`` of the wrong file) or replaced under the
        running engine (a backup restored without stopping it), every write went on being
        acknowledged into a file nobody will ever open again: a restart found an empty
        database, or the file put in its place. SQLite does not say: it only leaves its WAL
        behind at close, to be replayed onto whatever file the path then names."""
        if self._inode is None:
            return None
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            return "deleted"
        except OSError:  # cannot tell (the directory unreadable): not a reason to refuse
            return None
        return None if inode == self._inode else "replaced"

    def _refuse_moved(self, conn: sqlite3.Connection, moved: str) -> StoreError:
        """The error of every write while the file is :meth:`_file_moved` (nothing is
        committed; reads go on from the file the store holds). The first time (and at each
        refused commit while that failed: a full volume, the directory gone), everything
        the store holds is copied to ``<path>.rescued-<UTC time>`` (``VACUUM INTO``, owner-
        only like the database) and ``db_file_moved`` is logged with where: that copy is the
        only one left of the writes acknowledged since the last backup once the engine stops
        (docs/operations.md, When the database fails). A file put back (moved back to the
        path) is written to again."""
        first = self._moved != moved
        self._moved = moved
        if first or not self._rescued:  # a copy that failed (a full volume) is tried again
            rescued, error = self._rescue(conn)
            self._rescued = rescued
            if first or rescued:
                log.error("db_file_moved", db=self.path, change=moved, rescued=rescued,
                          **({"rescue_error": error} if error else {}),
                          hint="stop the engine, put the rescued copy in place of the database "
                               "(docs/operations.md, When the database fails), start it")
        return StoreError(f"the database file {self.path} was {moved} while the engine had it open: "
                          "writes are refused (they would go to a file no restart reads)")

    def _rescue(self, conn: sqlite3.Connection) -> tuple[str, str]:
        """Copy the database as this store holds it beside its path; (the copy's path, "") or
        ("", why it could not be made). The copy is a new file (O_EXCL: an older rescue is
        never written over, nor removed when this one fails) named for the UTC second, with
        ``-2``, ``-3``... after it when the rescue of an earlier incident in the same second
        has the name (moved, put back and moved again: the second copy alone holds what was
        acknowledged in between)."""
        stamp = f"{self.path}.rescued-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        names = [stamp] + [f"{stamp}-{n}" for n in range(2, _RESCUES_A_SECOND + 1)]
        created = False
        try:
            for target in names:
                try:
                    os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                except FileExistsError:
                    if target == names[-1]:
                        raise
                else:
                    created = True
                    break
            conn.execute("VACUUM INTO ?", (target,))
            return target, ""
        except (OSError, sqlite3.Error) as exc:
            if created:
                try:
                    os.remove(target)
                except OSError:
                    pass
            return "", _reason(exc) if isinstance(exc, sqlite3.Error) else f"{target}: {exc.strerror}"

    def _make_wal_again(self, conn: sqlite3.Connection) -> StoreError | None:
        """The WAL beside the path is gone (deleted: "a temporary file", to free space) or
        not the one this store writes. SQLite goes on appending commits to the WAL it has
        open, which nothing can read after a crash: every write since its last checkpoint
        was acknowledged and would be lost by a ``kill -9`` or a power cut (a clean stop
        still copied them into the database). Leaving WAL mode and entering it again
        copies them into the database file and makes a new WAL at the path
        (``db_wal_made_again``). Failing that, the batch just committed is answered with an
        error (``db_wal_lost``): it may be lost in a crash, and a write answered with an
        error is one whose outcome the session layer reads back."""
        try:
            conn.execute("PRAGMA journal_mode=DELETE")
            conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.Error as exc:
            log.error("db_wal_lost", db=self.path, error=_reason(exc))
            return StoreError(f"the WAL of {self.path} was deleted and cannot be made again "
                              f"({_reason(exc)}): the write may be lost in a crash")
        self._wal_inode = _inode(self._wal_path())
        log.warning("db_wal_made_again", db=self.path)
        return None

    def _wal_path(self) -> str:
        """Where SQLite keeps the database's WAL: beside the file the path named when the store
        opened, symbolic links followed (as SQLite follows them), not beside a link: the
        checks of the WAL found none there for a database opened through a link, and were
        off (a deleted WAL went unnoticed, and with it the writes a crash would lose)."""
        if self._wal_file is None:
            self._wal_file = os.path.realpath(self.path) + "-wal"
        return self._wal_file

    def _forget_moved_wal(self) -> None:
        """At close, when the file was :meth:`_file_moved`: delete the WAL (and its index)
        that this store wrote beside the path. SQLite leaves it there for a moved file, and
        the next start would read it as the WAL of the file the path now names: the frames of
        the file that is gone replayed onto a restored backup (a corrupt database), or onto
        a new one. Only the WAL this store opened (its inode number) is deleted, and only when
        the file it belongs to is gone or replaced too (not when only a symbolic link to it
        was: the file and its WAL are the database then)."""
        wal = self._wal_path()
        try:
            if self._wal_inode is None or os.stat(wal).st_ino != self._wal_inode:
                return
            if _inode(wal[:-len("-wal")]) == self._inode:
                return
            os.remove(wal)
            os.remove(wal[:-len("-wal")] + "-shm")
        except OSError:
            pass

    @staticmethod
    def _deliver(outcomes: list[tuple[_Job, Any, BaseException | None]]) -> None:
        """Hand the outcomes of one commit to their event loops: one wake-up per loop, not one
        per write (a group commit resolves many futures at once)."""
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, Any, BaseException | None]]] = {}
        for job, result, error in outcomes:
            by_loop.setdefault(job.loop, []).append((job.future, result, error))
        for loop, items in by_loop.items():
            try:
                loop.call_soon_threadsafe(_resolve_all, items)
            except RuntimeError:  # the caller's event loop is gone (a process that crashed)
                pass

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError("the store is closed")
        return self._conn

    async def open(self) -> None:
        if self._jobs is not None:
            return
        self._jobs = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="sqlite-store", daemon=True)
        self._thread.start()
        try:
            await self._run(self._open_sync)
        except BaseException:
            await self._stop()
            raise
        if self.path != ":memory:" and self._timer.metrics is not None:
            # the size of the file and the space left beside it (CardgamesStoreVolume* alerts):
            # the file a symbolic link names, on its volume, and its WAL beside it (beside the
            # link, the WAL was missed and the link's volume watched, maybe another disk)
            self._timer.metrics.watch_database_file(os.path.realpath(self.path))

    async def _stop(self) -> None:
        jobs, thread = self._jobs, self._thread
        self._jobs = self._thread = None
        if jobs is not None:
            jobs.put(_STOP)
        if thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, thread.join)

    def _open_sync(self) -> None:
        path = self.path
        self._wal_file = None
        if path != ":memory:":
            try:
                parent = Path(path).resolve().parent
            except (OSError, RuntimeError):  # RuntimeError: Python 3.11's word for ELOOP here
                # a symbolic link that names itself, or a loop of them: a traceback (exit 1)
                # from the start, or from prune, instead of a refusal
                raise StoreError(f"cannot open database {path}: its path is a loop of "
                                 "symbolic links") from None
            if not parent.is_dir():
                raise StoreError(f"cannot open database {path}: directory {parent} does not exist")
            try:
                mode: int | None = os.stat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                mode = None  # a new file (or a link to nothing: O_EXCL below refuses it)
            except OSError as exc:
                # a name over the file system's limit (ENAMETOOLONG), a directory that may not
                # be searched: a refusal naming the path, not a traceback from serve or prune
                raise StoreError(f"cannot open database {path}: {exc.strerror}") from None
            if mode is not None and stat.S_ISDIR(mode):
                raise NotADatabase(f"{path} is a directory, not a SQLite database")
            if mode is not None and not stat.S_ISREG(mode):
                # a device, FIFO or socket (a mistyped path, /dev/null): SQLite failed on it
                # with a bare "disk I/O error", after the lock file and a journal were made
                # beside it (in /dev); refused before anything is created
                raise NotADatabase(f"{path} is not a regular file, not a SQLite database")
            if not _has_sqlite_header(path):
                # garbage, or another program's file (a mistyped path): refused as SQLite refuses
                # it (SQLITE_NOTADB), but before the lock file was made beside it, which stayed
                raise NotADatabase(f"{path} is not a SQLite database (file is not a database)")
            if _special_companion(path):
                # a pipe, socket or device where SQLite makes its own file: SQLite opens a pipe
                # named as the WAL without a word, and its commits would block the writer once
                # the pipe's buffer is full (a directory or a link SQLite refuses itself, below)
                raise StoreError(f"cannot open database {path}: the file was left as it was{self._stray_companion()}")
            if self._ownership is not None:
                self._ownership.acquire(self.lock_wait_s)  # before the file is touched at all
            try:
                self._held()  # before the file is created, checked or migrated
            except BaseException:
                self._release()
                raise
            try:  # a new file: owner-only permissions before anything is written
                # at the file a symbolic link names: O_EXCL refuses a link even to nothing,
                # and SQLite then made the file (every deck) readable by all (umask 022)
                os.close(os.open(os.path.realpath(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                pass
            except OSError as exc:
                self._release()
                raise StoreError(f"cannot create database {path}: {exc.strerror}") from None
        else:
            self._held()
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=True)
        except sqlite3.Error as exc:
            self._release()
            raise StoreError(f"cannot open database {path}: {exc}") from None
        try:
            self._init_sync(conn)
        except BaseException:
            conn.close()
            self._release()
            raise
        self._conn = conn
        if path != ":memory:":
            self._inode, self._wal_inode = _inode(path), _inode(self._wal_path())

    def _release(self) -> None:
        if self._ownership is not None:
            self._ownership.release()

    def _init_sync(self, conn: sqlite3.Connection) -> None:
        path = self.path
        try:
            schema_objects = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            self._refuse_unwritable(exc)
            name = str(getattr(exc, "sqlite_errorname", "") or "")
            if name.startswith("SQLITE_CORRUPT"):
                # a SQLite file whose schema pages are damaged (truncated by a failed copy, a
                # torn page): SQLite read its header, so it is a database, and calling it "not
                # a SQLite database" sent the operator after a mistyped path instead of to the
                # backup. Only SQLITE_NOTADB (no SQLite header at all) is garbage.
                raise CorruptDatabase(self._corrupt(_reason(exc), "reading its schema")) from None
            self._refuse_environment(exc, "cannot open database")  # returns on SQLITE_NOTADB
            raise NotADatabase(f"{path} is not a SQLite database ({exc})") from None
        # A foreign application_id is another program's claim on the file even before it has
        # made a table: an empty file carrying one was given our schema and our id.
        if app_id != APPLICATION_ID and (schema_objects or app_id != 0):
            if app_id == 0 and version == 0 and self._has_our_tables(conn):
                # a copy made with sqlite3's .dump (or Python's iterdump) and loaded into a new
                # file: the rows came along, the header's application_id and user_version did
                # not. Calling it "another application's" sent the operator looking for the
                # wrong file; the way out is a copy made with the online backup.
                raise NotADatabase(
                    f"{path} holds this service's tables but no application_id nor schema version, "
                    "as a copy made with .dump or iterdump has (those leave SQLite's header out); "
                    "refusing to use it: restore a copy made with SQLite's online backup "
                    "(docs/operations.md, Backup and restore)")
            raise NotADatabase(f"{path} is a SQLite database of another application "
                               f"(application_id {app_id:#x}); refusing to use it")
        if app_id == APPLICATION_ID and version > SCHEMA_VERSION:
            raise NotADatabase(f"{path} has schema version {version}, newer than this "
                               f"program's {SCHEMA_VERSION}; upgrade the program")
        if not schema_objects and not self.create:
            raise NotADatabase(f"{path} holds no tables of this service")
        if schema_objects and path != ":memory:":
            self._check_integrity(conn)
        if schema_objects:
            self._check_schema(conn, version)
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if path != ":memory:" and str(mode).lower() != "wal":
                raise StoreError(f"{path}: cannot switch to WAL journal mode (got {mode})")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=5000")
            if not schema_objects:
                conn.execute("BEGIN IMMEDIATE")
                for statement in _statements(SCHEMA):
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            elif version < SCHEMA_VERSION and not self.migrate:
                self.outdated_from = version
            elif version < SCHEMA_VERSION:
                self._migrate(conn, version)
            if self.migrate and self.outdated_from is None and self._ownership is not None:
                # not in a dry run (which writes nothing) nor beside a running engine
                for statement in SUPPLEMENTARY_INDEXES:
                    conn.execute(statement)
        except sqlite3.DatabaseError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._refuse_unwritable(exc)
            self._refuse_environment(exc, "cannot prepare database")
            raise NotADatabase(f"{path} is not a usable SQLite database ({exc})") from None
        self._check_writable(conn)

    def _refuse_environment(self, exc: sqlite3.DatabaseError, doing: str) -> None:
        """Raise a :class:`~.base.StoreError` naming SQLite's reason when opening failed for a
        cause outside the file (SQLITE_FULL, SQLITE_IOERR_*, SQLITE_CANTOPEN, SQLITE_NOMEM...):
        a full volume made SQLite fail to size the WAL index of a sound database
        (SQLITE_IOERR_SHMSIZE) or to write a new one's schema (SQLITE_FULL), and the engine
        refused it as "not a SQLite database", which invites the operator to delete or
        restore over a good file. Only SQLITE_NOTADB and SQLITE_CORRUPT are about the file
        itself; anything else returns to the caller's verdict."""
        name = str(getattr(exc, "sqlite_errorname", "") or "")
        if not name or name == "SQLITE_NOTADB" or name.startswith(("SQLITE_CORRUPT", "SQLITE_ERROR")):
            return
        advice = self._stray_companion() or _volume_hint(exc)
        hint = f"; the file was left as it was{advice}" if advice else ""
        raise StoreError(f"{doing} {self.path}: {_reason(exc)}{hint}") from None

    def _stray_companion(self) -> str:
        """What to do when a name SQLite makes its own files under (``-wal``, ``-shm``,
        ``-journal``) is taken by something that is no file (a directory: a stray mount, a bad
        restore): SQLite then fails with a code that reads as a full or failing volume
        (SQLITE_CANTOPEN, SQLITE_IOERR_*) or as a file it may not write (SQLITE_READONLY), and
        the free-space or permissions advice sent the operator the wrong way. "" if none."""
        if self.path == ":memory:":
            return ""
        for suffix in _COMPANIONS:
            companion = f"{self.path}{suffix}"
            if os.path.lexists(companion) and not os.path.isfile(companion):
                kind = "a directory" if os.path.isdir(companion) else "not a regular file"
                return (f": {companion} is {kind}, where SQLite makes its own file: move it away, "
                        "then start again")
        return ""

    @staticmethod
    def _has_our_tables(conn: sqlite3.Connection) -> bool:
        """Whether the file holds tables named as this service's (the four of :data:`SCHEMA`)."""
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {"matches", "seats", "decks", "match_actions"} <= names

    def _check_writable(self, conn: sqlite3.Connection) -> None:
        """Refuse a database this process cannot write (:class:`~.base.DatabaseReadOnly`).

        SQLite opens a file it may not write read-only, without a word: a database restored
        as root and left owned by root, a file made read-only, a directory the engine cannot
        create the WAL in once the last one is gone. The engine used to start on it, resume
        its matches and answer health SERVING, and then every write (every action, join and
        new match) failed UNAVAILABLE with "attempt to write a readonly database". A write of
        nothing new (the schema version it holds, in a transaction rolled back) tells at once."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            self._refuse_unwritable(exc)
            raise StoreError(f"cannot write to {self.path}: {_reason(exc)}") from None
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def _refuse_unwritable(self, exc: sqlite3.DatabaseError) -> None:
        """Raise :class:`~.base.DatabaseReadOnly` when SQLite said it cannot write (any
        SQLITE_READONLY), rather than calling the file no database of ours: with the
        directory not writable, even reading a database in WAL mode fails so
        (SQLITE_READONLY_DIRECTORY), and the engine refused to start saying that the file
        "is not a SQLite database", which sent the operator after a damaged file."""
        if not str(getattr(exc, "sqlite_errorname", "") or "").startswith("SQLITE_READONLY"):
            return
        uid = os.getuid() if hasattr(os, "getuid") else None
        user = f" (uid {uid})" if uid is not None else ""
        advice = self._stray_companion() or (
            ": make the file and its directory writable by the engine's user, and check that "
            "the filesystem is not mounted read-only (docs/operations.md, When the database fails)")
        raise DatabaseReadOnly(
            f"{self.path} cannot be written by this process{user}: {_reason(exc)}; refusing to serve "
            f"from it{advice}") from None

    def _check_integrity(self, conn: sqlite3.Connection) -> None:
        """``PRAGMA quick_check`` of the whole file, before anything is written to it.

        Reading the header and the schema (above) touches only the first pages: a file whose
        other pages are damaged opened fine, the engine served (health SERVING), and then
        every read or write of the damaged tables failed with "database disk image is
        malformed". quick_check verifies every page of every table and index (not that the
        indexes agree with their tables, which integrity_check adds at several times the
        cost); a problem is a :class:`CorruptDatabase` naming the file and SQLite's report.

        The check is abandoned, with a ``db_check_skipped`` warning, past :attr:`check_budget_s`
        (:data:`CHECK_BUDGET_S`): its cost grows with the file, the start-up's should not."""
        budget = self.check_budget_s
        deadline = time.monotonic() + budget
        conn.set_progress_handler(lambda: time.monotonic() > deadline, 1_000)
        started = time.monotonic()
        try:
            report = [str(row[0]) for row in conn.execute("PRAGMA quick_check").fetchall()]
        except sqlite3.OperationalError as exc:
            if "interrupt" not in str(exc).lower():
                raise CorruptDatabase(self._corrupt(str(exc))) from None
            log.warning("db_check_skipped", db=self.path, budget_s=budget,
                        reason=f"PRAGMA quick_check did not finish within {budget:g} s",
                        hint=f"run: sqlite3 {self.path} 'PRAGMA quick_check' with the engine stopped")
            return
        except sqlite3.DatabaseError as exc:
            raise CorruptDatabase(self._corrupt(str(exc))) from None
        finally:
            conn.set_progress_handler(None, 0)
        if report != ["ok"]:
            # a row may hold several lines, under a "*** in database main ***" heading
            problems = [line.strip() for row in report for line in row.splitlines()
                        if line.strip() and not line.startswith("***")]
            shown = "; ".join(problems[:CHECK_REPORT_LINES])
            if len(problems) > CHECK_REPORT_LINES:
                shown += f" (and {len(problems) - CHECK_REPORT_LINES} more)"
            raise CorruptDatabase(self._corrupt(shown))
        self.check_s = time.monotonic() - started

    def _check_schema(self, conn: sqlite3.Connection, version: int) -> None:
        """Refuse a database of ours that lacks a table of the service (every version has the
        four) or, at the current version, a column (:class:`CorruptDatabase`), before anything
        is written to it. quick_check verifies pages, not that the tables are there: a file
        whose ``seats`` table had been dropped (a partial restore, a manual repair) opened, the
        engine served (health SERVING), and every match's creation then failed."""
        expected = _schema_columns()
        problems = []
        for table, columns in expected.items():
            have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            if not have:
                problems.append(f"no table {table}")
            elif version == SCHEMA_VERSION and columns - have:
                problems.append(f"table {table} lacks {', '.join(sorted(columns - have))}")
        if problems:
            raise CorruptDatabase(f"{self.path} lacks part of this service's schema (version {version}: "
                                  f"{'; '.join(problems)}); refusing to use it: restore the latest "
                                  "backup (docs/operations.md, Backup and restore)")

    def _corrupt(self, report: str, found_by: str = "PRAGMA quick_check") -> str:
        return (f"{self.path} is corrupt (SQLite {found_by}: {report}); refusing to use it: "
                "restore the latest backup (docs/operations.md, Backup and restore)")

    def _migrate(self, conn: sqlite3.Connection, version: int) -> None:
        """Bring a database of an older schema ``version`` to SCHEMA_VERSION: every step in one
        transaction (a failure leaves the file as it was, and says that the migration failed:
        it is the upgrade that went wrong, not a file that is not a database). A migration is
        logged (``db_migrated``): the operator sees when a file changed schema, and from
        which version, which rolling back needs."""
        if version < 1:
            raise NotADatabase(f"{self.path} has no schema version; refusing to use it")
        conn.execute("BEGIN IMMEDIATE")
        step = version + 1
        try:
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[step]:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._refuse_unwritable(exc)
            raise MigrationFailed(
                f"{self.path}: migrating the database from schema version {version} to "
                f"{SCHEMA_VERSION} failed at step {step} ({_reason(exc)}); the file was left as it "
                f"was (schema version {version}){self._stray_companion() or _volume_hint(exc)}") from None
        self.migrated_from = version
        log.info("db_migrated", db=self.path, from_version=version, to_version=SCHEMA_VERSION)

    async def close(self) -> None:
        if self._jobs is None:
            return
        try:
            await self._run(self._close_sync)
        finally:
            await self._stop()

    def _close_sync(self) -> None:
        if self._conn is not None:
            moved = self._file_moved() is not None
            self._conn.close()
            self._conn = None
            if moved:
                self._forget_moved_wal()
        self._release()  # only once the last write is committed and the file closed

    # ---- writes ------------------------------------------------------------------------

    async def create_match(self, record: MatchRecord, decks: Sequence[DeckRecord] = ()) -> None:
        await self._write("create_match", lambda c: self._create_sync(c, record, decks))

    def _create_sync(self, c: sqlite3.Connection, r: MatchRecord, decks: Sequence[DeckRecord]) -> None:
        try:
            c.execute(
                "INSERT INTO matches (match_id, game, options, first_dealer, turn_time_s, "
                "reconnect_grace_s, spectators_allowed, name, takeover_bot, created_at, status, "
                "result, ended_at, listed, deal_commitments, spectator_delay_actions, create_hash, "
                "create_digest) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (r.match_id, r.game, _dumps(dict(r.options)), r.first_dealer, r.turn_time_s,
                 r.reconnect_grace_s, int(r.spectators_allowed), r.name, r.takeover_bot,
                 r.created_at, r.status, None if r.result is None else _dumps(dict(r.result)),
                 r.ended_at, int(r.listed), _dumps(list(r.deal_commitments)) if r.deal_commitments else None,
                 r.spectator_delay_actions, r.create_hash or None, r.create_digest or None))
        except sqlite3.IntegrityError as exc:
            if "create_hash" in str(exc):  # "UNIQUE constraint failed: matches.create_hash"
                raise CreateIdTaken("a match was created with this client_create_id") from None
            if "matches.match_id" in str(exc):
                raise MatchExists(f"match {r.match_id!r} exists") from None
            # a CHECK (an unknown status): it was called MatchExists, which no retry gets past
            raise StoreError(f"match {r.match_id!r}: {_reason(exc)}") from None
        for s in r.seats:
            self._insert_seat(c, r.match_id, s)
        self._insert_decks(c, r.match_id, decks)

    @staticmethod
    def _insert_seat(c: sqlite3.Connection, match_id: str, s: SeatRecord) -> None:
        """A new match's seat."""
        try:
            c.execute(
                "INSERT INTO seats (match_id, seat, kind, bot, player_name, token_hash, joined_at, "
                "left_match, join_hash) VALUES (?,?,?,?,?,?,?,?,?)",
                (match_id, s.seat, s.kind, s.bot, s.player_name, s.token_hash or None, s.joined_at,
                 int(s.left), s.join_hash or None))
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"seat {s.seat} of match {match_id!r}: {exc}") from None

    @staticmethod
    def _update_seat(c: sqlite3.Connection, match_id: str, s: SeatRecord) -> None:
        """Replace one of the match's seats. A seat number the match does not have is
        UnknownMatch: an upsert added it as a row of its own, and the match was read back with
        a seat more than it has."""
        try:
            cur = c.execute(
                "UPDATE seats SET kind = ?, bot = ?, player_name = ?, token_hash = ?, joined_at = ?, "
                "left_match = ?, join_hash = ? WHERE match_id = ? AND seat = ?",
                (s.kind, s.bot, s.player_name, s.token_hash or None, s.joined_at, int(s.left),
                 s.join_hash or None, match_id, s.seat))
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"seat {s.seat} of match {match_id!r}: {exc}") from None
        if cur.rowcount == 0:
            raise UnknownMatch(f"no seat {s.seat} in match {match_id!r}")

    @staticmethod
    def _insert_decks(c: sqlite3.Connection, match_id: str, decks: Sequence[DeckRecord]) -> None:
        for d in decks:
            try:
                c.execute("INSERT INTO decks (match_id, deal, cards, salt, scheme) VALUES (?,?,?,?,?)",
                          (match_id, d.deal, _dumps(list(d.cards)), d.salt, d.scheme))
            except sqlite3.IntegrityError:
                raise StoreError(f"match {match_id!r} has a deck for deal {d.deal}") from None

    @staticmethod
    def _require_match(c: sqlite3.Connection, match_id: str) -> None:
        if c.execute("SELECT 1 FROM matches WHERE match_id = ?", (match_id,)).fetchone() is None:
            raise UnknownMatch(f"no match {match_id!r}")

    async def save_seat(self, match_id: str, seat: SeatRecord) -> None:
        def fn(c: sqlite3.Connection) -> None:
            self._require_match(c, match_id)
            self._update_seat(c, match_id, seat)
        await self._write("save_seat", fn)

    async def save_absence(self, match_id: str, seat: int, away_since: float | None,
                           taken_over: bool = False, away_seen: float | None = None) -> None:
        seen = away_since if away_since is None or away_seen is None else away_seen

        def fn(c: sqlite3.Connection) -> None:
            cur = c.execute("UPDATE seats SET away_since = ?, away_seen = ?, taken_over = ? "
                            "WHERE match_id = ? AND seat = ?",
                            (away_since, seen, int(bool(taken_over) and away_since is not None),
                             match_id, seat))
            if cur.rowcount == 0:
                self._require_match(c, match_id)
                raise UnknownMatch(f"no seat {seat} in match {match_id!r}")
        await self._write("save_absence", fn)

    async def ping(self) -> None:
        # an empty write: the batch's BEGIN IMMEDIATE (the write lock, a read-only file),
        # the moved-file check and the COMMIT, as any write; a full disk is seen only by a
        # write that changes a page
        await self._submit(lambda conn: None, write=True)

    async def touch_absences(self, seats: Sequence[tuple[str, int]], at: float) -> None:
        pairs = [(at, match_id, seat) for match_id, seat in seats]
        if not pairs:
            return

        def fn(c: sqlite3.Connection) -> None:
            c.executemany("UPDATE seats SET away_seen = ? WHERE match_id = ? AND seat = ? "
                          "AND away_since IS NOT NULL", pairs)
        await self._write("touch_absences", fn)

    async def set_status(self, match_id: str, status: str, result: Mapping[str, Any] | None = None,
                         ended_at: float | None = None, deal_commitments: Sequence[str] = ()) -> None:
        def fn(c: sqlite3.Connection) -> None:
            self._update_status(c, match_id, status, result, ended_at, deal_commitments)
        await self._write("set_status", fn)

    @staticmethod
    def _update_status(c: sqlite3.Connection, match_id: str, status: str, result: Mapping[str, Any] | None,
                       ended_at: float | None, deal_commitments: Sequence[str]) -> None:
        cur = c.execute("UPDATE matches SET status = ?, result = ?, ended_at = ?, deal_commitments = ? "
                        "WHERE match_id = ?",
                        (status, None if result is None else _dumps(dict(result)), ended_at,
                         _dumps(list(deal_commitments)) if deal_commitments else None, match_id))
        if cur.rowcount == 0:
            raise UnknownMatch(f"no match {match_id!r}")

    async def start_match(self, match_id: str, seats: Sequence[SeatRecord] = (),
                          decks: Sequence[DeckRecord] = ()) -> None:
        def fn(c: sqlite3.Connection) -> None:  # in the write's savepoint: a refusal undoes it all
            row = c.execute("SELECT status FROM matches WHERE match_id = ?", (match_id,)).fetchone()
            if row is None:
                raise UnknownMatch(f"no match {match_id!r}")
            if row[0] != "waiting":
                raise MatchNotWaiting(f"match {match_id!r} is {row[0]}, not waiting")
            for s in seats:
                self._update_seat(c, match_id, s)
            self._insert_decks(c, match_id, decks)
            c.execute("UPDATE matches SET status = 'active' WHERE match_id = ?", (match_id,))
        await self._write("start_match", fn)

    async def append_action(self, match_id: str, action: ActionRecord,
                            decks: Sequence[DeckRecord] = (), end: MatchEnd | None = None) -> None:
        def fn(c: sqlite3.Connection) -> None:
            known, last = c.execute(  # one statement: the match exists, and its last seq
                "SELECT (SELECT 1 FROM matches WHERE match_id = ?), "
                "(SELECT coalesce(max(seq), 0) FROM match_actions WHERE match_id = ?)",
                (match_id, match_id)).fetchone()
            if known is None:
                raise UnknownMatch(f"no match {match_id!r}")
            if 1 <= action.seq <= last:
                raise SequenceConflict(f"match {match_id!r} has an action at seq {action.seq}")
            if action.seq != last + 1:
                raise StoreError(f"match {match_id!r}: seq {action.seq} is not the next one")
            try:
                c.execute(
                    "INSERT INTO match_actions (match_id, seq, seat, action, by_whom, "
                    "client_action_id, reason, at) VALUES (?,?,?,?,?,?,?,?)",
                    (match_id, action.seq, action.seat, action.action, action.by,
                     action.client_action_id or None, action.reason, action.at))
            except sqlite3.IntegrityError:
                raise DuplicateClientAction(f"client_action_id reused in match {match_id!r}") from None
            self._insert_decks(c, match_id, decks)
            if end is not None:
                self._update_status(c, match_id, end.status, end.result, end.ended_at, end.deal_commitments)
        await self._write("append_action", fn)

    async def append_decks(self, match_id: str, decks: Sequence[DeckRecord]) -> None:
        def fn(c: sqlite3.Connection) -> None:
            self._require_match(c, match_id)
            self._insert_decks(c, match_id, decks)
        await self._write("append_decks", fn)

    # ---- reads -------------------------------------------------------------------------

    @staticmethod
    def _record(c: sqlite3.Connection, row: tuple) -> MatchRecord:
        (match_id, game, options, first_dealer, turn_time_s, grace, spectators, name, takeover,
         created_at, status, result, ended_at, listed, commitments, spectator_delay, create_hash,
         create_digest) = row
        seats = tuple(
            SeatRecord(seat=s, kind=k, bot=b, player_name=n, token_hash=t or "", joined_at=j, left=bool(lm),
                       join_hash=jh or "", away_since=aw, away_seen=seen, taken_over=bool(to))
            for s, k, b, n, t, j, lm, jh, aw, seen, to in c.execute(
                "SELECT seat, kind, bot, player_name, token_hash, joined_at, left_match, join_hash, "
                "away_since, away_seen, taken_over FROM seats "
                "WHERE match_id = ? ORDER BY seat", (match_id,)))
        return MatchRecord(
            match_id=match_id, game=game, options=json.loads(options), first_dealer=first_dealer,
            seats=seats, turn_time_s=turn_time_s, reconnect_grace_s=grace,
            spectators_allowed=bool(spectators), name=name, takeover_bot=takeover,
            created_at=created_at, status=status,
            result=None if result is None else json.loads(result), ended_at=ended_at,
            listed=bool(listed), deal_commitments=tuple(json.loads(commitments)) if commitments else (),
            spectator_delay_actions=spectator_delay, create_hash=create_hash or "",
            create_digest=create_digest or "")

    _MATCH_COLUMNS = ("match_id, game, options, first_dealer, turn_time_s, reconnect_grace_s, "
                      "spectators_allowed, name, takeover_bot, created_at, status, result, ended_at, "
                      "listed, deal_commitments, spectator_delay_actions, create_hash, create_digest")

    async def find_created(self, create_hash: str) -> tuple[str, str] | None:
        def fn() -> tuple[str, str] | None:
            if not create_hash:
                return None
            try:
                row = self._db().execute("SELECT match_id, create_digest FROM matches WHERE create_hash = ?",
                                         (create_hash,)).fetchone()
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"cannot look up a client_create_id: {_reason(exc)}") from None
            return None if row is None else (row[0], row[1] or "")
        return await self._read("find_created", fn)

    async def load_match(self, match_id: str) -> StoredMatch | None:
        return await self._read("load_match", lambda: self._load_sync(match_id))

    def _load_sync(self, match_id: str) -> StoredMatch | None:
        c = self._db()
        try:
            row = c.execute(f"SELECT {self._MATCH_COLUMNS} FROM matches WHERE match_id = ?",
                            (match_id,)).fetchone()
            if row is None:
                return None
            record = self._record(c, row)
            decks = tuple(DeckRecord(d, tuple(json.loads(cards)), salt, scheme) for d, cards, salt, scheme in c.execute(
                "SELECT deal, cards, salt, scheme FROM decks WHERE match_id = ? ORDER BY deal", (match_id,)))
            actions = tuple(
                ActionRecord(seq=q, seat=s, action=a, by=b, client_action_id=cid or "", reason=r, at=t)
                for q, s, a, b, cid, r, t in c.execute(
                    "SELECT seq, seat, action, by_whom, client_action_id, reason, at FROM match_actions "
                    "WHERE match_id = ? ORDER BY seq", (match_id,)))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot read match {match_id!r}: {_reason(exc)}") from None
        return StoredMatch(record, decks, actions)

    async def _read(self, operation: str, fn: Callable[[], T]) -> T:
        """Run the read ``fn()`` on the store thread; SQLite's refusal (an I/O error, a damaged
        page) is a StoreError naming its reason, as a write's is and as the PostgreSQL store's
        reads are: a raw sqlite3 error reached the client as INTERNAL, where a store that
        cannot be read now is UNAVAILABLE (STORE_UNAVAILABLE). Every StoreError, a read
        refused by a closed store too, is counted in store_errors (Store.close)."""
        def read() -> T:
            try:
                return fn()
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{operation} failed: {_reason(exc)}") from None
        try:
            return await self._run(read)
        except StoreError:
            self._timer.error(operation)
            raise

    async def list_matches(self, statuses: Sequence[str] = (), game: str = "",
                           limit: int = 100, after: tuple[float, str] | None = None) -> list[MatchListing]:
        return await self._read("list_matches", lambda: self._list_sync(tuple(statuses), game, limit, after))

    def _list_sync(self, statuses: tuple[str, ...], game: str, limit: int,
                   after: tuple[float, str] | None = None) -> list[MatchListing]:
        c = self._db()
        where: list[str] = []
        args: list[Any] = []
        if statuses:
            where.append(f"status IN ({','.join('?' * len(statuses))})")
            args += list(statuses)
        if game:
            where.append("game = ?")
            args.append(game)
        if after is not None:
            # The row value (SQLite >= 3.15) is the cursor. SQLite derives ``created_at < ?``
            # from it, so the range scan of matches_by_status (status, created_at) starts at
            # the cursor, not at the newest match (EXPLAIN QUERY PLAN: "SEARCH m USING INDEX
            # matches_by_status (status=? AND created_at<?)"; tests/store/test_store.py).
            where.append("(created_at, match_id) < (?, ?)")
            args += [after[0], after[1]]
        sql = (f"SELECT {self._MATCH_COLUMNS}, (SELECT coalesce(max(seq), 0) FROM match_actions a "
               f"WHERE a.match_id = m.match_id) FROM matches m"
               + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY created_at DESC, match_id DESC LIMIT ?")
        rows = c.execute(sql, (*args, max(0, limit))).fetchall()
        return [MatchListing(self._record(c, row[:-1]), row[-1]) for row in rows]

    async def unfinished_match_ids(self) -> list[str]:
        def fn() -> list[str]:
            c = self._db()
            return [r[0] for r in c.execute(
                f"SELECT match_id FROM matches WHERE status IN ({','.join('?' * len(UNFINISHED))}) "
                "ORDER BY created_at, match_id", UNFINISHED)]
        return await self._read("unfinished_match_ids", fn)

    # ---- retention (docs/operations.md, Retention) -------------------------------------------

    #: The ended matches a prune may delete. ``created_at < ?`` changes nothing (a match ends
    #: after it is created) but lets SQLite range-scan ``matches_by_status (status,
    #: created_at)`` instead of reading every ended match (there is no index on ended_at).
    _PRUNABLE = (f"status IN ({','.join('?' * len(FINISHED))}) AND created_at < ? "
                 "AND ended_at IS NOT NULL AND ended_at < ?")

    async def prune_finished(self, ended_before: float, limit: int = 100) -> PrunedBatch:
        limit = max(0, min(int(limit), MAX_PRUNE_BATCH))

        def fn(c: sqlite3.Connection) -> PrunedBatch:
            ids = [r[0] for r in c.execute(f"SELECT match_id FROM matches WHERE {self._PRUNABLE} LIMIT ?",
                                           (*FINISHED, ended_before, ended_before, limit))]
            if not ids:
                return PrunedBatch()
            among = f"match_id IN ({','.join('?' * len(ids))})"
            actions = c.execute(f"DELETE FROM match_actions WHERE {among}", ids).rowcount
            decks = c.execute(f"DELETE FROM decks WHERE {among}", ids).rowcount
            seats = c.execute(f"DELETE FROM seats WHERE {among}", ids).rowcount
            matches = c.execute(f"DELETE FROM matches WHERE {among}", ids).rowcount
            return PrunedBatch(tuple(ids), PruneCounts(matches, actions, decks, seats))

        # one write among the others (group commit), but not in store_write_seconds: a batch
        # deletes thousands of rows, and the latency that alerts watch is that of the actions
        try:
            return await self._submit(fn, write=True)
        except StoreError:
            self._timer.error("prune_finished")
            raise

    async def count_finished(self, ended_before: float) -> PruneCounts:
        def fn() -> PruneCounts:
            c = self._db()
            row = c.execute(
                "SELECT count(*), "
                "coalesce(sum((SELECT count(*) FROM match_actions a WHERE a.match_id = m.match_id)), 0), "
                "coalesce(sum((SELECT count(*) FROM decks d WHERE d.match_id = m.match_id)), 0), "
                "coalesce(sum((SELECT count(*) FROM seats s WHERE s.match_id = m.match_id)), 0) "
                f"FROM matches m WHERE {self._PRUNABLE}", (*FINISHED, ended_before, ended_before)).fetchone()
            return PruneCounts(*row)
        return await self._read("count_finished", fn)

    async def space(self) -> "SqliteSpace":
        """How the database file uses the disk (the offline prune's VACUUM decision)."""
        def fn() -> SqliteSpace:
            c = self._db()
            page_size = c.execute("PRAGMA page_size").fetchone()[0]
            pages = c.execute("PRAGMA page_count").fetchone()[0]
            free = c.execute("PRAGMA freelist_count").fetchone()[0]
            return SqliteSpace(_size(self.path), _size(self._wal_path()), pages * page_size, free * page_size)
        return await self._run(fn)

    async def vacuum(self) -> None:
        """Rebuild the file without its free pages (``VACUUM``), then empty the WAL. Blocks
        every other call of this store while it runs: for a store no engine serves from."""
        def fn() -> None:
            c = self._db()
            c.execute("VACUUM")
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try:
            await self._run(fn)
        except sqlite3.Error as exc:
            raise StoreError(f"VACUUM of {self.path} failed: {_reason(exc)}") from None


@dataclass(frozen=True)
class SqliteSpace:
    """Bytes: the database file and its WAL on disk; the database's pages, and those of them
    on the free list (reused by new rows; only VACUUM gives them back to the filesystem)."""

    file_bytes: int
    wal_bytes: int
    database_bytes: int
    free_bytes: int

    @property
    def live_bytes(self) -> int:
        return self.database_bytes - self.free_bytes


_COMPANIONS = ("-wal", "-shm", "-journal")  # the names beside the file SQLite makes its own files under


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _special_companion(path: str) -> bool:
    """Whether one of the names SQLite makes its own files under (:data:`_COMPANIONS`) is a
    pipe, a socket or a device (not followed through a link)."""
    for suffix in _COMPANIONS:
        try:
            mode = os.lstat(f"{path}{suffix}").st_mode
        except OSError:
            continue
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return True
    return False


def _has_sqlite_header(path: str) -> bool:
    """Whether ``path`` may be a SQLite database: missing or empty (SQLite makes an empty file
    a database), or starting with SQLite's header. Read without the lock, as a backup reads.
    A file of one byte is empty to SQLite (os_unix.c reports its size as 0: the byte it writes
    into a new file on some file systems, ticket #3260), and made a database as an empty one."""
    try:
        with open(path, "rb") as file:
            head = file.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return True
    except OSError:
        return True  # unreadable: SQLite says why (SQLITE_CANTOPEN, SQLITE_READONLY...)
    return len(head) <= 1 or head == _SQLITE_HEADER


_SQLITE_HEADER = b"SQLite format 3\x00"
