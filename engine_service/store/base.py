"""The store interface: what the session layer persists, and nothing more.

A match is event-sourced (ARCHITECTURE.md section 4): its **record** (game, options, first
dealer, table settings, seats, status), the **decks** dealt (server-side chance, one per deal,
secret) and the append-only **action log** keyed by ``(match_id, seq)``. The state of a match
is the fold of its log through the rules core, so the store never holds a game state.

The interface is shaped after the relational layout that a PostgreSQL store will use when the
service outgrows one machine (section 7), so that adding one changes nothing above this
module:

* ``match_actions(match_id, seq)`` primary key: an append at a sequence number that exists is
  a :class:`SequenceConflict`, which gives single-writer ordering even with several writers;
* a unique key on ``(match_id, seat, client_action_id)``: a second append with the same client
  action id is a :class:`DuplicateClientAction`, which makes retries idempotent across
  restarts (the id is scoped per seat because each seat's client picks its own ids: two
  clients choosing the same id must not see each other's results);
* a unique seat-token hash across all matches (tokens themselves are never stored);
* a unique ``create_hash`` across all matches (the hash of CreateMatch's ``client_create_id``;
  schema 7): a second match with the same one is a :class:`CreateIdTaken`, so that one id
  never creates two matches, whatever the callers;
* one transaction per call: an action and the deck it makes necessary are written together
  (with the match's end when the action ends it at the server's deal limit: :class:`MatchEnd`),
  and so are a match's start, its last seat and its first deck (:meth:`Store.start_match`).

Every method is a coroutine and must not block the event loop; every write is durable when it
returns (an accepted action is acknowledged only after that).
"""

from __future__ import annotations

import secrets
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..observability.metrics import Metrics

UNFINISHED = ("waiting", "active")
FINISHED = ("finished", "terminated")
STATUSES = UNFINISHED + FINISHED


# ---- errors ------------------------------------------------------------------------------

class StoreError(Exception):
    """A store operation failed (I/O, corruption, constraint)."""


class NotADatabase(StoreError):
    """The database path does not hold a database of this service (garbage, another
    application's SQLite file, or a newer schema)."""


class CorruptDatabase(NotADatabase):
    """The database is ours but damaged (SQLite: ``PRAGMA quick_check`` found a problem, or
    reading it says "database disk image is malformed"): the engine must not start on it;
    the operator restores a backup."""


class MigrationFailed(NotADatabase):
    """Bringing a database of an older schema to this program's failed (a statement of a
    migration step was refused); the transaction rolled back and the database keeps its old
    schema. Named apart from a file that is not a database: the operator's next step differs
    (the upgrade notes, or restoring the backup taken before it)."""


class DatabaseReadOnly(StoreError):
    """The database cannot be written by this process (SQLite: SQLITE_READONLY; the file or
    its directory not writable by the engine's user, a read-only filesystem): refused when
    the store opens, not served with every write failing (:meth:`Store.open`)."""


class StoreInUse(StoreError):
    """Another engine process holds the database (one engine per database:
    :mod:`.ownership`, docs/operations.md)."""


class OwnershipLost(StoreError):
    """This engine no longer holds its database: another engine may be writing to it (the
    PostgreSQL store's lock connection was lost and the lock taken meanwhile). The store
    refuses every further write; the service stops."""


class SequenceConflict(StoreError):
    """An action was appended at a sequence number that already exists (a second writer)."""


class DuplicateClientAction(StoreError):
    """An action reuses a client_action_id of the same seat in the same match."""


class MatchExists(StoreError):
    """A match with this id exists already."""


class CreateIdTaken(StoreError):
    """A match created with this ``create_hash`` (CreateMatch's ``client_create_id``) exists
    already; nothing was written."""


class UnknownMatch(StoreError):
    """No match with this id in the store."""


class MatchNotWaiting(StoreError):
    """:meth:`Store.start_match` found the match's status other than ``waiting``: it started
    (or ended) already, by a write whose answer may have been lost. Nothing was written."""


# ---- records -----------------------------------------------------------------------------

