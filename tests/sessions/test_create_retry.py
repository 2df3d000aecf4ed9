"""CreateMatch retried with its client_create_id (docs/api.md, "Reconnecting without losing
anything"): a create whose answer was lost (UNAVAILABLE, a timeout, a crash after the match was
written) used to leave an orphan match waiting for players nobody sent, and a retry made a
second one. A retry with the same id now returns the match the id created, as it stands, never
a second match: while it waits, once it has started or ended, after its eviction from memory
and after a restart, as long as the store keeps it; two calls with one id at once make one
match. The same id with another request is ALREADY_EXISTS / CLIENT_CREATE_ID_IN_USE. Retention
forgets the id with its match. Only the id's hash is kept: never in a log line or the file."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import replace

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.sessions.api import CreateMatchRequest, SeatConfig, SessionError
from engine_service.sessions.manager import MatchManager
from engine_service.sessions.terms import request_digest
from engine_service.sessions.tokens import create_id_hash
from engine_service.store import MemoryStore, SqliteStore, StoreError

from tests.crash import crash

from .helpers import config, join_all, manager, play_random, run


def create_id() -> str:
    return str(uuid.uuid4())


def sqlite_manager(path, **overrides) -> MatchManager:
    return MatchManager(config(db_path=str(path), **overrides), store=SqliteStore(path), metrics=Metrics(),
                        create_bot_host=False)


async def refused(call) -> SessionError:
    with pytest.raises(SessionError) as info:
        await call
    return info.value


def req(key: str = "", **fields) -> CreateMatchRequest:
    return CreateMatchRequest(**{"game": "klaberjass", "name": "table", "client_create_id": key, **fields})


@pytest.mark.parametrize("bad", ["x" * 15, "x" * 129, "0123456789abcdef\n", "0123456789abcdef\x00",
                                 "0123456789abcdef\u200b", 12345678901234567890, b"0123456789abcdef0"])
def test_a_bad_client_create_id_is_refused_and_creates_nothing(bad):
    """16 to 128 printable characters (a UUID), else INVALID_ARGUMENT / BAD_CLIENT_CREATE_ID
    naming the field, before anything is created; 16 and 128 characters are fine."""
    store = MemoryStore()

    async def go():
        async with manager(store=store) as mgr:
            error = await refused(mgr.create_match(req(bad)))
            held = list(mgr.match_ids())
            edges = [await mgr.create_match(req(k)) for k in ("y" * 16, "z" * 128)]
            return error, held, edges, await store.list_matches()

    error, held, edges, stored = run(go())
    assert (error.code, error.reason, error.metadata) == ("INVALID_ARGUMENT", "BAD_CLIENT_CREATE_ID",
                                                          {"field": "client_create_id"})
    assert held == [] and len(stored) == 2 and len({e.match_id for e in edges}) == 2


def test_a_retry_returns_the_same_match_as_it_stands_whatever_its_status():
    """The answer was lost: the retry gets the match that id created (its current summary),
    while it waits, once it started, once it ended and once it was evicted from memory (read
    back from the store); never a second match. Logged match_create_retried, never the id or
    its hash; the server's limits do not refuse a retry (it creates nothing)."""
    store, metrics = MemoryStore(), Metrics()

    async def go():
        with capture_logs() as logs:
            async with manager(config(max_waiting_matches=1), store=store, metrics=metrics) as mgr:
                key = create_id()
                lost = await mgr.create_match(req(key))
                again = await mgr.create_match(req(key))  # the limit of one waiting match: no matter
                _, ps = await join_all(mgr, lost.match_id)
                started = await mgr.create_match(req(key))
                await play_random(mgr, lost.match_id, ps, random.Random(3))
                ended = await mgr.create_match(req(key))
                assert mgr.evict_finished() == 1 and lost.match_id not in mgr.match_ids()
                evicted = await mgr.create_match(req(key))
                other = await mgr.create_match(req(create_id()))
                return key, lost, again, started, ended, evicted, other, await store.list_matches(), logs

    key, lost, again, started, ended, evicted, other, stored, logs = run(go())
    assert lost.status == again.status == "waiting"
    assert again.match_id == started.match_id == ended.match_id == evicted.match_id == lost.match_id
    assert started.status == "active" and ended.status == evicted.status == "finished"
    assert evicted == ended
    assert other.match_id != lost.match_id and len(stored) == 2
    assert metrics.matches_created.labels("klaberjass")._value.get() == 2
    assert [e["event"] for e in logs].count("match_create_retried") == 4
    assert [e["with_create_id"] for e in logs if e["event"] == "match_created"] == [True, True]
    text = repr(logs)
    assert key not in text and create_id_hash(key) not in text


