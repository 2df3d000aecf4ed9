"""What a bot is: the :class:`Bot` protocol, the :class:`DecisionRequest` it answers and the
:class:`BotSpec` a plugin registers it with.

A bot sees exactly what a human in its seat sees: that seat's view (the rules core's
``state.view(seat)``, a JSON-ready dict), the seat's legal actions as notation strings
(NOTATION.md section 2), a seeded RNG and a time budget. It never sees the full state, so it
cannot cheat, and it answers with one of the legal action strings.

Hosts (the service's :class:`~engine_service.plugins.host.BotHost`, the arena, the remote-bot
client) build the request; the bot only decides. Everything here is plain data so that it
crosses a process boundary unchanged.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

ALL_GAMES = "*"
"""``BotSpec.games`` entry meaning "every game the service has registered"."""


@dataclass(frozen=True)
class DecisionRequest:
    """One decision for one seat.

    ``budget_s`` is the time the bot may spend, measured from ``started`` (``time.monotonic``
    in the process running the bot); the host has already subtracted its own overhead, and
    enforces the real deadline by itself (see docs/bots.md, "Time limits"). A search bot reads
    :meth:`time_left` between iterations.
    """

    game_id: str
    seat: int
    view: Mapping[str, Any]
    legal: tuple[str, ...]
    rng: random.Random
    budget_s: float
    started: float = field(default_factory=time.monotonic)

    def time_left(self) -> float:
        """Seconds left of the budget (negative once it is spent)."""
        return self.budget_s - (time.monotonic() - self.started)


@runtime_checkable
class Bot(Protocol):
    """A bot plays one game. The service's workers call its factory once per game id and
    worker process (that object then serves every match and seat the worker gets); the arena
    makes one object per seat of each match it plays, ``clients/remote_bot.py`` one per match.

    Required: :meth:`decide`. Optional callbacks, called only by hosts that keep one bot
    object for a whole match in one place (the arena and ``clients/remote_bot.py``):

    * ``on_match_start(game_id: str, seat: int, view: Mapping) -> None``
    * ``on_deal_end(view: Mapping) -> None`` (the seat's view right after a deal was scored)
    * ``on_match_end(view: Mapping) -> None``

    The service's bot host runs decisions in a pool of worker processes where one bot object
    serves many matches, so ``decide`` must depend only on its request: the view carries the
    public history a bot needs (trick history, scores, deal results). A callback that raises
    is ignored (``remote_bot`` reports it on stderr, the arena says nothing).
    """

    def decide(self, request: DecisionRequest) -> str:
        """Return one of ``request.legal`` (anything else counts as an illegal answer)."""
        ...


BotFactory = Callable[[str], Bot]
"""Makes a bot for one game id."""


@dataclass(frozen=True)
class BotSpec:
    """A bot offered by a plugin (returned from the ``cardgames_bots`` hook).

    ``name`` is what a match's seat configuration and the ``ListBots`` RPC use: lower-case
    letters, digits, ``-`` and ``_``, starting with a letter or a digit, at most 64
    characters. ``games`` lists the game ids the bot plays, or
    ``("*",)`` for every registered game. ``factory(game_id)`` makes a bot for one game; it
    is never pickled (a lambda is fine): worker processes import the plugin and call its hook
    themselves, and only the request and the reply cross the process boundary.
    """

    name: str
    factory: BotFactory
    games: Sequence[str] = (ALL_GAMES,)
    description: str = ""

    def plays(self, game_id: str) -> bool:
        return ALL_GAMES in self.games or game_id in self.games
