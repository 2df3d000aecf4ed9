"""A plugin module whose one bot plays Klaberjass only (tests only): a command asked to seat it
in another game must refuse before anything else."""

from engine_service.plugins import BotSpec, hookimpl

from .first_legal import FirstLegal


@hookimpl
def cardgames_bots():
    return [BotSpec("klaberjass-only", lambda game_id: FirstLegal(), games=("klaberjass",),
                    description="the first legal action, in Klaberjass only")]
