"""The session layer when the store fails or a caller goes away: a write whose answer was
lost, reads that fail, a creation whose caller left, a store that fails while the start
resumes the matches. Each test names the guarantee it checks (ARCHITECTURE.md section 4) and
the failure it once showed."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.sessions.api import CreateMatchRequest, Principal, SessionError, StaleSequence
from engine_service.sessions import manager as manager_module
from engine_service.sessions import seating as seating_module
from engine_service.sessions.manager import MatchManager
from engine_service.store import MemoryStore, StoreError

from .helpers import Stream, collect, config, join_all, manager, open_match, play_random, run, to_act, until
from .virtual_clock import advance_to, run_virtual


class LosesAcknowledgements(MemoryStore):
    """A store whose next append is durable but answers with an error (PostgreSQL: the
    connection dropped after the COMMIT reached the server)."""

    lose_next = False

    async def append_action(self, match_id, action, decks=(), end=None):
        await super().append_action(match_id, action, decks, end)
        if self.lose_next:
            self.lose_next = False
            raise StoreError("connection lost after the commit")


class FailingAppends(MemoryStore):
    """A store whose next append fails before anything is written (``fail_next``), with
    ``failure`` (a StoreError of any kind)."""

    fail_next = False
    failed = False
    failure: StoreError = StoreError("the database is unreachable")

    async def append_action(self, match_id, action, decks=(), end=None):
        if self.fail_next:
            self.fail_next, self.failed = False, True
            raise self.failure
        return await super().append_action(match_id, action, decks, end)


class FailingReads(MemoryStore):
    """A store whose reads fail while ``broken`` (a database that is briefly unreachable)."""

    broken = False

    async def load_match(self, match_id):
        if self.broken:
            raise StoreError("the database is unreachable")
        return await super().load_match(match_id)

    async def list_matches(self, statuses=(), game="", limit=100, after=None):
        if self.broken:
            raise StoreError("the database is unreachable")
        return await super().list_matches(statuses, game, limit, after)


def test_a_retry_after_a_lost_acknowledgement_returns_the_first_result():
    """"A retry of the same client_action_id returns the original result, never applies
    twice": the first attempt was written but answered UNAVAILABLE; its retry (same id, same
    expected_seq) must get that action's result (duplicate=True), not ABORTED. It used to get
    STALE_SEQUENCE ("the match moved on to seq 1") for its own action."""
    store = LosesAcknowledgements()

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            seat, p, env = await to_act(mgr, match_id, ps)
            action = env.view["legal"][0]
            store.lose_next = True
            with pytest.raises(SessionError) as first:
                await mgr.submit_action(match_id, p, action, env.seq, "once")
            retry = await mgr.submit_action(match_id, p, action, env.seq, "once")
            again = await mgr.submit_action(match_id, p, action, env.seq, "once")
            await until(lambda: spectator.actions())
            await asyncio.sleep(0.01)
            stored = await store.load_match(match_id)
            await spectator.close()
            return first.value, retry, again, stored, spectator.actions(), action

    first, retry, again, stored, events, action = run(go())
    assert first.code == "UNAVAILABLE"
    assert retry.duplicate and retry.seq == 1 and retry.action == action
    assert again.duplicate and again.seq == 1
    assert [a.seq for a in stored.actions] == [1]
    assert [e.seq for e in events] == [1]  # the watcher saw it once


def test_an_action_whose_write_failed_unwritten_is_settled_as_not_in_store_and_played_again():
    """docs/operations.md (``action_not_in_store``): an append answered with an error that
    wrote nothing is read back before the match's next write, found missing
    (``action_not_in_store``, no ``log_caught_up``), and the same action is then played at
    the same seq; a lost acknowledgement is the opposite case (``log_caught_up``, below)."""
    store = FailingAppends()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                match_id, ps = await open_match(mgr, "klaberjass")
                seat, p, env = await to_act(mgr, match_id, ps)
                action = env.view["legal"][0]
                store.fail_next = True
                with pytest.raises(SessionError) as first:
                    await mgr.submit_action(match_id, p, action, env.seq, "once")
                res = await mgr.submit_action(match_id, p, action, env.seq, "once")
                stored = await store.load_match(match_id)
        return first.value, res, stored, logs

    first, res, stored, logs = run(go())
    assert first.code == "UNAVAILABLE"
    assert not res.duplicate and res.seq == 1 and [a.seq for a in stored.actions] == [1]
    settled = [(e["event"], e["seq"]) for e in logs if e["event"] in ("action_not_in_store", "log_caught_up")]
    assert settled == [("action_not_in_store", 0)]  # the match's seq: the action is not there


def test_a_write_refused_because_the_engine_lost_its_database_is_unavailable_not_internal():
    """docs/operations.md (``db_ownership_lost``): once another engine took the database, every
    write is refused (OwnershipLost, a StoreError: store/base.py) while the engine drains; a
    client's action then gets UNAVAILABLE / STORE_UNAVAILABLE like any store failure (its
    retry goes to the engine that holds the database now), never INTERNAL."""
    from engine_service.store import OwnershipLost

    store = FailingAppends()
    store.failure = OwnershipLost("append_action refused: this engine lost the database to another engine")

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            seat, p, env = await to_act(mgr, match_id, ps)
            store.fail_next = True
            with pytest.raises(SessionError) as refused:
                await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "once")
            return refused.value, await store.load_match(match_id)

    refused, stored = run(go())
    assert (refused.code, refused.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert stored.actions == ()


def test_a_store_outage_on_reads_is_unavailable_not_internal():
    """Section 5's error table: a store failure is UNAVAILABLE (retryable, reason
    STORE_UNAVAILABLE) for reads as it is for writes. A match read back from the store
    (GetView, GetMatch, WatchMatch of a match not held in memory) and ListMatches used to let
    the raw StoreError escape, which the transport reports as INTERNAL. The store's own
    message goes to the log instead: ``store_read_failed`` with the read's ``operation`` and
    ``error_type`` (docs/operations.md, the log events' table)."""
    store = FailingReads()

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            await mgr.terminate_match(match_id, "test")
            assert mgr.evict_finished() == 1  # now only in the store
            store.broken = True
            errors = []
            with capture_logs() as logs:
                for call in (lambda: mgr.get_match(match_id),
                             lambda: mgr.get_view(match_id, Principal("spectator", match_id)),
                             lambda: collect(mgr.watch(match_id, Principal("spectator", match_id), 0)),
                             lambda: mgr.list_matches()):
                    try:
                        await call()
                    except Exception as exc:  # noqa: BLE001 - inspected below
                        errors.append(exc)
            store.broken = False
            summary = await mgr.get_match(match_id)  # works again once the store is back
            return errors, summary, logs

    errors, summary, logs = run(go())
    read_failures = [e for e in logs if e["event"] == "store_read_failed"]
    assert [(e["log_level"], e["operation"], e["error_type"]) for e in read_failures] \
        == [("error", "load_match", "StoreError")] * 3 + [("error", "list_matches", "StoreError")]
    assert all("unreachable" in e["error"] for e in read_failures)
    assert len(errors) == 4
    for exc in errors:
        assert isinstance(exc, SessionError), repr(exc)
        assert (exc.code, exc.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
        assert "unreachable" not in exc.message  # the store's own text stays in the logs
    assert summary.status == "terminated"


def test_a_creation_whose_caller_went_away_is_still_a_match_of_the_server():
    """The transport cancels the request of a client that went away. A CreateMatch whose
    store write was under way used to leave the match in the store but not in memory: never
    expired by the sweeper (it stayed "waiting" until a restart), invisible to the limits.
    Like every other write, the creation now completes as if the client had stayed."""
    class SlowAnswer(MemoryStore):
        async def create_match(self, record, decks=()):
            await super().create_match(record, decks)  # durable...
            await asyncio.sleep(0.05)  # ...but the answer takes a while

    store = SlowAnswer()

    async def go():
        async with manager(config(waiting_timeout_s=0.2), store=store) as mgr:
            call = asyncio.ensure_future(mgr.create_match(CreateMatchRequest(game="klaberjass")))
            await asyncio.sleep(0.01)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await until(lambda: mgr.match_ids())
            held = list(mgr.match_ids())
            # past the waiting timeout the sweeper ends it (a hang guard, not a time it must take)
            loop = asyncio.get_running_loop()
            guard = loop.time() + 30
            while (listings := await store.list_matches())[0].record.status == "waiting":
                assert loop.time() < guard, listings
                await asyncio.sleep(0.01)
            return held, listings

    held, listings = run(go())
    assert [li.record.match_id for li in listings] == held
    assert listings[0].record.status == "finished"
    assert listings[0].record.result["reason"] == "waiting_timeout"


def test_a_store_error_while_resuming_fails_the_start_and_closes_the_store():
    """A store error while start() resumes the unfinished matches (a damaged file: "database
    disk image is malformed", I/O) is not one match's problem: every later read and write
    would fail too. It used to be logged (match_resume_failed) and skipped, and the service
    served with health SERVING while every write failed UNAVAILABLE; now start() raises
    (the service exits 2), saying what failed, and closes the store it opened. Once the
    store is sound again, the next start resumes the match with its timers (section 4,
    "Timers"; JJK-10.2's grace windows)."""
    class ClosesToo(FailingReads):
        closed = 0

        async def close(self):
            self.closed += 1
            await super().close()

    store = ClosesToo()

    async def go():
        first = MatchManager(config(time_scale=0.005), store=store, metrics=Metrics(),
                             create_bot_host=False)
        await first.start()
        s = await first.create_match(CreateMatchRequest(game="japanese_joker"))
        for seat in range(2):
            await first.join_match(s.match_id, seat, f"p{seat}")
        # the process crashes; its successor starts while the store cannot be read
        store.broken = True
        second = MatchManager(config(time_scale=0.005), store=store, metrics=Metrics(),
                              create_bot_host=False)
        with pytest.raises(StoreError) as failed:
            await second.start()
        closed = store.closed
        store.broken = False
        third = MatchManager(config(time_scale=0.005), store=store, metrics=Metrics(),
                             create_bot_host=False)
        await third.start()
        try:
            assert third.match_ids() == [s.match_id]
            # 60 s grace scaled to 0.3 s: nobody came back, the match ends without a winner
            await until(lambda: third._matches[s.match_id].over, timeout=30)
            return failed.value, closed, second.match_ids(), await third.get_match(s.match_id)
        finally:
            await third.close()

    error, closed, held, summary = run(go())
    assert str(error) == "resuming the unfinished matches failed: the database is unreachable"
    assert closed == 1 and held == []
    assert summary.status == "finished" and summary.result["outcome"] == "abandoned"


class SlowLoads(MemoryStore):
    """A store a round trip away: a match's read takes a while. It records the reads begun
    and ended, and the most under way at once; the read of ``fail`` fails at once."""

    def __init__(self):
        super().__init__()
        self.begun, self.ended, self.in_flight, self.most, self.fail = [], [], 0, 0, None

    async def load_match(self, match_id):
        self.begun.append(match_id)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            if match_id == self.fail:
                raise StoreError("the database is unreachable")
            await asyncio.sleep(0.02)
            return await super().load_match(match_id)
        finally:
            self.in_flight -= 1
            self.ended.append(match_id)


async def _unfinished_matches(store, count: int) -> list[str]:
    """``count`` active Japanese Joker matches in ``store``, left by a manager that crashed;
    their ids in the store's order."""
    first = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
    await first.start()
    for _ in range(count):
        s = await first.create_match(CreateMatchRequest(game="japanese_joker"))
        for seat in range(2):
            await first.join_match(s.match_id, seat, f"p{seat}")
    return await store.unfinished_match_ids()


def test_the_start_reads_the_unfinished_matches_several_at_once():
    """A restart rebuilds every unfinished match before it serves (docs/operations.md,
    start-up step 6). One read after another, a PostgreSQL store a round trip away took
    longer to resume 10,000 matches than the start-up probe allows (bench/restart_resume.py):
    RESUME_CONCURRENCY reads are under way at once, and every match is resumed."""
    store = SlowLoads()

    async def go():
        ids = await _unfinished_matches(store, 2 * manager_module.RESUME_CONCURRENCY + 1)
        store.begun.clear()
        metrics = Metrics()
        second = MatchManager(config(), store=store, metrics=metrics, create_bot_host=False)
        await second.start()
        try:
            resumed = metrics.matches_resumed.labels("japanese_joker")._value.get()
            return ids, sorted(second.match_ids()), [second._matches[i].seq for i in ids], resumed
        finally:
            await second.close()

    ids, held, seqs, resumed = run(go())
    assert store.most == manager_module.RESUME_CONCURRENCY == 8  # the store pool's default size
    assert sorted(store.begun) == sorted(ids) and held == sorted(ids) and resumed == len(ids)
    assert all(seq == 0 for seq in seqs)


def test_a_store_error_while_resuming_begins_no_further_read_and_waits_for_those_under_way():
    """The first read that fails ends the resume: no read of another match begins after it
    (each would fail too), and the start raises only once the reads under way have ended
    (one may be writing: a deal that was due, a start, an end; the store is closed next)."""
    store = SlowLoads()

    async def go():
        ids = await _unfinished_matches(store, 2 * manager_module.RESUME_CONCURRENCY)
        store.begun.clear()
        store.fail = ids[manager_module.RESUME_CONCURRENCY - 1]  # the last read begun at once
        second = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        with pytest.raises(StoreError) as failed:
            await second.start()
        return ids, list(store.ended), second.match_ids(), str(failed.value)

    ids, ended, held, error = run(go())
    under_way = ids[:manager_module.RESUME_CONCURRENCY]
    assert store.begun == under_way and sorted(ended) == sorted(under_way)
    assert error == "resuming the unfinished matches failed: the database is unreachable" and held == []


def test_a_retry_while_the_store_cannot_be_read_is_unavailable_then_gets_its_result():
    """The retry of an action whose first attempt was written but answered UNAVAILABLE finds
    the stored log ahead and reads it back (the writer's catch-up). When that read fails too,
    the answer is UNAVAILABLE (retry later), not the raw StoreError (INTERNAL), and the failed
    read is logged (``store_read_failed``, docs/operations.md); the next retry gets the first
    result."""
    class Both(LosesAcknowledgements, FailingReads):
        pass

    store = Both()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                return await play(mgr), logs

    async def play(mgr):
        match_id, ps = await open_match(mgr, "klaberjass")
        seat, p, env = await to_act(mgr, match_id, ps)
        action = env.view["legal"][0]
        store.lose_next = True
        with pytest.raises(SessionError):
            await mgr.submit_action(match_id, p, action, env.seq, "once")
        store.broken = True
        try:
            await mgr.submit_action(match_id, p, action, env.seq, "once")
        except Exception as exc:  # noqa: BLE001 - inspected below
            during = exc
        store.broken = False
        after = await mgr.submit_action(match_id, p, action, env.seq, "once")
        return during, after

    (during, after), logs = run(go())
    assert isinstance(during, SessionError), repr(during)
    assert (during.code, during.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert after.duplicate and after.seq == 1
    failed = [(e["operation"], e["error_type"]) for e in logs if e["event"] == "store_read_failed"]
    assert failed == [("settle_log", "StoreError")]


def test_a_log_found_ahead_is_a_stale_sequence_with_both_numbers():
    """An action whose write finds the stored log ahead (an earlier write answered with an
    error, or another writer) is refused like any stale decision: ABORTED STALE_SEQUENCE with
    the current view and, as docs/api.md's metadata table says, the expected and the current
    seq (they were missing on this path)."""
    store = LosesAcknowledgements()

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            seat, p, env = await to_act(mgr, match_id, ps)
            store.lose_next = True
            with pytest.raises(SessionError):
                await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "first")
            with pytest.raises(StaleSequence) as stale:  # another decision on the same view
                await mgr.submit_action(match_id, p, env.view["legal"][-1], env.seq, "second")
            return env.seq, stale.value

    seq, stale = run(go())
    assert stale.metadata == {"expected_seq": str(seq), "seq": str(seq + 1)}
    assert stale.current.seq == seq + 1


def test_a_timeout_move_the_store_refused_is_tried_again_without_a_new_turn(monkeypatch):
    """The deadline passed and the auto-move could not be written: it is tried again shortly
    (the seat's deadline stays the one that passed); re-arming the clock used to give the
    seat a whole new turn time first. Shown by what the clock did, not by when the move
    landed: the move's two attempts were the timeout's and its retry (the timeout counted
    once), both for the deadline that passed, the retry armed RETRY_AFTER_STORE_FAILURE_S
    after the failure."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.2)
    store = FailingAppends()
    attempts: list[tuple[bool, float | None]] = []  # (a retry, the deadline it was made for)
    armed: list[float] = []  # the delays of the timeout moves armed with call_later
    timeout_move = clock.MatchClock._timeout_move

    async def recording_timeout_move(self, m, key, retry=False):
        attempts.append((retry, m.deadline))
        await timeout_move(self, m, key, retry)
    monkeypatch.setattr(clock.MatchClock, "_timeout_move", recording_timeout_move)

    async def go():
        loop = asyncio.get_running_loop()
        call_later = loop.call_later

        def recording_call_later(delay, callback, *args, **kwargs):
            if getattr(callback, "__name__", "") == "_on_deadline":
                armed.append(delay)
            return call_later(delay, callback, *args, **kwargs)
        loop.call_later = recording_call_later
        async with manager(config(time_scale=0.05), store=store) as mgr:  # 30 s -> 1.5 s
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in ps]
            await until(lambda: all(s.present for s in m.seats))
            first_deadline = m.deadline
            store.fail_next = True
            await until(lambda: store.failed, timeout=30)
            during_retry = m.deadline
            await until(lambda: m.seq == 1, timeout=30)
            for s in streams:
                await s.close()
            return first_deadline, during_retry, m.actions[0]

    first_deadline, during_retry, action = run(go())
    assert during_retry == first_deadline
    assert (action.by, action.reason) == ("auto", "timeout")
    # the retry, not another 1.5 s turn
    assert attempts == [(False, first_deadline), (True, first_deadline)], attempts
    # armed: the turn, then the retry, then the next decision's turn
    assert armed[1:2] == [0.2], armed


class SlowListing(MemoryStore):
    """A store whose list_matches reads its rows, then awaits ``during`` before answering (a
    database round trip during which the matches go on)."""

    during = None

    async def list_matches(self, statuses=(), game="", limit=100, after=None):
        listings = await super().list_matches(statuses, game, limit, after)
        if self.during is not None:
            during, self.during = self.during, None
            await during()
        return listings


def test_list_matches_by_status_never_lists_a_match_under_another_status():
    """ListMatches(status=...) filters the store's rows, but a match held in memory is
    summarised as it is at the answer: one that ended while the store was read (terminated
    here; a last action or a resignation alike) used to be listed as ``terminated`` in the
    answer to ``status=active``. The summaries are filtered by the status asked for."""
    store = SlowListing()

    async def go():
        async with manager(store=store) as mgr:
            ending, _ = await open_match(mgr, "klaberjass")
            staying, _ = await open_match(mgr, "klaberjass")
            store.during = lambda: mgr.terminate_match(ending, "ended while listed")
            active = await mgr.list_matches(status="active")
            terminated = await mgr.list_matches(status="terminated")
            everything = await mgr.list_matches()
            return ending, staying, active, terminated, everything

    ending, staying, active, terminated, everything = run(go())
    assert [(s.match_id, s.status) for s in active] == [(staying, "active")]
    assert [(s.match_id, s.status) for s in terminated] == [(ending, "terminated")]
    assert {(s.match_id, s.status) for s in everything} == {(ending, "terminated"), (staying, "active")}


def test_a_page_of_a_status_listing_moves_on_past_a_match_dropped_for_its_status():
    """Paging ListMatches(status=...): the next page starts after the page's last store row,
    even when the status check drops that row (it ended while the store was read): the page
    is short, it still has a next page, and no other match is skipped; with nothing changing
    meanwhile, pages of one hold every match once (the extra row read to know whether a page
    follows is the next page's first, not skipped)."""
    store = SlowListing()

    async def go():
        async with manager(store=store) as mgr:
            ids = [(await open_match(mgr, "klaberjass"))[0] for _ in range(5)]
            newest_first = ids[::-1]
            ending = newest_first[1]  # the last row of the first page of two
            store.during = lambda: mgr.terminate_match(ending, "ended while listed")
            first = await mgr.matches_page(status="active", limit=2)
            rest, token = [], first.next_page_token
            while token:
                page = await mgr.matches_page(status="active", limit=2, page_token=token)
                rest += [s.match_id for s in page.matches]
                token = page.next_page_token
            unchanged = []
            token = None
            while token != "":
                page = await mgr.matches_page(status="active", limit=1, page_token=token or "")
                unchanged += [s.match_id for s in page.matches]
                token = page.next_page_token
            return newest_first, ending, first, rest, unchanged

    newest_first, ending, first, rest, unchanged = run(go())
    assert [s.match_id for s in first.matches] == newest_first[:1] and first.next_page_token
    assert rest == newest_first[2:]
    assert unchanged == [m for m in newest_first if m != ending]


class FailingStart(MemoryStore):
    """A store whose next start of a match (``start_match``: the last seat, the first deck and
    the status in one write) fails (``fail``, for ``times`` starts); ``ack_lost``: the start
    is durable but answers with an error (PostgreSQL: the connection dropped after the
    COMMIT); ``unreadable``: that many reads of a match fail after it (nobody can tell then
    whether the start happened); ``lose_seat``: the next seat write is durable but answers
    with an error."""

    fail = False
    times = 1
    ack_lost = False
    unreadable = 0
    lose_seat = False

    async def save_seat(self, match_id, seat):
        await super().save_seat(match_id, seat)
        if self.lose_seat:
            self.lose_seat = False
            raise StoreError("connection lost after the commit")

    async def start_match(self, match_id, seats=(), decks=()):
        if self.fail:
            self.times -= 1
            if self.times <= 0:
                self.fail = False
            if self.ack_lost:
                await super().start_match(match_id, seats, decks)
            raise StoreError("the database is unreachable")
        return await super().start_match(match_id, seats, decks)

    async def load_match(self, match_id):
        if self.unreadable > 0:
            self.unreadable -= 1
            raise StoreError("the database is unreachable")
        return await super().load_match(match_id)


@pytest.mark.parametrize("ack_lost, times", [(False, 1), (False, 2), (True, 1), (True, 2)])
def test_a_match_whose_start_failed_is_started_by_the_sweeper_and_plays(ack_lost, times):
    """The join that takes the last seat writes the seat, the first deck and the status in
    one transaction. When that write fails and reading the match back fails too, nobody can
    tell whether the store holds the start (``ack_lost``: it does): the join is answered
    UNAVAILABLE / STORE_UNAVAILABLE (retry) and the match waits with every seat taken, the
    seat held for that join. (Before the one write, any failure of the deck's or the status's
    write left it so, and it never started on a running engine: it was not in the lobby, and
    the waiting timeout abandoned it an hour later.) The sweeper starts it as the join would
    have (before it would expire it, even past the waiting timeout; a pass whose start fails
    again logs match_start_failed and the next one tries again), or finds it started in the
    store and follows it, with the deck stored (once); the waiting seat's stream gets the
    "joined" event with its hand; until then no view shows a card of the deck. The match then
    plays to its end."""
    store = FailingStart()

    async def go():
        with capture_logs() as logs:
            async with manager(config(waiting_timeout_s=3600.0, finished_retention_s=3600.0), store=store) as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="klaberjass", listed=True, name="t"))
                first = mgr.authenticate(s.match_id, (await mgr.join_match(s.match_id, 0, "a")).token)
                stream = Stream(mgr, s.match_id, first)
                store.fail, store.times, store.ack_lost, store.unreadable = True, times, ack_lost, 1
                with pytest.raises(SessionError) as failed:
                    await mgr.join_match(s.match_id, 1, "b")
                m = mgr._matches[s.match_id]
                stalled = await mgr.get_match(s.match_id)
                view = await mgr.get_view(s.match_id, first)
                assert not view.view.get("hand") and view.view.get("to_act") is None
                assert not mgr.list_open_matches()
                m.created_at -= 2 * 3600.0  # past the waiting timeout too: it starts all the same
                passes = 0
                while m.status == "waiting":
                    passes += 1
                    await mgr._housekeeping.sweep_once()
                await until(lambda: any(e.kind == "presence" and e.view.view.get("hand") for e in stream.events))
                # the second player's answer (the token) was lost with the failed join
                second = mgr.authenticate(s.match_id, (await mgr.reissue_seat_token(s.match_id, 1))[0].token)
                await play_random(mgr, s.match_id, [first, second], random.Random(3))
                await stream.close()
                return (failed.value, stalled, passes, await mgr.get_match(s.match_id),
                        await store.load_match(s.match_id), stream.events, logs, m)

    failed, stalled, passes, final, stored, events, logs, m = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert stalled.status == "waiting" and all(seat.taken for seat in stalled.seats)
    assert passes == (1 if ack_lost else times)  # a start found in the store is followed at once
    assert [e["by"] for e in logs if e["event"] == "match_start_recovered"] == ["sweeper"]
    assert len([e for e in logs if e["event"] == "match_start_failed"]) == passes - 1
    assert [e for e in logs if e["event"] == "match_started"][-1]["seq"] == 0
    joined = [e for e in events if e.kind == "presence" and e.details["change"] == "joined"]
    assert [e.seat for e in joined] == [1] and joined[0].view.status == "active"
    assert final.status == "finished" and final.result["outcome"] == "completed"
    assert stored.record.status == "finished"
    assert stored.decks[0] == m.decks[0]  # the deck written is the one dealt, once
    assert not stalled.deal_commitments and len(final.deal_commitments) >= 1


def test_a_start_of_a_table_given_its_decks_written_though_its_write_failed_is_followed():
    """A table the admin created with its decks has its first deal dealt from the start (the
    match folds every deck it holds). The join that takes its last seat starts it; that write
    lands but is answered with an error, and the read-back finds it started: the join is
    answered as if the answer had come (Seating._follow_start, with no deck to deal), the
    admin's deck still the first deal's."""
    from engine_service.rules.cards import card_code
    from engine_service.rules.registry import get_game

    store = FailingStart()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                return await table(mgr), logs

    async def table(mgr):
        deck = [card_code(c) for c in get_game("klaberjass").pack]
        random.Random(3).shuffle(deck)
        s = await mgr.create_match(CreateMatchRequest(game="klaberjass", decks=[deck]), admin=True)
        await mgr.join_match(s.match_id, 0, "a")
        store.fail, store.ack_lost = True, True
        joined = await mgr.join_match(s.match_id, 1, "b")
        inspected = (await mgr.inspect_match(s.match_id)).envelope
        return joined, inspected, deck, (await store.load_match(s.match_id)).record.status

    (joined, inspected, deck, stored), logs = run(go())
    assert joined.seat == 1 and stored == "active"
    assert inspected.view["decks"][0] == deck
    assert [e["found_in_store"] for e in logs if e["event"] == "match_started"] == [True]


def test_a_start_written_though_its_write_failed_is_the_one_followed():
    """The start's write was durable but answered with an error (PostgreSQL: the connection
    dropped after the COMMIT): the join reads the match back, finds it started with its own
    seat, and answers as if the write had succeeded: its token works, the deck dealt is the
    one stored, the match starts once."""
    store = FailingStart()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            for seat in range(3):
                await mgr.join_match(s.match_id, seat, f"p{seat}")
            store.fail, store.ack_lost = True, True
            last = await mgr.join_match(s.match_id, 3, "p3")
            view = await mgr.get_view(s.match_id, mgr.authenticate(s.match_id, last.token))
            return (await mgr.get_match(s.match_id), mgr._matches[s.match_id], await store.load_match(s.match_id),
                    view)

    summary, m, stored, view = run(go())
    assert summary.status == "active" and not store.fail
    assert stored.decks == (m.decks[0],) and m.deals_dealt == 1
    assert stored.record.seats[3] == m.seats[3].record() and view.seat == 3 and view.view["hand"]


class LosesSeatAnswers(MemoryStore):
    """A store whose next seat write (``lose``) is durable but answers with an error; then
    ``unreadable`` reads of a match fail (nobody can tell whether the write happened)."""

    lose = False
    unreadable = 0

    async def save_seat(self, match_id, seat):
        await super().save_seat(match_id, seat)
        if self.lose:
            self.lose = False
            raise StoreError("connection lost after the commit")

    async def load_match(self, match_id):
        if self.unreadable > 0:
            self.unreadable -= 1
            raise StoreError("the database is unreachable")
        return await super().load_match(match_id)


async def _seats_agree(mgr, store, match_id):
    m = mgr._matches[match_id]
    stored = await store.load_match(match_id)
    assert (stored.record.status, stored.record.seats) == (m.status, tuple(s.record() for s in m.seats))


@pytest.mark.parametrize("request_kind", ["join", "leave", "reissue", "join_retry", "resign"])
def test_a_seat_write_whose_answer_was_lost_is_read_back_and_followed(request_kind):
    """A seat write (a join, a leave, a reissued token, a retried join, a resignation of a
    four-player match) is durable but answered with an error: the seat is read back, the write
    found there, and the request is answered as if its answer had come (the token given works,
    the store and the memory agree). It used to be UNAVAILABLE with the memory as before and
    the store as written: a new token nobody had been given in place of the one its player
    held, a seat taken by nobody's token, a player who left still seated in memory. When the
    match ended before a retry (a two-player match resigned, terminated), it stayed so, and
    the match read back after its end or a restart was not the one served (found by the seat
    lifecycle fuzz)."""
    store = LosesSeatAnswers()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
                key = "k" * 20
                first = await mgr.join_match(s.match_id, 0, "a", key)
                if request_kind == "resign":
                    for seat in (1, 2, 3):
                        await mgr.join_match(s.match_id, seat, f"p{seat}")
                store.lose = True
                if request_kind == "join":
                    answer = await mgr.join_match(s.match_id, 1, "b")
                    token = answer.token
                elif request_kind == "join_retry":
                    answer = await mgr.join_match(s.match_id, 0, "a", key)
                    token = answer.token
                elif request_kind == "reissue":
                    answer, _ = await mgr.reissue_seat_token(s.match_id, 0)
                    token = answer.token
                else:
                    answer = await mgr.leave_match(s.match_id, mgr.authenticate(s.match_id, first.token), False)
                    token = None
                await _seats_agree(mgr, store, s.match_id)
                await mgr.terminate_match(s.match_id, "test")
                await _seats_agree(mgr, store, s.match_id)
                mgr.evict_finished()
                reached = None
                if token is not None:
                    await mgr.recall(s.match_id)
                    reached = mgr.authenticate(s.match_id, token).seat
                return answer, reached, first.token, mgr, logs

    answer, reached, old, mgr, logs = run(go())
    assert [e["seat"] for e in logs if e["event"] == "seat_write_found_in_store"] == [
        1 if request_kind == "join" else 0]
    if request_kind in ("join", "join_retry", "reissue"):
        assert reached == answer.seat
    if request_kind in ("join_retry", "reissue"):
        with pytest.raises(SessionError):
            mgr.authenticate(answer.match_id, old)
    if request_kind == "resign":
        assert answer.status == "active" and answer.seats[0].replaced_by_bot


def test_a_failed_seat_write_of_a_match_gone_from_the_store_is_unavailable():
    """A join's seat write fails and reading the match back finds it gone (another process
    pruned it): the write did not happen, and the join is UNAVAILABLE / STORE_UNAVAILABLE like
    any failed write (Seating.save_seat), the seat open in memory. It must not become an
    INTERNAL error from reading the seats of a match that is not there."""
    class GoneOnFailure(MemoryStore):
        async def save_seat(self, match_id, seat):
            raise StoreError("the database is unreachable")

        async def load_match(self, match_id):
            return None

    async def go():
        async with manager(store=GoneOnFailure()) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            with pytest.raises(SessionError) as failed:
                await mgr.join_match(s.match_id, 0, "a")
            return failed.value, mgr._matches[s.match_id].open_seats(), dict(mgr._seating.seat_resyncs)

    failed, open_seats, rewriting = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert [slot.seat for slot in open_seats] == [0, 1]
    assert rewriting == {}  # no row to write again


def test_a_failed_start_of_a_match_gone_from_the_store_is_unavailable():
    """The join that takes the last seat starts the match; that write fails and reading the
    match back finds it gone (another process pruned it): the start did not happen, and the
    join is UNAVAILABLE / STORE_UNAVAILABLE like any failed write (Seating.start), the match
    waiting in memory with that seat open, not an INTERNAL error from reading a match that is
    not there."""
    class GoneOnFailedStart(MemoryStore):
        gone = False

        async def start_match(self, match_id, seats=(), decks=()):
            self.gone = True
            raise StoreError("the database is unreachable")

        async def load_match(self, match_id):
            return None if self.gone else await super().load_match(match_id)

    async def go():
        async with manager(store=GoneOnFailedStart()) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            await mgr.join_match(s.match_id, 0, "a")
            with pytest.raises(SessionError) as failed:
                await mgr.join_match(s.match_id, 1, "b")
            m = mgr._matches[s.match_id]
            return failed.value, m.status, [slot.seat for slot in m.open_seats()], dict(mgr._seating.start_retries)

    failed, status, open_seats, retrying = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert status == "waiting" and open_seats == [1] and retrying == {}


def test_a_seat_write_refused_and_read_back_as_before_is_unavailable_and_not_written_again():
    """A join's seat write fails and reading the match back finds the seat as before: the
    write did not happen, the join is UNAVAILABLE / STORE_UNAVAILABLE, and nothing is left to
    write again (Seating.save_seat: only a seat whose write nobody could tell, or an earlier
    write's in doubt, is rewritten: seat_resynced)."""
    class RefusesSeats(MemoryStore):
        async def save_seat(self, match_id, seat):
            raise StoreError("the database is unreachable")

    store = RefusesSeats()

    async def go():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            with pytest.raises(SessionError) as failed:
                await mgr.join_match(s.match_id, 0, "a")
            return (failed.value, mgr._matches[s.match_id].open_seats(), dict(mgr._seating.seat_resyncs),
                    (await store.load_match(s.match_id)).record.seats[0])

    failed, open_seats, rewriting, stored = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert [slot.seat for slot in open_seats] == [0, 1] and not stored.token_hash
    assert rewriting == {}


def test_a_seat_write_nobody_can_tell_is_written_again_as_the_memory_holds_it(monkeypatch):
    """A join's seat write is durable but answered with an error, and reading the match back
    fails too: the join is UNAVAILABLE and the seat stays open in memory, and its row, which
    the store may hold taken, is written again as the memory holds it soon after
    (``seat_resynced``), even once the match has ended (terminated before the join was
    retried): the store and the memory agree. It used to keep the seat taken in the store by
    a token nobody had."""
    from engine_service.sessions import seating as seating_module

    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.02)
    store = LosesSeatAnswers()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                mgr._sweep_interval = 0.1
                s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
                store.lose, store.unreadable = True, 1
                with pytest.raises(SessionError) as failed:
                    await mgr.join_match(s.match_id, 2, "b")
                stored_at_once = (await store.load_match(s.match_id)).record.seats[2]
                await mgr.terminate_match(s.match_id, "test")
                await until(lambda: not mgr._seating.seat_resyncs)
                await asyncio.sleep(10 * seating_module.START_RETRY_FIRST_S)  # a series that went on would write again
                await _seats_agree(mgr, store, s.match_id)
                return failed.value, stored_at_once, logs

    failed, stored_at_once, logs = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert stored_at_once.token_hash  # the write was durable
    assert [e["seat"] for e in logs if e["event"] == "seat_resynced"] == [2]  # once: the series ends with it


