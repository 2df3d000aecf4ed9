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
    pool = getattr(store, "_pool", None)  # PostgresStore
    if pool is not None:
        _kill_pool(pool)


def _kill_pool(pool) -> None:
    """The pool's idle connections close as sockets do and its tasks end, as they would with
    the process. Left running, they could hold the test's event loop for ever: psycopg_pool's
    worker catches ``CancelledError`` (the loop's end cancelling it while it opens a
    connection) and schedules another try, then waits for its next task, which nothing
    sends (a test hung so for its 300 s timeout). Synchronous, as a death is: a close
    scheduled as a task may never run before the loop ends."""
    from psycopg_pool.pool_async import StopWorker

    pool._closed = True  # a dead process asks for nothing more
    for conn in pool._pool:
        conn.pgconn.finish()
    pool._pool.clear()
    for _ in pool._workers:
        pool.run_task(StopWorker(pool))  # each worker ends at its next task
    pool._workers = []
    if pool._sched_runner is not None:  # its wait is not a task run: a cancel ends it
        pool._sched_runner.cancel()
        pool._sched_runner = None
