"""One engine process per database, on PostgreSQL: the ownership lock of a schema.

Why one engine per database: :mod:`.ownership`. On PostgreSQL the lock is a session-level
advisory lock, ``(OWNER_LOCK_CLASS, hashtext(current_schema()))`` (one engine per schema, as
the store's tables are per schema), held on a connection of its own for the life of the store:

* **Released by the server** when that session ends, so an engine that crashes or is killed
  leaves nothing stale behind. The session asks the server for TCP keepalives and a
  ``tcp_user_timeout`` (:data:`SERVER_WINDOW_S`, and libpq for its own keepalives), so that
  even the session of a vanished machine, or of an engine cut off by a network partition, and
  its lock, end within about half a minute of the last packet the server got from it, instead
  of the operating system's two hours (keepalives: an idle connection) or fifteen minutes
  (retransmissions: the server's answer to a check in flight when the link went, which
  keepalives do not cover). Only the server's kernel can end it so: behind a TCP proxy or load
  balancer the server's keepalives reach the proxy, and a session whose engine is gone lasts
  as long as the proxy keeps its side open.
* **Named in refusals**: the lock connection's ``application_name`` says which process holds
  it (pid and host), and :class:`~.base.StoreInUse` quotes it with its address and start time
  from ``pg_stat_activity``.
* **Watched**: every ``check_s`` seconds the store checks that its session still holds the
  lock. If the connection is gone (the server restarted, the network failed, an operator ran
  ``pg_terminate_backend``), writes are refused (:attr:`held` is False: retryable
  ``UNAVAILABLE`` for clients) until the lock is taken again on a new connection. If another
  engine took it meanwhile, the ownership is **lost for good**: every write is refused with
  :class:`~.base.OwnershipLost` and ``on_lost`` tells the service, which stops (its
  orchestrator restarts it, and the new process waits for the lock like any other).
* **Doubted at once**: a connection of the store lost (:meth:`AdvisoryOwnership.doubt`) is
  the sign of a server restart before the next check: writes are refused from then on and the
  check runs now. A restarted server has no locks, and the store's pool reconnects by itself:
  its writes used to go on over new connections, the lock held by nobody (or taken by a second
  engine waiting for it) until the next check, up to ``check_s`` later.
* **Knows when the server is unreachable**: while the lock cannot be taken again because the
  server cannot be reached (down, restarting, in recovery, refusing connections),
  :attr:`~AdvisoryOwnership.unreachable` says why, and the store refuses every call at once
  with that reason instead of letting each wait for a connection; the server is tried again
  every :data:`RETRY_S`, and once back the store's idle connections are checked
  (``on_restored``) before writes resume.
* **Never waits on a hung server**: a server whose processes are stopped (SIGSTOP, a frozen
  VM) or a host gone without resetting its connections leaves the kernel acknowledging (or
  nobody answering) while nothing comes back, and keepalives do not help while a query waits.
  The check of the lock and the taking of it again are each bounded (:func:`sever`): a check
  without an answer within its bound is a lost lock session (writes refused, the lock taken
  again on a new connection), an attempt to take it without an answer within ``timeout_s``
  is a server that cannot be reached (:attr:`~AdvisoryOwnership.unreachable`). So is a check
  without an answer, at once (``on_silent``: the store severs the calls waiting on the
  server), so that every call fails at once within two checks of a hang or a partition, not
  only once the attempt to take the lock has given up.
* **Knows its own sessions after a partition**: every lock session the store opened is
  remembered by its server pid and start (a session given up as lost, or whose attempt to take
  the lock got no answer, may still hold the lock on a server that never learnt that the
  engine left: a network partition, the engine's FIN lost with it). When the lock is found
  held by one of them, it is this engine's own (``db_lock_held_by_old_session``), not another
  engine's: the store ends it (``pg_terminate_backend``, allowed on the role's own sessions)
  and takes the lock again, instead of stopping (``db_ownership_lost``, exit 1) or waiting for
  the server's keepalives. A lock found held by nobody by the time the holder is asked (the
  old session ended meanwhile) is tried again, never taken for lost. A new engine process
  cannot know its predecessor's sessions: it waits ``wait_s`` like any other, and its refusal
  says how long the holder has not checked its lock (a running engine does every
  :data:`CHECK_S`) and how to end a session left behind (:class:`~.base.StoreInUse`).
"""