def test_two_writes_of_a_seat_nobody_could_tell_make_one_rewrite_series(monkeypatch):
    """A seat whose write nobody could tell has one rewrite series (Seating._resync_seat): a
    second such write of it while the first series waits starts none, and the seat's row is
    written again once (``seat_resynced``). On a virtual clock."""
    store = LosesSeatAnswers()

    async def go():
        loop = asyncio.get_running_loop()
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
                for name in ("b", "c"):  # the second, a join of the seat still open in memory
                    store.lose, store.unreadable = True, 1
                    with pytest.raises(SessionError):
                        await mgr.join_match(s.match_id, 2, name)
                series = list(mgr._seating.seat_resyncs)
                await advance_to(loop.time() + 10.0)
                await _seats_agree(mgr, store, s.match_id)
                return series, logs

    series, logs = run_virtual(go, monkeypatch)
    assert len(series) == 1
    assert [e["seat"] for e in logs if e["event"] == "seat_resynced"] == [2]


def test_a_seat_rewrite_the_store_refuses_is_logged_and_tried_again_until_written(monkeypatch):
    """A seat's rewrite (Seating._resync_seat) that the store refuses logs seat_resync_failed
    with its match, seat, error and next delay (docs/operations.md), and is tried again, 0.5 s
    doubling, until written (seat_resynced). On a virtual clock."""
    class RefusesRewrites(LosesSeatAnswers):
        refuse = 0

        async def save_seat(self, match_id, seat):
            if self.refuse:
                self.refuse -= 1
                raise StoreError("the database is unreachable")
            await super().save_seat(match_id, seat)

    store = RefusesRewrites()

    async def go():
        loop = asyncio.get_running_loop()
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                s = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
                store.lose, store.unreadable = True, 1
                with pytest.raises(SessionError):
                    await mgr.join_match(s.match_id, 2, "b")
                store.refuse = 2
                await advance_to(loop.time() + 10.0)
                await _seats_agree(mgr, store, s.match_id)
                return s.match_id, logs

    match_id, logs = run_virtual(go, monkeypatch)
    failed = [(e["match_id"], e["seat"], bool(e["error"]), e["retry_in_s"]) for e in logs
              if e["event"] == "seat_resync_failed"]
    assert failed == [(match_id, 2, True, 1.0), (match_id, 2, True, 2.0)]
    assert [e["seat"] for e in logs if e["event"] == "seat_resynced"] == [2]