def test_the_request_shows_no_client_create_id():
    """docs/api.md (Reconnecting, "Creating"): the ``client_create_id`` is a secret, whoever
    holds it gets the match's summary; the server keeps only its hash. The request value's
    repr (what a log line or a traceback would show of it) leaves it out. (Mutant: the field's
    ``repr=False`` dropped.)"""
    key = create_id()
    assert key not in repr(req(key)) and "table" in repr(req(key))


@pytest.mark.parametrize("change", [
    dict(game="jojotte"), dict(options={"kl_target_score": 300}), dict(seats=(SeatConfig(), SeatConfig("bot", "x"))),
    dict(turn_time_s=20.0), dict(spectators_allowed=False), dict(name="another table"), dict(listed=True),
    dict(spectator_delay_actions=3), dict(decks=(("7H",),)), dict(first_dealer=1), dict(takeover_bot="random"),
])
def test_the_digest_covers_every_field_but_the_id(change):
    """A request that differs in any field digests differently; the id alone changes nothing."""
    assert request_digest(req(create_id())) == request_digest(req(create_id())) == request_digest(req())
    assert request_digest(replace(req(), **change)) != request_digest(req())


def test_the_digest_names_a_seat_s_bot_for_a_bot_seat_only():
    """A bot seat's bot is part of the request; a bot name sent with an open seat is not
    (the match ignores it), so it does not make the retry another request."""
    def digest(*seats):
        return request_digest(req(seats=seats))

    assert digest(SeatConfig(), SeatConfig("bot", "random")) != digest(SeatConfig(), SeatConfig("bot", "dummy"))
    assert (digest(SeatConfig("open", "x"), SeatConfig("bot", "random"))
            == digest(SeatConfig(), SeatConfig("bot", "random")))


def test_the_digest_covers_the_decks_cards():
    assert request_digest(req(decks=(("7H",),))) != request_digest(req(decks=(("8H",),)))


def test_a_malformed_request_digests_too():
    """request_digest: a request holding what UTF-8 cannot encode (a lone surrogate, which
    an in-process str may hold) still has a digest; it is refused when checked, not by the
    digest raising."""
    assert len(request_digest(req(name="x\ud800"))) == 64


def test_the_digest_of_a_request_is_the_same_in_every_release():
    """The digest is stored with the match (docs/operations.md, schema 7) and compared with a
    retry's after a restart, possibly into a newer release: its canonical text (sorted keys,
    no blanks, UTF-8 not escaped) must not change, or a retry across an upgrade is refused."""
    request = req(name="Café", options={"kl_target_score": 300}, seats=(SeatConfig(), SeatConfig("bot", "random")),
                  turn_time_s=20, decks=(("7H", "8H"),), first_dealer=1)
    assert request_digest(request) == "6c7445fba558730d555779522490678b1a7f97124bb78068497b09388c25982e"


def test_the_same_id_with_another_request_is_refused():
    """ALREADY_EXISTS / CLIENT_CREATE_ID_IN_USE with a message that says only that (not the
    match's id); nothing is created, and the first request's retry still gets its match."""
    async def go():
        async with manager() as mgr:
            key = create_id()
            first = await mgr.create_match(req(key))
            errors = [await refused(mgr.create_match(req(key, **change)))
                      for change in (dict(name="another"), dict(listed=True), dict(turn_time_s=20.0),
                                     dict(spectators_allowed=False), dict(game="jojotte"))]
            again = await mgr.create_match(req(key))
            return first, errors, again, list(mgr.match_ids())

    first, errors, again, held = run(go())
    for e in errors:
        assert (e.code, e.reason, e.metadata) == ("ALREADY_EXISTS", "CLIENT_CREATE_ID_IN_USE", {})
        assert first.match_id not in e.message and "client_create_id" in e.message
    assert again.match_id == first.match_id and held == [first.match_id]


