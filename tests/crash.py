"""Crashes simulated in-process: what the death of its process does to a store left open."""

from __future__ import annotations

from engine_service.store import Store


def crash(store: Store) -> None:
    """The kernel closes a dead process's files and sockets: the store's ownership lock of its
    database goes with them (SQLite: the lock file's descriptor; PostgreSQL: the lock
    session). Nothing is flushed or closed cleanly, so whatever the store acknowledged must
    already be durable. A manager's store: ``crash(manager._store)``."""
    ownership = getattr(store, "_ownership", None)  # SqliteStore
    if ownership is not None:
        ownership.release()
    owner = getattr(store, "_owner", None)  # PostgresStore
    if owner is not None:
        if owner._watchdog is not None:
            owner._watchdog.cancel()
        if owner._conn is not None:
            owner._conn.pgconn.finish()  # the socket closes; the server ends the session
