"""A plugin module whose import ends the bot workers' zygote at once (tests only): the zygote
dies before it reports the bots it loaded. A fresh-interpreter worker (``--worker``) and the
engine load it as usual. The zygote runs as ``python -m engine_service.plugins.pool --zygote FD``."""

import os
import sys

from engine_service.plugins import BotSpec, hookimpl
from tests.plugins.first_legal import FirstLegal

if sys.argv[1:2] == ["--zygote"]:
    os._exit(3)


@hookimpl
def cardgames_bots():
    return [BotSpec("no-zygote", lambda game_id: FirstLegal())]
