"""Running one bot decision in the current process, with every bot fault turned into data.

Used inside the bot host's worker processes and directly by the arena. The runner never
raises for a bot's fault: it returns a :class:`Reply` whose ``failure`` says what went wrong
(``exception``, ``illegal``, ``timeout``, ``unknown_bot``). Crashes and hard deadlines can
only be handled from outside the process (see :mod:`engine_service.plugins.pool`).

Nothing a bot says is logged verbatim: an exception message or a garbage answer may contain
cards of the bot's own hand, which a log reader may not see. Failures are described by the
exception type and the bot code location, or by the answer's type.
"""

from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .manager import BotCatalog
from .protocol import Bot, DecisionRequest

TIMEOUT = "timeout"
EXCEPTION = "exception"
ILLEGAL = "illegal"
CRASH = "crash"
UNKNOWN_BOT = "unknown_bot"
FAILURES = (TIMEOUT, EXCEPTION, ILLEGAL, CRASH, UNKNOWN_BOT)


@dataclass(frozen=True)
class Reply:
    """A bot's answer as data: ``action`` (a legal action string) or a ``failure``."""

    action: str | None
    failure: str | None
    detail: str = ""
    elapsed_s: float = 0.0  # wall time inside the bot's decide()
    cpu_s: float = 0.0  # CPU time of that thread meanwhile (what the bot cost, whatever the load)


def describe_exception(exc: BaseException) -> str:
    """``ValueError at mybot.py:12 in decide``: the innermost frame, never the message."""
    tb = traceback.extract_tb(exc.__traceback__)
    if tb:
        frame = tb[-1]
        where = f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno} in {frame.name}"
        return f"{type(exc).__name__} at {where}"
    return type(exc).__name__


def describe_answer(answer: Any) -> str:
    if isinstance(answer, str):
        return f"a string of {len(answer)} characters that is not a legal action"
    return f"a {type(answer).__name__}, not an action string"


class BotRunner:
    """Makes bots from a catalog (one object per bot name and game id) and runs decisions."""

    def __init__(self, catalog: BotCatalog) -> None:
        self.catalog = catalog
        self._bots: dict[tuple[str, str], Bot] = {}

    def bot(self, name: str, game_id: str) -> Bot | None:
        """The bot object for ``name`` playing ``game_id`` (made on first use); None when no
        plugin offers that bot for that game. The factory's own exceptions propagate."""
        key = (name, game_id)
        bot = self._bots.get(key)
        if bot is None:
            entry = self.catalog.get(name)
            if entry is None or not entry.spec.plays(game_id):
                return None
            bot = entry.spec.factory(game_id)
            if not callable(getattr(bot, "decide", None)):
                raise TypeError(f"the factory of bot {name!r} made a {type(bot).__name__}, "
                                "which has no decide() method")
            self._bots[key] = bot
        return bot

    def decide(self, name: str, game_id: str, seat: int, view: Mapping[str, Any],
               legal: Sequence[str], seed: int, budget_s: float, *,
               enforce_budget: bool = False) -> Reply:
        """Ask bot ``name`` for a decision. ``enforce_budget``: an answer that took longer
        than ``budget_s`` is a timeout (in-process hosts cannot interrupt a bot; the worker
        pool kills it instead)."""
        started = time.monotonic()
        try:
            bot = self.bot(name, game_id)
        except Exception as exc:
            return Reply(None, EXCEPTION, "factory: " + describe_exception(exc), time.monotonic() - started)
        if bot is None:
            return Reply(None, UNKNOWN_BOT, f"no bot {name!r} for game {game_id!r}")
        legal_t = tuple(legal)
        request = DecisionRequest(game_id=game_id, seat=seat, view=view, legal=legal_t,
                                  rng=random.Random(seed), budget_s=budget_s, started=started)
        cpu0 = time.thread_time()
        try:
            answer = bot.decide(request)
        except Exception as exc:
            return Reply(None, EXCEPTION, describe_exception(exc), time.monotonic() - started,
                         time.thread_time() - cpu0)
        elapsed = time.monotonic() - started
        cpu = time.thread_time() - cpu0
        if not isinstance(answer, str) or answer not in legal_t:
            return Reply(None, ILLEGAL, describe_answer(answer), elapsed, cpu)
        if enforce_budget and elapsed > budget_s:
            return Reply(None, TIMEOUT, f"answered after {elapsed:.3f}s, budget {budget_s:.3f}s", elapsed, cpu)
        return Reply(answer, None, "", elapsed, cpu)
