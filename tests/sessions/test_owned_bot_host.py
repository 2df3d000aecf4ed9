"""The bot host a manager makes itself (no ``bot_host`` given: the service's case) is the
manager's to close, once: at close(), and when a start fails, before the store opened (a
takeover bot that is not installed, a store that cannot be opened) or after it (a store error
while resuming). A host given to the manager belongs to whoever gave it and is never closed by
the manager. A host left open keeps its worker processes running after the service stopped."""

from __future__ import annotations

import pytest

import engine_service.plugins.host as plugin_host
from engine_service.observability.metrics import Metrics
from engine_service.rules.registry import all_games
from engine_service.sessions.api import BotInfo
from engine_service.sessions.manager import MatchManager, TakeoverBotUnavailable
from engine_service.store import MemoryStore, StoreError

from .helpers import config, run


class Host:
    """Stands for :class:`engine_service.plugins.host.BotHost`: one bot, ``random``, that
    plays every game; counts its closes."""

    def __init__(self, **settings: object) -> None:
        self.settings = settings  # what the manager made it with
        self.closed = 0

    def warm(self) -> None:
        pass

    async def start(self, timeout_s: float | None = None) -> bool:
        return True

    def bots(self) -> list[BotInfo]:
        return [BotInfo("random", tuple(g.id for g in all_games()), "test double")]

    def plays(self, bot: str, game_id: str) -> bool:
        return bot == "random"

    async def close(self) -> None:
        self.closed += 1


@pytest.fixture
def made(monkeypatch) -> list[Host]:
    """The hosts the managers make at start(), in order."""
    hosts: list[Host] = []

    def make(**kwargs: object) -> Host:
        hosts.append(Host(**kwargs))
        return hosts[-1]

    monkeypatch.setattr(plugin_host, "BotHost", make)
    return hosts


class FailsToOpen(MemoryStore):
    """A store whose first ``failures`` opens fail (a database not reachable yet)."""

    failures = 1

    async def open(self) -> None:
        if self.failures:
            self.failures -= 1
            raise StoreError("the database is unreachable")
        await super().open()


class FailsToResume(MemoryStore):
    """A store whose first ``failures`` listings of the unfinished matches fail (after it
    opened: the start's resume)."""

    failures = 1

    async def unfinished_match_ids(self):
        if self.failures:
            self.failures -= 1
            raise StoreError("the database is unreachable")
        return await super().unfinished_match_ids()


def test_close_closes_the_bot_host_the_manager_made_once(made):
    async def go():
        mgr = MatchManager(config(), store=MemoryStore(), metrics=Metrics())
        await mgr.start()
        bots = [b.name for b in mgr.list_bots()]
        await mgr.close()
        await mgr.close()  # a second close does nothing
        return bots

    assert run(go()) == ["random"]
    assert [h.closed for h in made] == [1]


def test_the_bot_host_is_made_with_the_service_settings(made):
    """docs/operations.md: ``--bot-workers`` and ``--bot-plugin-load-timeout-s`` are the
    engine's, so the bot host the manager makes gets them (and the manager's metrics): made
    without ``load_timeout_s``, it kept its own 30 s whatever the operator set."""
    metrics = Metrics()

    async def go():
        mgr = MatchManager(config(bot_workers=3, bot_plugin_load_timeout_s=7.5), store=MemoryStore(),
                           metrics=metrics)
        await mgr.start()
        await mgr.close()

    run(go())
    assert [h.settings for h in made] == [{"workers": 3, "metrics": metrics, "load_timeout_s": 7.5}]


class FailsToClose(MemoryStore):
    """A store whose close fails (a database that went away: the last commit, the ownership
    lock's release)."""

    async def close(self) -> None:
        await super().close()
        raise StoreError("the database went away")


def test_a_close_whose_store_fails_to_close_still_closes_the_bot_host_it_made(made):
    """The store's failure is close()'s error; the workers stop all the same (as a failed
    start's do): they used to be left running, their host never closed."""
    async def go():
        mgr = MatchManager(config(), store=FailsToClose(), metrics=Metrics())
        await mgr.start()
        with pytest.raises(StoreError, match="went away"):
            await mgr.close()

    run(go())
    assert [h.closed for h in made] == [1]


def test_close_leaves_a_bot_host_it_was_given_open(made):
    given = Host()

    async def go():
        mgr = MatchManager(config(), store=MemoryStore(), bot_host=given, metrics=Metrics())
        await mgr.start()
        await mgr.close()

    run(go())
    assert given.closed == 0 and made == []


@pytest.mark.parametrize("store", [FailsToOpen, FailsToResume])
def test_a_failed_start_closes_the_bot_host_it_made_and_the_next_start_makes_another(made, store):
    """The failed start closes its host and lets it go: a start that follows (the database
    is back) makes a fresh one, rather than use the closed one's dead workers."""
    async def go():
        mgr = MatchManager(config(), store=store(), metrics=Metrics())
        with pytest.raises(StoreError):
            await mgr.start()
        after_failure = [h.closed for h in made]
        await mgr.start()
        try:
            return after_failure, mgr._host
        finally:
            await mgr.close()

    after_failure, host = run(go())
    assert after_failure == [1]
    assert len(made) == 2 and host is made[1]
    assert [h.closed for h in made] == [1, 1]


def test_a_start_refused_for_its_takeover_bot_closes_the_bot_host_it_made(made):
    async def go():
        mgr = MatchManager(config(takeover_bot="nosuch"), store=MemoryStore(), metrics=Metrics())
        with pytest.raises(TakeoverBotUnavailable):
            await mgr.start()
        return mgr.list_bots()

    assert run(go()) == []
    assert [h.closed for h in made] == [1]


@pytest.mark.parametrize("store", [FailsToOpen, FailsToResume])
def test_a_failed_start_leaves_a_bot_host_it_was_given_open(made, store):
    given = Host()

    async def go():
        mgr = MatchManager(config(), store=store(), bot_host=given, metrics=Metrics())
        with pytest.raises(StoreError):
            await mgr.start()

    run(go())
    assert given.closed == 0 and made == []