class EndsInDoubt(MemoryStore):
    """A store whose next status write fails: ``landed`` (durable, but answered with an
    error) or not; ``unreadable``: the read-back after it fails too (and as many reads after
    it as ``unreadable`` counts); ``appended``: the actions written since."""

    fail_next = False
    landed = True
    unreadable: int = 0
    reads_failing = 0

    async def set_status(self, match_id, status, result=None, ended_at=None, deal_commitments=()):
        if not self.fail_next:
            return await super().set_status(match_id, status, result, ended_at, deal_commitments)
        self.fail_next = False
        if self.landed:
            await super().set_status(match_id, status, result, ended_at, deal_commitments)
        self.reads_failing = int(self.unreadable)
        raise StoreError("connection lost at the commit")

    async def load_match(self, match_id):
        if self.reads_failing:
            self.reads_failing -= 1
            raise StoreError("the database is unreachable")
        return await super().load_match(match_id)


@pytest.mark.parametrize("landed, unreadable", [(True, False), (False, False), (True, True)])
def test_an_end_whose_answer_was_lost_is_read_back(landed, unreadable):
    """TerminateMatch's status write answered with an error: found written (this end, by its
    ended_at), the match ends as after an answer (match_end_found_in_store, watchers get
    match_ended); not written, or not readable, UNAVAILABLE and the match runs on in memory
    (it used to run on whenever the write failed, while the store might hold it ended)."""
    store = EndsInDoubt()

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: spectator.events)  # its snapshot: registered
            store.fail_next, store.landed, store.unreadable = True, landed, unreadable
            with capture_logs() as logs:
                try:
                    summary = await mgr.terminate_match(match_id, "maintenance")
                    error = None
                except SessionError as exc:
                    summary, error = None, exc
            live = (await mgr.get_match(match_id)).status
            stored = (await store.load_match(match_id)).record.status
            if error is None:
                await until(lambda: spectator.events[-1].kind == "match_ended")
            events = [e.kind for e in spectator.events[1:]]
            await spectator.close()
            return summary, error, live, stored, events, logs

    summary, error, live, stored, events, logs = run(go())
    found = [e for e in logs if e["event"] == "match_end_found_in_store"]
    failed = [(e["operation"], e["error"], e["error_type"]) for e in logs if e["event"] == "store_write_failed"]
    if landed and not unreadable:
        assert error is None and summary.status == live == stored == "terminated"
        assert events == ["match_ended"] and len(found) == 1
        assert [e["status"] for e in found] == ["terminated"] and failed == []
    else:
        assert error is not None and error.reason == "STORE_UNAVAILABLE" and not found
        # docs/operations.md: the write that failed, named by its operation
        assert failed == [("set_status", "connection lost at the commit", "StoreError")]
        assert live == "active" and stored == ("terminated" if landed else "active")
        assert "match_ended" not in events


@pytest.mark.parametrize("landed", [True, False])
def test_an_end_nobody_could_tell_is_settled_before_anything_is_written(landed):
    """A TerminateMatch whose status write and read-back both failed leaves the end in doubt:
    until a read-back settles it nothing is written to the match (a player's action is
    UNAVAILABLE and nothing is appended: it would follow an end the store may hold), then
    the background series settles it: landed, the match ends as the store has it (watchers
    get match_ended; the next action is MATCH_NOT_ACTIVE); not landed, the match goes on and the
    action is accepted. It used to run on in memory, accepting actions the store appended
    after its end."""
    store = EndsInDoubt()

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: spectator.events)
            store.fail_next, store.landed, store.unreadable = True, landed, 2
            with capture_logs() as logs:
                with pytest.raises(SessionError) as ended:
                    await mgr.terminate_match(match_id, "maintenance")
                seq = (await mgr.get_match(match_id)).seq
                seat, p, env = await to_act(mgr, match_id, ps)
                with pytest.raises(SessionError) as refused:  # the second failing read
                    await mgr.submit_action(match_id, p, env.view["legal"][0], seq, "a1")
                appended = len((await MemoryStore.load_match(store, match_id)).actions)
                await until(lambda: not mgr._seating.end_settlements)  # the series settled it
                live = (await mgr.get_match(match_id)).status
                try:
                    result = await mgr.submit_action(match_id, p, env.view["legal"][0], seq, "a1")
                except SessionError as exc:
                    result = exc
            if landed:
                await until(lambda: spectator.events[-1].kind == "match_ended")
            events = [e.kind for e in spectator.events[1:]]
            stored = await store.load_match(match_id)
            await spectator.close()
            return ended.value, refused.value, seq, appended, live, result, events, stored, logs

    ended, refused, seq, appended, live, result, events, stored, logs = run(go())
    assert (ended.reason, refused.reason) == ("STORE_UNAVAILABLE", "STORE_UNAVAILABLE")
    assert appended == seq  # the refused action was not written
    names = [e["event"] for e in logs]
    assert [e["status"] for e in logs if e["event"] == "match_end_in_doubt"] == ["terminated"]
    if landed:
        assert live == stored.record.status == "terminated"
        assert isinstance(result, SessionError) and result.reason == "MATCH_NOT_ACTIVE"
        assert events == ["match_ended"] and names.count("match_end_found_in_store") == 1
        assert [e["status"] for e in logs if e["event"] == "match_end_found_in_store"] == ["terminated"]
        assert len(stored.actions) == seq
    else:
        assert live == "active" and stored.record.status == "active"
        assert not isinstance(result, SessionError) and result.seq == seq + 1
        assert "match_ended" not in events and "match_end_not_in_store" in names
        assert len(stored.actions) == seq + 1


def test_a_timeout_move_that_finds_the_end_in_doubt_landed_plays_nothing(monkeypatch):
    """A TerminateMatch whose status write landed but was answered with an error, its
    read-back failing too (the end in doubt); then the turn deadline passes before anything
    reads the match back. The timeout's move settles the end first (MatchWriter.apply) and,
    finding the match ended in the store, plays nothing: no action is appended after the
    end the store holds, the match ends as the store has it, and no ``timeout_move_failed``
    is said for it (clock.MatchClock._timeout_move)."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 3600.0)  # no background read-back
    store = EndsInDoubt()

    async def go():
        async with manager(config(time_scale=0.01), store=store) as mgr:  # turn 10 s -> 0.1 s
            match_id, ps = await open_match(mgr, "klaberjass", turn_time_s=10)
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in ps]  # present: the clock runs (JJK-10.2)
            await until(lambda: all(slot.present for slot in m.seats))
            seq = m.seq
            store.fail_next, store.landed, store.unreadable = True, True, 1
            with pytest.raises(SessionError):
                await mgr.terminate_match(match_id, "maintenance")
            assert m.end_in_doubt and m.timer_key is not None
            with capture_logs() as logs:
                await until(lambda: m.over)  # the timeout found the end
            for stream in streams:
                await stream.close()
            return seq, m, await MemoryStore.load_match(store, match_id), logs

    seq, m, stored, logs = run(go())
    assert m.status == stored.record.status == "terminated"
    assert m.seq == len(stored.actions) == seq  # nothing after the end
    names = [e["event"] for e in logs]
    assert "match_end_found_in_store" in names
    assert "timeout_move_failed" not in names  # the end happened: no failure to say

class ActionsAndEndsInDoubt(LosesAcknowledgements, EndsInDoubt):
    """An action's append (``lose_next``) or an end's status write (``fail_next``) durable but
    answered with an error, then ``reads_failing`` reads failing."""


@pytest.mark.parametrize("in_doubt, failure", [("action", "action_settle_failed"),
                                               ("end", "match_end_settle_failed")])
def test_a_settlement_series_says_which_write_it_settles_while_the_store_fails(monkeypatch, in_doubt, failure):
    """While the read-back of a write in doubt keeps failing, its series (Seating.settle_end_soon)
    logs ``action_settle_failed`` for an action, ``match_end_settle_failed`` for an end, with the
    next delay (docs/operations.md), never the other's; then it settles it. On a virtual clock."""
    store = ActionsAndEndsInDoubt()

    async def go():
        loop = asyncio.get_running_loop()
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                match_id, ps = await open_match(mgr, "klaberjass")
                if in_doubt == "action":
                    seat, p, env = await to_act(mgr, match_id, ps)
                    store.lose_next, store.reads_failing = True, 3
                    with pytest.raises(SessionError):
                        await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "a1")
                else:
                    store.fail_next, store.landed, store.unreadable = True, True, 3
                    with pytest.raises(SessionError):
                        await mgr.terminate_match(match_id, "maintenance")
                await advance_to(loop.time() + 10.0)
                settling = dict(mgr._seating.end_settlements)
                events = [e["event"] for e in logs]  # before anything else reads the match back
                return match_id, settling, events, (await mgr.get_match(match_id)), logs

    match_id, settling, events, summary, logs = run_virtual(go, monkeypatch)
    failing = [e for e in logs if e["event"] == failure]
    delays = [e["retry_in_s"] for e in failing]
    assert len(delays) >= 2 and delays == [2.0 ** k for k in range(len(delays))]
    assert all(e["match_id"] == match_id and e["error"] for e in failing)
    # each failed read-back is a ``store_read_failed`` naming what it settles (docs/operations.md)
    reads = [(e["operation"], e["match_id"], e["error"], e["error_type"]) for e in logs
             if e["event"] == "store_read_failed"]
    operation = "settle_log" if in_doubt == "action" else "settle_end"
    assert reads == [(operation, match_id, "the database is unreachable", "StoreError")] * len(delays)
    other = ({"action_settle_failed", "match_end_settle_failed"} - {failure}).pop()
    assert other not in events and "session_task_failed" not in events and settling == {}
    if in_doubt == "action":
        assert summary.seq == 1 and "log_caught_up" in events
    else:
        assert summary.status == "terminated" and "match_end_found_in_store" in events