from __future__ import annotations

import asyncio
import os
import socket
from contextlib import contextmanager
from typing import Awaitable, Callable, Iterator

import psycopg
import structlog
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .base import StoreError, StoreInUse


def reason_of(exc: psycopg.Error) -> str:
    """What went wrong, in one line, without the server's DETAIL (which may quote a row: a
    deck). A connection's failure has no server message: libpq's own text, which adds a hint
    on a line of its own (a tab, "Is the server running on that host ...?"), joined into one line:
    an error line of a command (prune, serve's ``store_unavailable``) is one line."""
    text = exc.diag.message_primary or str(exc) or type(exc).__name__
    return " ".join(line.strip() for line in text.splitlines() if line.strip()) or type(exc).__name__


log = structlog.get_logger("engine_service.store")

#: The first key of the two-key advisory lock (``"CGE2"``); the second is the schema's hash.
OWNER_LOCK_CLASS = 0x43474532
CHECK_S = 2.0
#: The longest an attempt to take the lock (its connection included) waits for the server
#: before the server is taken for unreachable: a server that accepts TCP connections but does
#: not answer (stopped, frozen) would otherwise hold the watchdog until libpq's
#: ``connect_timeout``, and a statement on a connection made forever.
TIMEOUT_S = 10.0
POLL_S = 0.2
#: How often a lock not held is tried again (the server unreachable, a lost connection).
RETRY_S = 0.5
#: libpq's keepalives on the lock connection (client side).
CLIENT_KEEPALIVES = {"keepalives": "1", "keepalives_idle": "10", "keepalives_interval": "5",
                     "keepalives_count": "3"}
#: The server's keepalives on the lock session (idle, interval, count: ignored on Unix-domain
#: sockets), and the window after which the server's kernel ends the session of an engine it
#: no longer hears from (idle + interval x count): its ``tcp_user_timeout`` too, so that an
#: answer in flight when the link went (retransmitted, not probed) ends it as soon.
SERVER_KEEPALIVES = (10, 5, 3)
SERVER_WINDOW_S = SERVER_KEEPALIVES[0] + SERVER_KEEPALIVES[1] * SERVER_KEEPALIVES[2]
#: Set on each new lock session, which also learns its own start (its identity beside its
#: pid: a server pid is reused by later sessions).
_SERVER_SETTINGS = (f"SELECT set_config('tcp_keepalives_idle', '{SERVER_KEEPALIVES[0]}', false), "
                    f"set_config('tcp_keepalives_interval', '{SERVER_KEEPALIVES[1]}', false), "
                    f"set_config('tcp_keepalives_count', '{SERVER_KEEPALIVES[2]}', false), "
                    f"set_config('tcp_user_timeout', '{SERVER_WINDOW_S * 1000}', false), "
                    "(SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())")
_KEY = "%(cls)s, hashtext(current_schema())"
_TRY_LOCK = f"SELECT pg_try_advisory_lock({_KEY})"
_UNLOCK = f"SELECT pg_advisory_unlock({_KEY})"
#: Ends one of this store's own old sessions: its pid and start both (never a reused pid).
_END_OLD = ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = %(pid)s "
            "AND backend_start IS NOT DISTINCT FROM %(start)s")
_HOLDS = ("SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' "
          "AND granted AND classid = %(cls)s::oid AND objid = hashtext(current_schema())::oid "
          "AND objsubid = 2")
#: The holder's pid (pg_locks': pg_stat_activity may not show a session ending), name,
#: address, start, and for how long it has sent no query (seconds; NULL unless the role may
#: see it): a running engine checks its lock every CHECK_S.
_HOLDER = ("SELECT l.pid, a.application_name, host(a.client_addr), a.backend_start, "
           "CASE WHEN a.state = 'idle' THEN extract(epoch FROM now() - a.state_change)::float8 END "
           "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
           "WHERE l.locktype = 'advisory' AND l.granted "
           "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
           "AND l.classid = %(cls)s::oid AND l.objid = hashtext(current_schema())::oid "
           "AND l.objsubid = 2 "
           # a holder gone from the activity view (another snapshot: it ended in between) is
           # nobody, tried again, not a session of unknown name taken for another engine's
           "AND (l.pid IS NULL OR a.pid IS NOT NULL)")


