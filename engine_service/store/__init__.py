"""Persistence behind one small interface (:class:`~.base.Store`): memory (tests), SQLite (the
embedded default), PostgreSQL (the system of record past one machine; ARCHITECTURE.md sections 2
and 7)."""

from __future__ import annotations

import os

from ..observability.metrics import Metrics
from .base import (ActionRecord, CorruptDatabase, CreateIdTaken, DatabaseReadOnly, DeckRecord, DuplicateClientAction,  # noqa: F401
                   MatchEnd, MatchExists, MatchListing, MatchNotWaiting, MatchRecord, MigrationFailed, NotADatabase,
                   OwnershipLost, PruneCounts, PrunedBatch, SeatRecord, SequenceConflict, Store,
                   StoredMatch, StoreError, StoreInUse, UnknownMatch)
from .memory import MemoryStore
from .sqlite import SqliteStore

__all__ = ["ActionRecord", "CorruptDatabase", "CreateIdTaken", "DatabaseReadOnly", "DeckRecord", "DuplicateClientAction", "MatchEnd", "MatchExists",
           "MatchListing", "MatchNotWaiting", "MatchRecord", "MemoryStore", "MigrationFailed", "NotADatabase",
           "OwnershipLost", "PruneCounts", "PrunedBatch", "SeatRecord",
           "SequenceConflict", "SqliteStore", "Store", "StoredMatch", "StoreError", "StoreInUse",
           "UnknownMatch", "describe_location",
           "open_store"]

MEMORY = "memory:"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def _is_postgres(location: str | os.PathLike[str]) -> bool:
    return str(location).lower().startswith(POSTGRES_SCHEMES)


def open_store(location: str | os.PathLike[str], metrics: Metrics | None = None,
               lock_wait_s: float = 0.0, *, create: bool = True, migrate: bool = True) -> Store:
    """A store for ``location``: ``"memory:"`` for an in-process store, a ``postgresql://``
    (or ``postgres://``) URL for PostgreSQL, anything else is the path of a SQLite file
    (created if missing). Call ``await store.open()`` before use; it waits up to
    ``lock_wait_s`` for another engine process holding the database to let go. ``create``
    and ``migrate`` False (SQLite, PostgreSQL): a database without the engine's tables is
    refused rather than given them, one of an older schema opened as it is, not migrated."""
    if str(location) == MEMORY:
        return MemoryStore(metrics)
    if _is_postgres(location):
        from .postgres import PostgresStore  # psycopg is imported only by who uses it
        return PostgresStore(str(location), metrics, lock_wait_s=lock_wait_s, create=create,
                             migrate=migrate)
    return SqliteStore(location, metrics, lock_wait_s=lock_wait_s, create=create, migrate=migrate)


def describe_location(location: str | os.PathLike[str]) -> str:
    """``location`` as it may be logged: a PostgreSQL URL loses its password."""
    if not _is_postgres(location):
        return str(location)
    from .postgres import redact
    return redact(str(location))
