"""A bot that writes down the request it was given (tests only): one JSON line per decision,
appended to the file TELLS_ITS_REQUEST names, with the game id, seat, view and legal actions
it got, the first number its RNG drew and its budget; it answers the last legal action."""

from __future__ import annotations

import json
import os

from engine_service.plugins import BotSpec, hookimpl


class TellsItsRequest:
    def decide(self, request):
        told = {"game": request.game_id, "seat": request.seat, "view": dict(request.view),
                "legal": list(request.legal), "draw": request.rng.random(),
                "budget_s": request.budget_s}
        with open(os.environ["TELLS_ITS_REQUEST"], "a") as f:
            f.write(json.dumps(told) + "\n")
        return request.legal[-1]


@hookimpl
def cardgames_bots():
    return [BotSpec("tells-its-request", lambda game_id: TellsItsRequest(),
                    description="writes down its request")]
