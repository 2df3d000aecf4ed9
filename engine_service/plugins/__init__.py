"""The bot plugin host (ARCHITECTURE.md section 2): hookspecs (the bot author's manual), the
plugin manager, the Bot protocol and deadline-bound bot execution.

A plugin imports only from here::

    from engine_service.plugins import hookimpl, BotSpec, DecisionRequest
"""

import pluggy

from .hookspecs import ENTRY_POINT_GROUP, PROJECT, hookspec  # noqa: F401
from .protocol import ALL_GAMES, Bot, BotFactory, BotSpec, DecisionRequest  # noqa: F401

__all__ = ["ALL_GAMES", "Bot", "BotFactory", "BotSpec", "DecisionRequest", "ENTRY_POINT_GROUP",
           "PROJECT", "hookimpl", "hookspec"]

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marker for hook implementations: ``@hookimpl def cardgames_bots(): ...``."""