def test_a_grace_expiry_that_finds_the_end_in_doubt_landed_logs_no_failure(monkeypatch):
    """A TerminateMatch whose status write landed but was answered with an error, its
    read-back failing too (the end in doubt); then a player goes away and the grace window
    ends (JJK-10.2, JJK-8.4: a forfeit). The forfeit's write settles the end first
    (MatchWriter.end) and, finding the match terminated in the store, writes nothing: the
    match ends as the store has it, and no ``grace_policy_failed`` is said for an end that
    did happen (clock.MatchClock._grace_expired). Nor is the expiry counted: the forfeit
    took no effect (``grace_expired{policy=forfeit}`` used to be counted before its write)."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 3600.0)  # no background read-back
    store = EndsInDoubt()

    async def go():
        # no turn deadline: nothing but the grace window reads the match back
        cfg = config(time_scale=0.01, reconnect_grace_s=20, default_turn_time_s=0)  # grace 0.2 s
        async with manager(cfg, store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in ps]
            await until(lambda: all(slot.present for slot in m.seats))
            assert m.timer_key is None
            store.fail_next, store.landed, store.unreadable = True, True, 1
            with pytest.raises(SessionError):
                await mgr.terminate_match(match_id, "maintenance")
            assert m.end_in_doubt and m.active
            with capture_logs() as logs:
                await streams[0].close()  # seat 0 goes away: its window runs
                await until(lambda: m.over)  # the window's end found the termination
            await streams[1].close()
            return m, logs, await MemoryStore.load_match(store, match_id), mgr.metrics

    m, logs, stored, metrics = run(go())
    assert m.status == stored.record.status == "terminated"
    assert m.result["outcome"] == "terminated"  # not the forfeit
    names = [e["event"] for e in logs]
    assert names.count("match_end_found_in_store") == 1
    assert "grace_policy_failed" not in names
    for policy in ("forfeit", "abandoned"):
        assert metrics.value("cardgames_grace_expired_total", {"game": "klaberjass", "policy": policy}) == 0


class CreatesInDoubt(MemoryStore):
    """A store whose next creation fails (``fail_next``): ``landed`` (durable, but answered
    with an error) or not; then ``unreadable`` reads of a match fail. ``reads``: the match ids
    read."""

    fail_next = False
    landed = True
    unreadable = 0

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    async def create_match(self, record, decks=()):
        if not self.fail_next:
            return await super().create_match(record, decks)
        self.fail_next = False
        if self.landed:
            await super().create_match(record, decks)
        raise StoreError("connection lost at the commit")

    async def create_unanswered(self, mgr, unreadable, request=None) -> SessionError:
        """Have ``mgr`` create a match whose write lands but is answered with an error (a
        creation nobody could tell), its next ``unreadable`` reads failing; the caller's error."""
        self.fail_next, self.landed, self.unreadable = True, True, unreadable
        with pytest.raises(SessionError) as failed:
            await mgr.create_match(request or CreateMatchRequest(game="klaberjass"))
        return failed.value

    async def load_match(self, match_id):
        self.reads.append(match_id)
        if self.unreadable > 0:
            self.unreadable -= 1
            raise StoreError("the database is unreachable")
        return await super().load_match(match_id)


@pytest.mark.parametrize("landed, unreadable",
                         [(True, 0), (False, 0), (True, 1), (True, 3), (False, 1), (False, 3)])
def test_a_creation_whose_answer_was_lost_is_read_back(monkeypatch, landed, unreadable):
    """CreateMatch's write answered with an error: the match is read back. Found (this very
    creation, by its created_at), it was created: the caller gets its summary and the match is
    one of this server's, joined and played as any (match_create_found_in_store). Not found,
    UNAVAILABLE, nothing anywhere. When the read fails too, UNAVAILABLE, and the match is read
    back until the store answers (match_create_check_failed meanwhile): there, it is ended
    (finished, abandoned, reason create_unacknowledged), since nobody was given its id; not
    there, nothing is written. It used to be UNAVAILABLE whatever the store held: a match
    created though its creator was told otherwise lived on in the store, unknown to the
    process, until a restart resumed it for nobody."""
    from engine_service.sessions import seating as seating_module

    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.02)
    store = CreatesInDoubt()
    metrics = Metrics()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store, metrics=metrics) as mgr:
                mgr._sweep_interval = 0.1
                store.fail_next, store.landed, store.unreadable = True, landed, unreadable
                try:
                    summary = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
                    error = None
                except SessionError as exc:
                    summary, error = None, exc
                checking = dict(mgr._seating.create_checks)
                await until(lambda: not mgr._seating.create_checks)
                played = 0
                if summary is not None:
                    _, ps = await join_all(mgr, summary.match_id)
                    played = await play_random(mgr, summary.match_id, ps, random.Random(5), max_actions=4)
                return (summary, error, checking, played, list(mgr.match_ids()), dict(mgr._creating),
                        await store.list_matches(), logs)

    summary, error, checking, played, held, creating, listings, logs = run(go())
    events = [e["event"] for e in logs]
    created = metrics.matches_created.labels("klaberjass")._value.get()
    assert creating == {"waiting": 0, "active": 0}
    assert events.count("match_create_check_failed") == max(0, unreadable - 1)
    if landed and not unreadable:
        assert error is None and summary.status == "waiting" and held == [summary.match_id]
        assert played == 4 and created == 1
        assert [e["status"] for e in logs if e["event"] == "match_create_found_in_store"] == ["waiting"]
        assert [li.record.status for li in listings] == ["active"]
        return
    assert (error.code, error.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert held == [] and created == 0 and "match_create_found_in_store" not in events
    assert len(store.reads) == 1 + unreadable  # read back at once, then by the series
    assert bool(checking) == bool(unreadable)
    if landed:
        assert [(li.record.status, li.record.result["outcome"], li.record.result["reason"])
                for li in listings] == [("finished", "abandoned", "create_unacknowledged")]
        assert listings[0].record.result["winners"] == [] and listings[0].record.ended_at
        assert events.count("match_create_abandoned") == 1
    else:
        assert listings == [] and "match_create_abandoned" not in events
        assert "session_task_failed" not in events  # the series ends finding no match


def test_a_creation_nobody_could_tell_read_by_its_id_is_resumed_and_plays(monkeypatch):
    """A match of bots whose creation nobody could tell (the write and the read-back failed;
    its creator was answered UNAVAILABLE) is in the store but not held. Read by its id before
    the read-back series comes round (the admin's ListMatches lists it), it becomes a match of
    this server as a restart would resume it: counted resumed, its timers armed, and its bots
    play it to its end. Held but never armed, it waited for ever with a bot to act."""
    from engine_service.sessions.api import SeatConfig

    from .test_restart import _FirstLegal

    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 60.0)  # the read by its id first
    store = CreatesInDoubt()
    metrics = Metrics()

    async def go():
        mgr = MatchManager(config(), store=store, bot_host=_FirstLegal(), metrics=metrics)
        await mgr.start()
        try:
            failed = await store.create_unanswered(
                mgr, 1, CreateMatchRequest(game="japanese_joker", seats=[SeatConfig("bot", "first")] * 2))
            [listing] = await store.list_matches()
            assert listing.record.match_id not in mgr.match_ids()
            read = await mgr.get_match(listing.record.match_id)
            resumed = metrics.value("cardgames_matches_resumed_total", {"game": "japanese_joker"})
            events = await collect(mgr.watch(listing.record.match_id, Principal("spectator", listing.record.match_id), -1))
            return failed, read, resumed, events[-1], await mgr.get_match(listing.record.match_id)
        finally:
            await mgr.close()

    failed, read, resumed, last, final = run(go())
    assert (failed.code, failed.reason) == ("UNAVAILABLE", "STORE_UNAVAILABLE")
    assert read.status == "active" and resumed == 1
    assert last.kind == "match_ended" and final.status == "finished" and final.result["outcome"] == "completed"


def test_a_creation_nobody_could_tell_read_by_its_id_before_its_read_back_is_not_ended_by_it(monkeypatch):
    """The read-back series of a creation nobody could tell stops, writing nothing, once the
    match is held: read by its id meanwhile (the admin's ListMatches lists it), it is a match
    of this server like any other, not one to end as unacknowledged (Seating._abandon_unacknowledged).
    On a virtual clock: the read by its id comes before the series' first read-back."""
    store = CreatesInDoubt()

    async def go():
        loop = asyncio.get_running_loop()
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                await store.create_unanswered(mgr, 1)
                [listing] = await store.list_matches()
                read = await mgr.get_match(listing.record.match_id)
                await advance_to(loop.time() + 10 * seating_module.START_RETRY_FIRST_S)
                return read, dict(mgr._seating.create_checks), await store.list_matches(), logs

    read, checking, [listing], logs = run_virtual(go, monkeypatch)
    assert read.status == "waiting" and checking == {}
    assert listing.record.status == "waiting" and listing.record.result is None
    assert not [e for e in logs if e["event"] == "match_create_abandoned"]


def test_the_read_back_of_a_creation_nobody_could_tell_comes_after_half_a_second_then_twice_as_long(monkeypatch):
    """The series that reads back a creation nobody could tell (as every retry series of
    Seating._retry) reads after START_RETRY_FIRST_S, 0.5 s, then twice as long each time, up
    to the housekeeping interval (docs/operations.md, match_create_found_in_store). On a
    virtual clock: the instants of the reads are exact."""
    class TimedReads(CreatesInDoubt):
        async def load_match(self, match_id):
            self.at.append(asyncio.get_running_loop().time())
            return await super().load_match(match_id)

    store = TimedReads()
    store.at = []

    async def go():
        loop = asyncio.get_running_loop()
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                mgr._sweep_interval = 3.0
                await store.create_unanswered(mgr, 4)
                await advance_to(loop.time() + 20.0)
                return [t - store.at[0] for t in store.at], await store.list_matches(), logs

    reads, [listing], logs = run_virtual(go, monkeypatch)
    assert reads == [0.0, 0.5, 1.5, 3.5, 6.5]
    failing = [e for e in logs if e["event"] == "match_create_check_failed"]
    assert [e["retry_in_s"] for e in failing] == [1.0, 2.0, 3.0]
    assert all(e["match_id"] == listing.record.match_id and e["error"] for e in failing)
    assert listing.record.status == "finished"


def test_an_unacknowledged_creations_end_whose_own_answer_was_lost_is_written_once(monkeypatch):
    """The read-back series of a creation nobody could tell ends the match it finds; when that
    end's write is answered with an error though it landed, the next read-back finds the match
    finished (the series' own write) and writes nothing more: logged match_create_abandoned
    with the status found (Seating._abandon_unacknowledged). On a virtual clock."""
    class EndLandsUnanswered(CreatesInDoubt):
        ends = 0

        async def set_status(self, match_id, status, result=None, ended_at=None, deal_commitments=()):
            self.ends += 1
            await super().set_status(match_id, status, result, ended_at, deal_commitments)
            if self.ends == 1:
                raise StoreError("connection lost after the commit")

    store = EndLandsUnanswered()

    async def go():
        loop = asyncio.get_running_loop()
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                await store.create_unanswered(mgr, 1)
                await advance_to(loop.time() + 10.0)
                return dict(mgr._seating.create_checks), await store.list_matches(), logs

    checking, [listing], logs = run_virtual(go, monkeypatch)
    assert checking == {} and store.ends == 1
    assert listing.record.status == "finished" and listing.record.result["reason"] == "create_unacknowledged"
    assert [e["status"] for e in logs if e["event"] == "match_create_abandoned"] == ["finished"]


def test_an_unacknowledged_match_of_bots_is_ended_with_the_commitment_of_its_first_deal(monkeypatch):
    """A match of bots starts at its creation, its first deal dealt and committed; ended by
    the read-back of a creation nobody could tell, it is stored with that commitment, as
    every ended match is with the commitments of the deals it dealt (its reveal opens them)
    (Seating._abandon_unacknowledged). On a virtual clock."""
    from engine_service.sessions.api import SeatConfig

    from .test_restart import _FirstLegal

    store = CreatesInDoubt()

    async def go():
        loop = asyncio.get_running_loop()
        mgr = MatchManager(config(), store=store, bot_host=_FirstLegal(), metrics=Metrics())
        await mgr.start()
        try:
            await store.create_unanswered(
                mgr, 1, CreateMatchRequest(game="japanese_joker", seats=[SeatConfig("bot", "first")] * 2))
            [created] = await store.list_matches()
            await advance_to(loop.time() + 10.0)
            return created, await store.list_matches()
        finally:
            await mgr.close()

    created, [ended] = run_virtual(go, monkeypatch)
    assert created.record.status == "active" and ended.record.status == "finished"
    assert len(ended.record.deal_commitments) == 1 and ended.record.result["reason"] == "create_unacknowledged"


def test_a_retry_series_logs_its_failures_under_the_sessions_logger(monkeypatch):
    """A retry series' failures (Seating's own log lines) are logged under the logger of every
    session event, ``engine_service.sessions`` (docs/operations.md, Logs: each line's
    ``logger``), as the match's events of the same series are. On a virtual clock."""
    import json

    from .helpers import configured_logging

    store = CreatesInDoubt()

    async def go():
        loop = asyncio.get_running_loop()
        async with manager(store=store) as mgr:
            await store.create_unanswered(mgr, 2)
            await advance_to(loop.time() + 10.0)

    with configured_logging("json", "info") as stream:
        run_virtual(go, monkeypatch)
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(line["event"], line["logger"]) for line in lines if line["event"].startswith("match_create")] == [
        ("match_create_check_failed", "engine_service.sessions"), ("match_create_abandoned", "engine_service.sessions")]


def test_the_writers_store_failures_are_logged_under_the_sessions_logger():
    """The match writer's own lines for a failed write (``store_write_failed``, written by its
    module's logger, not the match's) are under ``engine_service.sessions`` too
    (docs/operations.md, Logs: each line's ``logger``), as the action's ``log_caught_up`` and
    ``action_not_in_store`` of the same match are."""
    import json

    from .helpers import configured_logging

    store = FailingAppends()

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            seat, p, env = await to_act(mgr, match_id, ps)
            store.fail_next = True
            with pytest.raises(SessionError):
                await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "once")
            await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "once")

    with configured_logging("json", "info") as stream:
        run(go())
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    said = [(line["event"], line["logger"]) for line in lines
            if line["event"] in ("store_write_failed", "action_not_in_store")]
    assert said == [("store_write_failed", "engine_service.sessions"), ("action_not_in_store", "engine_service.sessions")]
    assert [(line["operation"], line["error"], line["error_type"]) for line in lines
            if line["event"] == "store_write_failed"] == [("append_action", "the database is unreachable", "StoreError")]


def test_a_read_back_that_fails_once_the_drain_has_begun_ends_its_series_unlogged(monkeypatch):
    """The drain waits for a retry series' attempt under way (an accepted write); when that
    attempt fails, the series ends there (Seating._retry_until_done): no failure logged, no
    next attempt, since nothing is retried once the service drains."""
    class GatedReads(CreatesInDoubt):
        gate: asyncio.Event | None = None
        waiting = False

        async def load_match(self, match_id):
            if self.gate is not None:
                self.waiting = True
                await self.gate.wait()
            return await super().load_match(match_id)

    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.01)
    store = GatedReads()

    async def go():
        with capture_logs() as logs:
            mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
            await mgr.start()
            store.fail_next, store.unreadable = True, 10**6
            with pytest.raises(SessionError):
                await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            store.gate = asyncio.Event()
            await until(lambda: store.waiting)  # an attempt under way
            closing = asyncio.create_task(mgr.close())
            await until(lambda: mgr._draining)
            failed_before = len([e for e in logs if e["event"] == "match_create_check_failed"])
            store.gate.set()
            await closing
            failed = len([e for e in logs if e["event"] == "match_create_check_failed"])
            return failed_before, failed, dict(mgr._seating.create_checks), logs

    failed_before, failed, left, logs = run(go())
    assert failed == failed_before and left == {}
    assert not [e for e in logs if e["event"] == "session_task_failed"]


def test_a_creation_nobody_can_tell_is_checked_until_the_drain_and_resumed_by_a_restart(monkeypatch):
    """The series that reads back a creation nobody could tell stops with the drain (no
    failed task, nothing written); a start before it settled resumes the match from the store
    like any unfinished one (docs/operations.md says so)."""
    from engine_service.sessions import seating as seating_module

    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.01)
    store = CreatesInDoubt()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                mgr._sweep_interval = 0.02
                store.fail_next, store.unreadable = True, 10**6
                with pytest.raises(SessionError):
                    await mgr.create_match(CreateMatchRequest(game="klaberjass"))
                await until(lambda: [e for e in logs if e["event"] == "match_create_check_failed"])
                seating = mgr._seating
            left = dict(seating.create_checks)
            store.unreadable = 0
            async with manager(store=store) as again:
                stored = await store.list_matches()
                resumed = list(again.match_ids())
            return left, stored, resumed, logs

    left, stored, resumed, logs = run(go())
    assert left == {}
    assert not [e for e in logs if e["event"] == "session_task_failed"]
    assert [li.record.status for li in stored] == ["waiting"]
    assert resumed == [stored[0].record.match_id]


@pytest.mark.parametrize("end, last", [("resign", False), ("terminate", False), ("resign", True),
                                       ("terminate", True)])
