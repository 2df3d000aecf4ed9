"""The PostgreSQL store: the system of record once the service outgrows one machine
(ARCHITECTURE.md section 7), selected by a ``postgresql://`` (or ``postgres://``) location.

It keeps the semantics of :class:`~.sqlite.SqliteStore` exactly (same tables, same errors, same
metrics), with PostgreSQL doing what the SQLite store does by hand:

* **Durable before acknowledged**: every call is one committed transaction, on connections
  whose ``synchronous_commit`` is at least ``on`` (raised to it if the server says ``off`` or
  ``local``), so a write returns only once its commit is flushed to the WAL.
* **Never blocks the event loop**: psycopg 3's asyncio API, over a small connection pool;
  concurrent writes of different matches commit in parallel and share WAL flushes (the
  server's own group commit), where the SQLite store batches them on its thread.
* **The constraints decide**: ``match_actions(match_id, seq)`` is the primary key and
  ``(match_id, seat, client_action_id)`` a unique key, so two writers appending at the same
  seq get :class:`~.base.SequenceConflict` from the database itself, not from a read that
  could race. An action without a deck is one statement and its commit (two round trips).
* **Knows what its lost commits did**: every write learns its transaction id
  (``pg_current_xact_id()``, returned by the write's own statement) before it commits. When
  the connection is lost while the commit is in flight, the store asks a fresh connection
  ``pg_xact_status`` (polling one still 'in progress' for up to :data:`RESOLVE_S`): a commit
  that happened returns normally (logged ``store_commit_resolved``), one that did not, or whose
  outcome stays unknown, is a :class:`~.base.StoreError` as before (the caller's own in-doubt
  handling: the client's retry with its ``client_action_id``, the session layer's read-back
  of a start). Hence PostgreSQL 13 or newer.
* **Refuses what it does not own**: the schema (the database's default one, or the first of
  the ``search_path`` given with ``?options=-csearch_path%3Dname``) carries
  an ``engine_meta`` table with the application and schema version; a schema holding other
  tables, another application's meta or a newer version is :class:`~.base.NotADatabase`.
* **Secrets stay in**: seat tokens are stored as hashes only (the session layer hashes them);
  decks are never put in an error message (server errors are reported by their primary
  message, never the DETAIL that may quote a row); the DSN's password never appears in a
  message (:func:`redact`).

* **One engine per database (schema)**: the store holds an advisory lock on a connection of
  its own while it is open, watches it, and refuses writes while it is gone
  (:mod:`.pg_ownership`). Several replicas on one database would need the event fan-out
  between them (LISTEN/NOTIFY), which is not written yet (docs/operations.md).
* **Rides out a server restart**: a call whose connection was lost puts the ownership in
  doubt (writes refused until the lock is confirmed or taken again: a restarted server holds
  no lock); while the server cannot be reached every call fails at once, saying why, instead
  of waiting :data:`POOL_TIMEOUT_S` for a connection (clients with shorter deadlines got
  DEADLINE_EXCEEDED, not UNAVAILABLE); once it is back the idle connections, dead with the
  old server, are checked before writes resume, and the pool reconnects within
  :data:`RECONNECT_S`. No engine restart is needed.
* **Never hangs on a hung server**: every call is bounded by :data:`CALL_TIMEOUT_S` on the
  client's side (a server whose processes are stopped, or a host gone without resetting its
  connections, leaves the kernel acknowledging, or nobody answering, while no answer comes:
  neither keepalives nor libpq notice). A call without an answer by then has its connection
  severed (:func:`.pg_ownership.sever`: closed, never returned to the pool) and fails with a
  StoreError; a write whose COMMIT may have been sent goes through the resolution of a lost
  commit (itself bounded by :data:`RESOLVE_S`) and is acknowledged only if it committed. The
  pool's connections also ask libpq for TCP keepalives and ``tcp_user_timeout``, unless the
  DSN sets them, and the server for the lock session's keepalives, ``tcp_user_timeout`` and an
  ``idle_in_transaction_session_timeout`` unless its configuration sets them; once the lock is
  held again after a hang or a partition, the sessions of the calls it severed that the server
  still keeps waiting for it are ended (:meth:`PostgresStore._end_severed`), and a check of the
  lock without an answer severs every call waiting on the server at once
  (:meth:`PostgresStore._silent`). What the store does between calls is bounded too: the check of the pool's
  idle connections once the lock is taken again (:class:`_Pool`, :meth:`PostgresStore._restored`)
  and, at :meth:`~PostgresStore.open`, the preparation of the schema (``call_timeout_s``).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping, Sequence, TypeVar
from urllib.parse import unquote

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
import structlog

from ..observability.metrics import Metrics
from .base import (FINISHED, MAX_PRUNE_BATCH, UNFINISHED, ActionRecord, CreateIdTaken, DatabaseReadOnly, DeckRecord,
                   DuplicateClientAction, MatchEnd, MatchExists, MatchListing, MatchNotWaiting, MatchRecord,
                   MigrationFailed, NotADatabase, OwnershipLost, PruneCounts, PrunedBatch, SeatRecord,
                   SequenceConflict, Store, StoredMatch, StoreError, UnknownMatch)
from .pg_ownership import (CHECK_S, CLIENT_KEEPALIVES, SERVER_KEEPALIVES, SERVER_WINDOW_S,
                           TIMEOUT_S as OWNER_TIMEOUT_S, AdvisoryOwnership, Bound, reason_of as _reason)

T = TypeVar("T")
#: The server's settings that end the session of an engine gone or cut off (pg_ownership).
_SERVER_KEEPALIVE_SETTINGS = (("tcp_keepalives_idle", str(SERVER_KEEPALIVES[0])),
                              ("tcp_keepalives_interval", str(SERVER_KEEPALIVES[1])),
                              ("tcp_keepalives_count", str(SERVER_KEEPALIVES[2])),
                              ("tcp_user_timeout", str(SERVER_WINDOW_S * 1000)))
log = structlog.get_logger("engine_service.store")

APPLICATION = "cardgames-engine"
SCHEMA_VERSION = 8
META_TABLE = "engine_meta"
#: Serializes the schema check and creation of processes opening the same database at once.
OPEN_LOCK_KEY = 0x43474531  # "CGE1", the SQLite store's application_id
CONNECT_TIMEOUT_S = 10  # libpq's connect_timeout unless the DSN sets one
POOL_TIMEOUT_S = 10.0  # a call waits this long for a free connection before failing
#: The longest a store call waits for the server, its wait for a connection included (the
#: store's ``call_timeout_s``). A server that stopped answering without closing its
#: connections (its processes stopped or frozen, a host gone without a reset, a network
#: silently dropping packets) left a call waiting for ever, the kernel acknowledging the
#: packets or nobody answering, and every later call on that match waiting behind it (the
#: match's lock). Past this bound the call's connection is severed and discarded, and the call
#: is a StoreError (``UNAVAILABLE``); a write whose COMMIT may have been sent is asked about
#: first (:data:`RESOLVE_S` more at most). Well above any write's normal latency (a few ms; a
#: retention batch of thousands of rows, well under a second).
CALL_TIMEOUT_S = 20.0
#: libpq's ``tcp_user_timeout`` (ms) on the pool's connections unless the DSN sets one: data
#: sent and not acknowledged for this long (a host gone, a network cut) ends the connection.
TCP_USER_TIMEOUT_MS = 20_000
#: How long the pool tries to replace a lost connection before giving up (the next call that
#: finds no connection starts again at once). psycopg_pool's default, 5 minutes of attempts
#: backing off exponentially, left an engine whose server came back after an outage waiting
#: for the next attempt, as long again as the outage had lasted (a 45 s restart: 14 s more).
RECONNECT_S = 2.0
#: How long a call waits for the ownership's check after a lost connection (pg_ownership)
#: to learn whether the server can be reached, before trying the pool all the same.
VERDICT_WAIT_S = 1.0
#: How long a commit whose answer was lost is asked about (``pg_xact_status``) before it is
#: reported in doubt: the fresh connection's set-up and the polls of an 'in progress' one.
RESOLVE_S = 3.0
RESOLVE_POLL_S = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)  # the waits between polls, the last repeated
#: The share of ``call_timeout_s`` each statement of a retention batch may take, by the
#: server's own ``statement_timeout`` (4 deletes: half the bound at most, the commit and the
#: selection well within the rest). A batch of 500 matches of long logs on a slow server took
#: longer than the bound: cut off there, its connection severed, rolled back, and retried as
#: it was at the next pass, the prune never progressed.
PRUNE_STATEMENT_SHARE = 1 / 8
#: ``idle_in_transaction_session_timeout`` of the pool's sessions, in ``call_timeout_s``
#: (:meth:`PostgresStore._configure`): 30 s by default.
IDLE_IN_TRANSACTION_FACTOR = 1.5
MIN_SERVER_VERSION = 130000  # pg_current_xact_id() and pg_xact_status(xid8)
PIPELINE = psycopg.Pipeline.is_supported()  # libpq 14 or newer (psycopg's binary package has it)
#: The transaction id, as the last column of a write's first statement (see _Transaction).
XID = "pg_current_xact_id()::text"

SCHEMA = (
    f"""CREATE TABLE {META_TABLE} (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE matches (
        match_id           TEXT PRIMARY KEY,
        game               TEXT NOT NULL,
        options            JSONB NOT NULL,          -- non-default table options
        first_dealer       INTEGER NOT NULL,
        turn_time_s        DOUBLE PRECISION NOT NULL,
        reconnect_grace_s  DOUBLE PRECISION NOT NULL,
        spectators_allowed BOOLEAN NOT NULL,
        name               TEXT NOT NULL,
        takeover_bot       TEXT NOT NULL,
        created_at         DOUBLE PRECISION NOT NULL,  -- Unix time, seconds
        status             TEXT NOT NULL CHECK (status IN ('waiting', 'active', 'finished', 'terminated')),
        result             JSONB,                   -- once the match has ended
        ended_at           DOUBLE PRECISION,
        listed             BOOLEAN NOT NULL DEFAULT false,  -- in the lobby while waiting (schema 2)
        deal_commitments   TEXT[],                 -- recorded at the end (schema 4)
        spectator_delay_actions INTEGER NOT NULL DEFAULT 0, -- spectators' lag in actions (schema 5)
        create_hash        TEXT,                    -- sha256 hex of the client_create_id (NULL: none; schema 7)
        create_digest      TEXT                     -- sha256 hex of the request it created (schema 7)
    )""",
    "CREATE INDEX matches_by_status ON matches (status, created_at)",
    "CREATE UNIQUE INDEX matches_by_create_hash ON matches (create_hash) WHERE create_hash IS NOT NULL",
    "CREATE INDEX matches_by_creation ON matches (created_at, match_id)",
    """CREATE TABLE seats (
        match_id    TEXT NOT NULL REFERENCES matches (match_id),
        seat        INTEGER NOT NULL,
        kind        TEXT NOT NULL CHECK (kind IN ('open', 'bot')),
        bot         TEXT NOT NULL,
        player_name TEXT NOT NULL,
        token_hash  TEXT,                            -- sha256 hex of the seat token (NULL: free)
        joined_at   DOUBLE PRECISION,
        left_match  BOOLEAN NOT NULL,
        join_hash   TEXT,                            -- sha256 hex of the client_join_id (NULL: none; schema 6)
        away_since  DOUBLE PRECISION,                -- Unix time its player's grace window started (schema 8)
        away_seen   DOUBLE PRECISION,                -- newest Unix time the engine served meanwhile (schema 8)
        taken_over  BOOLEAN NOT NULL DEFAULT false,  -- the takeover bot plays it, GJ-12.4 (schema 8)
        PRIMARY KEY (match_id, seat)
    )""",
    "CREATE UNIQUE INDEX seats_by_token ON seats (token_hash) WHERE token_hash IS NOT NULL",
    """CREATE TABLE decks (
        match_id TEXT NOT NULL REFERENCES matches (match_id),
        deal     INTEGER NOT NULL,
        cards    TEXT[] NOT NULL,                    -- card codes, top card first (secret)
        salt     TEXT NOT NULL DEFAULT '',           -- commitment salt, 32 hex ('': none; schema 3)
        scheme   INTEGER NOT NULL DEFAULT 1,         -- commitment scheme (schema 4; 1: whole deck)
        PRIMARY KEY (match_id, deal)
    )""",
    """CREATE TABLE match_actions (
        match_id         TEXT NOT NULL REFERENCES matches (match_id),
        seq              INTEGER NOT NULL,
        seat             INTEGER NOT NULL,
        action           TEXT NOT NULL,
        by_whom          TEXT NOT NULL,
        client_action_id TEXT,                       -- NULL for bot and auto moves
        reason           TEXT NOT NULL,
        at               DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (match_id, seq)
    )""",
    """CREATE UNIQUE INDEX match_actions_by_client_id
        ON match_actions (match_id, seat, client_action_id) WHERE client_action_id IS NOT NULL""",
)

#: The privileges the store's statements need on each table (checked at open: a role that
#: lacks one is refused then, not at its first write). DELETE, which only retention needs, is
#: not asked for: an engine without --keep-finished-days never deletes.
WRITE_PRIVILEGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (META_TABLE, ("SELECT",)),
    ("matches", ("SELECT", "INSERT", "UPDATE")),
    ("seats", ("SELECT", "INSERT", "UPDATE")),
    ("decks", ("SELECT", "INSERT")),
    ("match_actions", ("SELECT", "INSERT")),
)

#: How a schema of an older version becomes the current one: the statements taking version
#: ``n - 1`` to ``n``, applied in order inside the open transaction (docs/operations.md,
#: Upgrades). An empty schema gets SCHEMA at once.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: ("ALTER TABLE matches ADD COLUMN listed BOOLEAN NOT NULL DEFAULT false",),
    3: ("ALTER TABLE decks ADD COLUMN salt TEXT NOT NULL DEFAULT ''",),
    4: ("ALTER TABLE decks ADD COLUMN scheme INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE matches ADD COLUMN deal_commitments TEXT[]"),
    5: ("ALTER TABLE matches ADD COLUMN spectator_delay_actions INTEGER NOT NULL DEFAULT 0",),
    6: ("ALTER TABLE seats ADD COLUMN join_hash TEXT",),
    7: ("ALTER TABLE matches ADD COLUMN create_hash TEXT",
        "ALTER TABLE matches ADD COLUMN create_digest TEXT",
        "CREATE UNIQUE INDEX matches_by_create_hash ON matches (create_hash) WHERE create_hash IS NOT NULL"),
    8: ("ALTER TABLE seats ADD COLUMN away_since DOUBLE PRECISION",
        "ALTER TABLE seats ADD COLUMN away_seen DOUBLE PRECISION",
        "ALTER TABLE seats ADD COLUMN taken_over BOOLEAN NOT NULL DEFAULT false"),
}


#: A URL's ``user:password@``, read as libpq reads it: the user info ends at the first "@"
#: unless a "/" comes first ("?" and "#" may be in a password as they are)
_USERINFO_PASSWORD = re.compile(r"(://[^:/@]*):[^@/]*@")
#: A password with an unencoded "/" (``openssl rand -base64`` writes them): libpq ends the user
#: info at that "/" and reads ``user:pass`` as a host and a port, so the rule above does not
#: see a password, and the whole URL, password included, reached the start-up line and the
#: refusal. What follows ``user:`` up to the "@" is taken for a password unless it is a port
#: (digits, or the first port of a host list) whose "@" comes only in the query: a password
#: may start with digits and a "/" too (``7/Qx...@``, ``12/34@``).
_MISREAD_PASSWORD = re.compile(r"(://[^:/@?#\[]*):(?![0-9]+(?:[,?#]|$|/[^@?#]*(?:[?#]|$)))[^@]*@")
#: libpq's key=value ``password`` and ``sslpassword`` (the passphrase of the client's key)
_PASSWORD_PARAMETER = re.compile(r"(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]*)")
_PASSWORD_NAMES = ("password", "sslpassword")
#: A URL's query parameter: libpq percent-decodes its name too (``pass%77ord=``)
_QUERY_PARAMETER = re.compile(r"([?&])([^=&]*)=([^&]*)")


def _redact_query(match: re.Match) -> str:
    name = unquote(match.group(2)).strip().lower()
    return f"{match.group(1)}{match.group(2)}=***" if name in _PASSWORD_NAMES else match.group(0)


def redact(dsn: str) -> str:
    """``dsn`` without its password (``user:password@``, one libpq misreads for its unencoded
    "/", or a ``password=`` or ``sslpassword=`` parameter of a URL or of a ``key=value``
    string): the form that may appear in logs and error messages."""
    dsn = _USERINFO_PASSWORD.sub(r"\1:***@", dsn)
    dsn = _MISREAD_PASSWORD.sub(r"\1:***@", dsn)
    if "://" in dsn:
        dsn = _QUERY_PARAMETER.sub(_redact_query, dsn)
    return _PASSWORD_PARAMETER.sub(r"\1***", dsn)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _json(obj: Mapping[str, Any] | None) -> Jsonb | None:
    return None if obj is None else Jsonb(dict(obj), dumps=_dumps)


class _Transaction:
    """One write's transaction on its pooled connection, which learns its transaction id
    (:attr:`xid`, from :data:`XID` returned by its first statement) before it commits, so that
    :meth:`PostgresStore._transaction` can resolve a commit whose answer was lost. Two kinds:

    * :meth:`write`: a write of one statement (an action without a deck, a seat, a status) in
      pipeline mode without ``BEGIN``: the statement runs in the implicit transaction of the
      extended query protocol, its rows come back at a Flush (the first round trip), and the
      Sync that ends the pipeline commits it (the second; the autocommitted statement it
      replaces cost one). The statement stays prepared on the connection when repeated.
    * :meth:`begin`: an explicit transaction of several statements: ``BEGIN`` and the first
      statement in one round trip (the simple query protocol, the values bound by the
      client), the next ones on :attr:`conn` as usual, then ``COMMIT``.

    A function given to :meth:`PostgresStore._write` opens one of them or neither (then it ran
    in autocommit: nothing to commit)."""

    __slots__ = ("conn", "xid", "refused", "_pipeline", "_explicit")

    def __init__(self, conn: psycopg.AsyncConnection) -> None:
        self.conn = conn
        self.xid: str | None = None  # pg_current_xact_id(), once the transaction has one
        self.refused = False  # the server answered the commit with an error (commit())
        self._pipeline: AsyncExitStack | None = None
        self._explicit = False

    @property
    def open(self) -> bool:
        return self._pipeline is not None or self._explicit

    async def write(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """The transaction's only statement (committed by :meth:`commit`); its rows without
        their last column (:data:`XID`, kept as :attr:`xid`: a statement that returns no row
        wrote nothing). Its errors are raised here, as without the pipeline."""
        if not PIPELINE:  # a libpq older than 14: the same in an explicit transaction
            return await self.begin(sql, params)
        stack = AsyncExitStack()
        await stack.enter_async_context(self.conn.pipeline())
        self._pipeline = stack
        return self._xid(await (await self.conn.execute(sql, params)).fetchall())

    async def begin(self, sql: str = f"SELECT {XID}", params: Any = None) -> list[tuple[Any, ...]]:
        """Open an explicit transaction with ``sql``; its rows as :meth:`write` returns them."""
        cur = psycopg.AsyncClientCursor(self.conn)
        self._explicit = True
        await cur.execute("BEGIN; " + sql, params)
        cur.nextset()  # BEGIN's result, then the statement's
        return self._xid(await cur.fetchall())

    def _xid(self, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        if rows:
            self.xid = rows[0][-1]
        return [row[:-1] for row in rows]

    async def commit(self) -> bool:
        """Commit (psycopg.Error if that fails); False if the server rolled back instead.

        The server may answer a pipeline's Sync with an error (a deferred constraint, a
        trigger run at commit): it refused the commit. psycopg then raises only that it
        "cannot exit pipeline mode while busy", the refusal as its context, the connection
        left in the pipeline: the refusal is raised instead (:attr:`refused`: definite,
        nothing to resolve, unless it is an OperationalError, taken as in doubt as on an
        explicit transaction) and the connection, of no further use, is closed. Now and then
        psycopg loses count of that answer instead and raises an IndexError ("pop from an
        empty deque"): the connection is closed and the commit, whose answer was not read, is
        resolved as a lost one (an OperationalError: the server is asked what happened). A
        cancellation while the Sync waits, which psycopg also reports as "cannot exit pipeline
        mode while busy", is raised as the cancellation it is."""
        conn = self.conn
        if self._pipeline is not None:
            stack, self._pipeline = self._pipeline, None
            try:
                await stack.aclose()  # the Sync: the server commits the implicit transaction
            except psycopg.OperationalError as exc:
                refusal = exc.__context__
                if isinstance(refusal, asyncio.CancelledError):  # psycopg says only that it
                    raise refusal from None  # cannot exit the pipeline: cancelled, in doubt
                if not isinstance(refusal, psycopg.DatabaseError) or conn.broken:
                    raise  # the connection lost: the commit in doubt
                await conn.close()  # left busy in its pipeline: of no further use
                if isinstance(refusal, psycopg.OperationalError):
                    raise refusal from None  # (a shutdown's message, a cancel): in doubt, resolved
                self.refused = True
                raise refusal from None
            except Exception as exc:  # psycopg's own confusion, the connection not lost
                if conn.broken:
                    raise
                await conn.close()
                raise psycopg.OperationalError(
                    f"the commit's answer could not be read ({type(exc).__name__}: {exc})") from None
            return True
        self._explicit = False
        if self.xid is None:  # a statement wrote without returning the id: ask (a round trip)
            self.xid = (await (await conn.execute(
                "SELECT pg_current_xact_id_if_assigned()::text")).fetchone())[0]  # type: ignore[index]
        cur = await conn.execute("COMMIT")
        return cur.statusmessage == "COMMIT"  # "ROLLBACK": the transaction had failed

    async def abort(self, exc: BaseException) -> None:
        """End the transaction without committing (``exc``: what the write raised)."""
        conn = self.conn
        pipeline, self._pipeline = self._pipeline, None
        explicit, self._explicit = self._explicit, False
        if pipeline is None and not explicit:
            return
        if not isinstance(exc, Exception):
            await conn.close()  # cancelled mid-call: closing the session is the sure rollback
            return
        try:
            if pipeline is not None:
                if self.xid is not None and not conn.broken:  # the statement wrote: undo it
                    await conn.execute("ROLLBACK")  # (else the Sync commits a transaction of no write)
                await pipeline.__aexit__(type(exc), exc, exc.__traceback__)
            elif conn.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
                await conn.execute("ROLLBACK")
        except psycopg.Error:
            pass  # the connection is gone, and the transaction with it; the pool drops it


class _PruneTooSlow(StoreError):
    """A retention batch the server cancelled at its ``statement_timeout`` (rolled back whole,
    the connection well): split, not a failure."""


class _Pool(AsyncConnectionPool):
    """The store's pool, whose :meth:`check` (of every idle connection, a round trip each) ends
    by :attr:`check_deadline` (the loop's time) whatever the server does: a connection without
    an answer by then is severed (:func:`.pg_ownership.sever`) and replaced, as a dead one is.
    The check used to be cancelled instead after POOL_TIMEOUT_S: psycopg then waited for its
    cancel request on a hung server (the check took over a minute, every write refused
    meanwhile and the lock unwatched), and the connections the check had taken out of the pool
    and not yet checked were dropped without the pool knowing (fewer connections for good)."""

    check_deadline: float | None = None

    async def check_connection(self, conn: psycopg.AsyncConnection) -> None:  # type: ignore[override]
        loop = asyncio.get_running_loop()
        left = POOL_TIMEOUT_S if self.check_deadline is None else self.check_deadline - loop.time()
        with Bound(max(0.0, left)).on(conn):
            await conn.execute("")


class PostgresStore(Store):
    """A store in a PostgreSQL database named by ``dsn`` (a ``postgresql://`` URL).

    ``pool_size``: most connections held (concurrent writes of different matches proceed in
    parallel up to this number; the calls of one match are serialized by its lock above).
    ``lock_wait_s``: how long :meth:`open` waits for another engine holding the database (its
    schema) to let go; ``ownership_check_s``: how often the ownership lock is checked.
    ``exclusive=False``: no ownership lock, for what must work beside a running engine (tools
    that only read, tests of the database's own guarantees); an engine never opens its store so.
    ``call_timeout_s``: the longest a call waits for the server (:data:`CALL_TIMEOUT_S`).
    """

    def __init__(self, dsn: str, metrics: Metrics | None = None, pool_size: int = 8,
                 lock_wait_s: float = 0.0, ownership_check_s: float = CHECK_S,
                 exclusive: bool = True, call_timeout_s: float = CALL_TIMEOUT_S,
                 create: bool = True, migrate: bool = True) -> None:
        super().__init__(metrics)
        self.dsn = str(dsn)
        #: ``create=False``: a schema without the engine's tables is refused (NotADatabase),
        #: not given them; ``migrate=False``: tables of an older schema version are used as
        #: they are (:attr:`outdated_from`) instead of migrated (the offline prune's dry run).
        self.create = create
        self.migrate = migrate
        self.outdated_from: int | None = None  # the older schema version left as it was
        self.where = redact(self.dsn)
        self.pool_size = max(1, pool_size)
        self.lock_wait_s = lock_wait_s
        self.ownership_check_s = ownership_check_s
        self.exclusive = exclusive
        self.call_timeout_s = call_timeout_s
        self._pool: AsyncConnectionPool | None = None
        self._owner: AdvisoryOwnership | None = None
        self.migrated_from: int | None = None  # the schema version open() upgraded, if any
        self.resolve_s = RESOLVE_S
        #: How many matches one retention transaction deletes at most (:meth:`prune_finished`),
        #: learnt from the server's pace: halved when a batch could not be deleted in time.
        self.prune_size = MAX_PRUNE_BATCH
        #: The calls waiting for the server: their bound, connection and start (loop time).
        self._calls: set[tuple[Bound, psycopg.AsyncConnection, float]] = set()
        #: The pool's sessions by server pid: their start (their identity with the pid), and
        #: those of the connections severed since the lock was last confirmed (_end_severed).
        self._starts: dict[int, Any] = {}
        self._severed: dict[int, Any] = {}
        #: Commits whose answer was lost, by (operation, outcome): committed, aborted, unknown.
        self.commits_resolved: Counter[tuple[str, str]] = Counter()

    # ---- plumbing ----------------------------------------------------------------------

    def _conninfo(self) -> str:
        try:
            params = conninfo_to_dict(self.dsn)
        except psycopg.ProgrammingError:  # its message may quote the DSN: not repeated
            raise StoreError(f"{self.where} is not a valid PostgreSQL connection URL") from None
        params.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
        params.setdefault("application_name", APPLICATION)
        for key, value in CLIENT_KEEPALIVES.items():  # an idle connection to a vanished host ends
            params.setdefault(key, value)
        params.setdefault("tcp_user_timeout", TCP_USER_TIMEOUT_MS)
        return make_conninfo(**params)

    @asynccontextmanager
    async def _connection(self, operation: str,
                          bound: Bound | None = None) -> AsyncIterator[psycopg.AsyncConnection]:
        """A pooled autocommit connection; database and pool failures become StoreError, at
        once while the server is known to be unreachable (:mod:`.pg_ownership`). A connection
        lost on the way puts the ownership in doubt (:meth:`_connection_lost`). The call is
        bounded by ``call_timeout_s`` (``bound``, made here if not given): past it the
        connection is severed, then closed (never back in the pool in an unknown state)."""
        pool = self._pool
        if pool is None:
            raise StoreError("the store is closed")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.call_timeout_s
        bound = bound or Bound(self.call_timeout_s)
        owner = self._owner
        if owner is not None and not owner.held:
            # a lost connection is being looked into: learn whether the server is there (a
            # call would otherwise wait for a connection the pool cannot make)
            await owner.verdict(VERDICT_WAIT_S)
            if owner.unreachable:
                raise StoreError(f"{operation} failed: {owner.unreachable}")
        conn: psycopg.AsyncConnection | None = None
        try:
            async with pool.connection(timeout=max(0.0, min(POOL_TIMEOUT_S, deadline - loop.time()))) as conn:
                call = (bound, conn, loop.time())
                self._calls.add(call)
                pid = conn.info.backend_pid
                try:
                    with bound.on(conn, max(0.0, deadline - loop.time())):
                        yield conn
                finally:
                    self._calls.discard(call)
                    if bound.fired:
                        if pid in self._starts:  # its session may stay on the server
                            self._severed[pid] = self._starts[pid]
                        if not conn.closed:
                            await conn.close()  # the pool discards it
        except StoreError:
            raise
        except psycopg.Error as exc:
            if conn is not None and (conn.broken or conn.closed):
                self._connection_lost()
            if bound.fired:
                raise StoreError(f"{operation} failed on {self.where}: "
                                 f"{self._no_answer(bound)} (the connection was closed)") from None
            raise StoreError(f"{operation} failed on {self.where}: {_reason(exc)}") from None
        except Exception as exc:  # a value that cannot be adapted (as the SQLite store does)
            raise StoreError(f"{operation} failed: {type(exc).__name__}: {exc}") from None

    def _no_answer(self, bound: Bound | None = None) -> str:
        if bound is not None and bound.why:
            return bound.why
        return f"no answer from the server within {self.call_timeout_s:g} s"

    def _silent(self, waited_s: float) -> None:
        """The ownership's check got no answer within ``waited_s`` (a server that hangs, a
        network partition): the server is taken for unreachable (pg_ownership), and every call
        waiting for it is severed now rather than at its own bound (20 s), which held its match
        (every later call on it waiting behind) and left its clients a deadline run out while
        the other matches' got UNAVAILABLE at once. A write whose COMMIT may have been sent is
        resolved as any lost commit is; one severed on a server that was only slow (the check
        alone unanswered) is resolved by it, or fails and is retried by its client."""
        why = f"no answer from the server (nor within {waited_s:g} s to the check of this engine's lock)"
        for bound, conn, _ in list(self._calls):
            bound.cut(conn, why)

    def _connection_lost(self) -> None:
        """One of the pool's connections was lost (the server restarted or went away, the
        network failed, an operator ended it): the lock session may be gone too, so writes
        stop until it is checked (:meth:`.pg_ownership.AdvisoryOwnership.doubt`)."""
        if self._owner is not None:
            self._owner.doubt()

    async def _restored(self) -> None:
        """The lock is held again after a loss or a doubt: the idle connections are checked
        (each a round trip; a dead one is replaced) before writes resume, so that the first
        writes after a server restart do not each fail on a connection of the old server, and
        the pool, if it has none, starts connecting now. Bounded by the ownership's timeout (a
        server that hangs now: its connections severed and replaced, :class:`_Pool`), and
        never cancelled (which would drop connections from the pool's count)."""
        pool = self._pool
        if isinstance(pool, _Pool):
            pool.check_deadline = asyncio.get_running_loop().time() + self._owner_timeout_s()
            await pool.check()
        await self._end_severed()

    async def _end_severed(self) -> None:
        """End the sessions of the connections this store severed that the server still keeps
        waiting for the engine (``ClientRead``; identified by pid and start): a partition kept
        the engine's FIN from the server, and a write cut after its statement ran and before
        its COMMIT (in a pipeline: no idle_in_transaction_session_timeout applies) kept its
        transaction open, holding what it wrote, so that the next write of its match (the
        client's retry) waited behind it and failed at the call's bound until the server's
        keepalives ended it (25 s; never behind a proxy). Once the lock is held again, before
        writes resume (``store_sessions_ended``); a session still running something is left to
        finish (its commit, resolved by the write, must not be undone)."""
        severed, self._severed = self._severed, {}
        pool = self._pool
        if not severed or pool is None:
            return
        try:
            async with pool.connection(timeout=self._owner_timeout_s()) as conn:
                with Bound(self._owner_timeout_s()).on(conn):
                    row = await (await conn.execute(
                        "SELECT coalesce(array_agg(a.pid) FILTER (WHERE pg_terminate_backend(a.pid)), '{}') "
                        "FROM pg_stat_activity a JOIN unnest(%s::int[], %s::timestamptz[]) s(pid, start) "
                        "ON a.pid = s.pid AND a.backend_start = s.start WHERE a.wait_event = 'ClientRead'",
                        (list(severed), list(severed.values())))).fetchone()
        except psycopg.Error as exc:  # the pool's wait too (PoolTimeout)
            log.warning("store_sessions_end_failed", db=self.where, server_pids=sorted(severed),
                        error=_reason(exc))
            return
        ended = list(row[0]) if row else []
        for pid in severed:
            self._starts.pop(pid, None)
        if ended:
            log.warning("store_sessions_ended", db=self.where, server_pids=sorted(ended))

    def _owner_timeout_s(self) -> float:
        """The longest a step of the ownership's waits for the server (pg_ownership)."""
        return min(OWNER_TIMEOUT_S, self.call_timeout_s)

    async def _write(self, operation: str, fn: Callable[[_Transaction], Awaitable[T]],
                     *, timed: bool = True) -> T:
        """Run ``fn(tx)`` in the transaction it opens (:meth:`_Transaction.begin`) and commit
        it (``fn`` that opens none ran in autocommit: nothing to commit). The latency measured
        is what the caller waits for (``timed`` False: only failures are counted). Refused
        while this store does not hold its database (:mod:`.pg_ownership`)."""
        owner = self._owner
        if owner is not None and not owner.held:
            self._timer.error(operation)
            if owner.lost:
                raise OwnershipLost(f"{operation} refused: this engine lost {self.where} to another engine")
            if owner.unreachable:
                raise StoreError(f"{operation} refused: {owner.unreachable}")
            raise StoreError(f"{operation} refused: the ownership of {self.where} is being re-checked "
                             "(a connection to it was lost)")
        if not timed:
            try:
                return await self._transaction(operation, fn)
            except _PruneTooSlow:
                raise  # split and tried again, not an error
            except StoreError:
                self._timer.error(operation)
                raise
        with self._timer.write(operation):
            return await self._transaction(operation, fn)

    async def _transaction(self, operation: str, fn: Callable[[_Transaction], Awaitable[T]]) -> T:
        """``fn``'s transaction, committed. A commit whose answer is lost with the connection
        is resolved by its transaction id (:meth:`_resolve`) once the connection is back in
        the pool: a commit that happened returns normally, one that did not (or whose outcome
        stays unknown) raises StoreError as any failed write does. A commit the server refused
        (an error on a live connection) is a StoreError at once."""
        # (xid, why, whether the connection itself was lost: not closed by the store on purpose)
        lost: tuple[str | None, str, bool] | None = None
        bound = Bound(self.call_timeout_s)
        async with self._connection(operation, bound) as conn:
            tx = _Transaction(conn)
            try:
                result = await fn(tx)
            except BaseException as exc:
                await tx.abort(exc)
                raise
            if not tx.open:
                return result  # it ran in autocommit: nothing to commit
            try:
                committed = await tx.commit()
            except psycopg.Error as exc:
                if tx.refused:  # said so by the server, its connection closed on purpose: not lost
                    raise StoreError(f"{operation} failed on {self.where}: {_reason(exc)}") from None
                if not (isinstance(exc, psycopg.OperationalError) or conn.broken or conn.closed
                        or conn.info.transaction_status != TransactionStatus.IDLE):
                    raise  # refused, and said so: nothing written
                lost = (tx.xid, self._no_answer(bound) if bound.fired else _reason(exc), conn.broken)
            except Exception as exc:  # psycopg's confusion on a severed or lost connection
                if not (bound.fired or conn.broken):
                    raise
                lost = (tx.xid, self._no_answer(bound) if bound.fired else f"{type(exc).__name__}: {exc}",
                        conn.broken)
            except BaseException:  # cancelled while committing: in doubt, as it always was
                await conn.close()
                raise
            else:
                if not committed:
                    raise StoreError(f"{operation} failed on {self.where}: the transaction was rolled back")
        if lost is None:
            return result
        xid, why, broken = lost
        if broken:
            self._connection_lost()
        await self._resolve(operation, xid, why)
        return result

    async def _resolve(self, operation: str, xid: str | None, reason: str) -> None:
        """The COMMIT of transaction ``xid`` was sent and its answer lost (``reason``): ask a
        fresh connection whether it committed (``pg_xact_status``), polling one still 'in
        progress' (its commit being applied, or its session not yet ended) for up to
        :data:`RESOLVE_S`. Returns if it committed; raises StoreError if it did not, or if that
        is still unknown (no id, the question failed, in progress throughout, or the server
        known to be unreachable: not asked, so that a write cut by a partition does not hold its
        match :data:`RESOLVE_S` more for a question that cannot be answered)."""
        status: str | None = None
        owner = self._owner
        if xid is not None and not (owner is not None and owner.unreachable):  # else: no one to ask
            try:
                status = await self._xact_status(xid, asyncio.get_running_loop().time() + self.resolve_s)
            except (psycopg.Error, OSError, TimeoutError):
                pass
        outcome = status if status in ("committed", "aborted") else "unknown"
        self.commits_resolved[(operation, outcome)] += 1
        metrics = self._timer.metrics
        if metrics is not None:
            metrics.child(metrics.store_commits_resolved, operation, outcome).inc()
        log.warning("store_commit_resolved", db=self.where, operation=operation, outcome=outcome,
                    error=reason)
        if outcome == "committed":
            return
        if outcome == "aborted":
            raise StoreError(f"{operation} failed on {self.where}: {reason} (not committed)")
        raise StoreError(f"{operation} failed on {self.where}: {reason}")

    async def _xact_status(self, xid: str, deadline: float) -> str | None:
        """``pg_xact_status(xid)`` on a connection of its own, polled while 'in progress',
        until the loop's time ``deadline`` (TimeoutError while connecting, psycopg.Error once
        connected: the connection is severed then, a hung server never waited for)."""
        loop = asyncio.get_running_loop()
        async with asyncio.timeout_at(deadline):
            conn = await psycopg.AsyncConnection.connect(self._conninfo(), autocommit=True)
        async with conn:
            with Bound(0.0).on(conn, max(0.0, deadline - loop.time())):
                polls = iter(RESOLVE_POLL_S)
                wait = 0.0
                while True:
                    row = await (await conn.execute("SELECT pg_xact_status(%s::xid8)", (xid,))).fetchone()
                    status = row[0] if row else None
                    if status != "in progress":
                        return status
                    if loop.time() >= deadline:
                        return status
                    wait = next(polls, wait)
                    await asyncio.sleep(wait)

    async def _read(self, operation: str, fn: Callable[[psycopg.AsyncConnection], Awaitable[T]]) -> T:
        """Run ``fn(conn)``, which sends one statement, in autocommit: one round trip. A
        statement reads one snapshot of the database, taken as it starts (even at READ COMMITTED,
        the weakest isolation PostgreSQL has), so a match's seats, decks and actions
        read together agree without a transaction; a read-only REPEATABLE READ transaction of
        four statements cost seven round trips (``BEGIN``, its isolation level, the reads,
        ``COMMIT``), which the start's rebuild of every unfinished match paid one match at a
        time (docs/operations.md, start-up step 6)."""
        try:
            async with self._connection(operation) as conn:
                return await fn(conn)
        except StoreError:
            self._timer.error(operation)
            raise

    async def _configure(self, conn: psycopg.AsyncConnection) -> None:
        """Every pooled connection waits for its commits to be flushed (durability), and its
        session is ended by the server once the engine is gone or cut off, unless the server's
        configuration (or the role's) says otherwise: TCP keepalives and ``tcp_user_timeout``
        as on the lock session (pg_ownership), and ``idle_in_transaction_session_timeout``
        (:data:`IDLE_IN_TRANSACTION_FACTOR` times ``call_timeout_s``: the engine never leaves
        a transaction idle that long, its calls are severed first). A write whose connection a
        partition cut after its statement ran, before its COMMIT, left its transaction open on
        the server, holding what it wrote: every later write of that match (its next action,
        the client's retry) waited behind it and failed at the call's bound, for as long as the
        server kept the session (the operating system's two hours of keepalives; for ever
        behind a proxy). One round trip, at the connection's start."""
        idle_ms = max(1, int(self.call_timeout_s * IDLE_IN_TRANSACTION_FACTOR * 1000))
        row = await (await conn.execute(
            "SELECT (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()), "
            "CASE WHEN current_setting('synchronous_commit') IN ('off', 'local') "
            "THEN set_config('synchronous_commit', 'on', false) END, "
            + ", ".join(f"CASE WHEN (SELECT source FROM pg_settings WHERE name = '{name}') = 'default' "
                        f"THEN set_config('{name}', '{value}', false) END"
                        for name, value in (*_SERVER_KEEPALIVE_SETTINGS,
                                            ("idle_in_transaction_session_timeout", str(idle_ms)))))).fetchone()
        self._starts[conn.info.backend_pid] = row[0] if row else None
        while len(self._starts) > 4 * self.pool_size + 64:  # the oldest: long closed
            del self._starts[next(iter(self._starts))]

    # ---- open / close ------------------------------------------------------------------

    async def open(self) -> None:
        if self._pool is not None:
            return
        conninfo = self._conninfo()
        owner = None
        if self.exclusive:  # first: an engine that does not own the schema must not migrate it
            owner = AdvisoryOwnership(conninfo, self.where, wait_s=self.lock_wait_s,
                                      check_s=self.ownership_check_s, on_lost=self._ownership_lost,
                                      on_restored=self._restored,
                                      timeout_s=self._owner_timeout_s(), on_silent=self._silent)
            await owner.acquire()
        try:
            self._held()  # before the schema is created, checked or migrated
            pool = await self._open_pool(conninfo)
        except BaseException:
            if owner is not None:
                await owner.release()
            raise
        self._pool, self._owner = pool, owner

    async def _open_pool(self, conninfo: str) -> AsyncConnectionPool:
        """Prepare (create, check or migrate) the schema, then open the connection pool. The
        preparation, its connection included, is bounded by ``call_timeout_s`` as a call is: a
        server that hangs then (or a migration waiting that long for a lock on the tables)
        used to hold the start for ever, the ownership lock taken."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.call_timeout_s
        try:
            async with asyncio.timeout(self.call_timeout_s):
                conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.where}: {_reason(exc)}") from None
        except TimeoutError:
            raise StoreError(f"cannot connect to {self.where}: {self._no_answer()}") from None
        bound = Bound(max(0.0, deadline - loop.time()))
        try:
            with bound.on(conn):
                if conn.info.server_version < MIN_SERVER_VERSION:
                    raise StoreError(f"{self.where} is PostgreSQL {conn.info.server_version // 10000}; "
                                     "the engine needs PostgreSQL 13 or newer")
                async with conn.transaction():
                    await self._prepare_schema(conn)
        except (psycopg.Error, MigrationFailed) as exc:
            if bound.fired:  # severed: nothing of the preparation was committed
                raise StoreError(
                    f"cannot prepare {self.where}: {self._no_answer()} (a server that hangs, or tables "
                    "locked by another session that a migration waited for: retry once it is done)") from None
            if isinstance(exc, MigrationFailed):
                raise
            raise StoreError(f"cannot prepare {self.where}: {_reason(exc)}") from None
        finally:
            await conn.close()
        if self.migrated_from is not None:  # the migration's transaction has committed
            log.info("db_migrated", db=self.where, from_version=self.migrated_from,
                     to_version=SCHEMA_VERSION)
        pool = _Pool(conninfo, min_size=1, max_size=self.pool_size, open=False,
                                   kwargs={"autocommit": True}, configure=self._configure,
                                   timeout=POOL_TIMEOUT_S, reconnect_timeout=RECONNECT_S,
                                   name="cardgames-store")
        try:
            await pool.open(wait=True, timeout=POOL_TIMEOUT_S)
        except psycopg.Error as exc:
            await pool.close()
            raise StoreError(f"cannot open connections to {self.where}: {_reason(exc)}") from None
        return pool

    def _ownership_lost(self, message: str) -> None:
        if self.on_ownership_lost is not None:
            self.on_ownership_lost(message)

    async def _prepare_schema(self, conn: psycopg.AsyncConnection) -> None:
        """Inside the open transaction: create the tables in an empty schema, or check that
        the schema is ours and not newer than this program."""
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (OPEN_LOCK_KEY,))
        row = await (await conn.execute("SELECT current_schema(), current_setting('search_path')")).fetchone()
        schema, search_path = row if row else (None, "")
        if schema is None:
            raise StoreError(f"{self.where}: no schema of the search_path ({search_path}) exists; "
                             "create it first (CREATE SCHEMA ...)")
        tables = {name for (name,) in await (await conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')", (schema,))).fetchall()}
        if not tables and not self.create:
            raise NotADatabase(f"schema {schema!r} of {self.where} holds no tables of this service")
        if not tables:
            for statement in SCHEMA:
                await conn.execute(statement)
            await conn.execute(f"INSERT INTO {META_TABLE} (key, value) VALUES "
                               "('application', %s), ('schema_version', %s)",
                               (APPLICATION, str(SCHEMA_VERSION)))
            return
        if META_TABLE not in tables:
            raise NotADatabase(
                f"schema {schema!r} of {self.where} holds tables of another application "
                f"({', '.join(sorted(tables)[:5])}); refusing to use it: give the service an "
                "empty database, or a schema of its own (?options=-csearch_path%3Dname)")
        meta = dict(await (await conn.execute(f"SELECT key, value FROM {META_TABLE}")).fetchall())
        if meta.get("application") != APPLICATION:
            raise NotADatabase(f"schema {schema!r} of {self.where} belongs to another application "
                               f"({meta.get('application')!r}); refusing to use it")
        try:
            version = int(meta.get("schema_version", ""))
        except ValueError:
            raise NotADatabase(f"schema {schema!r} of {self.where} has no valid schema version") from None
        if version > SCHEMA_VERSION:
            raise NotADatabase(f"schema {schema!r} of {self.where} has schema version {version}, "
                               f"newer than this program's {SCHEMA_VERSION}; upgrade the program")
        if version < 1:
            raise NotADatabase(f"schema {schema!r} of {self.where} has no valid schema version")
        if version < SCHEMA_VERSION and not self.migrate:
            self.outdated_from = version
            return
        if version < SCHEMA_VERSION:  # still inside the open transaction: all steps or none
            step = version + 1
            try:
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    for statement in MIGRATIONS[step]:
                        await conn.execute(statement)
                await conn.execute(f"UPDATE {META_TABLE} SET value = %s WHERE key = 'schema_version'",
                                   (str(SCHEMA_VERSION),))
            except psycopg.Error as exc:  # the transaction rolls back as this leaves it
                raise MigrationFailed(
                    f"schema {schema!r} of {self.where}: migrating from schema version {version} "
                    f"to {SCHEMA_VERSION} failed at step {step} ({_reason(exc)}); it was left as "
                    f"it was (schema version {version})") from None
            self.migrated_from = version
        if self.migrate:  # not for a dry run, which only reads
            await self._check_writable(conn, schema)

    async def _check_writable(self, conn: psycopg.AsyncConnection, schema: str) -> None:
        """Refuse, at open, a schema this session cannot write (:class:`~.base.DatabaseReadOnly`).

        A role granted only SELECT (a read-only or reporting role put in the URL by mistake),
        a standby server, or ``default_transaction_read_only`` let the engine start on existing
        tables, resume every match and answer health SERVING; then every action, join and new
        match failed UNAVAILABLE ("permission denied for table match_actions", "cannot execute
        INSERT in a read-only transaction") and its bots retried for ever. The SQLite store
        refuses a read-only file so (:meth:`.sqlite.SqliteStore._check_writable`); here the
        privileges the store's statements need are asked for by name (has_table_privilege with
        several privileges is true if any one is held, hence one question each)."""
        row = await (await conn.execute("SELECT current_setting('transaction_read_only')")).fetchone()
        if row and row[0] == "on":
            raise DatabaseReadOnly(
                f"{self.where} accepts no writes (its transactions are read-only: a standby server, or "
                "default_transaction_read_only set for the role or database); refusing to serve from it: "
                "give the engine the primary server and a role that may write")
        missing = []
        for table, privileges in WRITE_PRIVILEGES:
            for privilege in privileges:
                held = await (await conn.execute("SELECT has_table_privilege(format('%%I.%%I', %s::text, %s::text), %s)",
                                                 (schema, table, privilege))).fetchone()
                if not (held and held[0]):
                    missing.append(f"{privilege} on {table}")
        if missing:
            raise DatabaseReadOnly(
                f"schema {schema!r} of {self.where} cannot be written by this role (it lacks "
                f"{', '.join(missing)}); refusing to serve from it: GRANT SELECT, INSERT, UPDATE ON "
                "its tables to the engine's role (DELETE too for retention; docs/operations.md, PostgreSQL)")

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        owner, self._owner = self._owner, None
        if pool is not None:
            await pool.close()
        if owner is not None:  # after the last write
            await owner.release()

    # ---- writes ------------------------------------------------------------------------

    async def create_match(self, record: MatchRecord, decks: Sequence[DeckRecord] = ()) -> None:
        r = record

        async def fn(tx: _Transaction) -> None:
            try:
                await tx.begin(
                    "INSERT INTO matches (match_id, game, options, first_dealer, turn_time_s, "
                    "reconnect_grace_s, spectators_allowed, name, takeover_bot, created_at, "
                    "status, result, ended_at, listed, deal_commitments, spectator_delay_actions, "
                    "create_hash, create_digest) "
                    f"VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) RETURNING {XID}",
                    (r.match_id, r.game, _json(r.options), r.first_dealer, r.turn_time_s,
                     r.reconnect_grace_s, r.spectators_allowed, r.name, r.takeover_bot,
                     r.created_at, r.status, _json(r.result), r.ended_at, r.listed,
                     list(r.deal_commitments) or None, r.spectator_delay_actions, r.create_hash or None,
                     r.create_digest or None))
            except pg_errors.UniqueViolation as exc:
                if exc.diag.constraint_name == "matches_by_create_hash":
                    raise CreateIdTaken("a match was created with this client_create_id") from None
                raise MatchExists(f"match {r.match_id!r} exists") from None
            for s in r.seats:
                await self._insert_seat(tx.conn, r.match_id, s)
            await self._insert_decks(tx.conn, r.match_id, decks)
        await self._write("create_match", fn)

    _INSERT_SEAT = (
        "INSERT INTO seats (match_id, seat, kind, bot, player_name, token_hash, joined_at, "
        "left_match, join_hash) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)")
    _UPDATE_SEAT = (
        "UPDATE seats SET kind = %s, bot = %s, player_name = %s, token_hash = %s, joined_at = %s, "
        "left_match = %s, join_hash = %s WHERE match_id = %s AND seat = %s")

    @staticmethod
    async def _insert_seat(conn: psycopg.AsyncConnection, match_id: str, s: SeatRecord) -> None:
        """A new match's seat, in the open transaction."""
        try:
            await conn.execute(PostgresStore._INSERT_SEAT, (match_id, s.seat, s.kind, s.bot, s.player_name,
                                                           s.token_hash or None, s.joined_at, s.left,
                                                           s.join_hash or None))
        except pg_errors.IntegrityError as exc:
            raise StoreError(f"seat {s.seat} of match {match_id!r}: {_reason(exc)}") from None

    @classmethod
    async def _update_seat(cls, tx: _Transaction, match_id: str, s: SeatRecord, *,
                           alone: bool = False) -> None:
        """Replace one of the match's seats, in the open transaction (``alone``: the write's only
        statement). A seat number the match does not have is UnknownMatch: an upsert added it
        as a row of its own, and the match was read back with a seat more than it has."""
        params = (s.kind, s.bot, s.player_name, s.token_hash or None, s.joined_at, s.left, s.join_hash or None,
                  match_id, s.seat)
        try:
            if alone:
                found = bool(await tx.write(f"{cls._UPDATE_SEAT} RETURNING {XID}", params))
            else:
                found = (await tx.conn.execute(cls._UPDATE_SEAT, params)).rowcount > 0
        except pg_errors.IntegrityError as exc:
            raise StoreError(f"seat {s.seat} of match {match_id!r}: {_reason(exc)}") from None
        if not found:
            raise await cls._no_seat(tx.conn, match_id, s.seat)

    @staticmethod
    async def _no_seat(conn: psycopg.AsyncConnection, match_id: str, seat: int) -> UnknownMatch:
        """The refusal of a seat update that found no row: "no match" where the match itself
        is missing, in the words of the other stores (asked only on this failure path)."""
        cur = await conn.execute("SELECT 1 FROM matches WHERE match_id = %s", (match_id,))
        if await cur.fetchone() is None:
            return UnknownMatch(f"no match {match_id!r}")
        return UnknownMatch(f"no seat {seat} in match {match_id!r}")

    @staticmethod
    async def _insert_decks(conn: psycopg.AsyncConnection, match_id: str, decks: Sequence[DeckRecord]) -> None:
        if not decks:
            return
        try:
            async with conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO decks (match_id, deal, cards, salt, scheme) VALUES (%s,%s,%s,%s,%s)",
                    [(match_id, d.deal, list(d.cards), d.salt, d.scheme) for d in decks])
        except pg_errors.ForeignKeyViolation:
            raise UnknownMatch(f"no match {match_id!r}") from None
        except pg_errors.UniqueViolation:
            deals = ", ".join(str(d.deal) for d in decks)
            raise StoreError(f"match {match_id!r} has a deck for deal {deals}") from None

    async def save_seat(self, match_id: str, seat: SeatRecord) -> None:
        await self._write("save_seat", lambda tx: self._update_seat(tx, match_id, seat, alone=True))

    async def save_absence(self, match_id: str, seat: int, away_since: float | None,
                           taken_over: bool = False, away_seen: float | None = None) -> None:
        seen = away_since if away_since is None or away_seen is None else away_seen

        async def fn(tx: _Transaction) -> None:
            if not await tx.write(
                    "UPDATE seats SET away_since = %s, away_seen = %s, taken_over = %s "
                    f"WHERE match_id = %s AND seat = %s RETURNING {XID}",
                    (away_since, seen, bool(taken_over) and away_since is not None, match_id, seat)):
                raise await self._no_seat(tx.conn, match_id, seat)
        await self._write("save_absence", fn)

    async def ping(self) -> None:
        # what a write checks first (_write), then a pooled connection's round trip; not
        # counted in the metrics: a probe during an outage the failed writes counted already
        owner = self._owner
        if owner is not None and not owner.held:
            raise StoreError(f"ping refused: this engine does not hold {self.where} now "
                             "(lost to another engine, or being re-checked)")
        async with self._connection("ping") as conn:
            await conn.execute("SELECT 1")

    async def touch_absences(self, seats: Sequence[tuple[str, int]], at: float) -> None:
        if not seats:
            return
        # One statement for the whole beat, the seats as two arrays: an executemany of one
        # UPDATE per seat took 180-250 ms for 5,000 away seats (a pooled connection held for
        # a round trip per seat every absence_heartbeat_s); one join with them takes about
        # 90 ms, most of it the rows' own update
        ids = [match_id for match_id, _ in seats]
        numbers = [seat for _, seat in seats]

        async def fn(tx: _Transaction) -> None:
            await tx.begin()
            await tx.conn.execute(
                "UPDATE seats SET away_seen = %s FROM unnest(%s::text[], %s::int[]) AS t(match_id, seat) "
                "WHERE seats.match_id = t.match_id AND seats.seat = t.seat AND seats.away_since IS NOT NULL",
                (at, ids, numbers))
        await self._write("touch_absences", fn)

    _SET_STATUS = ("UPDATE matches SET status = %s, result = %s, ended_at = %s, deal_commitments = %s "
                   "WHERE match_id = %s")

    async def set_status(self, match_id: str, status: str, result: Mapping[str, Any] | None = None,
                         ended_at: float | None = None, deal_commitments: Sequence[str] = ()) -> None:
        async def fn(tx: _Transaction) -> None:
            if not await tx.write(f"{self._SET_STATUS} RETURNING {XID}",
                                  (status, _json(result), ended_at, list(deal_commitments) or None, match_id)):
                raise UnknownMatch(f"no match {match_id!r}")
        await self._write("set_status", fn)

    async def start_match(self, match_id: str, seats: Sequence[SeatRecord] = (),
                          decks: Sequence[DeckRecord] = ()) -> None:
        async def fn(tx: _Transaction) -> None:
            # the row lock orders this start after any other write of the match's status
            rows = await tx.begin(f"SELECT status, {XID} FROM matches WHERE match_id = %s FOR UPDATE",
                                  (match_id,))
            if not rows:
                raise UnknownMatch(f"no match {match_id!r}")
            if rows[0][0] != "waiting":
                raise MatchNotWaiting(f"match {match_id!r} is {rows[0][0]}, not waiting")
            for s in seats:
                await self._update_seat(tx, match_id, s)
            await self._insert_decks(tx.conn, match_id, decks)
            await tx.conn.execute("UPDATE matches SET status = 'active' WHERE match_id = %s", (match_id,))
        await self._write("start_match", fn)

    _APPEND = (
        "INSERT INTO match_actions (match_id, seq, seat, action, by_whom, client_action_id, reason, at) "
        "SELECT %(m)s, %(seq)s, %(seat)s, %(action)s, %(by)s, %(cid)s, %(reason)s, %(at)s "
        "WHERE %(seq)s = (SELECT coalesce(max(seq), 0) + 1 FROM match_actions WHERE match_id = %(m)s)")

    async def append_action(self, match_id: str, action: ActionRecord,
                            decks: Sequence[DeckRecord] = (), end: MatchEnd | None = None) -> None:
        params = dict(m=match_id, seq=action.seq, seat=action.seat, action=action.action, by=action.by,
                      cid=action.client_action_id or None, reason=action.reason, at=action.at)

        async def fn(tx: _Transaction) -> None:
            """The action, at the next seq only (the WHERE), or the reason why not; then the
            decks and the end. The common case (neither) is that statement and the COMMIT."""
            try:
                opening = tx.begin if decks or end else tx.write  # more statements follow
                inserted = await opening(f"{self._APPEND} RETURNING {XID}", params)
            except pg_errors.ForeignKeyViolation:
                raise UnknownMatch(f"no match {match_id!r}") from None
            except pg_errors.UniqueViolation as exc:  # a concurrent writer took this seq / id
                if exc.diag.constraint_name == "match_actions_by_client_id":
                    raise DuplicateClientAction(f"client_action_id reused in match {match_id!r}") from None
                raise SequenceConflict(f"match {match_id!r} has an action at seq {action.seq}") from None
            if not inserted:
                known, last = await (await tx.conn.execute(
                    "SELECT (SELECT 1 FROM matches WHERE match_id = %(m)s), "
                    "(SELECT coalesce(max(seq), 0) FROM match_actions WHERE match_id = %(m)s)",
                    {"m": match_id})).fetchone()  # type: ignore[misc]
                if known is None:
                    raise UnknownMatch(f"no match {match_id!r}")
                if 1 <= action.seq <= last:
                    raise SequenceConflict(f"match {match_id!r} has an action at seq {action.seq}")
                raise StoreError(f"match {match_id!r}: seq {action.seq} is not the next one")
            await self._insert_decks(tx.conn, match_id, decks)
            if end is not None:  # the match exists: its action was just inserted
                await tx.conn.execute(self._SET_STATUS, (end.status, _json(end.result), end.ended_at,
                                                         list(end.deal_commitments) or None, match_id))
        await self._write("append_action", fn)

    async def append_decks(self, match_id: str, decks: Sequence[DeckRecord]) -> None:
        async def fn(tx: _Transaction) -> None:
            if not decks:  # autocommit: nothing to commit
                cur = await tx.conn.execute("SELECT 1 FROM matches WHERE match_id = %s", (match_id,))
                if await cur.fetchone() is None:
                    raise UnknownMatch(f"no match {match_id!r}")
                return
            await tx.begin()
            await self._insert_decks(tx.conn, match_id, decks)
        await self._write("append_decks", fn)

    # ---- reads -------------------------------------------------------------------------

    _MATCH_COLUMNS = ("match_id, game, options, first_dealer, turn_time_s, reconnect_grace_s, "
                      "spectators_allowed, name, takeover_bot, created_at, status, result, ended_at, "
                      "listed, deal_commitments, spectator_delay_actions, create_hash, create_digest")
    _MATCH_WIDTH = len(_MATCH_COLUMNS.split(", "))

    async def find_created(self, create_hash: str) -> tuple[str, str] | None:
        if not create_hash:
            return None

        async def fn(conn: psycopg.AsyncConnection) -> tuple[str, str] | None:
            row = await (await conn.execute("SELECT match_id, create_digest FROM matches WHERE create_hash = %s",
                                            (create_hash,))).fetchone()
            return None if row is None else (row[0], row[1] or "")
        return await self._read("find_created", fn)

    #: A match's seats as one row of arrays, one array a column, in seat order (one snapshot
    #: with the match row: see :meth:`_read`); all NULL when the match has none.
    _SEAT_COLUMNS = ("seat", "kind", "bot", "player_name", "token_hash", "joined_at", "left_match", "join_hash",
                     "away_since", "away_seen", "taken_over")
    _SEATS_OF_M = ("LATERAL (SELECT " + ", ".join(f"array_agg({c} ORDER BY seat)" for c in _SEAT_COLUMNS)
                   + " FROM seats WHERE seats.match_id = m.match_id) s")

    @staticmethod
    def _seat_records(arrays: Sequence[Any]) -> list[SeatRecord]:
        if arrays[0] is None:
            return []
        return [SeatRecord(seat=s, kind=k, bot=b, player_name=n, token_hash=t or "", joined_at=j, left=lm,
                           join_hash=jh or "", away_since=aw, away_seen=seen, taken_over=bool(to))
                for s, k, b, n, t, j, lm, jh, aw, seen, to in zip(*arrays, strict=True)]

    @staticmethod
    def _record(row: Sequence[Any], seats: list[SeatRecord]) -> MatchRecord:
        (match_id, game, options, first_dealer, turn_time_s, grace, spectators, name, takeover,
         created_at, status, result, ended_at, listed, commitments, spectator_delay, create_hash,
         create_digest) = row
        return MatchRecord(
            match_id=match_id, game=game, options=options, first_dealer=first_dealer,
            seats=tuple(seats), turn_time_s=turn_time_s, reconnect_grace_s=grace,
            spectators_allowed=spectators, name=name, takeover_bot=takeover, created_at=created_at,
            status=status, result=result, ended_at=ended_at, listed=listed,
            deal_commitments=tuple(commitments or ()), spectator_delay_actions=spectator_delay,
            create_hash=create_hash or "", create_digest=create_digest or "")

    #: A match, its seats, its decks and its actions: one statement, one round trip (the
    #: start reads every unfinished match so: docs/operations.md, start-up step 6). A deck's
    #: cards come as JSON, since an array of arrays must be rectangular and two deals' packs
    #: need not be the same length.
    _LOAD_MATCH = (
        f"SELECT {', '.join('m.' + c for c in _MATCH_COLUMNS.split(', '))}, s.*, d.*, a.* FROM matches m, "
        + _SEATS_OF_M + ", "
        "LATERAL (SELECT array_agg(deal ORDER BY deal), jsonb_agg(cards ORDER BY deal), "
        "array_agg(salt ORDER BY deal), array_agg(scheme ORDER BY deal) "
        "FROM decks WHERE decks.match_id = m.match_id) d, "
        "LATERAL (SELECT " + ", ".join(f"array_agg({c} ORDER BY seq)" for c in (
            "seq", "seat", "action", "by_whom", "client_action_id", "reason", "at"))
        + " FROM match_actions WHERE match_actions.match_id = m.match_id) a "
        "WHERE m.match_id = %s")

    async def load_match(self, match_id: str) -> StoredMatch | None:
        async def fn(conn: psycopg.AsyncConnection) -> StoredMatch | None:
            row = await (await conn.execute(self._LOAD_MATCH, (match_id,))).fetchone()
            if row is None:
                return None
            columns = self._MATCH_WIDTH
            seats_end = columns + len(self._SEAT_COLUMNS)
            deal_arrays, action_arrays = row[seats_end:seats_end + 4], row[seats_end + 4:]
            decks = () if deal_arrays[0] is None else tuple(
                DeckRecord(d, tuple(cards), salt, scheme) for d, cards, salt, scheme in zip(*deal_arrays, strict=True))
            actions = () if action_arrays[0] is None else tuple(
                ActionRecord(seq=q, seat=s, action=a, by=b, client_action_id=cid or "", reason=r, at=t)
                for q, s, a, b, cid, r, t in zip(*action_arrays, strict=True))
            return StoredMatch(self._record(row[:columns], self._seat_records(row[columns:seats_end])),
                               decks, actions)
        return await self._read("load_match", fn)

    async def list_matches(self, statuses: Sequence[str] = (), game: str = "",
                           limit: int = 100, after: tuple[float, str] | None = None) -> list[MatchListing]:
        where: list[str] = []
        args: list[Any] = []
        if statuses:
            where.append("status = ANY(%s)")
            args.append(list(statuses))
        if game:
            where.append("game = %s")
            args.append(game)
        if after is not None:
            # The row value is the cursor (matches_by_creation (created_at, match_id) serves it
            # read backwards); ``created_at <= %s`` bounds matches_by_status's range likewise.
            where.append("created_at <= %s AND (created_at, match_id) < (%s, %s)")
            args += [after[0], after[0], after[1]]
        # The page first, then its matches' seats: one statement (one round trip, one snapshot)
        # that reads the seats of the page's matches only.
        sql = (f"SELECT m.*, s.* FROM (SELECT {self._MATCH_COLUMNS}, (SELECT coalesce(max(seq), 0) "
               f"FROM match_actions a WHERE a.match_id = m.match_id) AS last_seq FROM matches m"
               + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY created_at DESC, match_id DESC LIMIT %s) m, " + self._SEATS_OF_M
               + " ORDER BY m.created_at DESC, m.match_id DESC")
        columns = self._MATCH_WIDTH

        async def fn(conn: psycopg.AsyncConnection) -> list[MatchListing]:
            rows = await (await conn.execute(sql, (*args, max(0, limit)))).fetchall()
            return [MatchListing(self._record(row[:columns], self._seat_records(row[columns + 1:])), row[columns])
                    for row in rows]
        return await self._read("list_matches", fn)

    async def unfinished_match_ids(self) -> list[str]:
        async def fn(conn: psycopg.AsyncConnection) -> list[str]:
            cur = await conn.execute("SELECT match_id FROM matches WHERE status = ANY(%s) "
                                     "ORDER BY created_at, match_id", (list(UNFINISHED),))
            return [r[0] for r in await cur.fetchall()]
        return await self._read("unfinished_match_ids", fn)

    # ---- retention (docs/operations.md, Retention) -------------------------------------------

    #: The ended matches a prune may delete. ``created_at < %(t)s`` changes nothing (a match
    #: ends after it is created) but lets the server range-scan ``matches_by_status``.
    _PRUNABLE = ("status = ANY(%(ended)s) AND created_at < %(t)s AND ended_at IS NOT NULL "
                 "AND ended_at < %(t)s")

    async def prune_finished(self, ended_before: float, limit: int = 100) -> PrunedBatch:
        """The base class's contract, the batch deleted in one transaction or several: each
        bounded by the server (:data:`PRUNE_STATEMENT_SHARE` of ``call_timeout_s`` a
        statement), well within the call's bound however slow the server, so that a large
        batch on a slow but healthy server is never cut off (its connection severed, its work
        rolled back, the same batch failing at every pass). A transaction the server cancels
        is rolled back and split in two (:attr:`prune_size`, kept for the next calls, doubled
        again after a batch done in well under its bound), down to one match; a later one that fails ends the call with what was deleted (committed:
        the caller forgets those), the error counted and logged (``store_prune_stopped``)."""
        limit = max(0, min(int(limit), MAX_PRUNE_BATCH))
        ids: list[str] = []
        counts = PruneCounts()
        while len(ids) < limit:
            size = max(1, min(self.prune_size, limit - len(ids)))
            started = asyncio.get_running_loop().time()
            try:
                batch = await self._prune_batch(ended_before, size)
            except _PruneTooSlow as exc:
                if size == 1:
                    self._timer.error("prune_finished")
                    raise StoreError(f"prune_finished failed on {self.where}: {exc}") from None
                self.prune_size = size // 2
                log.info("store_prune_split", db=self.where, matches=size, now=self.prune_size)
                continue
            except StoreError as exc:
                if not ids:
                    raise
                log.warning("store_prune_stopped", db=self.where, deleted=len(ids), error=str(exc))
                break
            ids += batch.match_ids
            counts += batch.counts
            quick = asyncio.get_running_loop().time() - started < self.call_timeout_s * PRUNE_STATEMENT_SHARE / 2
            if quick and size == self.prune_size < MAX_PRUNE_BATCH:  # the server keeps up again
                self.prune_size = min(MAX_PRUNE_BATCH, 2 * size)
            if len(batch.match_ids) < size:
                break  # no more
        return PrunedBatch(tuple(ids), counts)

    async def _prune_batch(self, ended_before: float, size: int) -> PrunedBatch:
        """At most ``size`` ended matches deleted in one transaction, each statement cancelled
        by the server past its share of the bound (:class:`_PruneTooSlow`)."""
        params = {"ended": list(FINISHED), "t": ended_before, "n": size}
        statement_ms = max(1, int(self.call_timeout_s * PRUNE_STATEMENT_SHARE * 1000))

        async def fn(tx: _Transaction) -> PrunedBatch:
            # the id is taken (its column evaluated) only when there is a row to delete
            ids = [r[0] for r in await tx.begin(
                f"SELECT match_id, {XID} FROM matches WHERE {self._PRUNABLE} LIMIT %(n)s "
                "FOR UPDATE SKIP LOCKED", params)]
            if not ids:
                return PrunedBatch()
            counts = []
            try:
                await tx.conn.execute("SELECT set_config('statement_timeout', %s, true)", (f"{statement_ms}ms",))
                for table in ("match_actions", "decks", "seats", "matches"):
                    cur = await tx.conn.execute(f"DELETE FROM {table} WHERE match_id = ANY(%s)", (ids,))
                    counts.append(cur.rowcount)
            except pg_errors.QueryCanceled:
                raise _PruneTooSlow(f"{len(ids)} matches could not be deleted within "
                                    f"{statement_ms} ms a statement") from None
            actions, decks, seats, matches = counts
            return PrunedBatch(tuple(ids), PruneCounts(matches, actions, decks, seats))
        # not in store_write_seconds: a batch deletes thousands of rows, and the latency that
        # alerts watch is that of the actions
        return await self._write("prune_finished", fn, timed=False)

    async def count_finished(self, ended_before: float) -> PruneCounts:
        async def fn(conn: psycopg.AsyncConnection) -> PruneCounts:
            row = await (await conn.execute(
                "SELECT count(*), "
                "coalesce(sum((SELECT count(*) FROM match_actions a WHERE a.match_id = m.match_id)), 0), "
                "coalesce(sum((SELECT count(*) FROM decks d WHERE d.match_id = m.match_id)), 0), "
                "coalesce(sum((SELECT count(*) FROM seats s WHERE s.match_id = m.match_id)), 0) "
                f"FROM matches m WHERE {self._PRUNABLE}", {"ended": list(FINISHED), "t": ended_before})).fetchone()
            return PruneCounts(*(int(v) for v in row))  # type: ignore[union-attr]
        return await self._read("count_finished", fn)
