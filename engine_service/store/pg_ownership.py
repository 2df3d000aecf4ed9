"""One engine process per database, on PostgreSQL: the ownership lock of a schema.

Why one engine per database: :mod:`.ownership`. On PostgreSQL the lock is a session-level
advisory lock, ``(OWNER_LOCK_CLASS, hashtext(current_schema()))`` (one engine per schema, as
the store's tables are per schema), held on a connection of its own for the life of the store:

* **Released by the server** when that session ends, so an engine that crashes or is killed
  leaves nothing stale behind. The session asks the server for TCP keepalives (and libpq for
  its own), so that even a vanished machine's session, and its lock, end within about half a
  minute instead of the operating system's two hours.
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
  is a server that cannot be reached (:attr:`~AdvisoryOwnership.unreachable`).
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
#: The server's keepalives on the lock session (ignored on Unix-domain sockets).
_SERVER_KEEPALIVES = ("SELECT set_config('tcp_keepalives_idle', '10', false), "
                      "set_config('tcp_keepalives_interval', '5', false), "
                      "set_config('tcp_keepalives_count', '3', false)")
_KEY = "%(cls)s, hashtext(current_schema())"
_TRY_LOCK = f"SELECT pg_try_advisory_lock({_KEY})"
_UNLOCK = f"SELECT pg_advisory_unlock({_KEY})"
_HOLDS = ("SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' "
          "AND granted AND classid = %(cls)s::oid AND objid = hashtext(current_schema())::oid "
          "AND objsubid = 2")
_HOLDER = ("SELECT a.pid, a.application_name, host(a.client_addr), a.backend_start "
           "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
           "WHERE l.locktype = 'advisory' AND l.granted "
           "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
           "AND l.classid = %(cls)s::oid AND l.objid = hashtext(current_schema())::oid "
           "AND l.objsubid = 2")


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
    if it is still in use ``seconds`` later; :attr:`fired` says that it was."""

    __slots__ = ("seconds", "fired")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False

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
    """

    def __init__(self, conninfo: str, where: str, *, wait_s: float = 0.0, check_s: float = CHECK_S,
                 on_lost: Callable[[str], None] | None = None,
                 on_restored: Callable[[], Awaitable[None]] | None = None,
                 timeout_s: float = TIMEOUT_S) -> None:
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
        self.timeout_s = timeout_s
        self._conn: psycopg.AsyncConnection | None = None
        #: The server pids of the lock sessions this store closed: one may still hold the lock
        #: a moment (its backend not yet gone: a hung server resumed) and is not another engine.
        self._old_pids: set[int] = set()
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
                raise StoreInUse(f"{self.where} is in use by {await self._holder()}; one engine per "
                                 "database (or schema): stop the other one first")
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
            raise StoreError(f"cannot connect to {self.where}: {exc.diag.message_primary or exc}") from None
        except TimeoutError:
            raise StoreError(f"cannot connect to {self.where}: no answer within {self.timeout_s:g} s") from None
        bound = Bound(max(0.0, deadline - loop.time()))
        try:
            with bound.on(conn):
                await conn.execute(_SERVER_KEEPALIVES)
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
            self._conn, self._pid = conn, conn.info.backend_pid
            return True
        await conn.close()
        if row and row[0] is None:  # hashtext(NULL): the search_path names no existing schema
            raise StoreError(f"{self.where}: no schema of the search_path exists; create it "
                             "first (CREATE SCHEMA ...)")
        return False

    async def _holder(self) -> str:
        """Who holds the lock, as far as this database role may see (best effort)."""
        row = await self._holder_row()
        if not row:
            return "another engine process"
        pid, name, addr, started = row
        return (f"another engine process ({name or 'no application_name'}; server pid {pid}"
                + (f", from {addr}" if addr else "")
                + (f", since {started.isoformat(timespec='seconds')}" if started else "") + ")")

    async def _holder_row(self) -> tuple | None:
        """The lock holder's pid, application_name, address and start (None: unknown), asked
        within ``timeout_s``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        try:
            async with asyncio.timeout(self.timeout_s):
                conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        except (psycopg.Error, TimeoutError):
            return None
        try:
            with Bound(max(0.0, deadline - loop.time())).on(conn):
                return await (await conn.execute(_HOLDER, {"cls": OWNER_LOCK_CLASS})).fetchone()
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
        try:
            with Bound(max(self.check_s, 1.0)).on(conn):
                row = await (await conn.execute(_HOLDS, {"cls": OWNER_LOCK_CLASS})).fetchone()
        except psycopg.Error:
            return False
        return bool(row and row[0])

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._old_pids.add(self._pid)
            try:
                await conn.close()
            except psycopg.Error:
                pass

    def _refusing(self) -> None:
        """Writes are refused from now (a loss or a doubt) until the watchdog's verdict."""
        self._verdict.clear()
        if self._since is None:
            self._since = asyncio.get_running_loop().time()

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
            try:
                taken = await self._try_take()
            except StoreError as exc:  # the database cannot be reached: say so; try again soon
                if self.unreachable is None:
                    log.error("db_unreachable", db=self.where, error=str(exc))
                self.unreachable = str(exc)
                self._verdict.set()
                continue
            self.unreachable = None
            if taken:
                refused_s = await self._restored(doubts)
                log.info("db_ownership_reacquired", db=self.where, refused_s=refused_s)
                continue
            row = await self._holder_row()
            if row and row[0] in self._old_pids:  # this store's own session, still ending
                log.warning("db_lock_held_by_old_session", db=self.where, server_pid=row[0])
                continue  # writes stay refused; tried again in RETRY_S
            self.lost = True
            self._verdict.set()
            holder = await self._holder()
            message = f"{self.where} is now held by {holder}; this engine stops"
            log.error("db_ownership_lost", db=self.where, holder=holder)
            if self.on_lost is not None:
                self.on_lost(message)
            return
