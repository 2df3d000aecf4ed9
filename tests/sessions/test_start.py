"""MatchManager.start's own lifecycle (ARCHITECTURE.md section 4): a second start changes
nothing, a failed start closes the bot host it made (and only that one), and the start waits
for the bot workers it launched only when asked to or when a resumed match needs a bot at once.

The engine's bot host is replaced by :class:`OwnHost`, a recording stand-in made where the
manager makes its own (``engine_service.plugins.host.BotHost``): no worker processes, and
every call it gets is counted."""

from __future__ import annotations

import asyncio
import time

import pytest
from structlog.testing import capture_logs

from engine_service.observability.metrics import Metrics
from engine_service.sessions.api import BadRequest, BotInfo, CreateMatchRequest, SeatConfig, Unauthenticated
from engine_service.sessions.manager import BOT_WORKERS_WAIT_S, MatchManager
from engine_service.store import MemoryStore, StoreError

from .helpers import GAMES, config, run, until


class OwnHost:
    """Stands in for the BotHost a manager makes (and owns): its bot ``random`` plays every
    game and never answers; ``ready`` is what its workers' start answers."""

    made: list["OwnHost"] = []
    ready = True

    def __init__(self, **kwargs):
        self.kwargs, self.warmed, self.waited, self.closed = kwargs, 0, [], 0
        OwnHost.made.append(self)

    def bots(self):
        return [BotInfo("random", tuple(GAMES), "never answers")]

    def plays(self, bot, game_id):
        return bot == "random"

    def warm(self):
        self.warmed += 1

    async def start(self, timeout_s=None):
        self.waited.append(timeout_s)
        return self.ready

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        await asyncio.Event().wait()

    async def close(self):
        self.closed += 1


@pytest.fixture
def own_host(monkeypatch):
    from engine_service.plugins import host as host_module

    monkeypatch.setattr(OwnHost, "made", [])
    monkeypatch.setattr(host_module, "BotHost", OwnHost)
    return OwnHost


class CountingStore(MemoryStore):
    """Counts its opens; ``fail`` makes one step of a start fail (a StoreError): ``open``,
    or ``resume`` (listing the unfinished matches)."""

    def __init__(self, fail: str = ""):
        super().__init__()
        self.fail, self.opened = fail, 0

    async def open(self):
        self.opened += 1
        if self.fail == "open":
            raise StoreError("the database is unreachable")
        await super().open()

    async def unfinished_match_ids(self):
        if self.fail == "resume":
            raise StoreError("the database is unreachable")
        return await super().unfinished_match_ids()


async def stored_match(store: MemoryStore, cfg=None, join=(0, 1), **request) -> str:
    """A match left unfinished in ``store`` by a manager that stopped (drained) meanwhile, its
    seats ``join`` taken by players."""
    mgr = MatchManager(cfg or config(), store=store, bot_host=OwnHost(), metrics=Metrics())
    await mgr.start()
    s = await mgr.create_match(CreateMatchRequest(**request), admin=True)
    for seat in join:
        await mgr.join_match(s.match_id, seat, f"p{seat}")
    await mgr.close()
    return s.match_id


def test_a_second_start_changes_nothing():
    """start() is idempotent: a second call does not open the store again, nor read the
    unfinished matches back again (their live state, timers and watchers would be replaced by
    fresh copies, each counted resumed twice)."""
    store, metrics = CountingStore(), Metrics()

    async def go():
        match_id = await stored_match(store, game="klaberjass")
        store.opened = 0
        mgr = MatchManager(config(), store=store, metrics=metrics, create_bot_host=False)
        with capture_logs() as logs:
            await mgr.start()
            held = mgr._matches[match_id]
            await mgr.start()
        try:
            said = [(e["match_id"], e["seq"], e["status"]) for e in logs if e["event"] == "match_resumed"]
            return store.opened, mgr._matches[match_id] is held, said == [(match_id, 0, "active")]
        finally:
            await mgr.close()

    # said once (what an operator reads of the restart: the match, where it stood), counted once
    assert run(go()) == (1, True, True)
    assert metrics.value("cardgames_matches_resumed_total", {"game": "klaberjass"}) == 1


