"""The ``random`` bot: a uniformly random legal action, for every game.

The floor every other bot is measured against, and the bot a Georgian Joker session puts in an
absent player's seat by default (so the host treats this plugin as essential). It uses only the
request's seeded RNG, so a seed replays it exactly.
"""

from __future__ import annotations

from engine_service.plugins import ALL_GAMES, BotSpec, DecisionRequest, hookimpl


class RandomBot:
    def decide(self, request: DecisionRequest) -> str:
        return request.rng.choice(request.legal)


def make(game_id: str) -> RandomBot:
    return RandomBot()


@hookimpl
def cardgames_bots() -> list[BotSpec]:
    return [BotSpec("random", make, games=(ALL_GAMES,),
                    description="Plays a uniformly random legal action (seeded).")]
