"""A plugin module that makes every bot worker take 4 s to start (tests only): the zygote,
which imports it, forks the workers, and each child sleeps first (``os.register_at_fork``).
A worker start-up slower than a decision deadline of 3 s, made deterministic (a real one
takes a fraction of that, more on a loaded machine). The zygote runs as
``python -m engine_service.plugins.pool --zygote FD``."""

import os
import sys
import time

from engine_service.plugins import BotSpec, hookimpl
from tests.plugins.first_legal import FirstLegal

WORKER_START_S = 4.0

if sys.argv[1:2] == ["--zygote"]:
    os.register_at_fork(after_in_child=lambda: time.sleep(WORKER_START_S))


@hookimpl
def cardgames_bots():
    return [BotSpec("slow-start-first", lambda game_id: FirstLegal())]