@pytest.mark.parametrize("fail", ["open", "resume"])
def test_a_failed_start_closes_the_bot_host_it_made(own_host, fail):
    """A start that fails (the store cannot be opened, or its matches read back) stops the
    bot workers it launched: the service exits, and a library caller that tries again later
    would otherwise leave a pool of worker processes behind for each attempt."""
    store = CountingStore(fail)

    async def go():
        mgr = MatchManager(config(), store=store, metrics=Metrics())
        with pytest.raises(StoreError):
            await mgr.start()
        return mgr.list_bots(), store._open

    bots, left_open = run(go())
    (host,) = own_host.made
    assert (host.warmed, host.closed) == (1, 1)
    assert bots == [] and not left_open


@pytest.mark.parametrize("fail", ["open", "resume"])
def test_a_failed_start_leaves_the_callers_bot_host_open(fail):
    """A bot host the caller passed in is the caller's to close, failed start or not."""
    host = OwnHost()

    async def go():
        mgr = MatchManager(config(), store=CountingStore(fail), bot_host=host, metrics=Metrics())
        with pytest.raises(StoreError):
            await mgr.start()
        return [b.name for b in mgr.list_bots()]

    assert run(go()) == ["random"]
    assert (host.warmed, host.closed) == (0, 0)


def test_a_manager_told_not_to_make_a_bot_host_makes_none(own_host):
    """``create_bot_host=False`` without a host: no bot workers, no bots listed, a bot seat
    refused (the absent seats use the rulebook's auto-move policy)."""
    async def go():
        mgr = MatchManager(config(), store=MemoryStore(), metrics=Metrics(), create_bot_host=False)
        await mgr.start()
        try:
            with pytest.raises(BadRequest) as refused:
                await mgr.create_match(CreateMatchRequest(game="klaberjass", seats=[SeatConfig("bot", "random")] * 2),
                                       admin=True)
            assert await mgr.wait_for_bot_workers() is True  # no workers of its own to wait for
            return mgr.list_bots(), refused.value
        finally:
            await mgr.close()

    bots, refused = run(go())
    assert bots == [] and own_host.made == []
    assert refused.reason == "UNKNOWN_BOT", refused


def test_a_plain_start_does_not_wait_for_the_bot_workers_unless_a_resumed_match_needs_them(own_host):
    """The library's start() (and tests) go on while the workers start: only a resumed match
    whose bot is asked at once needs them up first (test_restart's worker start-up tests).
    Waiting by default made every start on a machine whose plugin import hangs take
    BOT_WORKERS_WAIT_S more. The service asks for the wait (wait_for_bot_workers=True), once."""
    async def started(**kwargs) -> tuple[list, list]:
        mgr = MatchManager(config(), store=MemoryStore(), metrics=Metrics())
        await mgr.start(**kwargs)
        host = own_host.made[-1]
        try:
            at_start = list(host.waited)
            assert await mgr.wait_for_bot_workers() is True
            return at_start, host.waited  # the answer is kept: the workers are not asked again
        finally:
            await mgr.close()

    assert run(started()) == ([], [BOT_WORKERS_WAIT_S])
    assert run(started(wait_for_bot_workers=True)) == ([BOT_WORKERS_WAIT_S], [BOT_WORKERS_WAIT_S])


BOT_FIRST = [SeatConfig("bot", "random"), SeatConfig()]


@pytest.mark.parametrize("cfg, request_, join, waits", [
    ({}, dict(game="klaberjass", seats=BOT_FIRST), (1,), True),
    # GJ-12.4: the takeover bot may be asked at once for a seat whose player left for good
    ({"takeover_bot": "random"}, dict(game="georgian_joker"), range(4), True),
    ({}, dict(game="klaberjass"), (0, 1), False),
    ({}, dict(game="klaberjass", seats=BOT_FIRST), (), False),  # waiting: no bot is asked
], ids=["bot-seat", "takeover-bot", "players-only", "waiting-with-a-bot-seat"])
def test_a_start_waits_for_the_bot_workers_when_a_resumed_match_may_ask_a_bot(own_host, cfg, request_, join, waits):
    """A resumed match whose bot (a bot seat, or the takeover bot) is asked as soon as its
    timers are armed waits for the workers first; one that asks no bot does not."""
    store = MemoryStore()

    async def go():
        match_id = await stored_match(store, config(**cfg), join, **request_)
        mgr = MatchManager(config(**cfg), store=store, metrics=Metrics())
        await mgr.start()
        try:
            return mgr.match_ids() == [match_id], own_host.made[-1].waited
        finally:
            await mgr.close()

    assert run(go()) == (True, [BOT_WORKERS_WAIT_S] if waits else [])


