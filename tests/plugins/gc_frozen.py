"""A plugin module whose one bot says whether its worker's garbage collector holds frozen
objects (tests only): the first legal action if it does, the last if not."""

import gc

from engine_service.plugins import BotSpec, hookimpl


class SaysFrozen:
    def decide(self, request):
        return request.legal[0] if gc.get_freeze_count() else request.legal[-1]


@hookimpl
def cardgames_bots():
    return [BotSpec("says-frozen", lambda game_id: SaysFrozen(),
                    description="the first legal action if its worker holds frozen objects")]