def test_an_end_after_an_action_whose_answer_was_lost_follows_the_stored_log(end, last):
    """A player's action was written but answered UNAVAILABLE (the memory does not hold it),
    and before anything else is written the opponent resigns, or the admin terminates the
    match. The end used to be written at once: the store then held an action after the end
    the memory had announced (a restart served one more action than the match had ended
    with), and the retry of the action, which the store held, was answered MATCH_NOT_ACTIVE.
    Now the stored log is read first (MatchWriter.settle): the match ends after that action,
    the retry gets its result, and an action that ended the match by the rules (``last``)
    makes the end MATCH_NOT_ACTIVE, the match completed (found by the play fuzz)."""
    store = LosesAcknowledgements()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                match_id, ps = await open_match(mgr, "klaberjass", options={"kl_target_score": 1})
                spectator = Stream(mgr, match_id, Principal("spectator", match_id))
                await until(lambda: spectator.events)
                while True:
                    seat, p, env = await to_act(mgr, match_id, ps)
                    action = env.view["legal"][0]
                    state = mgr.state_of(match_id).clone()
                    state.apply(action, seat)
                    if state.is_over() == last:
                        break
                    await mgr.submit_action(match_id, p, action, env.seq, f"a{env.seq}")
                store.lose_next = True
                with pytest.raises(SessionError) as lost:
                    await mgr.submit_action(match_id, p, action, env.seq, "lost")
                try:
                    if end == "resign":
                        summary = await mgr.leave_match(match_id, ps[1 - seat], resign=True)
                    else:
                        summary = await mgr.terminate_match(match_id, "maintenance")
                except SessionError as exc:
                    summary = exc
                retry = await mgr.submit_action(match_id, p, action, env.seq, "lost")
                await until(lambda: spectator.events[-1].kind == "match_ended")
                m = mgr._matches[match_id]
                stored = await store.load_match(match_id)
                await spectator.close()
                return lost.value, summary, retry, m, stored, spectator.events[1:], env.seq, logs

    lost, summary, retry, m, stored, events, seq, logs = run(go())
    assert lost.reason == "STORE_UNAVAILABLE"
    assert retry.duplicate and retry.seq == seq + 1
    assert m.seq == len(stored.actions) == seq + 1
    assert [(e.kind, e.seq) for e in events if e.kind != "presence" and e.seq > seq] == [
        ("action", seq + 1), ("match_ended", seq + 1)]
    ended = [e for e in logs if e["event"] == "match_ended"]
    assert len(ended) == 1 and ended[0]["seq"] == seq + 1
    if last:
        assert isinstance(summary, SessionError) and summary.reason == "MATCH_NOT_ACTIVE"
        assert m.result["outcome"] == stored.record.result["outcome"] == "completed"
    else:
        assert summary.status == stored.record.status == ("finished" if end == "resign" else "terminated")
        assert stored.record.result["outcome"] == ("resigned" if end == "resign" else "terminated")


async def _retried_after_a_lost_answer(mgr, store, match_id, p, action, expected_seq, client_action_id):
    """Submit ``action``, its append durable but answered with an error (UNAVAILABLE), then
    again with the same client_action_id; return the retry's result."""
    store.lose_next = True
    with pytest.raises(SessionError):
        await mgr.submit_action(match_id, p, action, expected_seq, client_action_id)
    return await mgr.submit_action(match_id, p, action, expected_seq, client_action_id)


async def _play_until(mgr, match_id, ps, stop):
    """Play each seat's first legal action until the next one would lead to a state for which
    ``stop(state)`` holds; return that action's (principal, envelope, action)."""
    while True:
        seat, p, env = await to_act(mgr, match_id, ps)
        action = env.view["legal"][0]
        state = mgr.state_of(match_id).clone()
        state.apply(action, seat)
        if stop(state):
            return p, env, action
        await mgr.submit_action(match_id, p, action, env.seq, f"a{env.seq}")


def test_a_forfeit_after_an_action_whose_answer_was_lost_follows_the_stored_log(monkeypatch):
    """A player's action was written but answered UNAVAILABLE (the log in doubt), then the
    other player's grace window ends (JJK-10.2: a disconnection forfeit) before anything
    reads the log back. The clock's end does not pass through a request's settlement: the
    end itself reads the stored log first (MatchWriter.end), so the match ends after that
    action, as the store has it, and its watchers are told so. Written at once, the end
    would have followed an action the memory never held (the end's seq one behind the
    store's log)."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 3600.0)  # no background read-back
    store = LosesAcknowledgements()

    async def go():
        # no turn timer (a timeout move would read the log back first); grace 5 s x 0.02
        async with manager(config(default_turn_time_s=0, reconnect_grace_s=5, time_scale=0.02),
                           store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in ps]
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: all(slot.present for slot in m.seats) and spectator.events)
            seat, p, env = await to_act(mgr, match_id, ps)
            store.lose_next = True
            with pytest.raises(SessionError):
                await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "lost")
            assert m.log_in_doubt
            await streams[1 - seat].close()  # the other player goes away: its grace runs out
            await until(lambda: m.over)
            await until(lambda: spectator.events[-1].kind == "match_ended")
            for stream in (spectator, streams[seat]):
                await stream.close()
            return seat, m, spectator.events, await store.load_match(match_id)

    seat, m, events, stored = run(go())
    assert m.result["outcome"] == "forfeit" and m.result["forfeited"] == 1 - seat
    assert m.seq == len(stored.actions) == 1 and stored.record.status == "finished"
    assert [(e.kind, e.seq) for e in events[-2:]] == [("action", 1), ("match_ended", 1)]


def test_an_action_found_in_the_store_is_published_as_it_was_applied():
    """The action that scores a deal was written but answered UNAVAILABLE; its retry finds it
    in the store (the writer's catch-up) and publishes it. Watchers used to get it without
    ``deal_scored`` (which a live action and a resumed stream's replay carry), so that a
    client following its stream never saw the deal scored (found by the play fuzz)."""
    store = LosesAcknowledgements()

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                match_id, ps = await open_match(mgr, "klaberjass")
                spectator = Stream(mgr, match_id, Principal("spectator", match_id))
                await until(lambda: spectator.events)
                p, env, action = await _play_until(mgr, match_id, ps, lambda state: state.deal_results())
                retry = await _retried_after_a_lost_answer(mgr, store, match_id, p, action, env.seq, "scores")
                await until(lambda: spectator.actions() and spectator.actions()[-1].seq == retry.seq)
                replayed = await collect(mgr.watch(match_id, Principal("spectator", match_id), retry.seq - 1),
                                         until=lambda e: e.kind == "action")
                await spectator.close()
                return retry, spectator.actions()[-1], replayed[-1], logs

    retry, live, replayed, logs = run(go())
    assert retry.duplicate
    assert live.seq == replayed.seq == retry.seq
    assert live.details == replayed.details == {"deal_scored": 0}
    assert [e["seq"] for e in logs if e["event"] == "deal_scored"] == [retry.seq]


def test_an_action_in_doubt_while_the_last_series_ends_gets_a_series_of_its_own(monkeypatch):
    """An action's append answered with an error leaves the log in doubt, and a series reads
    it back in the background (Seating.settle_end_soon). A second such append, by the request
    that waited for the match's lock behind the series' read-back, came after the read-back
    but before the series had ended: it found the series still registered and started none,
    so that the match stayed an action behind the store, its views stale, until something
    else was written to it (found looking into a play fuzz failure). The series now ends
    under the match's lock, so the next doubt starts a new one."""
    from engine_service.sessions import seating as seating_module

    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.01)

    class SlowReadBack(LosesAcknowledgements):
        hold: asyncio.Event | None = None
        reading = False

        async def load_match(self, match_id):
            if self.hold is not None:
                self.reading = True
                await self.hold.wait()
                self.hold = None
            return await super().load_match(match_id)

    store = SlowReadBack()

    async def go():
        async with manager(config(default_turn_time_s=0), store=store) as mgr:  # no timer writes
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            seat, p, env = await to_act(mgr, match_id, ps)
            first = env.view["legal"][0]
            after = m.state.clone()
            after.apply(first, seat)
            second_seat = after.to_act()
            second = after.view(second_seat)["legal"][0]
            store.lose_next, store.hold = True, asyncio.Event()
            with pytest.raises(SessionError):  # written, answered with an error: in doubt
                await mgr.submit_action(match_id, p, first, env.seq, "first")
            await until(lambda: store.reading)  # the series reads the log back, under the lock
            store.lose_next = True  # the next request's append: written, answered with an error
            call = asyncio.ensure_future(mgr.submit_action(match_id, ps[second_seat], second,
                                                           env.seq + 1, "second"))
            await asyncio.sleep(0.01)  # it waits for the lock
            store.hold.set()
            with pytest.raises(SessionError):
                await call
            await until(lambda: m.seq == 2 and not mgr._seating.end_settlements)
            return m.seq, len((await store.load_match(match_id)).actions)

    assert run(go()) == (2, 2)


def test_an_ended_match_is_kept_in_memory_until_its_seat_is_written_again(monkeypatch):
    """A reissued token's seat write is durable but answered with an error, and the read-back
    fails too: the seat's row is to be written again as the memory holds it (the player's
    token), but the store still refuses seat writes when the match ends (terminated). The
    sweeper used to evict the ended match all the same, which ended the series that was to
    write the seat: the store kept the token nobody had been given, and the player's own was
    refused once the match was read back (found by the play fuzz). An ended match stays in
    memory while a series of it is under way."""
    from engine_service.sessions import seating as seating_module

    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.01)

    class SeatWritesFail(LosesSeatAnswers):
        failing = False

        async def save_seat(self, match_id, seat):
            if self.failing:
                raise StoreError("the database is unreachable")
            await super().save_seat(match_id, seat)

    store = SeatWritesFail()

    async def go():
        async with manager(config(finished_retention_s=0.02), store=store) as mgr:  # evicted at once
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            joined = await mgr.join_match(s.match_id, 0, "a")
            await mgr.join_match(s.match_id, 1, "b")
            store.lose, store.unreadable = True, 1
            with pytest.raises(SessionError):
                await mgr.reissue_seat_token(s.match_id, 0)
            store.failing = True
            await mgr.terminate_match(s.match_id, "test")
            await asyncio.sleep(0.2)  # past the retention: the sweeper looks at it many times
            store.failing = False
            await until(lambda: not mgr._seating.seat_resyncs)
            await until(lambda: s.match_id not in mgr.match_ids())  # evicted once written
            await mgr.recall(s.match_id)
            return mgr.authenticate(s.match_id, joined.token).seat, await store.load_match(s.match_id)

    seat, stored = run(go())
    assert seat == 0
    assert stored.record.status == "terminated"


class FailsCompletionStatus(MemoryStore):
    """A store whose status writes of completed matches fail ``failures`` times."""

    failures = 2

    async def set_status(self, match_id, status, result=None, ended_at=None, deal_commitments=()):
        if result and result.get("outcome") == "completed" and self.failures:
            self.failures -= 1
            raise StoreError("the database is unreachable")
        return await super().set_status(match_id, status, result, ended_at, deal_commitments)


def test_a_completed_matchs_failed_status_write_is_written_again(monkeypatch):
    """The last action is durable, the status write after it fails: the match is over in
    memory at once, and its status is written again until the store has it (it stayed active
    in the store until the match was read back: listed active, never pruned); the match stays
    in memory meanwhile (evict_finished skips it)."""
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.05)
    store = FailsCompletionStatus()

    async def go():
        async with manager(config(finished_retention_s=0), store=store) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker")
            with capture_logs() as logs:
                await play_random(mgr, match_id, ps, random.Random(3))
                live = (await mgr.get_match(match_id)).status
                at_once = (await store.load_match(match_id)).record.status
                evicted_while_due = mgr.evict_finished()
                await until(lambda: not mgr._seating.status_writes, timeout=30)
            stored = (await store.load_match(match_id)).record
            m = mgr._matches[match_id]
            return live, at_once, evicted_while_due, stored, (m.result, m.ended_at, m.deal_commitments()), logs

    live, at_once, evicted_while_due, stored, (result, ended_at, commitments), logs = run(go())
    names = [e["event"] for e in logs]
    [failed] = [e for e in logs if e["event"] == "match_status_write_failed"]
    assert failed["match_id"] == stored.match_id and failed["error"] and failed["retry_in_s"] > 0
    assert [e["status"] for e in logs if e["event"] == "match_status_written"] == ["finished"]
    assert live == "finished" and at_once == "active" and evicted_while_due == 0
    assert stored.status == "finished" and stored.result == result and result["outcome"] == "completed"
    # the end as the memory has it: its time and every deal's commitment (the reveal opens them)
    assert stored.ended_at == ended_at and stored.deal_commitments == commitments and commitments
    assert names.count("store_status_failed") == 1 and names.count("match_status_write_failed") == 1
    assert [(e["match_id"], e["error"]) for e in logs if e["event"] == "store_status_failed"] \
        == [(stored.match_id, "the database is unreachable")]
    assert names.count("match_status_written") == 1


class FailingWrites(MemoryStore):
    """A store whose next ``fail_appends`` action appends and ``fail_ends`` status writes fail
    before anything is written."""

    fail_appends = 0
    fail_ends = 0

    async def append_action(self, match_id, action, decks=(), end=None):
        if self.fail_appends:
            self.fail_appends -= 1
            raise StoreError("the database is unreachable")
        return await super().append_action(match_id, action, decks, end)

    async def set_status(self, match_id, status, result=None, ended_at=None, deal_commitments=()):
        if self.fail_ends:
            self.fail_ends -= 1
            raise StoreError("the database is unreachable")
        return await super().set_status(match_id, status, result, ended_at, deal_commitments)


