"""The ``heuristic`` bot: hand-written play for each game, from the seat's view only.

One module per game (``bot_plugins.heuristic.<game_id>``) with a ``make()`` returning an object
with ``decide(request)``; the plugin offers the bot for the games whose module exists.
"""

from __future__ import annotations

import importlib

from engine_service.plugins import BotSpec, hookimpl

GAMES = ("klaberjass", "jojotte", "georgian_joker", "japanese_joker")


def _available() -> tuple[str, ...]:
    out = []
    for g in GAMES:
        try:
            importlib.import_module(f"{__name__}.{g}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{g}":
                raise
            continue
        out.append(g)
    return tuple(out)


def make(game_id: str):
    return importlib.import_module(f"{__name__}.{game_id}").make()


@hookimpl
def cardgames_bots() -> list[BotSpec]:
    return [BotSpec("heuristic", make, games=_available(),
                    description="Hand-written strategy per game from the seat's view: bidding "
                                "and trump choice by hand strength, melds and bonuses, trump "
                                "management, cheapest winning card.")]
