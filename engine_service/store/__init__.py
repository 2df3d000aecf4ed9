"""Persistence behind one small interface (:class:`~.base.Store`): memory (tests), SQLite (the
embedded default), later PostgreSQL (ARCHITECTURE.md sections 2 and 7)."""

from __future__ import annotations

import os

from ..observability.metrics import Metrics
from .base import (ActionRecord, DeckRecord, DuplicateClientAction, MatchExists, MatchListing,  # noqa: F401
                   MatchRecord, NotADatabase, SeatRecord, SequenceConflict, Store, StoredMatch,
                   StoreError, UnknownMatch)
from .memory import MemoryStore
from .sqlite import SqliteStore

__all__ = ["ActionRecord", "DeckRecord", "DuplicateClientAction", "MatchExists", "MatchListing",
           "MatchRecord", "MemoryStore", "NotADatabase", "SeatRecord", "SequenceConflict",
           "SqliteStore", "Store", "StoredMatch", "StoreError", "UnknownMatch", "open_store"]

MEMORY = "memory:"


def open_store(location: str | os.PathLike[str], metrics: Metrics | None = None) -> Store:
    """A store for ``location``: ``"memory:"`` for an in-process store, anything else is the
    path of a SQLite file (created if missing). Call ``await store.open()`` before use."""
    if str(location) == MEMORY:
        return MemoryStore(metrics)
    return SqliteStore(location, metrics)