def test_an_invalid_request_is_refused_as_without_an_id():
    """The request is checked first: a malformed one with a used id is INVALID_ARGUMENT, as
    it would be without the id."""
    async def go():
        async with manager() as mgr:
            key = create_id()
            await mgr.create_match(req(key))
            return await refused(mgr.create_match(req(key, spectator_delay_actions=10_000)))

    error = run(go())
    assert (error.code, error.reason) == ("INVALID_ARGUMENT", "BAD_SPECTATOR_DELAY")


class SlowCreates(MemoryStore):
    """A store whose creations take a while: concurrent calls overlap. ``writes``: the
    creations it was asked for."""

    writes = 0

    async def create_match(self, record, decks=()):
        self.writes += 1
        await asyncio.sleep(0.05)
        return await super().create_match(record, decks)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_concurrent_calls_with_one_id_make_one_match(kind, tmp_path):
    """Calls with one id at once (the client retried before the first answer came back) make
    one match, and every answer names it; calls with other ids are not held up by them."""
    store = SlowCreates() if kind == "memory" else SqliteStore(tmp_path / "db.sqlite3")

    async def go():
        async with manager(store=store) as mgr:
            key = create_id()
            answers = await asyncio.gather(*(mgr.create_match(req(key)) for _ in range(6)),
                                           mgr.create_match(req(create_id())))
            return answers, await store.list_matches()

    answers, stored = run(go())
    assert len({a.match_id for a in answers[:6]}) == 1 and answers[6].match_id != answers[0].match_id
    assert len(stored) == 2


def test_a_caller_that_goes_away_leaves_the_id_to_its_match():
    """The first call is cancelled while its match is written (the client's deadline): the
    write goes on, and a retry sent meanwhile waits for it and gets that match, without a
    write of its own (which the store's unique index would refuse: CreateIdTaken). (Mutant:
    the keyed write awaited in the caller's task, whose cancellation freed the id at once.)"""
    store = SlowCreates()

    async def go():
        async with manager(store=store) as mgr:
            key = create_id()
            first = asyncio.ensure_future(mgr.create_match(req(key)))
            await asyncio.sleep(0.01)
            first.cancel()
            retry = await mgr.create_match(req(key))
            return retry, await store.list_matches()

    retry, stored = run(go())
    assert [li.record.match_id for li in stored] == [retry.match_id]
    assert store.writes == 1


class HungLookups(MemoryStore):
    """A store whose look-ups of a client_create_id hang until ``answer`` is set (a database
    that stopped answering): the creates that carry an id wait in find_created."""

    def __init__(self) -> None:
        super().__init__()
        self.answer = asyncio.Event()
        self.asked = 0

    async def find_created(self, create_hash):
        self.asked += 1
        await self.answer.wait()
        return await super().find_created(create_hash)


def test_callers_that_go_away_before_the_write_leave_nothing_behind():
    """Only a create's write outlives its caller: a call that goes away while its id is still
    being looked up (the client's deadline, a cancelled stream) stops there and frees the id.
    Each such call used to leave a task and its id behind until the store answered, beyond
    any limit (max_matches counts writes, not look-ups): a client that sent creates with fresh
    ids and cancelled them made the server hold as many as it sent while the store was slow."""
    store = HungLookups()

    async def go():
        async with manager(config(max_matches=2), store=store) as mgr:
            calls = [asyncio.ensure_future(mgr.create_match(req(create_id()))) for _ in range(200)]
            key = create_id()
            first = asyncio.ensure_future(mgr.create_match(req(key)))
            await asyncio.sleep(0.05)
            asked = store.asked
            for call in [*calls, first]:
                call.cancel()
            await asyncio.gather(*calls, first, return_exceptions=True)
            await asyncio.sleep(0.01)
            left = (len(mgr._creating_ids), len(mgr._writes))
            store.answer.set()
            retry = await mgr.create_match(req(key))  # the id is free: this call creates
            return asked, left, retry, await store.list_matches()

    asked, left, retry, stored = run(go())
    assert asked == 201 and left == (0, 0)
    assert [li.record.match_id for li in stored] == [retry.match_id]


