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

import os
import random
import time
import traceback
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .manager import BotCatalog, time_limit
from .protocol import Bot, DecisionRequest

TIMEOUT = "timeout"
EXCEPTION = "exception"
ILLEGAL = "illegal"
CRASH = "crash"
UNKNOWN_BOT = "unknown_bot"
FAILURES = (TIMEOUT, EXCEPTION, ILLEGAL, CRASH, UNKNOWN_BOT)

#: An in-process bot still running this long past its budget is interrupted (see decide).
INTERRUPT_AFTER = 1.0


class _Interrupted(BaseException):
    """Raised in a bot that overran its budget (BaseException: a bot's ``except Exception``
    must not swallow it)."""


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


def describe_exit(exc: SystemExit) -> str:
    """``SystemExit(3)``: the exit status, never a message (``sys.exit("my hand is AS KS")``
    is the bot speaking), which is described by its type as an answer is."""
    code = exc.code
    if code is None or type(code) is int:
        return f"SystemExit({code!r})"
    return f"SystemExit with {_a(type(code).__name__)}"


def describe_answer(answer: Any) -> str:
    if isinstance(answer, str):
        return f"a string of {len(answer)} characters that is not a legal action"
    return f"{_a(type(answer).__name__)}, not an action string"


def _a(kind: str) -> str:
    """A type's name after its article: ``a dict``, ``an int``."""
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"


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
               enforce_budget: bool = False, in_process: bool = False) -> Reply:
        """Ask bot ``name`` for a decision. ``enforce_budget``: an answer that took longer
        than ``budget_s`` is a timeout. ``in_process`` (the arena: no worker to lose): a
        ``sys.exit`` in the bot (or its factory) is a ``crash`` answer instead of the end of the host, and with
        ``enforce_budget`` a bot still running :data:`INTERRUPT_AFTER` past its budget is
        interrupted (SIGALRM; main thread on Unix only; a timer the caller armed, as
        pytest-timeout's, is put back after) and answers ``timeout``; the worker pool kills its
        workers instead."""
        started = time.monotonic()
        try:
            bot = self.bot(name, game_id)
        except KeyboardInterrupt:
            raise
        except SystemExit as exc:  # the factory is the bot's code: its exit is the bot's (below)
            if not in_process:
                raise
            return Reply(None, CRASH, "factory: " + describe_exit(exc), time.monotonic() - started)
        except BaseException as exc:  # noqa: BLE001 - a BaseException subclass too (below)
            return Reply(None, EXCEPTION, "factory: " + describe_exception(exc), time.monotonic() - started)
        if bot is None:
            return Reply(None, UNKNOWN_BOT, f"no bot {name!r} for game {game_id!r}")
        legal_t = tuple(legal)
        request = DecisionRequest(game_id=game_id, seat=seat, view=view, legal=legal_t,
                                  rng=random.Random(seed), budget_s=budget_s, started=started)
        cpu0 = time.thread_time()
        pid = os.getpid()
        limit = max(0.001, budget_s) + INTERRUPT_AFTER if in_process and enforce_budget else None
        try:
            with time_limit(limit, _Interrupted):
                try:
                    answer = bot.decide(request)
                finally:
                    if os.getpid() != pid:
                        # a copy of this process the bot forked and did not end: it must not go
                        # on as the host (answer on a worker's socket too, where the next
                        # decision, any bot's or match's, read it as its own; play on in an
                        # arena worker)
                        os._exit(0)
        except _Interrupted:
            return Reply(None, TIMEOUT, f"still running {INTERRUPT_AFTER:.1f}s past its budget "
                         f"({budget_s:.3f}s): interrupted", time.monotonic() - started,
                         time.thread_time() - cpu0)
        except SystemExit as exc:
            if not in_process:
                raise  # a worker process ends: the pool reports a crash
            return Reply(None, CRASH, describe_exit(exc), time.monotonic() - started,
                         time.thread_time() - cpu0)
        except KeyboardInterrupt:
            raise  # the user's Ctrl-C in the arena (a worker ignores SIGINT: there it is a crash)
        except BaseException as exc:  # noqa: BLE001
            # not only Exception: a bot's own BaseException subclass (asyncio.CancelledError,
            # GeneratorExit...) is a raise like any other, not the end of the arena (with a
            # traceback naming the bot's cards) or of a worker
            return Reply(None, EXCEPTION, describe_exception(exc), time.monotonic() - started,
                         time.thread_time() - cpu0)
        elapsed = time.monotonic() - started
        cpu = time.thread_time() - cpu0
        if isinstance(answer, str):
            # a str subclass (numpy.str_, a str Enum, or one whose __eq__ says True to every
            # action) is compared and passed on as the plain string it holds: `in` would take
            # its own __eq__, and the object itself would reach the engine (pickled, then
            # written to the match log and applied) as something other than a legal action
            answer = str.__str__(answer)
        if not isinstance(answer, str) or answer not in legal_t:
            return Reply(None, ILLEGAL, describe_answer(answer), elapsed, cpu)
        if enforce_budget and elapsed > budget_s:
            return Reply(None, TIMEOUT, f"answered after {elapsed:.3f}s, budget {budget_s:.3f}s", elapsed, cpu)
        return Reply(answer, None, "", elapsed, cpu)
