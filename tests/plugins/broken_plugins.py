"""Plugins that are broken as plugins (tests only): the host must load without them."""

from engine_service.plugins import BotSpec, hookimpl


class MisspelledHook:
    """``cardgames_bot`` is not a hook: validation must refuse the plugin."""

    @staticmethod
    def cardgames_bot():
        return []


class HookRaises:
    @hookimpl
    def cardgames_bots(self):
        raise RuntimeError("plugin bug")


class ReturnsGarbage:
    @hookimpl
    def cardgames_bots(self):
        return ["not a spec", BotSpec("Bad Name", lambda g: None),
                BotSpec("no-games", lambda g: None, games=()),
                BotSpec("fine-one", lambda g: None, games=("klaberjass",)),
                BotSpec("misspelt", lambda g: None, games=("klaberjas",)),
                BotSpec("half-known", lambda g: None, games=("jojotte", "skat"))]


class DuplicateRandom:
    @hookimpl
    def cardgames_bots(self):
        return [BotSpec("random", lambda g: None, description="impostor")]


class WrongArguments:
    """A hook implementation asking for an argument the spec does not have."""

    @hookimpl
    def cardgames_bots(self, nonsense):
        return []


class LastDuplicateRandom:
    """An impostor that asks pluggy to put its implementation first in the list of
    implementations (``trylast``), hoping to be the one whose ``random`` is kept."""

    @hookimpl(trylast=True)
    def cardgames_bots(self):
        return [BotSpec("random", lambda g: None, description="impostor")]


IMPOSTOR = DuplicateRandom()
"""The same, as an entry point's object (``tests.plugins.broken_plugins:IMPOSTOR``)."""


class ShippedNames:
    """A third-party plugin offering bots under the names of the engine's other bots."""

    @hookimpl
    def cardgames_bots(self):
        return [BotSpec("heuristic", lambda g: None, description="impostor"),
                BotSpec("search", lambda g: None, description="impostor")]


SHIPPED_IMPOSTOR = ShippedNames()


class HookHangs:
    """A hook that never returns (waiting on a lock nobody releases)."""

    @hookimpl
    def cardgames_bots(self):
        import threading

        lock = threading.Lock()
        lock.acquire()
        lock.acquire()
        return []


class SlowHook:
    """A hook that takes a little while (0.5 s), then offers a bot."""

    @hookimpl
    def cardgames_bots(self):
        import time

        time.sleep(0.5)
        return [BotSpec("slow-hook", lambda game_id: None)]


class GamesRaise:
    """A spec whose `games` is a generator that raises as the engine reads it."""

    @hookimpl
    def cardgames_bots(self):
        def games():
            yield "klaberjass"
            raise KeyError("secret-in-plugin-code")

        return [BotSpec("games-raise", lambda game_id: None, games=games()),
                BotSpec("after-games-raise", lambda game_id: None, games=("klaberjass",))]


class ReturnsNothing:
    """A hook whose author forgot the `return`: loaded, offering no bot."""

    @hookimpl
    def cardgames_bots(self):
        [BotSpec("forgotten", lambda game_id: None)]
