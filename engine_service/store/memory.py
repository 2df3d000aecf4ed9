"""An in-process store with the exact semantics of the SQLite one (tests, ephemeral runs).

It survives a :class:`~engine_service.sessions.manager.MatchManager` being dropped and a new
one built on the same object, which is how tests exercise recovery without a file. Nothing is
written anywhere: a process exit loses everything.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from ..observability.metrics import Metrics
from .base import (FINISHED, MAX_PRUNE_BATCH, STATUSES, UNFINISHED, ActionRecord, CreateIdTaken, DeckRecord, DuplicateClientAction,
                   MatchEnd, MatchExists, MatchListing, MatchNotWaiting, MatchRecord, PruneCounts, PrunedBatch, SeatRecord,
                   SequenceConflict, Store, StoredMatch, StoreError, UnknownMatch)


@dataclass
class _Row:
    record: MatchRecord
    decks: dict[int, DeckRecord] = field(default_factory=dict)
    actions: list[ActionRecord] = field(default_factory=list)
    client_ids: set[tuple[int, str]] = field(default_factory=set)


#: A seat's kinds: the SQL stores' CHECK on seats.kind.
SEAT_KINDS = ("open", "bot")


def _check_status(status: str) -> None:
    """The SQL stores' CHECK on matches.status: another status is refused, nothing written."""
    if status not in STATUSES:
        raise StoreError(f"status {status!r} is not one of {', '.join(STATUSES)}")


def _check_kinds(match_id: str, seats: Sequence[SeatRecord]) -> None:
    """The SQL stores' CHECK on seats.kind, for every seat before any is written."""
    for s in seats:
        if s.kind not in SEAT_KINDS:
            raise StoreError(f"seat {s.seat} of match {match_id!r}: kind {s.kind!r} is not one of "
                             f"{', '.join(SEAT_KINDS)}")


