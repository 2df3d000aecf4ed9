"""A bot that thinks with the CPU for its whole budget (tests only): what a host running a
bot's decision on the engine's event loop would block every match for, as long as that."""

from __future__ import annotations

from engine_service.plugins import BotSpec, hookimpl


class Spins:
    def decide(self, request):
        while request.time_left() > 0.05:
            pass
        return request.legal[0]


@hookimpl
def cardgames_bots():
    return [BotSpec("spins", lambda game_id: Spins(), description="spends its whole budget computing")]