def test_bot_workers_not_ready_are_said_once_and_the_answer_kept(own_host, monkeypatch):
    """Workers not up within the wait (a plugin whose import hangs): wait_for_bot_workers
    answers False and logs bot_workers_not_ready; the start goes on, and the answer is kept
    (the workers are not waited for again)."""
    monkeypatch.setattr(OwnHost, "ready", False)

    async def go():
        mgr = MatchManager(config(), store=MemoryStore(), metrics=Metrics())
        with capture_logs() as logs:
            await mgr.start(wait_for_bot_workers=True)
            again = await mgr.wait_for_bot_workers()
        await mgr.close()
        return again, [e for e in logs if e["event"] == "bot_workers_not_ready"]

    again, said = run(go())
    assert again is False
    assert [e["waited_s"] for e in said] == [BOT_WORKERS_WAIT_S]
    assert own_host.made[-1].waited == [BOT_WORKERS_WAIT_S]


def test_the_workers_of_a_callers_bot_host_are_not_waited_for():
    """Only the workers a manager launched itself are waited for: a bot host the caller
    passed in is the caller's to start (BotHostLike has no ``start``)."""
    host = OwnHost()

    async def go():
        mgr = MatchManager(config(), store=MemoryStore(), bot_host=host, metrics=Metrics())
        await mgr.start(wait_for_bot_workers=True)
        try:
            return await mgr.wait_for_bot_workers()
        finally:
            await mgr.close()

    assert run(go()) is True
    assert host.waited == []
@pytest.mark.parametrize("retention, waiting, interval", [
    (2.0, 0.4, 0.1), (0.4, 2.0, 0.1), (0.0, 0.4, 0.1),  # a quarter of the shortest period
    (3600.0, 3600.0, 60.0), (0.0, 0.0, 60.0),  # at least every minute; 0: a period not enforced
    (0.02, 0.0, 0.01),  # at most every 10 ms
])
def test_the_sweeper_runs_at_a_quarter_of_the_shortest_period_it_enforces(retention, waiting, interval):
    """The sweeper evicts finished matches after ``finished_retention_s`` and ends those
    waiting ``waiting_timeout_s``: it passes every quarter of the shorter (each at most a
    quarter late), at least every minute and at most every 10 ms. The same interval bounds
    the backoff of a start in doubt tried again (Seating)."""
    async def go():
        mgr = MatchManager(config(finished_retention_s=retention, waiting_timeout_s=waiting), store=MemoryStore(),
                           metrics=Metrics(), create_bot_host=False)
        await mgr.start()
        await mgr.close()
        return mgr._sweep_interval

    assert run(go()) == interval


def test_the_housekeeping_tasks_carry_the_names_the_soak_probe_finds_them_by():
    """A started manager runs its sweeper, its absence heartbeat and (with retention) its
    pruner as tasks named ``sessions-*``: bench/soak.py finds the manager through the task
    named ``sessions-sweeper`` (its coroutine's ``self``) to report the sizes of its tables,
    and counts tasks by that prefix. A renamed task left the soak's report silently without
    the manager's tables."""
    async def go():
        mgr = MatchManager(config(keep_finished_days=1), store=MemoryStore(), metrics=Metrics(),
                           create_bot_host=False)
        await mgr.start()
        try:
            named = {t.get_name(): t for t in asyncio.all_tasks()}
            sweeper = named.get("sessions-sweeper")
            found = sweeper.get_coro().cr_frame.f_locals.get("self") if sweeper is not None else None
            return sorted(n for n in named if n.startswith("sessions-")), found is mgr
        finally:
            await mgr.close()

    assert run(go()) == (["sessions-absence-heartbeat", "sessions-pruner", "sessions-sweeper"], True)


class _FailingLine:
    """The manager's logger, but the line ``event`` cannot be written (the service's stdout a
    closed pipe): a failure of start() after its housekeeping tasks were made."""

    def __init__(self, log, event):
        self._log, self._event = log, event

    def __getattr__(self, name):
        return getattr(self._log, name)

    def info(self, event, **kw):
        if event == self._event:
            raise BrokenPipeError(32, "Broken pipe")
        return self._log.info(event, **kw)


