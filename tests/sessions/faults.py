"""What the seeded fuzzes of the session layer share (tests/sessions/test_seat_lifecycle_fuzz.py,
tests/sessions/test_play_fuzz.py): a store wrapper that fails chosen writes, before or after
they are durable, and now and then the read-backs after them; and a seeded bot host."""

from __future__ import annotations

import asyncio
import collections
import random
from types import SimpleNamespace
from typing import Mapping

import pytest

from engine_service.sessions.api import BotInfo
from engine_service.store import StoreError

from .helpers import GAMES


class FaultyStore:
    """A store that fails chosen writes while ``active``: before the write, or after it
    (durable, answered with an error); either way, now and then the next one or two reads
    (``load_match``: the read-back) fail too. Every call yields to the event loop a random
    number of times before and after, so that requests interleave.

    ``p``: the chance that a write fails; ``weights``: a multiplier per write (0: never
    fails); ``first_fails``: writes whose first call while active fails whatever the draw, for
    a fuzz that must exercise a rare write's failure however the event loop interleaved its
    calls (the draws are seeded, but which call meets which draw depends on timing).
    ``faults`` counts (write, before/after, reads failing after it)."""

    WRITES = ("save_seat", "start_match", "set_status", "append_decks", "append_action")

    def __init__(self, inner, rng: random.Random, p: float = 0.3,
                 weights: Mapping[str, float] | None = None, first_fails: tuple[str, ...] = ()) -> None:
        self.inner, self.rng, self.p = inner, rng, p
        self.weights = dict(weights) if weights is not None else {"start_match": 1.5, "append_action": 0.0}
        self.first_fails = set(first_fails)
        self.active = False
        self.unreadable = 0
        self.faults: collections.Counter = collections.Counter()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def _jitter(self) -> None:
        for _ in range(self.rng.randrange(3)):
            await asyncio.sleep(0)

    async def _write(self, name, call):
        await self._jitter()
        forced = self.active and name in self.first_fails
        if forced:
            self.first_fails.discard(name)
        if self.active and (forced or self.rng.random() < self.p * self.weights.get(name, 1.0)):
            mode = self.rng.choice(("before", "after"))
            if self.rng.random() < 0.4:
                self.unreadable = self.rng.randint(1, 2)
            self.faults[name, mode, self.unreadable > 0] += 1
            if mode == "after":
                await call()
            await self._jitter()
            raise StoreError(f"injected failure of {name} ({mode} the write)")
        result = await call()
        await self._jitter()
        return result

    async def save_seat(self, match_id, seat):
        return await self._write("save_seat", lambda: self.inner.save_seat(match_id, seat))

    async def start_match(self, match_id, seats=(), decks=()):
        return await self._write("start_match", lambda: self.inner.start_match(match_id, seats, decks))

    async def set_status(self, match_id, status, result=None, ended_at=None, deal_commitments=()):
        return await self._write("set_status", lambda: self.inner.set_status(
            match_id, status, result, ended_at, deal_commitments))

    async def append_decks(self, match_id, decks):
        return await self._write("append_decks", lambda: self.inner.append_decks(match_id, decks))

    async def append_action(self, match_id, action, decks=(), end=None):
        return await self._write("append_action", lambda: self.inner.append_action(match_id, action, decks, end))

    async def load_match(self, match_id):
        await self._jitter()
        if self.active and self.unreadable > 0:
            self.unreadable -= 1
            self.faults["load_match", "read", True] += 1
            raise StoreError("injected failure of load_match")
        return await self.inner.load_match(match_id)


class RandomBots:
    """A bot host whose bot ``rnd`` plays a random legal action (seeded)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def bots(self):
        return [BotInfo("rnd", tuple(GAMES), "random legal actions")]

    def plays(self, bot, game_id):
        return bot == "rnd"

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        await asyncio.sleep(0)
        return SimpleNamespace(action=self.rng.choice(list(legal)), failure=None, elapsed_s=0.001)

    async def close(self):
        pass


class FuzzBase:
    """What the session fuzzes share: the manager under test, its faulty store, one seeded
    random source for every choice, the problems found and the operations counted, and the
    interleaving of the clients' loops."""

    def __init__(self, mgr, store: FaultyStore, rng: random.Random) -> None:
        self.mgr, self.store, self.rng = mgr, store, rng
        self.problems: list[str] = []
        self.tables: list = []  # the subclass's tables: each has match_id and trace
        self.ops: collections.Counter = collections.Counter()

    def problem(self, t, text: str) -> None:
        self.problems.append(f"{t.game} {t.match_id}: {text}")

    async def step(self, t, c) -> bool:
        """One request of client ``c`` at table ``t``; False ends its loop."""
        raise NotImplementedError

    async def pause(self, most: int) -> None:
        """Let the others go first a random number of times (event-loop steps, not time: the
        interleaving follows the seed, not the machine's speed, on the memory store)."""
        for _ in range(self.rng.randrange(most)):
            await asyncio.sleep(0)

    async def client_loop(self, t, c, steps: int) -> None:
        for _ in range(steps):
            await self.pause(4)
            if not await self.step(t, c):
                return

    def fail_on_problems(self, stats: dict) -> None:
        """Fail the test with the problems found, the run's figures and the requests of the
        first problem's match (its last 40)."""
        if self.problems:
            first = next((t for t in self.tables if t.match_id in self.problems[0]), None)
            story = "\n".join(first.trace[-40:]) if first else ""
            pytest.fail("\n".join(self.problems[:30]) + f"\n{stats}\nthe first one's requests:\n{story}")


def faults_by_write(stats: dict) -> collections.Counter:
    """The faults injected, per (write, before / after), whatever their read-backs did."""
    faults: collections.Counter = collections.Counter()
    for (name, mode, _unreadable), n in stats["faults"].items():
        faults[name, mode] += n
    return faults