def test_a_timeout_and_a_grace_expiry_tried_again_after_store_failures_are_counted_once(monkeypatch):
    """``turn_timeouts`` counts the decisions whose deadline expired and ``grace_expired`` the
    disconnections that outlasted their grace: a move or an end the store refused is tried
    again (the same timeout, the same window), and each attempt used to be counted as another
    timeout, another expiry (a store outage of a minute: sixty timeouts for one decision)."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.01)
    store = FailingWrites()

    async def go():
        async with manager(config(time_scale=0.01, reconnect_grace_s=20), store=store) as mgr:  # 0.3 s, 0.2 s
            match_id, ps = await open_match(mgr, "japanese_joker")
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in ps]
            await until(lambda: all(s.present for s in m.seats))
            store.fail_appends = 3
            await until(lambda: m.seq == 1)  # the first decision's auto-move, at its fourth try
            timeouts = mgr.metrics.value("cardgames_turn_timeouts_total", {"game": "japanese_joker"})
            store.fail_ends = 3
            await streams[0].close()  # seat 0 goes away: it forfeits at the fourth try
            await until(lambda: m.over)
            await streams[1].close()
            return timeouts, m.result, mgr.metrics

    with capture_logs() as logs:
        timeouts, result, metrics = run(go())
    assert timeouts == 1
    assert result["outcome"] == "forfeit" and result["forfeited"] == 0
    # each refused attempt is said, the end's naming the seat whose grace ran out
    assert [e["log_level"] for e in logs if e["event"] == "timeout_move_failed"] == ["error"] * 3
    assert [(e["log_level"], e["seat"]) for e in logs if e["event"] == "grace_policy_failed"] == [("error", 0)] * 3
    assert metrics.value("cardgames_grace_expired_total", {"game": "japanese_joker", "policy": "forfeit"}) == 1


class GatedFailingStart(FailingStart):
    """:class:`FailingStart` whose next start first waits for ``gate`` (``waiting``: it does)."""

    gate: asyncio.Event | None = None
    waiting = False

    async def start_match(self, match_id, seats=(), decks=()):
        if self.gate is not None:
            gate, self.gate = self.gate, None
            self.waiting = True
            await gate.wait()
        return await super().start_match(match_id, seats, decks)


async def _expiry_meets_a_join_in_doubt(store: GatedFailingStart, *, ack_lost: bool, ended_meanwhile: bool):
    """A table past its waiting timeout with one seat open: a join takes it and holds the
    match's lock while its start is gated, the sweeper's pass (an expiry: the seat was open)
    waits for the lock; the start fails (written if ``ack_lost``) and its read-back too.
    ``ended_meanwhile``: the store holds the match terminated before the start is tried (an
    end judged not to have happened, then committed). Returns the join's outcome, the match
    and the store."""
    async with manager(config(waiting_timeout_s=3600.0), store=store) as mgr:
        s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
        await mgr.join_match(s.match_id, 0, "a")
        m = mgr._matches[s.match_id]
        m.created_at -= 2 * 3600.0  # past the waiting timeout
        store.gate = gate = asyncio.Event()
        store.fail, store.ack_lost, store.unreadable = True, ack_lost, 1  # its read-back fails too
        join = asyncio.ensure_future(mgr.join_match(s.match_id, 1, "b"))
        await until(lambda: store.waiting)  # the join holds the match's lock
        sweep = asyncio.ensure_future(mgr._housekeeping.sweep_once())  # the seat is open: expiry
        for _ in range(20):
            await asyncio.sleep(0)  # the pass waits for the match's lock
        if ended_meanwhile:
            await store.set_status(s.match_id, "terminated", {"outcome": "terminated", "winners": [],
                                                              "reason": "closing"}, 1.0)
        gate.set()
        joined = (await asyncio.gather(join, return_exceptions=True))[0]
        await sweep
        return joined, m, (await store.load_match(s.match_id)).record.status


def test_a_waiting_timeout_that_meets_a_start_in_doubt_settles_the_start_instead_of_ending():
    """The sweeper found a table past its waiting timeout with a seat open, and waited for the
    match's lock while a join took that seat: the join's start failed and nobody could tell
    whether the store held it (every seat taken in memory, still waiting). The expiry then
    ended the match ``abandoned`` without settling the start first (as TerminateMatch and
    LeaveMatch do): the store held it started and dealt under an end that said nobody came.
    Now the start is settled first and the match, started in the store, plays."""
    joined, m, stored = run(_expiry_meets_a_join_in_doubt(GatedFailingStart(), ack_lost=True,
                                                          ended_meanwhile=False))
    assert isinstance(joined, SessionError) and joined.reason == "STORE_UNAVAILABLE"
    assert (m.status, m.result, stored) == ("active", None, "active")


def test_a_waiting_timeout_whose_start_finds_the_match_ended_logs_no_error():
    """As above, but the store holds the match ended by then (an end judged not to have
    happened, then committed): the expiry's start follows that end and logs
    ``match_start_found_ended`` at info (by ``sweeper``). It logged ``waiting_expiry_failed``
    at error level, a page for a table that had been closed."""
    with capture_logs() as logs:
        joined, m, stored = run(_expiry_meets_a_join_in_doubt(GatedFailingStart(), ack_lost=False,
                                                              ended_meanwhile=True))
    assert isinstance(joined, SessionError) and joined.reason == "STORE_UNAVAILABLE"
    assert m.status == stored == "terminated"
    found = [(e["log_level"], e["by"]) for e in logs if e["event"] == "match_start_found_ended"]
    assert found == [("info", "sweeper")]
    assert not [e for e in logs if e["event"] in ("waiting_expiry_failed", "match_start_failed")]


class BrokenAppends(MemoryStore):
    """A store whose appends fail while ``broken``, recording when each was tried."""

    broken = False

    def __init__(self) -> None:
        super().__init__()
        self.attempts: list[float] = []

    async def append_action(self, match_id, action, decks=(), end=None):
        if self.broken:
            self.attempts.append(time.monotonic())
            raise StoreError("disk I/O error")
        return await super().append_action(match_id, action, decks, end)


def test_a_bot_move_the_store_refuses_is_tried_again_once_per_period(monkeypatch):
    """A move of a seat played for its absent player, while the store refuses every append: it
    is tried again after RETRY_AFTER_STORE_FAILURE_S, and its log is read back (the settle
    series, every START_RETRY_FIRST_S here, which arms the move too). Each failure used to
    add one more retry timer beside those already pending, which never merged: one match
    with a deleted database file went from 2 failing writes a second to 30 in seven
    minutes (cardgames_store_errors_total, three error lines each). One timer per match."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.2)
    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 0.1)
    store = BrokenAppends()

    async def go():
        async with manager(config(time_scale=0.01, reconnect_grace_s=10), store=store) as mgr:
            match_id, _ = await open_match(mgr, "georgian_joker")  # nobody connects: taken over
            store.broken = True
            await until(lambda: store.attempts, timeout=30)
            await asyncio.sleep(2)
            return mgr._matches[match_id].seq

    assert run(go()) == 0
    first = store.attempts[0]
    late = [t for t in store.attempts if first + 1.0 <= t < first + 2.0]
    # a retry timer (5 a second) and a read-back (at most 10 a second), each arming one move
    assert len(late) <= 1.0 * (5 + 10) + 5, len(late)


class FailingAbsences(MemoryStore):
    """A store whose absence writes fail while ``broken`` (the database down), counted; so do
    the heartbeat's probes (``pings``: whether each was refused)."""

    broken = False
    refused = 0
    failure: type[Exception] = StoreError  # what a refused absence write raises

    def __init__(self):
        super().__init__()
        self.pings: list[bool] = []

    async def save_absence(self, match_id, seat, away_since, taken_over=False, away_seen=None):
        if self.broken:
            self.refused += 1
            raise self.failure("the database is unreachable")
        return await super().save_absence(match_id, seat, away_since, taken_over, away_seen=away_seen)

    async def ping(self):
        self.pings.append(self.broken)
        if self.broken:
            raise StoreError("the database is unreachable")
        await super().ping()


def _an_absence_outage(monkeypatch, summary_every_s: float) -> FailingAbsences:
    """A store refusing every absence write, tried again every 20 ms, an outage summed up
    every ``summary_every_s``."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.02)
    monkeypatch.setattr(clock, "ABSENCE_OUTAGE_SUMMARY_S", summary_every_s)
    store = FailingAbsences()
    store.broken = True
    return store


def test_an_outage_summary_names_the_latest_error_type(monkeypatch):
    """The error of an absence-write outage can change while it lasts (the database refusing,
    then the connection timing out): each absence_writes_still_failing summary names the type
    of the latest failure, not the first one's (said once already in absence_writes_failing)."""
    store = _an_absence_outage(monkeypatch, summary_every_s=0.2)

    async def go():
        async with manager(config(time_scale=1000.0), store=store) as mgr:
            with capture_logs() as logs:
                match_id, _ = await open_match(mgr, "japanese_joker")  # both seats away
                summaries = lambda: [e for e in logs if e["event"] == "absence_writes_still_failing"]  # noqa: E731
                await until(lambda: len(summaries()) >= 1, timeout=30)
                store.failure = TimeoutError
                seen = len(summaries())  # a summary is said at a failure: from now on, a TimeoutError
                await until(lambda: len(summaries()) > seen, timeout=30)
                store.broken = False
                slots = mgr._matches[match_id].seats
                await until(lambda: all(s.absence_task is None for s in slots), timeout=30)
            return logs

    logs = run(go())
    failing = [e["error_type"] for e in logs if e["event"] == "absence_writes_failing"]
    types = [e["error_type"] for e in logs if e["event"] == "absence_writes_still_failing"]
    assert failing == ["StoreError"]
    assert types[0] == "StoreError" and types[-1] == "TimeoutError", types
    assert types == sorted(types, key=lambda t: t == "TimeoutError"), types  # never back to the first


def test_absence_writes_during_an_outage_say_it_once_then_a_summary_then_its_end(monkeypatch):
    """During a database outage each away seat's absence write is tried again every second,
    and each failure was a warning (absence_write_failed): one line per away seat per second
    until the database came back. The outage is now said once (absence_writes_failing, with
    the error type), then at most every ABSENCE_OUTAGE_SUMMARY_S with how many writes are
    still pending (absence_writes_still_failing), and once at info when they land again
    (absence_writes_recovered); the writes are still tried again until they land."""
    store = _an_absence_outage(monkeypatch, summary_every_s=0.3)

    async def go():
        async with manager(config(time_scale=1000.0), store=store) as mgr:
            with capture_logs() as logs:
                ids = [(await open_match(mgr, "japanese_joker"))[0] for _ in range(3)]  # 6 seats away
                await until(lambda: store.refused >= 6 * 20, timeout=30)
                # two summaries at least (one every 0.3 s at most)
                await until(lambda: sum(e["event"] == "absence_writes_still_failing" for e in logs) >= 2)
                store.broken = False
                slots = [slot for i in ids for slot in mgr._matches[i].seats]
                await until(lambda: all(s.absence_task is None for s in slots), timeout=30)
            stored = [(s.absence_stored, s.away_since) for s in slots]
            return logs, stored, [await store.load_match(i) for i in ids]

    logs, stored, loaded = run(go())
    assert all(record == (away, False) and away is not None for record, away in stored), stored
    assert all(seat.away_since is not None for lm in loaded for seat in lm.record.seats)
    said = [e for e in logs if e["event"].startswith("absence_write")]
    assert not [e for e in said if e["event"] == "absence_write_failed"]
    failing = [e for e in said if e["event"] == "absence_writes_failing"]
    assert [(e["log_level"], e["error_type"], e["error"]) for e in failing] == [
        ("warning", "StoreError", "the database is unreachable")]
    assert failing[0]["match_id"] and failing[0]["seat"] in (0, 1)
    summaries = [e for e in said if e["event"] == "absence_writes_still_failing"]
    [recovered] = [e for e in said if e["event"] == "absence_writes_recovered"]
    # every 0.3 s at most, not one per failure (hundreds of them)
    assert 2 <= len(summaries) <= recovered["outage_s"] / 0.3 + 1, (summaries, recovered)
    assert all(e["log_level"] == "warning" and e["pending"] == 6 and e["failed_writes"] > 0
               and e["error_type"] == "StoreError" for e in summaries), summaries
    assert sum(e["failed_writes"] for e in summaries) < store.refused
    assert [e["outage_s"] for e in summaries] == sorted(e["outage_s"] for e in summaries)
    assert recovered["log_level"] == "info" and recovered["landed"] >= 6
    assert recovered["failed_writes"] == store.refused
    assert said[-1] is recovered and said[0] is failing[0]


def _outage_across_two_matches(quiet_s: float):
    """A match whose seats' absence writes fail is terminated during the outage (its writes end
    unwritten); ``quiet_s`` later a second match's writes fail too, then the store takes them.
    Returns the absence_write* events said up to the first match's end, all of them, and the
    seconds from the second match's opening to the end (the loop's clock, as ``outage_s``). No
    heartbeat beats meanwhile (it would ask the database whether it is back: the tests below)."""
    store = FailingAbsences()
    store.broken = True

    async def go():
        async with manager(config(time_scale=1000.0, absence_heartbeat_s=3600.0), store=store) as mgr:
            with capture_logs() as logs:
                first, _ = await open_match(mgr, "japanese_joker")
                await until(lambda: store.refused >= 4, timeout=30)
                slots = mgr._matches[first].seats
                await mgr.terminate_match(first, "ended during the outage")
                await until(lambda: all(s.absence_task is None for s in slots), timeout=30)
                ended = [e["event"] for e in logs if e["event"].startswith("absence_writes")]
                await asyncio.sleep(quiet_s)
                opened = asyncio.get_running_loop().time()
                second, _ = await open_match(mgr, "japanese_joker")
                refused = store.refused
                await until(lambda: store.refused >= refused + 4, timeout=30)
                store.broken = False
                slots = mgr._matches[second].seats
                await until(lambda: all(s.absence_task is None for s in slots), timeout=30)
                since_second = asyncio.get_running_loop().time() - opened
            return ended, [e for e in logs if e["event"].startswith("absence_write")], since_second

    return run(go())


def test_an_outage_whose_pending_writes_end_unwritten_stays_open_until_a_write_lands(monkeypatch):
    """The only seat being tried again left with its match (terminated): nothing landed, so
    the outage is not said to be over; the next failure is not a new outage either, and the
    next write that lands ends it."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.02)
    ended, said, _ = _outage_across_two_matches(0.0)
    assert ended == ["absence_writes_failing"]
    assert [e["event"] for e in said] == ["absence_writes_failing", "absence_writes_recovered"]


def test_an_outage_left_open_and_quiet_for_a_while_is_not_the_next_failures_outage(monkeypatch):
    """As above, but nothing is tried again for longer than ABSENCE_OUTAGE_SUMMARY_S before
    the next failure: that failure begins a new outage and is said as one, with its error
    (absence_writes_failing). It was counted into the old, quiet one: its first line was never
    said, and a summary came at once with the quiet time as outage_s."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.02)
    monkeypatch.setattr(clock, "ABSENCE_OUTAGE_SUMMARY_S", 0.3)
    _, said, since_second = _outage_across_two_matches(1.0)  # nothing tried again for longer than a summary period
    # (a summary of the second outage, should it last 0.3 s on a loaded machine, aside)
    assert [e["event"] for e in said if e["event"] != "absence_writes_still_failing"] == [
        "absence_writes_failing", "absence_writes_failing", "absence_writes_recovered"], said
    second = [e for e in said if e["event"] == "absence_writes_failing"][1]
    assert second["error"] == "the database is unreachable", said
    # the quiet second is no part of the second outage: it began after the second match opened
    # (outage_s is rounded to 0.1 s), however long a loaded machine made it
    assert all(e["outage_s"] <= since_second + 0.05 for e in said if "outage_s" in e), (said, since_second)


def _quiet_outage(store, *, then=None):
    """The absence writes of a match fail, and the match is terminated during the outage: its
    writes end unwritten, none is pending, the outage is open and quiet. ``then(mgr)`` runs
    once a few of the heartbeat's probes have been refused, before the database comes back.
    Returns the absence_write* events, the loop time of the first refused write, of the
    database's return and of the last event said."""
    store.broken = True
    failures = []
    save_absence = store.save_absence

    async def failing(*args, **kwargs):
        if store.broken and not failures:
            failures.append(asyncio.get_running_loop().time())
        return await save_absence(*args, **kwargs)

    store.save_absence = failing

    async def go():
        loop = asyncio.get_running_loop()
        async with manager(config(time_scale=1000.0, absence_heartbeat_s=0.05), store=store) as mgr:
            with capture_logs() as logs:
                first, _ = await open_match(mgr, "japanese_joker")
                await until(lambda: store.refused >= 4, timeout=30)
                slots = mgr._matches[first].seats
                await mgr.terminate_match(first, "ended during the outage")
                await until(lambda: all(s.absence_task is None for s in slots), timeout=30)
                await until(lambda: sum(store.pings) >= 8, timeout=30)  # 0.4 s of refused probes
                if then is not None:
                    await then(mgr)
                store.broken = False
                up = loop.time()
                await until(lambda: any(e["event"] == "absence_writes_recovered" for e in logs), timeout=30)
                said = loop.time()
            return [e for e in logs if e["event"].startswith("absence_write")], failures[0], up, said

    return run(go())


def test_a_quiet_absence_write_outage_is_said_over_when_the_database_answers(monkeypatch):
    """An outage whose writes all ended unwritten stayed open until some absence write landed
    (perhaps hours later, its outage_s counting the quiet time), or was dropped unsaid by a
    failure a minute later. The heartbeat now asks the database while such an outage is open:
    refused, it stays open; answered, absence_writes_recovered is said then (landed 0), its
    outage_s ending at the database's return."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.02)
    store = FailingAbsences()
    said, start, up, end = _quiet_outage(store)
    assert [e["event"] for e in said] == ["absence_writes_failing", "absence_writes_recovered"], said
    recovered = said[-1]
    assert recovered["landed"] == 0 and recovered["failed_writes"] == store.refused
    assert up - start - 0.1 <= recovered["outage_s"] <= end - start + 0.1, (recovered, up - start, end - start)
    asked = len(store.pings)

    # and nothing is asked of a database with no outage open (no away seat: nothing written)
    async def quiet():
        async with manager(config(time_scale=1000.0, absence_heartbeat_s=0.02), store=store):
            await asyncio.sleep(0.3)
    run(quiet())
    assert len(store.pings) == asked


def test_a_quiet_outage_whose_database_stays_down_is_the_next_failures_outage(monkeypatch):
    """The database refuses the heartbeat's probes for longer than ABSENCE_OUTAGE_SUMMARY_S
    while the outage is quiet: a write that fails after it is the same outage, not a new one
    (a second absence_writes_failing, the first outage never said over)."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.02)
    monkeypatch.setattr(clock, "ABSENCE_OUTAGE_SUMMARY_S", 0.3)
    store = FailingAbsences()

    async def second_match(mgr):
        refused = store.refused
        await open_match(mgr, "japanese_joker")
        await until(lambda: store.refused >= refused + 4, timeout=30)

    said, _, _, _ = _quiet_outage(store, then=second_match)
    assert [e["event"] for e in said if e["event"] != "absence_writes_still_failing"] == [
        "absence_writes_failing", "absence_writes_recovered"], said
    assert said[-1]["landed"] == 2  # the second match's two seats
    assert said[-1]["outage_s"] >= 0.3  # the refused probes' time is part of it


