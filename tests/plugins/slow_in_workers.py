"""A plugin module whose import hangs in the bot workers' zygote only (tests only): an import
that takes about the load time limit, in time in the engine and not in the zygote, made
deterministic. The zygote runs as ``python -m engine_service.plugins.pool --zygote FD``."""

import sys
import time

from engine_service.plugins import BotSpec, hookimpl
from tests.plugins.first_legal import FirstLegal

if sys.argv[1:2] == ["--zygote"]:
    time.sleep(3600)


@hookimpl
def cardgames_bots():
    return [BotSpec("engine-only", lambda game_id: FirstLegal()),
            BotSpec("engine-only-too", lambda game_id: FirstLegal())]