class CreatesInDoubt(MemoryStore):
    """The next creation is written but answered with an error (the connection dropped at the
    commit) and the read-back fails too: the caller is answered UNAVAILABLE."""

    fail_next = False
    unreadable = 0

    async def create_match(self, record, decks=()):
        await super().create_match(record, decks)
        if self.fail_next:
            self.fail_next = False
            self.unreadable = 1
            raise StoreError("connection lost at the commit")

    async def load_match(self, match_id):
        if self.unreadable > 0:
            self.unreadable -= 1
            raise StoreError("the database is unreachable")
        return await super().load_match(match_id)


def test_a_retry_after_an_unavailable_answer_gets_the_match_that_was_written():
    """The create's answer was UNAVAILABLE though the match was written: the retry with the
    id finds it in the store and returns it (the match is held from then on), instead of
    creating a second one."""
    store = CreatesInDoubt()

    async def go():
        async with manager(store=store) as mgr:
            key = create_id()
            store.fail_next = True
            error = await refused(mgr.create_match(req(key)))
            retry = await mgr.create_match(req(key))
            return error, retry, list(mgr.match_ids()), await store.list_matches()

    error, retry, held, stored = run(go())
    assert error.code == "UNAVAILABLE"
    assert [li.record.match_id for li in stored] == [retry.match_id] == held
    assert retry.status == "waiting"


def test_a_retry_after_a_crash_gets_the_same_match_and_the_id_is_never_in_the_file(tmp_path):
    """The id's hash is durable with the match: the engine died after the commit (the answer
    was lost with it), and the retry against the restarted engine gets the same match, which
    it had resumed (also one started with bots); the same id with another request is refused
    there too. The file holds the hash, never the id."""
    path = tmp_path / "m.sqlite3"
    keys = [create_id(), create_id()]

    async def first_life():
        mgr = sqlite_manager(path)
        await mgr.start()
        waiting = await mgr.create_match(req(keys[0]))
        ended = await mgr.create_match(req(keys[1], game="japanese_joker"))
        _, ps = await join_all(mgr, ended.match_id)
        await play_random(mgr, ended.match_id, ps, random.Random(2))
        crash(mgr._store)
        return waiting.match_id, ended.match_id

    ids = run(first_life())

    async def second_life():
        mgr = sqlite_manager(path)
        await mgr.start()
        try:
            held = set(mgr.match_ids())
            retried = [await mgr.create_match(req(keys[0])),
                       await mgr.create_match(req(keys[1], game="japanese_joker"))]
            error = await refused(mgr.create_match(req(keys[0], name="other")))
            return held, retried, error, await mgr._store.list_matches()
        finally:
            await mgr.close()

    held, retried, error, stored = run(second_life())
    assert held == {ids[0]}  # the ended match is not resumed: the retry reads it back
    assert [r.match_id for r in retried] == list(ids)
    assert [r.status for r in retried] == ["waiting", "finished"]
    assert error.reason == "CLIENT_CREATE_ID_IN_USE" and len(stored) == 2
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("m.sqlite3"))
    for key in keys:
        assert key.encode() not in raw
    assert create_id_hash(keys[0]).encode() in raw


def test_pruning_forgets_the_id(tmp_path):
    """Once retention deletes the match, its id is forgotten: a create with it makes a new
    match (the old one is not found)."""
    path = tmp_path / "m.sqlite3"

    async def go():
        mgr = sqlite_manager(path)
        await mgr.start()
        try:
            key = create_id()
            first = await mgr.create_match(req(key))
            await mgr.terminate_match(first.match_id, "test")
            kept = await mgr.create_match(req(key))
            counts = await mgr.prune_finished(time.time() + 1)
            again = await mgr.create_match(req(key))
            return first, kept, counts, again
        finally:
            await mgr.close()

    first, kept, counts, again = run(go())
    assert kept.match_id == first.match_id and kept.status == "terminated"
    assert counts.matches == 1
    assert again.match_id != first.match_id and again.status == "waiting"


