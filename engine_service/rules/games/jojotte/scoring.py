"""Jo-Jotte deal scoring (jojotte.md section 9) and game / rubber / match arithmetic (section 10).

Pure functions over small values: the state passes what happened in a deal, these return what is
entered where. Kept apart from the state machine so that every scoring rule (and every scoring
option) can be read and tested on its own.
"""

from __future__ import annotations

from typing import NamedTuple

from .options import AWARD_BOTH, AWARD_OWN, Config

NORMAL, SLAM, NULLO = 0, 1, 2
KIND_NAMES = ("normal", "slam", "nullo")
OUTCOME_NAMES = {1: "declarer_more", -1: "defender_more", 0: "tie"}

NULLO_MADE = 200
NULLO_PENALTY_FIRST = 200
NULLO_PENALTY_MORE = 100
SLAM_PREMIUM = 500
UNBID_SLAM = 100
RUBBER_BONUS = 300


class DealScore(NamedTuple):
    """What one played deal enters (before any rubber bonus)."""

    below: tuple[int, int]
    above: tuple[int, int]
    pot: int  # the frozen pot after this deal
    outcome: str | None  # JJ-9.2 comparison: declarer_more / defender_more / tie; None in nullo
    comparison: tuple[int, int] | None  # the compared totals
    pot_to: int | None  # who entered a pending pot in this deal


def score_deal(cfg: Config, kind: int, declarer: int, mult: int, melds: tuple[int, int] | list[int],
               jojotte: tuple[int, int] | list[int], trick_points: tuple[int, int] | list[int],
               tricks: tuple[int, int] | list[int], best_two: tuple[int, int, int, int] | list[int],
               pot: int) -> DealScore:
    """Score a played deal (JJ-9.1 to JJ-9.9 and their options).

    ``best_two`` = (seat 0 best trick, seat 0 second best, seat 1 best, seat 1 second best), the
    JJ-8.2 values with the last-trick 10 included, for JJ-9.3b.
    """
    below = [0, 0]
    above = [0, 0]
    pm = mult if cfg.mult_all else 1  # JJ-A13: premiums multiplied only with jj_multiplier_scope = all

    def premium(seat: int, value: int) -> None:  # JJ-9.9 / JJ-A28
        if cfg.premium_below or cfg.single_column:
            below[seat] += value
        else:
            above[seat] += value

    def above_line(seat: int, value: int) -> None:  # always above (JJ-A27: one column)
        if cfg.single_column:
            below[seat] += value
        else:
            above[seat] += value

    if kind == NULLO:  # JJ-9.7; JJ-8.4: trick points are not counted, the pot is untouched
        nullo_player = 1 - declarer
        k = tricks[nullo_player]
        if k == 0:
            premium(nullo_player, NULLO_MADE * pm)
        else:
            penalty = (NULLO_PENALTY_FIRST + NULLO_PENALTY_MORE * (k - 1)) * pm
            above_line(1 - nullo_player, penalty)
            if cfg.nullo_negative:  # JJ-A29
                above_line(nullo_player, -penalty)
        if cfg.unbid_in_nullo:  # JJ-A37
            for s in (0, 1):
                if tricks[s] == 9:
                    premium(s, UNBID_SLAM * pm)
        if cfg.nullo_melds:  # JJ-A30
            below[0] += melds[0]
            below[1] += melds[1]
        return DealScore((below[0], below[1]), (above[0], above[1]), pot, None, None, None)

    defender = 1 - declarer
    # JJ-9.1: melds and jo-jotte, whatever the outcome, never multiplied.
    for s in (0, 1):
        below[s] += melds[s] + jojotte[s]
    # JJ-9.2: the comparison.
    if cfg.basis_all:
        comp = (melds[0] + jojotte[0] + trick_points[0], melds[1] + jojotte[1] + trick_points[1])
    else:
        comp = (trick_points[0], trick_points[1])
    if comp[declarer] > comp[defender]:
        cmp, winner = 1, declarer
    elif comp[declarer] < comp[defender]:
        cmp, winner = -1, defender
    else:
        cmp, winner = 0, None
    both = trick_points[0] + trick_points[1]
    new_pot = pot
    if mult == 1:
        if not cfg.culbertson:  # JJ-A24 each_scores_own
            below[0] += trick_points[0]
            below[1] += trick_points[1]
        elif cmp > 0:  # JJ-9.3a
            below[declarer] += trick_points[declarer]
        elif cmp < 0:  # JJ-9.3b
            if cfg.defender_award == AWARD_BOTH:
                below[defender] += both
            elif cfg.defender_award == AWARD_OWN:
                below[defender] += trick_points[defender]
            else:
                below[defender] += best_two[2 * defender] + best_two[2 * defender + 1]
        elif cfg.tie_pot:  # JJ-9.3c
            new_pot += both
    else:  # JJ-9.4
        if winner is not None:
            below[winner] += both * mult
        elif cfg.tie_pot:
            new_pot += both * mult
    pot_to = None
    if winner is not None and pot:  # JJ-9.5: the pending pot goes to the comparison winner
        below[winner] += pot
        new_pot = 0
        pot_to = winner
    if kind == SLAM:  # JJ-9.6
        if tricks[declarer] == 9:
            premium(declarer, SLAM_PREMIUM * pm)
        elif cfg.failed_slam_500:
            premium(defender, SLAM_PREMIUM * pm)
        if tricks[defender] == 9:  # JJ-7.4: the slam player's opponent took them all
            premium(defender, UNBID_SLAM * pm)
    else:
        for s in (0, 1):  # JJ-7.4, JJ-9.8
            if tricks[s] == 9:
                premium(s, UNBID_SLAM * pm)
    return DealScore((below[0], below[1]), (above[0], above[1]), new_pot, OUTCOME_NAMES[cmp],
                     comp, pot_to)


def game_winner(cfg: Config, game_points: tuple[int, int] | list[int],
                deal_below: tuple[int, int] | list[int]) -> int | None:
    """JJ-10.1 / JJ-A32: who wins the game after a completely scored deal, if anyone.

    ``game_points`` are the points counting towards the current game (below the line, or every
    entry with ``jj_scoresheet = single_column``) including this deal; ``deal_below`` what each
    entered towards the game in this deal.
    """
    t = cfg.game_target
    a, b = game_points[0] >= t, game_points[1] >= t
    if a and not b:
        return 0
    if b and not a:
        return 1
    if not a:
        return None
    x, y = (game_points if cfg.simult_higher else deal_below)[:2]
    if x == y:
        return None  # equal: play on until a deal ends with them unequal
    return 0 if x > y else 1


def rubber_bonus(cfg: Config, game_winners: tuple[int, ...], winner: int) -> int:
    """JJ-10.3 / JJ-A31: the bonus of the player who has just won the rubber."""
    if cfg.rubber_consecutive and game_winners[-2:] != (winner, winner):
        return 0
    return RUBBER_BONUS


def match_winners(cfg: Config, rubbers_won: tuple[int, int], rubber_totals: tuple[tuple[int, int], ...]) -> list[int]:
    """JJ-10.5 / JJ-A34: the winning seats of a finished match."""
    points = [sum(t[0] for t in rubber_totals), sum(t[1] for t in rubber_totals)]
    if cfg.winner_rubbers and rubbers_won[0] != rubbers_won[1]:
        return [0] if rubbers_won[0] > rubbers_won[1] else [1]
    if points[0] != points[1]:
        return [0] if points[0] > points[1] else [1]
    return [0, 1]