def sever(conn: psycopg.AsyncConnection) -> None:
    """Cut ``conn``'s socket (``shutdown``, both ways) under whatever waits on it: the call
    fails at once as on a lost connection (libpq: "server closed the connection
    unexpectedly"), and the connection is broken (the pool discards it). Unlike cancelling the
    awaiting task, which makes psycopg send the server a cancel request and wait for it (up to
    10 s more) on a server that does not answer; the fd stays libpq's to close."""
    try:
        fd = conn.pgconn.socket
    except psycopg.Error:
        return  # closed already
    try:
        dup = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        dup.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        dup.close()  # the duplicate only: the socket is libpq's


class Bound:
    """How a call on one connection is bounded: :meth:`on` severs the connection (:func:`sever`)
    if it is still in use ``seconds`` later; :attr:`fired` says that it was (:attr:`why`: a
    reason other than the bound, given to :meth:`cut`)."""

    __slots__ = ("seconds", "fired", "why")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self.why: str | None = None

    def cut(self, conn: psycopg.AsyncConnection, why: str) -> None:
        """Sever ``conn`` now, before the bound, for ``why``."""
        if not self.fired:
            self.fired, self.why = True, why
            sever(conn)

    @contextmanager
    def on(self, conn: psycopg.AsyncConnection, seconds: float | None = None) -> Iterator[None]:
        def fire() -> None:
            self.fired = True
            sever(conn)
        handle = asyncio.get_running_loop().call_later(self.seconds if seconds is None else seconds, fire)
        try:
            yield
        finally:
            handle.cancel()


def application_name() -> str:
    """The lock connection's name in ``pg_stat_activity`` (at most 63 bytes)."""
    return f"cardgames-engine owner pid {os.getpid()} on {socket.gethostname()}"[:63]