def test_a_start_failing_after_its_housekeeping_began_stops_it_and_can_be_tried_again(monkeypatch):
    """The last steps of a start make the sweeper and the absence heartbeat, then log
    retention_enabled: a failure there (the log line cannot be written) must stop both tasks
    (they would sweep and beat against the closed store) and leave the manager not started,
    so that a start tried again opens the store and serves."""
    from engine_service.sessions import manager as manager_module

    monkeypatch.setattr(manager_module, "log", _FailingLine(manager_module.log, "retention_enabled"))
    store = CountingStore()

    async def go():
        mgr = MatchManager(config(keep_finished_days=1), store=store, metrics=Metrics(), create_bot_host=False)
        with pytest.raises(BrokenPipeError):
            await mgr.start()
        housekeeping = [mgr._sweeper, mgr._absence_heartbeat]
        await asyncio.sleep(0)
        stopped = [t is not None and t.cancelled() for t in housekeeping]
        monkeypatch.undo()
        await mgr.start()
        try:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass"))
            return stopped, store.opened, mgr.match_ids() == [s.match_id]
        finally:
            await mgr.close()

    assert run(go()) == ([True, True], 2, True)


class FailsOneLoad(MemoryStore):
    """Reading back the ``fail_at``-th match (counted from 1) fails with a StoreError."""

    fail_at = 0

    def __init__(self):
        super().__init__()
        self.loads = 0

    async def load_match(self, match_id):
        self.loads += 1
        if self.loads == self.fail_at:
            raise StoreError("the database is unreachable")
        return await super().load_match(match_id)


def test_a_failed_start_leaves_no_table_of_its_own_in_the_lobby():
    """A failed start drops the matches it read back (MatchManager._abort_start), its lobby
    entries with them: tables that ended in the store before the start is tried again are
    not listed by the start that succeeds (docs/api.md, the lobby: listed matches in WAITING).
    (Mutant: the lobby kept across the failed start, a table resumed by it listed for ever.)"""
    store = FailsOneLoad()

    async def go():
        first = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await first.start()
        ids = [(await first.create_match(CreateMatchRequest(game="klaberjass", listed=True))).match_id
               for _ in range(2)]
        await first.close()
        store.loads, store.fail_at = 0, 2
        mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        with pytest.raises(StoreError):
            await mgr.start()
        await store.open()
        for match_id in ids:  # ended meanwhile (another engine's waiting timeout, say)
            await store.set_status(match_id, "finished", {"outcome": "abandoned"}, time.time())
        await store.close()
        store.fail_at = 0
        await mgr.start()
        try:
            return [m.match_id for m in mgr.list_open_matches()]
        finally:
            await mgr.close()

    assert run(go(), timeout=60) == []


def test_a_failed_start_drops_the_matches_it_read_back_and_can_be_tried_again():
    """A store error while resuming the second match: the first, already read back and
    registered, is dropped with its seat tokens (a failed start holds nothing), and a start
    tried again once the store answers resumes both, the tokens working again and their
    timers armed (the failed start stopped the clock, and it stayed stopped: the matches of
    a start tried again had no turn deadline, grace window or bot move, for ever)."""
    store = FailsOneLoad()

    async def go():
        first = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await first.start()
        ids, tokens = [], []
        for _ in range(2):
            s = await first.create_match(CreateMatchRequest(game="klaberjass"))
            tokens.append((await first.join_match(s.match_id, 0, "p0")).token)
            await first.join_match(s.match_id, 1, "p1")
            ids.append(s.match_id)
        await first.close()
        store.loads, store.fail_at = 0, 2
        mgr = MatchManager(config(time_scale=0.005), store=store, metrics=Metrics(), create_bot_host=False)
        with pytest.raises(StoreError):
            await mgr.start()
        held_after_failure = mgr.match_ids()
        with pytest.raises(Unauthenticated):
            mgr.authenticate(ids[0], tokens[0])
        store.fail_at = 0
        await mgr.start()
        try:
            seats = [mgr.authenticate(i, t).seat for i, t in zip(ids, tokens)]
            held = sorted(mgr.match_ids()) == sorted(ids)
            # and their timers armed: nobody came back within the grace (JJK-10.2, 60 s
            # scaled to 0.3 s), each ends without a winner
            await until(lambda: all(mgr._matches[i].over for i in ids), timeout=30)
            ends = [(await mgr.get_match(i)).result["outcome"] for i in ids]
            return held_after_failure, held, seats, ends
        finally:
            await mgr.close()

    assert run(go(), timeout=60) == ([], True, [0, 0], ["abandoned"] * 2)


