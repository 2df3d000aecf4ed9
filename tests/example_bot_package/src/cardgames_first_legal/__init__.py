"""A bot in ten lines: the example of docs/bots.md."""

from engine_service.plugins import BotSpec, hookimpl


class FirstLegal:
    def decide(self, request):
        return request.legal[0]


@hookimpl
def cardgames_bots():
    return [BotSpec("first-legal", lambda game_id: FirstLegal(), description="Plays the first legal action.")]
