"""A plugin module whose import raises in the bot workers' zygote only (tests only), with a
message that must not reach ListBots. The zygote runs as ``python -m engine_service.plugins.pool
--zygote FD``."""

import sys

from engine_service.plugins import BotSpec, hookimpl
from tests.plugins.first_legal import FirstLegal

if sys.argv[1:2] == ["--zygote"]:
    raise RuntimeError("the zygote's secret: s3cret-in-the-message")


@hookimpl
def cardgames_bots():
    return [BotSpec("engine-side-only", lambda game_id: FirstLegal())]