@dataclass(frozen=True)
class SeatRecord:
    """One seat: its configuration and who holds it (``token_hash`` empty: nobody yet)."""

    seat: int
    kind: str = "open"  # "open" | "bot"
    bot: str = ""
    player_name: str = ""
    token_hash: str = ""  # sha256 hex of the seat token; "" while the seat is free
    joined_at: float | None = None
    left: bool = False  # the player resigned / left; a bot plays the seat (GJ-12.4)
    # sha256 hex of the client_join_id its player joined with (sessions/tokens.py
    # join_id_hash; schema 6): a retried JoinMatch with that id gets the seat back; "": none
    join_hash: str = ""
    # The player's absence, durable so that a restart neither restarts nor forgets a reconnect
    # grace window (schema 8; written by :meth:`Store.save_absence` and
    # :meth:`Store.touch_absences` only, never by :meth:`Store.save_seat`): ``away_since``, the
    # Unix time the window started, counted in the engine's serving time (a restart moves it
    # forward by the downtime; None: not away, or connected when last written);
    # ``away_seen``, the newest Unix time the engine is known to have served while the player
    # was away (the stop time after a drain, the last heartbeat after a crash); ``taken_over``,
    # the takeover bot plays the seat since the window expired (GJ-12.4). Left out of the
    # comparison of seats (compare=False): presence is no part of a seat's configuration and
    # holder, which the sessions compare with the store's rows (SeatSlot.record)
    away_since: float | None = field(default=None, compare=False)
    away_seen: float | None = field(default=None, compare=False)
    taken_over: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class MatchRecord:
    """A match's configuration and status (never its cards: those are in the decks)."""

    match_id: str
    game: str
    options: Mapping[str, Any]  # non-default table options, JSON types
    first_dealer: int
    seats: tuple[SeatRecord, ...]
    turn_time_s: float = 0.0  # effective per-decision deadline; 0: none
    reconnect_grace_s: float = 60.0
    spectators_allowed: bool = True
    name: str = ""
    takeover_bot: str = ""  # bot for absent seats (GJ-12.4); "": the auto-move policy
    listed: bool = False  # shown in the lobby (ListOpenMatches) while it waits for players
    # spectators see the match this many actions late while it is played (schema 5; 0 before)
    spectator_delay_actions: int = 0
    created_at: float = 0.0
    status: str = "waiting"
    result: Mapping[str, Any] | None = None
    ended_at: float | None = None
    # the public commitment of every deal dealt, recorded with the result when the match ends
    # (schema 4; empty before): a listing of ended matches shows them without a replay
    deal_commitments: tuple[str, ...] = ()
    # sha256 hex of the client_create_id the match was created with (sessions/tokens.py
    # create_id_hash; schema 7), unique across the stored matches; "": none
    create_hash: str = ""
    # sha256 hex of the CreateMatch request it was created by, without the id (sessions/terms.py
    # request_digest): a retry with the same id and another request is refused; "": none
    create_digest: str = ""


#: Commitment schemes of a deck (``DeckRecord.scheme``; the formulas are in
#: ``sessions/fairness.py`` and docs/api.md "Fair dealing"): one hash of the whole deck
#: (decks recorded under schema 3), or one hash per card, so that the cards the table saw can
#: be revealed without the others (schema 4 on).
SCHEME_WHOLE_DECK = 1
SCHEME_PER_CARD = 2


@dataclass(frozen=True)
class DeckRecord:
    """The deck of one deal (0-based deal index), card codes top card first. Secret.

    ``salt``: 32 lowercase hex digits (16 random bytes) from which the deal's public
    commitment is made under ``scheme`` (docs/api.md "Fair dealing"); "" for decks recorded
    before schema 3, which have no commitment. Never revealed."""

    deal: int
    cards: tuple[str, ...] = field(repr=False)  # never in a repr that could reach a log line
    salt: str = field(default="", repr=False)
    scheme: int = SCHEME_PER_CARD


def new_salt() -> str:
    """A fresh secret salt for a deck: 16 bytes of the CSPRNG, as 32 lowercase hex digits."""
    return secrets.token_hex(16)


@dataclass(frozen=True)
class ActionRecord:
    """One accepted action: it got sequence number ``seq`` (1-based)."""

    seq: int
    seat: int
    action: str
    by: str = "player"  # "player" | "bot" | "auto"
    client_action_id: str = ""
    reason: str = ""  # why a non-player made it: "timeout", "bot_failed", "takeover"...
    at: float = 0.0


@dataclass(frozen=True)
class MatchEnd:
    """A match's end written with the action that ends it (:meth:`Store.append_action`): what
    :meth:`Store.set_status` writes at an end. The end at the server's deal limit
    (``max_match_deals``) follows from the log only under the limit in force: written apart,
    a process that died between the two writes and came back with a higher limit played on."""

    status: str
    result: Mapping[str, Any]
    ended_at: float
    deal_commitments: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoredMatch:
    """Everything needed to rebuild a match."""

    record: MatchRecord
    decks: tuple[DeckRecord, ...] = ()
    actions: tuple[ActionRecord, ...] = ()


@dataclass(frozen=True)
class MatchListing:
    """A match record with its current sequence number (the number of actions)."""

    record: MatchRecord
    seq: int = 0