class SlowAbsences(MemoryStore):
    """While ``slow``, an absence write never lands (a slow database); ``writing_at_close``:
    how many were under way when the store was closed."""

    slow = False

    def __init__(self):
        super().__init__()
        self.writing, self.writing_at_close = 0, []

    async def save_absence(self, *args, **kwargs):
        if not self.slow:
            return await super().save_absence(*args, **kwargs)
        self.writing += 1
        try:
            await asyncio.Event().wait()
        finally:
            self.writing -= 1

    async def close(self):
        self.writing_at_close.append(self.writing)
        await super().close()


@pytest.mark.parametrize("slow", [False, True], ids=["absence-writes-land", "absence-writes-hang"])
def test_a_start_failing_after_the_resumed_matches_were_armed_disarms_them(monkeypatch, slow):
    """A start that fails after it armed the resumed matches' timers (their players' grace
    windows, JJK-10.2) disarms them and cancels what they set off before the store closes:
    the windows' absence writes went on after the failure and failed against the closed
    store, a warning (absence_write_failed) per absent seat of every match resumed after the
    real error; so would a window left armed when it expired. A write that does not land
    (a slow database) is cancelled, not waited for, and ended before the store closes."""
    from engine_service.sessions import manager as manager_module

    store = SlowAbsences()

    async def go():
        match_id = await stored_match(store, game="klaberjass")
        store.slow = slow
        monkeypatch.setattr(manager_module, "log", _FailingLine(manager_module.log, "retention_enabled"))
        mgr = MatchManager(config(time_scale=0.005, keep_finished_days=1), store=store, metrics=Metrics(),
                           create_bot_host=False)
        with pytest.raises(BrokenPipeError):
            await mgr.start()
        monkeypatch.undo()
        with capture_logs() as logs:
            await asyncio.sleep(0.6)  # past the windows: 60 s of grace scaled to 0.3 s
        store.slow = False
        await store.open()
        stored = await store.load_match(match_id)
        return stored.record.status, len(stored.actions), logs, store.writing_at_close[-1]

    assert run(go(), timeout=60) == ("active", 0, [], 0)


def test_the_bot_workers_wait_is_the_15_s_docs_operations_md_gives_the_start_up_probe():
    """docs/operations.md (start-up step 7, the start-up probe, bot_workers_not_ready): the
    engine waits for its bot workers at most 15 s, and operators size the start-up probe with
    those 15 s; the wait is manager.BOT_WORKERS_WAIT_S. (Mutant: another value there.)"""
    import re
    from pathlib import Path

    from engine_service.sessions import manager as manager_module

    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text().split())
    step = re.findall(r"waits for its bot workers, at most (\d+) s", text)
    line = re.findall(r"bot workers were still not up after (\d+) s", text)
    assert step and line and set(step + line) == {f"{manager_module.BOT_WORKERS_WAIT_S:g}"}


async def _stored_waiting_matches(store: MemoryStore, n: int) -> list[str]:
    """``n`` Klaberjass matches left waiting in ``store`` (in creation order: the order a
    start reads them back in) by a manager closed since."""
    mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
    await mgr.start()
    ids = [(await mgr.create_match(CreateMatchRequest(game="klaberjass"))).match_id for _ in range(n)]
    await mgr.close()
    return ids


def test_a_store_error_while_resuming_begins_no_further_match():
    """MatchManager._resume_unfinished: a store error "fails the start: no further match is
    begun" (the loads under way, at most RESUME_CONCURRENCY, are let finish). (Mutant: the
    loaders not told of the failure, reading back every other match before the start fails.)"""
    from engine_service.sessions.manager import RESUME_CONCURRENCY

    store = FailsOneLoad()
    count = RESUME_CONCURRENCY + 4

    async def go():
        await _stored_waiting_matches(store, count)
        store.loads, store.fail_at = 0, 1
        mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        with pytest.raises(StoreError, match="resuming the unfinished matches failed"):
            await mgr.start()
        return store.loads

    assert run(go(), timeout=60) <= RESUME_CONCURRENCY


