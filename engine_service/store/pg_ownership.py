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
"""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Callable

import psycopg
import structlog
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .base import StoreError, StoreInUse

log = structlog.get_logger("engine_service.store")

#: The first key of the two-key advisory lock (``"CGE2"``); the second is the schema's hash.
OWNER_LOCK_CLASS = 0x43474532
CHECK_S = 2.0
POLL_S = 0.2
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


def application_name() -> str:
    """The lock connection's name in ``pg_stat_activity`` (at most 63 bytes)."""
    return f"cardgames-engine owner pid {os.getpid()} on {socket.gethostname()}"[:63]


class AdvisoryOwnership:
    """The ownership lock of the schema that ``conninfo`` selects (module docstring).

    ``where``: the database as it may be logged (no password). ``on_lost``: called once, with
    a message, when another engine has taken the lock after this one lost it.
    """

    def __init__(self, conninfo: str, where: str, *, wait_s: float = 0.0, check_s: float = CHECK_S,
                 on_lost: Callable[[str], None] | None = None) -> None:
        params = conninfo_to_dict(conninfo)
        for key, value in CLIENT_KEEPALIVES.items():
            params.setdefault(key, value)
        params["application_name"] = application_name()
        self._conninfo = make_conninfo(**params)
        self.where = where
        self.wait_s = max(0.0, wait_s)
        self.check_s = check_s
        self.on_lost = on_lost
        self._conn: psycopg.AsyncConnection | None = None
        self._watchdog: asyncio.Task | None = None
        self.lost = False  # another engine took the lock: final

    @property
    def held(self) -> bool:
        """True while this store's session holds the lock (as far as the last check knows)."""
        return self._conn is not None and not self.lost

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
                await conn.execute(_UNLOCK, {"cls": OWNER_LOCK_CLASS})
            except psycopg.Error:
                pass  # the session is gone already, and its lock with it
        await self._close()

    # ---- internals ------------------------------------------------------------------------

    async def _try_take(self) -> bool:
        """A new lock session, and True if it got the lock (else it is closed again)."""
        try:
            conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.where}: {exc.diag.message_primary or exc}") from None
        try:
            await conn.execute(_SERVER_KEEPALIVES)
            row = await (await conn.execute(_TRY_LOCK, {"cls": OWNER_LOCK_CLASS})).fetchone()
        except BaseException:
            await conn.close()
            raise
        if row and row[0]:
            self._conn = conn
            return True
        await conn.close()
        if row and row[0] is None:  # hashtext(NULL): the search_path names no existing schema
            raise StoreError(f"{self.where}: no schema of the search_path exists; create it "
                             "first (CREATE SCHEMA ...)")
        return False

    async def _holder(self) -> str:
        """Who holds the lock, as far as this database role may see (best effort)."""
        try:
            async with await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True) as conn:
                row = await (await conn.execute(_HOLDER, {"cls": OWNER_LOCK_CLASS})).fetchone()
        except psycopg.Error:
            row = None
        if not row:
            return "another engine process"
        pid, name, addr, started = row
        return (f"another engine process ({name or 'no application_name'}; server pid {pid}"
                + (f", from {addr}" if addr else "")
                + (f", since {started.isoformat(timespec='seconds')}" if started else "") + ")")

    async def _still_held(self) -> bool:
        conn = self._conn
        if conn is None:
            return False
        try:
            async with asyncio.timeout(max(self.check_s, 1.0)):
                row = await (await conn.execute(_HOLDS, {"cls": OWNER_LOCK_CLASS})).fetchone()
        except (psycopg.Error, TimeoutError):
            return False
        return bool(row and row[0])

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.close()
            except psycopg.Error:
                pass

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.check_s)
            if await self._still_held():
                continue
            if self._conn is not None:
                log.warning("db_ownership_connection_lost", db=self.where)
                await self._close()  # writes are refused from here on
            try:
                taken = await self._try_take()
            except StoreError:  # the database cannot be reached: writes fail anyway; next tick
                continue
            if taken:
                log.info("db_ownership_reacquired", db=self.where)
                continue
            self.lost = True
            holder = await self._holder()
            message = f"{self.where} is now held by {holder}; this engine stops"
            log.error("db_ownership_lost", db=self.where, holder=holder)
            if self.on_lost is not None:
                self.on_lost(message)
            return