class AdvisoryOwnership:
    """The ownership lock of the schema that ``conninfo`` selects (module docstring).

    ``where``: the database as it may be logged (no password). ``on_lost``: called once, with
    a message, when another engine has taken the lock after this one lost it. ``on_restored``:
    awaited when the lock is confirmed or taken again after a loss or a doubt, before writes
    resume (the store checks its idle connections: a restarted server's are all dead).
    ``timeout_s``: the longest an attempt to take the lock (connection included) or to ask who
    holds it waits for the server; a check of the lock waits ``max(check_s, 1)`` at most.
    ``on_silent``: called with that bound when a check got no answer within it (a server that
    hangs, a partition): the store severs the calls waiting for the server, which is taken for
    unreachable (:attr:`unreachable`) until the lock is held again.
    """

    def __init__(self, conninfo: str, where: str, *, wait_s: float = 0.0, check_s: float = CHECK_S,
                 on_lost: Callable[[str], None] | None = None,
                 on_restored: Callable[[], Awaitable[None]] | None = None,
                 timeout_s: float = TIMEOUT_S,
                 on_silent: Callable[[float], None] | None = None) -> None:
        params = conninfo_to_dict(conninfo)
        for key, value in CLIENT_KEEPALIVES.items():
            params.setdefault(key, value)
        params["application_name"] = application_name()
        self._conninfo = make_conninfo(**params)
        self.where = where
        self.wait_s = max(0.0, wait_s)
        self.check_s = check_s
        self.on_lost = on_lost
        self.on_restored = on_restored
        self.on_silent = on_silent
        self.timeout_s = timeout_s
        self._conn: psycopg.AsyncConnection | None = None
        #: Every lock session this store opened, by server pid: its start (None until known).
        #: One given up may still hold the lock (its backend not yet gone: a hung server
        #: resumed, a partition that kept its end from the server) and is not another engine.
        self._sessions: dict[int, object] = {}
        self._ended: set[int] = set()  # old sessions this store has ended (said once)
        self._pid = 0  # the lock session's server pid
        self._watchdog: asyncio.Task | None = None
        self.lost = False  # another engine took the lock: final
        #: Why the server cannot be reached (the last attempt to take the lock again), or None.
        self.unreachable: str | None = None
        self._doubts = 0  # doubt() calls so far
        self._cleared = 0  # how many of them a check has answered
        self._wake = asyncio.Event()  # a doubt: check now
        self._verdict = asyncio.Event()  # set unless a loss or a doubt awaits the watchdog's check
        self._verdict.set()
        self._since: float | None = None  # when writes began to be refused (loss or doubt)
        self._restoring = False  # on_restored under way: writes wait for it
        self._silence: str | None = None  # the last check got no answer: why
        self._said_unreachable = False  # db_unreachable logged for this outage

    @property
    def held(self) -> bool:
        """True while this store's session holds the lock (as far as the last check knows)
        and no lost connection has put it in doubt since."""
        return (self._conn is not None and not self.lost and not self._restoring
                and self._cleared == self._doubts)

    def doubt(self) -> None:
        """A connection of the store was lost: the lock session may have gone with it (a
        server restart ends every session, and its locks). Writes are refused until the
        watchdog, woken now, has found the lock still held or taken it again."""
        if self.lost or self._watchdog is None:
            return
        self._doubts += 1
        self._refusing()
        self._wake.set()

    async def verdict(self, timeout: float) -> None:
        """Wait (up to ``timeout``) for the check a loss or a doubt started: the lock held
        again, the server found unreachable (:attr:`unreachable`), or the lock lost."""
        if self._verdict.is_set():
            return
        try:
            async with asyncio.timeout(timeout):
                await self._verdict.wait()
        except TimeoutError:
            pass

    async def acquire(self) -> None:
        """Take the lock, waiting up to ``wait_s`` for its holder; StoreInUse when it does not
        let go. Then watch it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        waiting = False  # said once, so that a silent start-up is not taken for a hang
        while not await self._try_take():
            if loop.time() >= deadline:
                raise StoreInUse(self._refusal(await self._holder_row()))
            if not waiting:
                waiting = True
                log.warning("db_lock_waiting", db=self.where, holder=await self._holder(),
                            wait_s=round(deadline - loop.time(), 1))
            await asyncio.sleep(POLL_S)
        self._watchdog = loop.create_task(self._watch(), name="store-ownership")

    async def release(self) -> None:
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.cancel()
            await asyncio.gather(watchdog, return_exceptions=True)
        # Unlocked first, then closed: a closing session releases its lock only when its
        # backend has exited, a moment after the client has gone, and a successor opening the
        # database at once (a restart, a test reopening it) found it still held (StoreInUse).
        conn = self._conn
        if conn is not None and not conn.closed:
            try:
                with Bound(self.timeout_s).on(conn):  # a hung server: closed without it
                    await conn.execute(_UNLOCK, {"cls": OWNER_LOCK_CLASS})
            except psycopg.Error:
                pass  # the session is gone already, and its lock with it
        await self._close()

    # ---- internals ------------------------------------------------------------------------

    async def _try_take(self) -> bool:
        """A new lock session, and True if it got the lock (else it is closed again)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        try:
            async with asyncio.timeout(self.timeout_s):
                conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.where}: {reason_of(exc)}") from None
        except TimeoutError:
            raise StoreError(f"cannot connect to {self.where}: no answer within {self.timeout_s:g} s") from None
        pid = conn.info.backend_pid
        self._sessions[pid] = None  # from now on the lock may be granted to it, the answer lost
        bound = Bound(max(0.0, deadline - loop.time()))
        try:
            with bound.on(conn):
                settings = await (await conn.execute(_SERVER_SETTINGS)).fetchone()
                self._sessions[pid] = settings[-1] if settings else None
                row = await (await conn.execute(_TRY_LOCK, {"cls": OWNER_LOCK_CLASS})).fetchone()
        except psycopg.Error as exc:
            await conn.close()
            if bound.fired:
                raise StoreError(f"{self.where} gave no answer within {self.timeout_s:g} s") from None
            raise StoreError(f"cannot take the lock of {self.where}: {exc.diag.message_primary or exc}") from None
        except BaseException:
            await conn.close()
            raise
        if row and row[0]:
            self._conn, self._pid = conn, pid
            return True
        del self._sessions[pid]  # answered: it does not hold the lock
        await conn.close()
        if row and row[0] is None:  # hashtext(NULL): the search_path names no existing schema
            raise StoreError(f"{self.where}: no schema of the search_path exists; create it "
                             "first (CREATE SCHEMA ...)")
        return False

    @staticmethod
    def _describe(row: tuple | None) -> str:
        """Who holds the lock (a :data:`_HOLDER` row), as far as this database role may see."""
        if not row:
            return "another engine process"
        pid, name, addr, started, idle_s = row
        return (f"another engine process ({name or 'no application_name'}; server pid {pid}"
                + (f", from {addr}" if addr else "")
                + (f", since {started.isoformat(timespec='seconds')}" if started else "")
                + (f", no query for {idle_s:.0f} s" if idle_s is not None else "") + ")")

    async def _holder(self) -> str:
        return self._describe(await self._holder_row())

    def _refusal(self, row: tuple | None) -> str:
        """The refusal of a lock still held after ``wait_s``: stop the other engine, or, if its
        session has sent no query for several checks' time, end the session it left behind."""
        message = f"{self.where} is in use by {self._describe(row)}; one engine per database (or schema)"
        idle_s = row[4] if row else None
        if idle_s is None or idle_s < 3 * CHECK_S:
            return message + ": stop the other one first"
        return (message + f". That session has not checked the lock for {idle_s:.0f} s (a running engine "
                f"does every {CHECK_S:g} s): its engine is most likely gone (stopped or crashed while cut "
                f"off from the server, a network partition). The server ends it {SERVER_WINDOW_S} s after "
                "the last packet it got from that engine, unless a proxy or load balancer between them "
                "keeps it open: wait longer (--db-lock-wait-s), or, once sure that engine no longer "
                f"runs, end it: SELECT pg_terminate_backend({row[0]})")

    def _own(self, row: tuple) -> bool:
        """Whether the holder (a :data:`_HOLDER` row) is a session this store opened."""
        if row[0] not in self._sessions:
            return False
        mine = self._sessions[row[0]]
        if mine is None or row[3] is None:  # its start unknown: its name, this process's, says
            return row[1] == application_name()
        return mine == row[3]

    async def _end_old(self, row: tuple) -> None:
        """The lock is held by a session this store gave up (:meth:`_own`): end it, once (its
        backend exits, and the lock with it, in a moment)."""
        pid = row[0]
        if pid in self._ended:
            return
        self._ended.add(pid)
        ended = await self._ask(_END_OLD, {"pid": pid, "start": self._sessions.get(pid) or row[3]})
        log.warning("db_lock_held_by_old_session", db=self.where, server_pid=pid, idle_s=row[4],
                    ended=bool(ended and ended[0]),
                    **({} if ended and ended[0] else {
                        "action": "writes are refused until it ends: the server ends it within "
                                  f"{SERVER_WINDOW_S} s of the last packet it got from this engine (unless "
                                  "a proxy between them keeps it open); to end it now, as a role allowed "
                                  f"to: SELECT pg_terminate_backend({pid})"}))

    async def _holder_row(self) -> tuple | None:
        """The lock holder (a :data:`_HOLDER` row; None: nobody, or unknown)."""
        return await self._ask(_HOLDER, {"cls": OWNER_LOCK_CLASS})

    async def _ask(self, sql: str, params: dict) -> tuple | None:
        """``sql``'s first row on a connection of its own (None: no row, or no answer within
        ``timeout_s``)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        try:
            async with asyncio.timeout(self.timeout_s):
                conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        except (psycopg.Error, TimeoutError):
            return None
        try:
            with Bound(max(0.0, deadline - loop.time())).on(conn):
                return await (await conn.execute(sql, params)).fetchone()
        except psycopg.Error:
            return None
        finally:
            await conn.close()

    async def _still_held(self) -> bool:
        """Whether the lock session still holds the lock; False too when it gives no answer
        within ``max(check_s, 1)`` seconds (its connection is then severed, not left waiting:
        a hung server), so that writes are refused and the lock taken again."""
        conn = self._conn
        if conn is None:
            return False
        bound = Bound(max(self.check_s, 1.0))
        try:
            with bound.on(conn):
                row = await (await conn.execute(_HOLDS, {"cls": OWNER_LOCK_CLASS})).fetchone()
        except psycopg.Error:
            if bound.fired:
                self._silence = f"{self.where} gave no answer within {bound.seconds:g} s to the check of the lock"
                self.unreachable = self.unreachable or self._silence  # before the calls are cut
                if self.on_silent is not None:
                    self.on_silent(bound.seconds)
            return False
        return bool(row and row[0])

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.close()
            except psycopg.Error:
                pass

    def _refusing(self) -> None:
        """Writes are refused from now (a loss or a doubt) until the watchdog's verdict."""
        self._verdict.clear()
        if self._since is None:
            self._since = asyncio.get_running_loop().time()

    def _unreachable(self, why: str) -> None:
        """The server cannot be reached (``why``): said once, until the lock is held again."""
        if not self._said_unreachable:
            self._said_unreachable = True
            log.error("db_unreachable", db=self.where, error=why)
        self.unreachable = why
        self._verdict.set()

    async def _restored(self, doubts: int) -> float | None:
        """The lock is held (confirmed or taken again): the store checks its connections, then
        writes resume (the doubts raised up to ``doubts`` answered). How long writes were
        refused, once they resume."""
        if self.on_restored is not None:
            self._restoring = True
            try:
                await self.on_restored()
            except Exception as exc:  # writes resume all the same: a dead connection fails its call
                log.warning("db_pool_check_failed", db=self.where, error=str(exc))
            finally:
                self._restoring = False
        self._cleared = doubts
        if not self.held:  # doubted again meanwhile: the next check answers
            return None
        self._verdict.set()
        since, self._since = self._since, None
        return None if since is None else round(asyncio.get_running_loop().time() - since, 2)

    async def _sleep(self) -> None:
        """Until the next check: ``check_s``, :data:`RETRY_S` while writes are refused, or a
        doubt (:meth:`doubt`)."""
        interval = self.check_s if self.held else min(self.check_s, RETRY_S)
        try:
            async with asyncio.timeout(interval):
                await self._wake.wait()
        except TimeoutError:
            pass
        self._wake.clear()

    async def _watch(self) -> None:
        while True:
            await self._sleep()
            doubts = self._doubts
            if await self._still_held():
                if self._cleared != doubts:
                    refused_s = await self._restored(doubts)
                    log.info("db_ownership_confirmed", db=self.where, refused_s=refused_s)
                continue
            if self._conn is not None:
                log.warning("db_ownership_connection_lost", db=self.where)
                self._refusing()
                await self._close()  # writes are refused from here on
            silence, self._silence = self._silence, None
            if silence is not None:
                # no answer at all: the server is unreachable until it answers again, and
                # every call fails at once meanwhile, instead of waiting for the attempt to
                # take the lock to give up (timeout_s more: 10 s) on a connection, or for an
                # idle connection of the pool that will not answer either
                self._unreachable(silence)
            try:
                taken = await self._try_take()
            except StoreError as exc:  # the database cannot be reached: say so; try again soon
                self._unreachable(str(exc))
                continue
            self.unreachable, self._said_unreachable = None, False
            if taken:
                refused_s = await self._restored(doubts)
                log.info("db_ownership_reacquired", db=self.where, refused_s=refused_s)
                continue
            row = await self._holder_row()
            if row is None:  # the holder ended meanwhile (or the server did not say): again soon
                continue
            if self._own(row):  # this store's own session, still there: ended, then taken again
                await self._end_old(row)
                continue  # writes stay refused; tried again in RETRY_S
            self.lost = True
            self._verdict.set()
            holder = self._describe(row)
            message = f"{self.where} is now held by {holder}; this engine stops"
            log.error("db_ownership_lost", db=self.where, holder=holder)
            if self.on_lost is not None:
                self.on_lost(message)
            return