async def _started_and_skipped(store) -> tuple[list[str], list[str]]:
    """A manager started over ``store``: the matches it then holds, and those its start logged
    ``match_resume_failed`` (skipped); closed again."""
    mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
    with capture_logs() as logs:
        await mgr.start()
    try:
        return mgr.match_ids(), [e["match_id"] for e in logs if e["event"] == "match_resume_failed"]
    finally:
        await mgr.close()


def test_matches_that_do_not_replay_skipped_by_every_loader_leave_the_next_one_resumed():
    """A stored match this program cannot replay (CorruptLog: here an unknown game) "is
    skipped with match_resume_failed ...: the other matches go on" (MatchManager.start), even
    when the first RESUME_CONCURRENCY matches read back are all such: the next one is resumed
    by the start. (Mutant: a loader that skips one stops, the matches after them not resumed.)"""
    import dataclasses

    from engine_service.sessions.manager import RESUME_CONCURRENCY

    store = MemoryStore()

    async def go():
        ids = await _stored_waiting_matches(store, RESUME_CONCURRENCY + 1)
        for match_id in ids[:-1]:
            row = store._rows[match_id]
            row.record = dataclasses.replace(row.record, game="no_such_game")
        return (ids, *await _started_and_skipped(store))

    ids, held, failed = run(go(), timeout=60)
    assert held == [ids[-1]]
    assert sorted(failed) == sorted(ids[:-1])


def test_a_match_whose_replay_the_rules_refuse_is_skipped_and_the_others_resume(monkeypatch):
    """MatchManager.start: a match whose log the rules refuse (a RulesError out of its replay,
    as well as a CorruptLog) "is skipped with match_resume_failed ...: the other matches go
    on", not a failed start. (Mutant: only CorruptLog skipped, a RulesError failing the start.)"""
    from engine_service.rules.errors import RulesError
    from engine_service.sessions import manager as manager_module

    store = MemoryStore()
    real = manager_module.LiveMatch

    async def go():
        ids = await _stored_waiting_matches(store, 2)

        def refused(record, *args, **kwargs):
            if record.match_id == ids[0]:
                raise RulesError("the rules refuse this log")
            return real(record, *args, **kwargs)

        monkeypatch.setattr(manager_module, "LiveMatch", refused)
        return (ids, *await _started_and_skipped(store))

    ids, held, failed = run(go(), timeout=60)
    assert (held, failed) == ([ids[1]], [ids[0]])


class CountsReadsAtOnce(MemoryStore):
    """Each read of a match takes a few turns of the event loop; ``most``: the most read at once."""

    def __init__(self):
        super().__init__()
        self.reading = self.most = 0

    async def load_match(self, match_id):
        self.reading += 1
        self.most = max(self.most, self.reading)
        try:
            for _ in range(3):
                await asyncio.sleep(0)
            return await super().load_match(match_id)
        finally:
            self.reading -= 1


def test_a_start_reads_the_unfinished_matches_back_resume_concurrency_at_once():
    """MatchManager._resume_unfinished: "Every unfinished match rebuilt from the store,
    RESUME_CONCURRENCY of them read at once" (one after another, 10,000 matches on a
    PostgreSQL 1 ms away took past the start-up probe), never more. (Mutant: one at a time.)"""
    from engine_service.sessions.manager import RESUME_CONCURRENCY

    store = CountsReadsAtOnce()

    async def go():
        ids = await _stored_waiting_matches(store, RESUME_CONCURRENCY + 3)
        store.most = 0
        mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await mgr.start()
        try:
            return sorted(ids) == sorted(mgr.match_ids()), store.most
        finally:
            await mgr.close()

    assert run(go(), timeout=60) == (True, RESUME_CONCURRENCY)


def test_recall_says_whether_it_read_the_match_back_from_the_store():
    """api.MatchService.recall: "True when match_id was stored but not held" (an ended match a
    start does not resume), False for a match held (once recalled, it is). (Mutants: either
    answer flipped.)"""
    store = MemoryStore()

    async def go():
        first = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await first.start()
        ended = (await first.create_match(CreateMatchRequest(game="klaberjass"))).match_id
        waiting = (await first.create_match(CreateMatchRequest(game="klaberjass"))).match_id
        await first.terminate_match(ended, "test")
        await first.close()
        mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        await mgr.start()
        try:
            return [await mgr.recall(ended), await mgr.recall(ended), await mgr.recall(waiting)]
        finally:
            await mgr.close()

    assert run(go(), timeout=60) == [True, False, False]
