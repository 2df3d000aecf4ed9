"""A bot that computes until the test lets it answer (tests only): it marks that it is
thinking, then spins the CPU until a release file appears or its budget runs out. While it
holds, a test can do anything else and know the decision is still outstanding: a host running
the decision on the engine's event loop (or under its GIL) would stall every match that long.

The directory of the marker files comes from ``HOLDS_DIR`` in the environment, which the bot
workers inherit."""

from __future__ import annotations

import os
from pathlib import Path

from engine_service.plugins import BotSpec, hookimpl

THINKING = "thinking"
RELEASE = "release"


class Holds:
    def decide(self, request):
        where = Path(os.environ["HOLDS_DIR"])
        (where / THINKING).touch()
        release = where / RELEASE
        while not release.exists() and request.time_left() > 0.05:
            pass
        return request.legal[0]


@hookimpl
def cardgames_bots():
    return [BotSpec("holds", lambda game_id: Holds(), description="computes until the test releases it"),
            BotSpec("holds-too", lambda game_id: Holds(), description="another bot that does the same")]