@dataclass(frozen=True)
class PruneCounts:
    """What a prune deleted (or would delete): matches, and the rows stored for them."""

    matches: int = 0
    actions: int = 0
    decks: int = 0
    seats: int = 0

    def __add__(self, other: "PruneCounts") -> "PruneCounts":
        return PruneCounts(self.matches + other.matches, self.actions + other.actions,
                           self.decks + other.decks, self.seats + other.seats)


@dataclass(frozen=True)
class PrunedBatch:
    """One batch of :meth:`Store.prune_finished`: the ids of the matches deleted, and counts."""

    match_ids: tuple[str, ...] = ()
    counts: PruneCounts = PruneCounts()


#: Most matches one :meth:`Store.prune_finished` call deletes.
MAX_PRUNE_BATCH = 500


@dataclass
class _Timer:
    """Records write latency and errors of store operations in the metrics."""

    metrics: Metrics | None = field(default=None)

    def write(self, operation: str) -> "_WriteTimer":
        """A context manager timing one write (a class, not a generator: one per action)."""
        return _WriteTimer(self.metrics, operation)

    def error(self, operation: str) -> None:
        if self.metrics is not None:
            self.metrics.child(self.metrics.store_errors, operation).inc()


class _WriteTimer:
    __slots__ = ("metrics", "operation", "start")

    def __init__(self, metrics: Metrics | None, operation: str) -> None:
        self.metrics, self.operation = metrics, operation

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        m = self.metrics
        if m is None:
            return
        if exc_type is None:
            m.child(m.store_write_seconds, self.operation).observe(time.perf_counter() - self.start)
        elif issubclass(exc_type, Exception):
            m.child(m.store_errors, self.operation).inc()


# ---- the interface -------------------------------------------------------------------------