def test_an_action_found_in_the_store_is_published_with_the_clock_it_started():
    """An action written but answered UNAVAILABLE is found by the retry (the writer's
    catch-up) and published then. Its event used to carry the deadline of the decision it
    answered, a decision already made (the clock was re-armed only after the events of the
    caught-up actions): a client took it for the next player's time, which was a whole new
    turn (JJK-10.3), until the next heartbeat. It carries the clock of the decision it hands
    on, as the event of an action applied at once does."""
    store = LosesAcknowledgements()

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", turn_time_s=60)
            m = mgr._matches[match_id]
            players = [Stream(mgr, match_id, p) for p in ps]  # present: the clock runs (JJK-10.2)
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: spectator.events and all(s.events for s in players))
            seat, p, env = await to_act(mgr, match_id, ps)
            answered = m.deadline
            assert answered is not None and env.deadline == answered
            retry = await _retried_after_a_lost_answer(mgr, store, match_id, p, env.view["legal"][0],
                                                       env.seq, "lost")
            assert retry.duplicate and m.seq == retry.seq
            await until(lambda: spectator.actions() and spectator.actions()[-1].seq == retry.seq)
            event, deadline, timer_key = spectator.actions()[-1], m.deadline, m.timer_key
            for stream in (spectator, *players):
                await stream.close()
            return answered, deadline, timer_key, event

    answered, deadline, timer_key, event = run(go())
    assert timer_key[0] == event.seq and deadline is not None and deadline != answered
    assert event.view.deadline == deadline, "the caught-up action's event shows the clock it started"


def test_the_last_action_found_in_the_store_is_published_with_the_end_it_made():
    """The action that completes the match was written but answered UNAVAILABLE; the retry
    finds it (the writer's catch-up), and its event shows the match as that action left it,
    over, as the event of the same action applied at once does (MatchWriter.apply ends the
    match before publishing it). It used to show the match still active, its clock that of
    the decision it answered, and only the ``match_ended`` that followed said otherwise."""
    store = LosesAcknowledgements()

    async def go():
        async with manager(store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            await until(lambda: spectator.events)
            p, env, action = await _play_until(mgr, match_id, ps, lambda state: state.is_over())
            retry = await _retried_after_a_lost_answer(mgr, store, match_id, p, action, env.seq, "last")
            await until(lambda: spectator.events[-1].kind == "match_ended")
            await spectator.close()
            return retry, spectator.events

    with capture_logs() as logs:
        retry, events = run(go())
    assert retry.duplicate and retry.view.status == "finished"
    last, ended = events[-2:]
    assert last.kind == "action" and last.seq == retry.seq and ended.kind == "match_ended"
    assert last.view.status == "finished" and last.view.deadline is None
    # logged as a match played to its end (docs/operations.md, match_ended)
    assert [(e["outcome"], e["seq"]) for e in logs if e["event"] == "match_ended"] == [("completed", retry.seq)]


def test_an_action_found_in_the_store_that_dealt_past_the_deal_limit_ends_the_match():
    """``max_match_deals`` ends a match at once when an action reaches it (the
    writer, MatchWriter.end_at_deal_limit; and a match read back past it when it is
    resumed). The action that does was written but answered UNAVAILABLE; its retry finds it
    in the store (the writer's catch-up), which folded it in and armed the next decision
    instead: the match went on past its limit, and the next action, a move of the deal
    past the limit, was accepted before the match ended. KL-3.5: four passes throw a deal
    in; past the limit the next one is not dealt."""
    store = LosesAcknowledgements()

    async def go():
        async with manager(config(max_match_deals=1), store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            for n in range(4):
                seat, p, env = await to_act(mgr, match_id, ps)
                assert "pass" in env.view["legal"]
                if n < 3:
                    await mgr.submit_action(match_id, p, "pass", env.seq, f"p{env.seq}")
            # the pass that deals the second deal: written, not answered
            retry = await _retried_after_a_lost_answer(mgr, store, match_id, p, "pass", env.seq, "over the limit")
            summary = await mgr.get_match(match_id)
            stored = await store.load_match(match_id)
            return retry, summary, stored

    retry, summary, stored = run(go())
    assert retry.duplicate and retry.seq == 4
    assert summary.status == "terminated" and summary.seq == 4, summary
    assert (summary.result["outcome"], summary.result["reason"]) == ("terminated", "deal_limit")
    assert stored.record.status == "terminated" and len(stored.actions) == 4


def test_an_auto_move_found_in_the_store_is_counted_and_logged_as_one(monkeypatch):
    """The turn deadline passed and the auto-move was written but answered with an error;
    the retry of that timeout finds it in the store (the writer's catch-up). It was counted
    among the accepted actions but not among the auto-moves (``auto_moves{reason}``), nor
    logged ``auto_move``, as the same move answered at once is: a store that loses answers
    made the dashboard's auto-moves (and the timeouts they answer) disagree."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.05)
    store = LosesAcknowledgements()
    metrics = Metrics()

    async def go():
        with capture_logs() as logs:
            async with manager(config(time_scale=0.01), store=store, metrics=metrics) as mgr:  # 30 s -> 0.3 s
                match_id, ps = await open_match(mgr, "klaberjass")
                m = mgr._matches[match_id]
                streams = [Stream(mgr, match_id, p) for p in ps]  # present: the clock runs (JJK-10.2)
                await until(lambda: all(s.present for s in m.seats))
                store.lose_next = True
                await until(lambda: m.seq >= 1 and not m.in_doubt, timeout=30)
                for s in streams:  # both away: no turn clock runs any more (JJK-10.2)
                    await s.close()
                return list(m.actions), logs

    actions, logs = run(go())
    g = {"game": "klaberjass"}
    assert (actions[0].by, actions[0].reason) == ("auto", "timeout")
    assert [e["event"] for e in logs if e["event"] in ("store_write_failed", "log_caught_up")] \
        == ["store_write_failed", "log_caught_up"]  # written, answered with an error, found
    assert not [e for e in logs if e["event"] == "action_not_in_store"]
    # the first attempt failed (its answer lost); the retry that finds the move in the store
    # is answered as stale, no failure of its own, and plays no move of the old decision on
    # the new state (which the rules would refuse: the other seat is to act)
    assert [e["error_type"] for e in logs if e["event"] == "timeout_move_failed"] == ["Unavailable"]
    # the retry read the log back before writing (MatchWriter.apply settles it first): no
    # append of a seq the store holds, refused as another writer's
    assert not [e for e in logs if e["event"] == "log_conflict"]
    timed_out = [a.seq for a in actions if (a.by, a.reason) == ("auto", "timeout")]
    assert len(timed_out) == len(actions)  # (another deadline may have passed since: played at once)
    assert metrics.value("cardgames_turn_timeouts_total", g) == len(timed_out)
    assert metrics.value("cardgames_actions_total", {**g, "by": "auto", "result": "accepted"}) == len(timed_out)
    assert metrics.value("cardgames_auto_moves_total", {**g, "reason": "timeout"}) == len(timed_out)
    assert [e["seq"] for e in logs if e["event"] == "auto_move"] == timed_out


class RefusesStatusWrites:
    """Mixed into a MemoryStore: every status write (``set_status``) is refused, nothing written."""

    async def set_status(self, match_id, status, result=None, ended_at=None, deal_commitments=()):
        raise StoreError("the database is unreachable")


class FailingAppendsNoStatus(RefusesStatusWrites, FailingAppends):
    pass


class LosesAcknowledgementsNoStatus(RefusesStatusWrites, LosesAcknowledgements):
    pass


@pytest.mark.parametrize("lost", ["before_the_commit", "after_the_commit"])
def test_a_deal_limit_end_is_written_with_its_action_or_not_at_all(lost):
    """``max_match_deals``: the end is written in the transaction of the action that reaches
    the limit (the log says it only under the limit in force; a second write left a window
    in which a restart with a higher limit played on), never by a status write of its own
    (this store refuses them all). That write failing before its commit: nothing changed,
    the action is UNAVAILABLE, the match waits at the same decision with no deadline lost,
    and the retry ends it. Answered with an error after its commit: the action is found when
    the log is read back and the match ends as the store has it (its end time too: not
    written again). KL-3.5: four passes throw a deal in."""
    store = (FailingAppendsNoStatus if lost == "before_the_commit" else LosesAcknowledgementsNoStatus)()

    async def go():
        async with manager(config(max_match_deals=1, heartbeat_interval_s=60.0), store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass")
            m = mgr._matches[match_id]
            for n in range(4):
                seat, p, env = await to_act(mgr, match_id, ps)
                if n == 3:  # the pass that reaches the limit: its write fails
                    store.fail_next = store.lose_next = True
                    with pytest.raises(SessionError) as failed:
                        await mgr.submit_action(match_id, p, "pass", env.seq, "last")
                    await until(lambda: not m.in_doubt)
                    between = (m.status, m.seq, (await store.load_match(match_id)).record.status)
                    if m.active:
                        await mgr.submit_action(match_id, p, "pass", env.seq, "last")
                else:
                    await mgr.submit_action(match_id, p, "pass", env.seq)
            stored = (await store.load_match(match_id)).record
            return m, failed.value, between, stored

    m, failed, between, stored = run(go())
    assert failed.code == "UNAVAILABLE"
    assert between == (("active", 3, "active") if lost == "before_the_commit" else ("terminated", 4, "terminated"))
    assert (m.status, m.seq, m.deals_dealt, m.result["reason"]) == ("terminated", 4, 1, "deal_limit")
    assert (stored.status, stored.result["reason"]) == ("terminated", "deal_limit")
    if lost == "after_the_commit":
        assert (m.ended_at, m.result) == (stored.ended_at, stored.result)


def test_an_action_found_in_the_store_at_the_deal_limit_does_not_deal_the_deck_the_admin_gave_ahead():
    """``max_match_deals=1``, the admin having given the decks of the first two deals: the
    action that reaches the limit is written with its end but answered with an error, and the
    read-back finds it (the writer's catch-up). The catch-up dealt the deck given ahead for the
    deal past the limit as it folded the action in: the action's event showed each seat its
    hand of a deal never dealt (and everyone its turn-up and commitment), and so did the match
    after its end (KL-2.10, KL-3.5: four passes throw the first deal in)."""
    from engine_service.rules.cards import card_code
    from engine_service.rules.registry import get_game

    rng = random.Random(7)
    pack = list(get_game("klaberjass").pack)
    decks = [[card_code(c) for c in rng.sample(pack, len(pack))] for _ in range(2)]
    store = LosesAcknowledgements()

    async def go():
        async with manager(config(max_match_deals=1, heartbeat_interval_s=60.0), store=store) as mgr:
            match_id, ps = await open_match(mgr, "klaberjass", decks=decks)
            m = mgr._matches[match_id]
            streams = [Stream(mgr, match_id, p) for p in [*ps, Principal("spectator", match_id)]]
            for n in range(4):
                seat, p, env = await to_act(mgr, match_id, ps)
                store.lose_next = n == 3  # the pass that reaches the limit: its answer is lost
                with pytest.raises(SessionError) if n == 3 else contextlib.nullcontext():
                    await mgr.submit_action(match_id, p, "pass", env.seq, f"p{n}")
            await until(lambda: not m.in_doubt and m.over)
            await until(lambda: all(any(e.kind == "match_ended" for e in s.events) for s in streams))
            views = [await mgr.get_view(match_id, p) for p in [*ps, Principal("spectator", match_id)]]
            for s in streams:
                await s.close()
            return m, streams, views, await mgr.get_match(match_id), await mgr.reveal_deals(match_id, ps[0])

    m, streams, views, summary, reveals = run(go())
    assert (summary.result["outcome"], summary.result["reason"]) == ("terminated", "deal_limit")
    assert m.deals_dealt == 1 and len(summary.deal_commitments) == 1
    assert [r.deal for r in reveals] == [0]
    last = [s.actions()[-1].view for s in streams]
    assert [env.seq for env in last] == [4, 4, 4]
    for env in [*last, *views]:
        assert env.deal_commitment == "" and not env.view.get("hand")
        assert (env.view.get("table") or {}).get("turn_up") is None


class FailingAbsenceWrites(FailingAbsences):
    """:class:`FailingAbsences` whose heartbeat probes are answered while the absence writes
    fail (``pings`` records them all)."""

    async def ping(self):
        self.pings.append(False)
        await MemoryStore.ping(self)


def test_an_outage_whose_absence_writes_are_still_tried_again_is_not_said_over_by_the_heartbeat(monkeypatch):
    """While absence writes of an outage are still being tried again, their landing says when
    it is over: the heartbeat does not probe the database for it (no away seat is recorded,
    nothing else is written) and says nothing. Only an outage left quiet (its writes ended
    unwritten) is ended by a probe answered (MatchClock.database_answered): ended here, it was
    said over (absence_writes_recovered) while every write still failed."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.02)
    store = FailingAbsenceWrites()
    store.broken = True

    async def go():
        with capture_logs() as logs:
            async with manager(config(absence_heartbeat_s=0.02), store=store) as mgr:
                await open_match(mgr, "klaberjass")  # nobody watches: both seats away
                await until(lambda: store.refused >= 6)
                await asyncio.sleep(0.2)  # ten heartbeats
                outage = mgr._clock._absence_outage
                pending = set(outage.pending) if outage is not None else set()
                store.broken = False  # the writes land: the outage is over
        return pending, logs

    pending, logs = run(go())
    assert len(pending) == 2  # both seats' writes still tried again
    assert store.pings == []
    said = [e["event"] for e in logs if e["event"].startswith("absence_writes")]
    assert said[0] == "absence_writes_failing" and said.count("absence_writes_recovered") <= 1
    assert "absence_writes_recovered" not in said[:-1]


def test_a_heartbeat_that_lands_while_an_absence_write_is_tried_again_does_not_end_its_outage(monkeypatch):
    """docs/operations.md (``absence_writes_recovered``): absence writes are said to land
    again once none is pending any more; the heartbeat's answer ends only an outage left quiet
    (MatchClock.database_answered: "an outage with writes pending ends when they land"). Here
    one seat's window is recorded and its heartbeats land, while the other seat's return
    cannot be written: the outage stays open with that write pending, said once, and is over
    when it lands. Ended by the heartbeat, it was said over while the write still failed, and
    its next failure said as a new outage."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.02)

    class Touched(FailingAbsences):
        """The heartbeat's writes (``touched``: the seats of each) land whether broken or not."""

        def __init__(self):
            super().__init__()
            self.touched: list[list[tuple[str, int]]] = []

        async def touch_absences(self, seats, at):
            self.touched.append(list(seats))
            await super().touch_absences(seats, at)

    store = Touched()

    async def go():
        with capture_logs() as logs:
            async with manager(config(absence_heartbeat_s=0.02), store=store) as mgr:
                match_id, ps = await open_match(mgr, "klaberjass")  # nobody watches: both seats away
                m = mgr._matches[match_id]
                await until(lambda: all(s.absence_stored[0] is not None for s in m.seats))
                store.broken = True  # the absence writes fail; the heartbeat's land
                stream = Stream(mgr, match_id, ps[0])  # seat 0 is back: its return is not written
                await until(lambda: store.refused >= 3)
                touched = len(store.touched)
                await until(lambda: len(store.touched) >= touched + 3)  # seat 1's heartbeats land
                outage = mgr._clock._absence_outage
                pending = set(outage.pending) if outage is not None else None
                during = [e["event"] for e in logs if e["event"].startswith("absence_writes")]
                beats = store.touched[touched:]
                store.broken = False  # the return lands: the outage is over
                await until(lambda: m.seats[0].absence_stored[0] is None)
                await stream.close()
        return match_id, pending, during, beats, logs

    match_id, pending, during, beats, logs = run(go())
    assert pending == {(match_id, 0)}
    assert beats and all(seats == [(match_id, 1)] for seats in beats), beats
    assert during == ["absence_writes_failing"], during
    said = [e["event"] for e in logs if e["event"].startswith("absence_writes")]
    assert said[:2] == ["absence_writes_failing", "absence_writes_recovered"], said
    assert said.count("absence_writes_failing") == 1


def test_absence_writes_failing_when_the_drain_begins_are_not_tried_again(monkeypatch):
    """A database outage: every away seat's absence write is tried again each
    RETRY_AFTER_STORE_FAILURE_S. The drain waits for the absence writes under way
    (MatchManager._flush_absences), so they stop at their next failure, said once per seat
    (absence_write_failed): tried again for ever, they held the drain, and the shutdown, for as
    long as the database was down."""
    from engine_service.sessions import clock

    monkeypatch.setattr(clock, "RETRY_AFTER_STORE_FAILURE_S", 0.02)
    store = FailingAbsences()
    store.broken = True

    async def go():
        with capture_logs() as logs:
            async with manager(store=store) as mgr:
                await open_match(mgr, "klaberjass")  # nobody watches: both seats away
                await until(lambda: store.refused >= 4)
                await asyncio.wait_for(mgr.drain(), 30)  # against a hang only
                refused = store.refused
                await asyncio.sleep(0.1)  # five retry periods
                return refused, store.refused, logs

    refused, later, logs = run(go())
    assert later == refused  # nothing tried again after the drain
    assert sorted((e["seat"], e["error_type"], e["error"]) for e in logs if e["event"] == "absence_write_failed") == [
        (0, "StoreError", "the database is unreachable"), (1, "StoreError", "the database is unreachable")]


class HangingAbsences(FailingAbsences):
    """:class:`FailingAbsences` whose refused writes hang ``hang_s`` before they fail, but a
    seat's first (a database that stopped answering: each connection attempt times out)."""

    hang_s = 90.25

    def __init__(self):
        super().__init__()
        self.failed: set[tuple[str, int]] = set()

    async def save_absence(self, match_id, seat, *args, **kwargs):
        if self.broken and (match_id, seat) in self.failed:
            await asyncio.sleep(self.hang_s)
        try:
            return await super().save_absence(match_id, seat, *args, **kwargs)
        except StoreError:
            self.failed.add((match_id, seat))
            raise


def test_absence_writes_hanging_longer_than_a_summary_period_are_one_outage(monkeypatch):
    """The database stops answering: the first absence writes fail at once, the next ones
    only after hanging 90.25 s each (longer than ABSENCE_OUTAGE_SUMMARY_S). A failure that comes
    that long after the previous one, of a write still being tried again, continues the
    outage (a summary, absence_writes_still_failing), not a new one: only an outage whose
    writes all ended unwritten and went quiet that long is the next failure's new one. On a
    virtual clock: three hours of outage in no time."""
    from engine_service.sessions import clock

    store = HangingAbsences()
    store.broken = True

    async def go():
        loop = asyncio.get_running_loop()
        with capture_logs() as logs:
            # grace windows of a day: the match waits for its players (JJK-10.2) meanwhile
            async with manager(config(absence_heartbeat_s=3600.0, reconnect_grace_s=86400.0), store=store) as mgr:
                match_id, _ = await open_match(mgr, "klaberjass")  # nobody watches: both seats away
                await advance_to(loop.time() + 3 * 3600.0)
                store.broken = False
                await advance_to(loop.time() + store.hang_s + clock.RETRY_AFTER_STORE_FAILURE_S)
                stored = [s.absence_stored for s in mgr._matches[match_id].seats]
        return [e for e in logs if e["event"].startswith("absence_write")], stored

    said, stored = run_virtual(go, monkeypatch)
    events = [e["event"] for e in said]
    assert events[0] == "absence_writes_failing" and events[-1] == "absence_writes_recovered", events
    assert events.count("absence_writes_failing") == 1 and events.count("absence_writes_recovered") == 1, events
    # docs/operations.md: the outage's first line says how often its writes are tried again
    assert (said[0]["error_type"], said[0]["error"], said[0]["retry_every_s"]) == (
        "StoreError", "the database is unreachable", clock.RETRY_AFTER_STORE_FAILURE_S)
    # both seats' writes fail every 91.25 s (a second's wait, then 90.25 s of hanging), together:
    # a summary at each round, with the failures since the last one and the outage's time
    summaries = [e for e in said if e["event"] == "absence_writes_still_failing"]
    period = store.hang_s + clock.RETRY_AFTER_STORE_FAILURE_S
    assert len(summaries) == int(3 * 3600.0 // period), events
    assert [e["outage_s"] for e in summaries] == [round(period * k, 1) for k in range(1, len(summaries) + 1)]
    assert all(e["pending"] == 2 and e["failed_writes"] == 2 for e in summaries), summaries
    assert said[-1]["failed_writes"] == store.refused and said[-1]["landed"] == 2
    assert all(away is not None and not taken_over for away, taken_over in stored), stored


def test_a_quiet_outage_is_said_over_by_the_next_absence_write_that_lands_first_time(monkeypatch):
    """An outage whose writes all ended unwritten (their match terminated) stays open, quiet;
    the next absence write that lands says it is over (absence_writes_recovered), even one
    that never failed (a match opened once the database is back), with no heartbeat to probe
    the database. The writers of that match end cleanly, the outage closed meanwhile (no
    session_task_failed). On a virtual clock."""
    store = FailingAbsences()
    store.broken = True

    async def go():
        loop = asyncio.get_running_loop()
        with capture_logs() as logs:
            async with manager(config(absence_heartbeat_s=3600.0), store=store) as mgr:
                first, _ = await open_match(mgr, "klaberjass")  # nobody watches: both seats away
                await advance_to(loop.time() + 5.0)  # tried again every second meanwhile
                await mgr.terminate_match(first, "ended during the outage")
                await advance_to(loop.time() + 5.0)
                quiet = mgr._clock.absence_outage_quiet
                store.broken = False
                await open_match(mgr, "klaberjass")
                await advance_to(loop.time() + 1.0)
                over = mgr._clock._absence_outage is None
        return logs, quiet, over

    logs, quiet, over = run_virtual(go, monkeypatch)
    said = [e for e in logs if e["event"].startswith("absence_write")]
    assert quiet and over
    assert [e["event"] for e in said] == ["absence_writes_failing", "absence_writes_recovered"], said
    assert said[-1]["landed"] == 1 and said[-1]["failed_writes"] == store.refused  # said at the first
    assert not [e for e in logs if e["log_level"] == "error"], logs


class _RefusingSeat(FailingAbsences):
    """As FailingAbsences, and refusing the absence writes of seat ``refused_seat`` even
    once the database is back for the others."""

    refused_seat: int | None = None

    async def save_absence(self, match_id, seat, away_since, taken_over=False, away_seen=None):
        if seat == self.refused_seat:
            self.refused += 1
            raise self.failure("the database is unreachable")
        return await super().save_absence(match_id, seat, away_since, taken_over, away_seen=away_seen)


def test_an_outage_whose_last_pending_write_ends_unwritten_after_one_landed_is_said_over(monkeypatch):
    """docs/operations.md, Restarts: an absence-write outage is said over "once when writes land
    again" (absence_writes_recovered). One seat's write lands while the other's is still tried
    again; then that one ends unwritten (its match terminated): nothing is pending and a write
    landed, so the outage is over then (MatchClock._absence_retry_ended), not left open until
    the heartbeat's next probe (an hour here) or the next write. On a virtual clock."""
    store = _RefusingSeat()
    store.broken = True

    async def go():
        loop = asyncio.get_running_loop()
        with capture_logs() as logs:
            async with manager(config(absence_heartbeat_s=3600.0), store=store) as mgr:
                match_id, _ = await open_match(mgr, "klaberjass")  # nobody watches: both seats away
                await advance_to(loop.time() + 3.0)  # both tried again every second
                store.broken, store.refused_seat = False, 1
                await advance_to(loop.time() + 2.0)  # seat 0's lands, seat 1's still fails
                landed = [s.absence_stored is not None and s.absence_stored[0] is not None
                          for s in mgr._matches[match_id].seats]
                open_before = mgr._clock._absence_outage is not None
                await mgr.terminate_match(match_id, "ended during the outage")
                await advance_to(loop.time() + 2.0)  # seat 1's writer wakes, finds the end, stops
                over = mgr._clock._absence_outage is None
        return [e for e in logs if e["event"].startswith("absence_write")], landed, open_before, over

    said, landed, open_before, over = run_virtual(go, monkeypatch)
    assert landed == [True, False] and open_before
    assert over
    assert [e["event"] for e in said] == ["absence_writes_failing", "absence_writes_recovered"], said
    assert said[-1]["landed"] == 1 and said[-1]["failed_writes"] == store.refused


class RefusesAppends(MemoryStore):
    """A store refusing the next ``refusing`` appends before anything is written."""

    refusing = 0

    async def append_action(self, match_id, action, decks=(), end=None):
        if self.refusing:
            self.refusing -= 1
            raise StoreError("the database is unreachable")
        return await super().append_action(match_id, action, decks, end)


def test_a_takeover_move_the_store_refused_twice_is_played_by_its_retries(monkeypatch):
    """GJ-12.4: the seat of a player away past the grace period is played for them. When the
    store refuses that move, the decision is disarmed and tried again after
    RETRY_AFTER_STORE_FAILURE_S (MatchClock._retry_later), and again after a second refusal:
    the move lands at the second retry (no read-back of the log here to arm it sooner). A
    decision left armed after a failure, or a spent retry timer taken for a pending one, was
    never asked again, and the match waited for ever. The retries arm no deadline (the seat is
    the bot's), so no heartbeat is sent at once for them (docs/api.md, HEARTBEAT: one is sent
    between heartbeats only for a deadline that no event carried). On a virtual clock."""
    from engine_service.sessions import clock

    from .virtual_clock import START, settle

    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 3600.0)  # no background read-back
    store = RefusesAppends()
    retry = clock.RETRY_AFTER_STORE_FAILURE_S

    async def go():
        async with manager(config(heartbeat_interval_s=3600.0), store=store) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker",
                                            options={"turn_time_s": 120, "reconnect_grace_s": 15})
            m = mgr._matches[match_id]
            away = m.state.to_act()
            streams = [Stream(mgr, match_id, p) for seat, p in enumerate(ps) if seat != away]
            await settle()
            store.refusing = 2
            await advance_to(START + 15 + retry)  # the window runs out; its move and first retry fail
            refused = (store.refusing, m.seq)
            await advance_to(START + 15 + 2 * retry)
            first = m.actions[0] if m.actions else None
            beats = [e for s in streams for e in s.events if e.kind == "heartbeat"]
            for s in streams:
                await s.close()
            return away, refused, first, beats

    away, refused, first, beats = run_virtual(go, monkeypatch)
    assert refused == (0, 0)
    assert first is not None and (first.seat, first.by, first.reason) == (away, "auto", "takeover")
    assert first.at == START + 15 + 2 * retry  # the second retry
    assert beats == []


def test_a_takeover_move_that_finds_the_end_in_doubt_landed_says_no_failure(monkeypatch):
    """As the timeout's move above, for the move of a seat whose player is away past the grace
    period (GJ-12.4): a TerminateMatch's status write landed but was answered with an error,
    its read-back failing too (the end in doubt); the takeover move settles the end first
    (MatchWriter.apply) and, finding the match ended in the store, plays nothing and says no
    ``bot_move_failed`` (MatchClock._retry_later: the match ended, nothing to try again). On a
    virtual clock."""
    from .virtual_clock import START, settle

    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 3600.0)  # no background read-back
    store = EndsInDoubt()

    async def go():
        async with manager(config(), store=store) as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker",
                                            options={"turn_time_s": 120, "reconnect_grace_s": 15})
            m = mgr._matches[match_id]
            away = m.state.to_act()
            streams = [Stream(mgr, match_id, p) for seat, p in enumerate(ps) if seat != away]
            await settle()
            seq = m.seq
            store.fail_next, store.landed, store.unreadable = True, True, 1
            with pytest.raises(SessionError):
                await mgr.terminate_match(match_id, "maintenance")
            doubt = m.end_in_doubt and m.active
            with capture_logs() as logs:
                await advance_to(START + 15 + 5.0)  # the window runs out: the takeover move finds the end
            for stream in streams:
                await stream.close()
            return seq, doubt, m, await MemoryStore.load_match(store, match_id), logs

    seq, doubt, m, stored, logs = run_virtual(go, monkeypatch)
    assert doubt
    assert m.status == stored.record.status == "terminated"
    assert m.seq == len(stored.actions) == seq  # nothing after the end
    names = [e["event"] for e in logs]
    assert "match_end_found_in_store" in names
    assert not [e for e in logs if e["log_level"] == "error"], logs  # the end happened: no failure