def _frozen(m: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A copy of ``m`` all the way down, read-only at the top: what the SQL stores give, a
    value of their own at each write and each read. A copy one level deep shared its nested
    lists and dicts (a result's winners, scores) with the caller that wrote it and with every
    reader: one of them changing its own changed the stored match."""
    return None if m is None else MappingProxyType(copy.deepcopy(dict(m)))


def _read(record: MatchRecord) -> MatchRecord:
    """``record`` as a read returns it: options and result the reader's own (:func:`_frozen`)."""
    return replace(record, options=_frozen(record.options), result=_frozen(record.result))


class MemoryStore(Store):
    def __init__(self, metrics: Metrics | None = None) -> None:
        super().__init__(metrics)
        self._rows: dict[str, _Row] = {}
        self._tokens: dict[str, tuple[str, int]] = {}
        self._created: dict[str, str] = {}  # create_hash -> match id (the unique index)
        self._open = False

    async def open(self) -> None:
        if not self._open:
            self._held()
        self._open = True

    async def close(self) -> None:
        self._open = False

    def _check(self, read: str = "") -> None:
        """Refuse a call of a closed store; ``read``: the read's operation, counted in
        store_errors as the SQL stores count it (Store.close; a write's timer counts its own)."""
        if not self._open:
            if read:
                self._timer.error(read)
            raise StoreError("the store is closed")

    def _row(self, match_id: str) -> _Row:
        try:
            return self._rows[match_id]
        except KeyError:
            raise UnknownMatch(f"no match {match_id!r}") from None

    def _check_tokens(self, match_id: str, seats: Sequence[SeatRecord]) -> None:
        """Refuse seats whose token hash another seat holds when its turn comes, or another of
        ``seats`` took before it, before any of them is claimed: a write of several seats
        (create_match, start_match) is all or nothing, as in one SQL transaction under the
        unique index on the hash, whose seat updates run in order: a hash that a seat listed
        earlier gives up is free for a seat listed after it (checked against the hashes held
        before the call, that start was refused here and accepted by the SQL stores)."""
        row = self._rows.get(match_id)  # None: a new match, whose seats hold no hash yet
        holds: dict[int, str] = {}  # a seat's hash as the seats checked so far leave it
        owners: dict[str, tuple[str, int] | None] = {}  # a hash's holder as they leave it
        for s in seats:
            old = holds[s.seat] if s.seat in holds else row.record.seats[s.seat].token_hash if row else ""
            if s.token_hash:
                owner = owners[s.token_hash] if s.token_hash in owners else self._tokens.get(s.token_hash)
                if owner is not None and owner != (match_id, s.seat):
                    raise StoreError(f"seat {s.seat} of match {match_id!r}: its token hash is another seat's")
                owners[s.token_hash] = (match_id, s.seat)
            if old and old != s.token_hash:
                owners[old] = None
            holds[s.seat] = s.token_hash

    @staticmethod
    def _check_decks(match_id: str, row: _Row, decks: Sequence[DeckRecord]) -> None:
        """Refuse a deck for a deal that has one, or that another of ``decks`` repeats, before
        any is written: the SQL stores' primary key on (match_id, deal), in one transaction."""
        deals: set[int] = set()
        for d in decks:
            if d.deal in row.decks or d.deal in deals:
                raise StoreError(f"match {match_id!r} has a deck for deal {d.deal}")
            deals.add(d.deal)

    def _claim_token(self, match_id: str, seat: SeatRecord) -> None:
        self._check_tokens(match_id, (seat,))
        if seat.token_hash:
            self._tokens[seat.token_hash] = (match_id, seat.seat)

    async def create_match(self, record: MatchRecord, decks: Sequence[DeckRecord] = ()) -> None:
        with self._timer.write("create_match"):
            self._check()
            if record.match_id in self._rows:
                raise MatchExists(f"match {record.match_id!r} exists")
            if record.create_hash and record.create_hash in self._created:
                raise CreateIdTaken("a match was created with this client_create_id")
            _check_status(record.status)
            _check_kinds(record.match_id, record.seats)
            self._check_tokens(record.match_id, record.seats)
            record = replace(record, options=_frozen(record.options), result=_frozen(record.result))
            row = _Row(record)
            self._check_decks(record.match_id, row, decks)
            for d in decks:
                row.decks[d.deal] = d
            for s in record.seats:
                self._claim_token(record.match_id, s)
            self._rows[record.match_id] = row
            if record.create_hash:
                self._created[record.create_hash] = record.match_id

    async def find_created(self, create_hash: str) -> tuple[str, str] | None:
        self._check("find_created")
        match_id = self._created.get(create_hash) if create_hash else None
        if match_id is None:
            return None
        return match_id, self._rows[match_id].record.create_digest

    async def save_seat(self, match_id: str, seat: SeatRecord) -> None:
        with self._timer.write("save_seat"):
            self._check()
            row = self._row(match_id)
            self._check_seats(match_id, row, (seat,))
            _check_kinds(match_id, (seat,))
            self._put_seat(match_id, row, seat)

    @staticmethod
    def _check_seats(match_id: str, row: _Row, seats: Sequence[SeatRecord]) -> None:
        """Refuse a seat number the match does not have, before any seat is written, as the
        SQL stores' update of the seat's row finds none (UnknownMatch): a seat -1 replaced the
        last seat, and one past the last failed with an IndexError."""
        for s in seats:
            if not 0 <= s.seat < len(row.record.seats):
                raise UnknownMatch(f"no seat {s.seat} in match {match_id!r}")

    def _put_seat(self, match_id: str, row: _Row, seat: SeatRecord) -> None:
        old = row.record.seats[seat.seat]
        self._claim_token(match_id, seat)
        if old.token_hash and old.token_hash != seat.token_hash:
            self._tokens.pop(old.token_hash, None)
        # the absence columns are save_absence's (schema 8), kept as SQL's upsert keeps them
        seat = replace(seat, away_since=old.away_since, away_seen=old.away_seen, taken_over=old.taken_over)
        seats = list(row.record.seats)
        seats[seat.seat] = seat
        row.record = replace(row.record, seats=tuple(seats))

    async def save_absence(self, match_id: str, seat: int, away_since: float | None,
                           taken_over: bool = False, away_seen: float | None = None) -> None:
        with self._timer.write("save_absence"):
            self._check()
            row = self._row(match_id)
            if not 0 <= seat < len(row.record.seats):
                raise UnknownMatch(f"no seat {seat} in match {match_id!r}")
            seats = list(row.record.seats)
            seen = away_since if away_since is None or away_seen is None else away_seen
            seats[seat] = replace(seats[seat], away_since=away_since, away_seen=seen,
                                  taken_over=bool(taken_over) and away_since is not None)
            row.record = replace(row.record, seats=tuple(seats))

    async def ping(self) -> None:
        self._check()

    async def touch_absences(self, seats: Sequence[tuple[str, int]], at: float) -> None:
        if not seats:  # no write at all, as in the SQL stores: no latency observed, nothing refused
            return
        with self._timer.write("touch_absences"):
            self._check()
            for match_id, seat in seats:
                row = self._rows.get(match_id)
                if row is None or not 0 <= seat < len(row.record.seats):
                    continue
                if row.record.seats[seat].away_since is None:
                    continue
                updated = list(row.record.seats)
                updated[seat] = replace(updated[seat], away_seen=at)
                row.record = replace(row.record, seats=tuple(updated))

    async def set_status(self, match_id: str, status: str, result: Mapping[str, Any] | None = None,
                         ended_at: float | None = None, deal_commitments: Sequence[str] = ()) -> None:
        with self._timer.write("set_status"):
            self._check()
            row = self._row(match_id)
            _check_status(status)
            row.record = replace(row.record, status=status, result=_frozen(result), ended_at=ended_at,
                                 deal_commitments=tuple(deal_commitments))

    async def start_match(self, match_id: str, seats: Sequence[SeatRecord] = (),
                          decks: Sequence[DeckRecord] = ()) -> None:
        with self._timer.write("start_match"):
            self._check()
            row = self._row(match_id)
            if row.record.status != "waiting":
                raise MatchNotWaiting(f"match {match_id!r} is {row.record.status}, not waiting")
            self._check_decks(match_id, row, decks)  # every refusal before the first change
            self._check_seats(match_id, row, seats)
            _check_kinds(match_id, seats)
            self._check_tokens(match_id, seats)
            for s in seats:
                self._put_seat(match_id, row, s)
            for d in decks:
                row.decks[d.deal] = d
            row.record = replace(row.record, status="active")

    async def append_action(self, match_id: str, action: ActionRecord,
                            decks: Sequence[DeckRecord] = (), end: MatchEnd | None = None) -> None:
        with self._timer.write("append_action"):
            self._check()
            row = self._row(match_id)
            if 1 <= action.seq <= len(row.actions):
                raise SequenceConflict(f"match {match_id!r} has an action at seq {action.seq}")
            if action.seq != len(row.actions) + 1:
                raise StoreError(f"match {match_id!r}: seq {action.seq} is not the next one")
            key = (action.seat, action.client_action_id)
            if action.client_action_id and key in row.client_ids:
                raise DuplicateClientAction(f"client_action_id reused in match {match_id!r}")
            self._check_decks(match_id, row, decks)
            if end is not None:
                _check_status(end.status)
            row.actions.append(action)
            if action.client_action_id:
                row.client_ids.add(key)
            for d in decks:
                row.decks[d.deal] = d
            if end is not None:
                row.record = replace(row.record, status=end.status, result=_frozen(end.result),
                                     ended_at=end.ended_at, deal_commitments=tuple(end.deal_commitments))

    async def append_decks(self, match_id: str, decks: Sequence[DeckRecord]) -> None:
        with self._timer.write("append_decks"):
            self._check()
            row = self._row(match_id)
            self._check_decks(match_id, row, decks)
            for d in decks:
                row.decks[d.deal] = d

    async def load_match(self, match_id: str) -> StoredMatch | None:
        self._check("load_match")
        row = self._rows.get(match_id)
        if row is None:
            return None
        return StoredMatch(_read(row.record), tuple(row.decks[k] for k in sorted(row.decks)), tuple(row.actions))

    async def list_matches(self, statuses: Sequence[str] = (), game: str = "",
                           limit: int = 100, after: tuple[float, str] | None = None) -> list[MatchListing]:
        self._check("list_matches")
        rows = [r for r in self._rows.values()
                if (not statuses or r.record.status in statuses) and (not game or r.record.game == game)
                and (after is None or (r.record.created_at, r.record.match_id) < tuple(after))]
        rows.sort(key=lambda r: (r.record.created_at, r.record.match_id), reverse=True)
        return [MatchListing(_read(r.record), len(r.actions)) for r in rows[:max(0, limit)]]

    async def unfinished_match_ids(self) -> list[str]:
        self._check("unfinished_match_ids")
        rows = [r for r in self._rows.values() if r.record.status in UNFINISHED]
        rows.sort(key=lambda r: (r.record.created_at, r.record.match_id))
        return [r.record.match_id for r in rows]

    # ---- retention ---------------------------------------------------------------------

    def _prunable(self, ended_before: float) -> list[_Row]:
        return [r for r in self._rows.values() if r.record.status in FINISHED
                and r.record.ended_at is not None and r.record.ended_at < ended_before]

    @staticmethod
    def _counts(rows: list[_Row]) -> PruneCounts:
        return PruneCounts(len(rows), sum(len(r.actions) for r in rows), sum(len(r.decks) for r in rows),
                           sum(len(r.record.seats) for r in rows))

    async def prune_finished(self, ended_before: float, limit: int = 100) -> PrunedBatch:
        try:  # a failure counted as the SQL stores count it (not timed: no write latency)
            self._check()
        except StoreError:
            self._timer.error("prune_finished")
            raise
        rows = self._prunable(ended_before)[:max(0, min(limit, MAX_PRUNE_BATCH))]
        for r in rows:
            del self._rows[r.record.match_id]
            if r.record.create_hash:
                self._created.pop(r.record.create_hash, None)
            for s in r.record.seats:
                if s.token_hash:  # this seat's, as every stored seat's hash is (_check_tokens)
                    del self._tokens[s.token_hash]
        return PrunedBatch(tuple(r.record.match_id for r in rows), self._counts(rows))

    async def count_finished(self, ended_before: float) -> PruneCounts:
        self._check("count_finished")
        return self._counts(self._prunable(ended_before))
