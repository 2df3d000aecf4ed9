"""The registry of games by id (``klaberjass``, ``jojotte``, ``georgian_joker``,
``japanese_joker``). Games register themselves when their module is imported; :func:`get_game`
imports the built-in game modules lazily so that ``import engine_service.rules`` stays cheap.

The first use of the registry imports each built-in game's package whole, the modules its
code imports inside functions (views, determinization) included: a module imported at its
first use in a running service is a file opened in the middle of a call, which fails when the
process is out of file descriptors (a GetView answered ``OUT_OF_FILE_DESCRIPTORS`` although
the game was in use), and a first call slower than the rest."""

from __future__ import annotations

import importlib
import pkgutil

from .errors import UnknownGame
from .game import Game

_GAMES: dict[str, Game] = {}

#: Built-in game modules, in the order they are listed to users.
BUILTIN_MODULES = (
    "engine_service.rules.games.klaberjass",
    "engine_service.rules.games.jojotte",
    "engine_service.rules.games.georgian_joker",
    "engine_service.rules.games.japanese_joker",
)
_loaded = False


def register(game: Game) -> Game:
    _GAMES[game.id] = game
    return game


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in BUILTIN_MODULES:
        try:
            package = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a game not written yet is simply absent
            if exc.name != name:
                raise
            continue
        for sub in pkgutil.iter_modules(getattr(package, "__path__", ()), name + "."):
            importlib.import_module(sub.name)


def get_game(game_id: str) -> Game:
    """The game with this id; UnknownGame naming the known ids otherwise."""
    _load_builtins()
    try:
        return _GAMES[game_id]
    except (KeyError, TypeError):
        raise UnknownGame(
            f"unknown game {game_id!r}; known games: {', '.join(all_game_ids())}", game=game_id
        ) from None


def all_game_ids() -> list[str]:
    _load_builtins()
    order = {m.rsplit(".", 1)[1]: i for i, m in enumerate(BUILTIN_MODULES)}
    return sorted(_GAMES, key=lambda g: (order.get(g, len(order)), g))


def all_games() -> list[Game]:
    return [_GAMES[g] for g in all_game_ids()]
