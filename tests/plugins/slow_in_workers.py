"""A plugin module whose import hangs in the bot workers' zygote only (tests only): an import
that takes about the load time limit, in time in the engine and not in the zygote, made
deterministic. The zygote runs as ``python -m engine_service.plugins.pool --zygote FD``."""

import sys
import time

from engine_service.plugins import BotSpec, hookimpl

if sys.argv[1:2] == ["--zygote"]:
    time.sleep(3600)


class _First:
    def decide(self, request):
        return request.legal[0]


@hookimpl
def cardgames_bots():
    return [BotSpec("engine-only", lambda game_id: _First()),
            BotSpec("engine-only-too", lambda game_id: _First())]