class GatedAbsences(MemoryStore):
    """A store recording the absence writes of seat 0 as they land (``landed``: away_since);
    the next one (``hold_next``) waits for ``gate`` first (a slow database)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.hold_next = False
        self.landed: list[float | None] = []

    async def save_absence(self, match_id, seat, away_since, taken_over=False, away_seen=None):
        if seat == 0 and self.hold_next:
            self.hold_next = False
            await self.gate.wait()
        await super().save_absence(match_id, seat, away_since, taken_over, away_seen=away_seen)
        if seat == 0:
            self.landed.append(away_since)


def test_a_seats_absence_writes_land_in_the_order_its_presence_changed(monkeypatch):
    """A seat's absence is written by one task at a time, which writes the newest state until
    the store holds it (MatchClock.record_absence), so that its writes land in order: a player
    comes back while their absence is written slowly, then goes away again. A second writer
    for the new absence would land first and the slow "back" after it: the store would say the
    player was there while they were away, and a crash meanwhile would give them a whole new
    grace window instead of what was left of this one (docs/operations.md, Restarts). On a
    virtual clock."""
    from .virtual_clock import START, settle

    store = GatedAbsences()

    async def go():
        async with manager(config(absence_heartbeat_s=3600.0), store=store) as mgr:
            match_id, ps = await open_match(mgr, "japanese_joker")  # nobody watches: both away
            await settle()
            store.hold_next = True
            stream = Stream(mgr, match_id, ps[0])  # back: its write hangs
            await settle()
            await advance_to(START + 1.0)
            await stream.close()  # away again, since START + 1
            await settle()
            store.gate.set()
            await settle()
            return list(store.landed), mgr._matches[match_id].seats[0].absence_stored

    landed, stored = run_virtual(go, monkeypatch)
    assert landed == [START, None, START + 1.0]
    assert stored == (START + 1.0, False)


def test_a_takeover_move_whose_answer_was_lost_is_found_by_its_retry_without_a_second_failure(monkeypatch):
    """GJ-12.4: the move played for an away player is written but answered with an error: one
    ``bot_move_failed``, and its retry (MatchClock._retry_later) reads the log back first and
    finds the move there (StaleSequence: the match moved on). That is no failure: nothing more
    is said or tried again, and the decision the match now waits for is armed. On a virtual
    clock."""
    from engine_service.sessions import clock

    from .virtual_clock import START, settle

    monkeypatch.setattr(seating_module, "START_RETRY_FIRST_S", 3600.0)  # the retry reads it back
    store = LosesAcknowledgements()
    retry = clock.RETRY_AFTER_STORE_FAILURE_S

    async def go():
        with capture_logs() as logs:
            async with manager(config(), store=store) as mgr:
                match_id, ps = await open_match(mgr, "georgian_joker",
                                                options={"turn_time_s": 120, "reconnect_grace_s": 15})
                m = mgr._matches[match_id]
                away = m.state.to_act()
                streams = [Stream(mgr, match_id, p) for seat, p in enumerate(ps) if seat != away]
                await settle()
                store.lose_next = True
                await advance_to(START + 15 + 3 * retry)
                after = (m.seq, m.retry_handle, m.timer_key, m.deadline)
                for s in streams:
                    await s.close()
        return away, list(m.actions), after, logs

    away, actions, (seq, retry_handle, timer_key, deadline), logs = run_virtual(go, monkeypatch)
    assert [(a.seat, a.by, a.reason) for a in actions] == [(away, "auto", "takeover")]
    assert [e["error_type"] for e in logs if e["event"] == "bot_move_failed"] == ["Unavailable"]
    assert retry_handle is None
    assert timer_key == (1, (away + 1) % 4) and deadline == START + 15 + retry + 120  # the next player's turn


def test_an_absence_write_outage_is_summed_up_at_most_once_a_minute(monkeypatch):
    """docs/operations.md, Restarts: a failing absence write is tried again every second, and
    the outage is said at its first failure, "then at most once a minute as the number of
    writes still pending" (absence_writes_still_failing). Five minutes of outage with the
    service's own periods (the other outage tests shorten them): a summary a minute. On a
    virtual clock."""
    from .virtual_clock import START

    store = FailingAbsences()
    store.broken = True

    async def go():
        with capture_logs() as logs:
            # grace windows of a day: the match waits for its players (JJK-10.2) meanwhile
            async with manager(config(absence_heartbeat_s=3600.0, reconnect_grace_s=86400.0), store=store) as mgr:
                await open_match(mgr, "klaberjass")  # nobody watches: both seats away
                await advance_to(START + 300.5)
                store.broken = False
                await advance_to(START + 302.0)  # the writes land (the close waits for them)
        return logs

    logs = run_virtual(go, monkeypatch)
    summaries = [e for e in logs if e["event"] == "absence_writes_still_failing"]
    assert [e["outage_s"] for e in summaries] == [60.0, 120.0, 180.0, 240.0, 300.0], summaries
    assert all(e["pending"] == 2 for e in summaries)