def test_the_retry_of_a_creation_held_in_memory_is_answered_without_the_store():
    """A creation retried while its match is held is answered from memory (the manager's
    index of creation ids): a store that cannot be read meanwhile does not turn the retry
    into UNAVAILABLE. Only a match not held is looked up in the store (find_created)."""
    class Unreadable(MemoryStore):
        fail = False

        async def find_created(self, create_hash):
            if self.fail:
                raise StoreError("the database is unreachable")
            return await super().find_created(create_hash)

    store = Unreadable()

    async def go():
        async with manager(store=store) as mgr:
            request = CreateMatchRequest(game="klaberjass", client_create_id="table-0001-first-try")
            first = await mgr.create_match(request)
            store.fail = True
            return first, await mgr.create_match(request)

    first, retried = run(go())
    assert retried.match_id == first.match_id and retried.status == "waiting"


def test_a_retry_that_spells_the_same_request_otherwise_gets_the_match():
    """The digest is of what the request asks, not of how it was spelled: options in another
    order, or a whole turn time sent as an integer, are the same request (a client may
    rebuild its request for the retry); the retry gets the match."""
    async def go():
        async with manager() as mgr:
            key = create_id()
            first = await mgr.create_match(req(key, options={"kl_target_score": 300, "kl_schmeiss": True},
                                               turn_time_s=20.0))
            again = await mgr.create_match(req(key, options={"kl_schmeiss": True, "kl_target_score": 300},
                                               turn_time_s=20))
            return first, again, list(mgr.match_ids())

    first, again, held = run(go())
    assert again.match_id == first.match_id and held == [first.match_id]


def test_an_id_another_writer_stored_after_the_look_up_gets_that_match():
    """The id's match written by a writer this process did not see (another engine on the
    database, between this call's look-up and its write): the write is refused by the store's
    unique index (CreateIdTaken), and the call answers the match stored with the id, as a
    retry would (docs/api.md: a retry with the same id and request "returns the match the
    first call created, never a second one"), not UNAVAILABLE. (Mutants: the CreateIdTaken
    answer in MatchManager.create_match dropped, or taken for any UNAVAILABLE.)"""
    key = create_id()

    class OtherWriterFirst(MemoryStore):
        other: MatchManager | None = None
        stored: list = []

        async def find_created(self, create_hash):
            found = await super().find_created(create_hash)
            if found is None and self.other is not None:  # the other writer stores it now
                other, self.other = self.other, None
                self.stored = [await other.create_match(req(key))]
            return found

    store = OtherWriterFirst()

    async def go():
        async with manager(store=store) as other, manager(store=store) as mgr:
            store.other = other
            answer = await mgr.create_match(req(key))
            return answer, store.stored, await store.list_matches()

    answer, stored, listed = run(go())
    assert len(stored) == 1 and answer.match_id == stored[0].match_id
    assert [r.record.match_id for r in listed] == [answer.match_id]


def test_an_id_whose_match_is_pruned_after_the_look_up_creates_and_a_failed_look_up_is_unavailable():
    """The look-up of an id finds a match that retention deletes before it is read: the id
    is free again (docs/api.md: a retry gets the match "as long as the store keeps the
    match"), so the call creates. A look-up the store fails is UNAVAILABLE /
    STORE_UNAVAILABLE (a client retries), logged store_read_failed naming find_created.
    (Mutants of MatchManager._created_with: the pruned match's MatchNotFound let through, the
    store error not turned into UNAVAILABLE.)"""
    class Lookups(MemoryStore):
        answer: tuple[str, str] | None = None
        fail = False

        async def find_created(self, create_hash):
            if self.fail:
                raise StoreError("the database is unreachable")
            if self.answer is not None:
                answer, self.answer = self.answer, None
                return answer
            return await super().find_created(create_hash)

    store = Lookups()

    async def go():
        async with manager(store=store) as mgr:
            key = create_id()
            store.answer = ("pruned00000000000000", request_digest(req(key)))  # deleted since
            created = await mgr.create_match(req(key))
            store.fail = True
            with capture_logs() as logs:
                error = await refused(mgr.create_match(req(create_id())))
            return created, await store.list_matches(), error, logs

    created, stored, error, logs = run(go())
    assert [li.record.match_id for li in stored] == [created.match_id]
    assert (error.code, error.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert [e["operation"] for e in logs if e["event"] == "store_read_failed"] == ["find_created"]
