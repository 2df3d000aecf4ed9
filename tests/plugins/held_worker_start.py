"""A plugin module whose bot workers do not start until the test lets them (tests only): the
zygote, which imports it, forks the workers, and each child first waits
(``os.register_at_fork``) for the file named by ``$HELD_WORKER_START_GATE`` to exist (a name
outside the engine's ``CARDGAMES_`` variables, which the workers do not get), at most
:data:`MAX_HOLD_S` (a test that never lets them go does not hang). A worker start-up that
lasts as long as the test wants, whatever the machine's load (a real one takes a fraction of
a second, more on a loaded machine). The zygote runs as
``python -m engine_service.plugins.pool --zygote FD``."""

import os
import sys
import time

from engine_service.plugins import BotSpec, hookimpl
from tests.plugins.first_legal import FirstLegal

GATE_ENV = "HELD_WORKER_START_GATE"
MAX_HOLD_S = 30.0


def _held() -> None:
    gate = os.environ.get(GATE_ENV, "")
    deadline = time.monotonic() + MAX_HOLD_S
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.005)


if sys.argv[1:2] == ["--zygote"]:
    os.register_at_fork(after_in_child=_held)


@hookimpl
def cardgames_bots():
    return [BotSpec("held-start-first", lambda game_id: FirstLegal())]