class Store(ABC):
    """Persistence of matches. Implementations: :class:`~.memory.MemoryStore` (tests),
    :class:`~.sqlite.SqliteStore` (the embedded default), :class:`~.postgres.PostgresStore`."""

    #: Called (once, on the event loop, with a message) when the store loses the ownership
    #: of its database after :meth:`open` had it (:class:`OwnershipLost`); the service sets
    #: it to stop itself. Stores whose ownership cannot be lost never call it.
    on_ownership_lost: Callable[[str], None] | None = None

    #: Called (once, with no argument) by :meth:`open` as soon as the store holds its database
    #: (its ownership lock taken, where it has one), before open() creates, checks, migrates or
    #: writes anything; it may run on the store's own thread. The service binds its ports
    #: there: a start that cannot serve then fails before a migration changed the database.
    #: An exception it raises ends open() (the lock released) and reaches its caller as it is.
    on_held: Callable[[], None] | None = None

    def _held(self) -> None:
        if self.on_held is not None:
            self.on_held()

    def __init__(self, metrics: Metrics | None = None) -> None:
        self._timer = _Timer(metrics)

    @abstractmethod
    async def open(self) -> None:
        """Open (and create or migrate) the store; NotADatabase if it is not one of ours,
        DatabaseReadOnly if this process cannot write it, StoreInUse if another engine process
        holds it (after the store's lock wait). Opening an open store does nothing."""

    @abstractmethod
    async def close(self) -> None:
        """Flush and close; further calls fail (StoreError). Idempotent. A call refused by a
        closed store is a store error like any other failure, a read as a write: counted in
        ``store_errors`` under its operation (every store alike; ``ping``, a question and not
        an operation, is counted under none)."""

    @abstractmethod
    async def create_match(self, record: MatchRecord, decks: Sequence[DeckRecord] = ()) -> None:
        """Insert a new match with its seats and first decks (MatchExists if the id exists;
        CreateIdTaken if another match has its ``create_hash``)."""

    @abstractmethod
    async def find_created(self, create_hash: str) -> tuple[str, str] | None:
        """The match created with ``create_hash`` (MatchRecord.create_hash), as its id and its
        ``create_digest``; None when no stored match has it (never used, or pruned)."""

    @abstractmethod
    async def save_seat(self, match_id: str, seat: SeatRecord) -> None:
        """Replace one seat's row (join, leave, resignation). UnknownMatch if the match, or
        that seat of it, does not exist (nothing written: a seat is never added)."""

    @abstractmethod
    async def save_absence(self, match_id: str, seat: int, away_since: float | None,
                           taken_over: bool = False, away_seen: float | None = None) -> None:
        """Record one seat's absence (schema 8): its player is away since ``away_since`` (Unix
        time) and the engine served at ``away_seen`` (default: ``away_since``); with
        ``taken_over``, the takeover bot plays the seat (GJ-12.4). ``away_since`` None: the
        player is back (both times cleared, ``taken_over`` false). Only these columns change: a seat's configuration and holder
        are :meth:`save_seat`'s. UnknownMatch if the match or the seat does not exist."""

    @abstractmethod
    async def touch_absences(self, seats: Sequence[tuple[str, int]], at: float) -> None:
        """Set ``away_seen`` to ``at`` (Unix time) for each ``(match_id, seat)`` of ``seats``
        whose player is recorded away, in one transaction: the engine served until at least
        ``at`` while those players were away (a heartbeat, and the last one at a drain). A
        seat not recorded away, or not stored, is left alone."""

    @abstractmethod
    async def ping(self) -> None:
        """One round trip through what a write goes through first, changing nothing (SQLite:
        an empty transaction, the write lock, the file check and the commit; PostgreSQL: the
        ownership check and a pooled connection's answer): StoreError when the database would
        refuse a write now. Asked only while an outage of the absence writes is open and
        nothing else is written that would say whether it is over
        (MatchManager._touch_absences): never on a healthy engine's path."""

    @abstractmethod
    async def set_status(self, match_id: str, status: str, result: Mapping[str, Any] | None = None,
                         ended_at: float | None = None, deal_commitments: Sequence[str] = ()) -> None:
        """Change a match's status (and record its result and its deals' commitments when it
        ends)."""

    @abstractmethod
    async def start_match(self, match_id: str, seats: Sequence[SeatRecord] = (),
                          decks: Sequence[DeckRecord] = ()) -> None:
        """Start a waiting match in one transaction: replace ``seats`` (the join of the last
        seat writes that seat here, not with :meth:`save_seat`), add ``decks`` (the first
        deal's, when one is due and not stored yet) and set the status ``active``; all of it
        or nothing.

        A start used to be three writes (the seat, the deck, the status): a failure between
        them left a match waiting with every seat taken, which only a later recovery could
        start. Now a failure leaves the match exactly as it was, and the caller may tell
        whether a write answered with an error happened after all by reading the match back
        (status ``active``: it did).

        MatchNotWaiting when the status is not ``waiting`` (a start landed already);
        UnknownMatch (no such match, or a seat number it does not have); StoreError for a
        deck the deal has already or a seat token hash that another seat holds."""

    @abstractmethod
    async def append_action(self, match_id: str, action: ActionRecord,
                            decks: Sequence[DeckRecord] = (), end: MatchEnd | None = None) -> None:
        """Append one action, and the decks it makes necessary, in one transaction; with
        ``end``, the match's status, result, end time and commitments too (as
        :meth:`set_status`), in the same transaction.

        SequenceConflict when ``action.seq`` exists; DuplicateClientAction when the seat's
        ``client_action_id`` was used before in this match.
        """

    @abstractmethod
    async def append_decks(self, match_id: str, decks: Sequence[DeckRecord]) -> None:
        """Add decks without an action (a deal that was due when the process stopped)."""

    @abstractmethod
    async def load_match(self, match_id: str) -> StoredMatch | None:
        """The record, decks and actions of a match (decks by deal, actions by seq), or None."""

    @abstractmethod
    async def list_matches(self, statuses: Sequence[str] = (), game: str = "",
                           limit: int = 100, after: tuple[float, str] | None = None) -> list[MatchListing]:
        """Matches, newest first (``created_at DESC, match_id DESC``: the id breaks ties, so
        the order is total), filtered by status (any of) and game, at most ``limit``.

        ``after``: a ``(created_at, match_id)`` cursor, the last row of the previous page;
        only rows strictly after it in that order are returned (keyset paging: a page read
        after matches were created or deleted neither repeats nor skips a row, as an offset
        would)."""

    @abstractmethod
    async def unfinished_match_ids(self) -> list[str]:
        """Ids of every match whose status is waiting or active, oldest first (``created_at,
        match_id``: the id breaks ties, so the order is total)."""

    # ---- retention (docs/operations.md, Retention) --------------------------------------

    @abstractmethod
    async def prune_finished(self, ended_before: float, limit: int = 100) -> PrunedBatch:
        """Delete at most ``limit`` (capped at :data:`MAX_PRUNE_BATCH`) matches that ended
        (status finished or terminated) before ``ended_before`` (Unix time), with everything
        stored for them (actions, decks, seats and their token hashes, the match's
        ``create_hash``: its client_create_id may create a new match then), in one short
        transaction (PostgreSQL: in several if the server cannot delete them within its
        bound in one; a failure after some committed returns those). An unfinished match is never touched, nor an ended one whose
        ``ended_at`` is unknown. Fewer than ``limit`` deleted: there are no more."""

    @abstractmethod
    async def count_finished(self, ended_before: float) -> PruneCounts:
        """What :meth:`prune_finished` calls with ``ended_before`` would delete, all batches
        together; changes nothing (a dry run)."""
