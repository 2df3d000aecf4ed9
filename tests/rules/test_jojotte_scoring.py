"""Jo-Jotte deal scoring (jojotte.md section 9) and game / rubber / match arithmetic (section 10),
with every scoring table option, on the pure functions of ``scoring``."""

from __future__ import annotations

from engine_service.rules.games.jojotte.options import Config
from engine_service.rules.games.jojotte.scoring import (NORMAL, NULLO, SLAM, game_winner, match_winners,
                                                        rubber_bonus, score_deal)

from .checks_jojotte import GAME


def cfg(**options):
    return Config(GAME.options(options))


def score(c=None, kind=NORMAL, declarer=1, mult=1, melds=(0, 0), jj=(0, 0), tp=(0, 0), tricks=(4, 5),
          best=(0, 0, 0, 0), pot=0):
    return score_deal(c or cfg(), kind, declarer, mult, melds, jj, tp, tricks, best, pot)


# ---- JJ-9.1 to JJ-9.3: undoubled -----------------------------------------------------------

def test_JJ_9_3a_declarer_more_enters_his_trick_points_melds_always():
    s = score(melds=(20, 40), jj=(0, 20), tp=(50, 45))
    # comparison: defender 20 + 50 = 70, declarer 40 + 20 + 45 = 105
    assert s.outcome == "declarer_more" and s.comparison == (70, 105)
    assert s.below == (20, 40 + 20 + 45) and s.above == (0, 0) and s.pot == 0


def test_JJ_9_3b_defender_more_enters_his_two_best_tricks():
    s = score(tp=(90, 40), best=(35, 25, 20, 10))
    assert s.outcome == "defender_more"
    assert s.below == (60, 0)


def test_JJ_9_3b_single_trick_and_no_trick():
    assert score(melds=(0, 0), tp=(30, 20), best=(30, 0, 20, 0)).below == (30, 0)
    # the defender wins on melds alone with no trick (all_points basis)
    s = score(melds=(200, 0), tp=(0, 150), best=(0, 0, 40, 30), tricks=(0, 9))
    assert s.outcome == "defender_more" and s.below == (200, 0)


def test_JJ_9_3c_tie_freezes_both_trick_points():
    s = score(melds=(20, 0), tp=(40, 60))
    assert s.outcome == "tie" and s.below == (20, 0) and s.pot == 100


def test_JJ_9_2_outcome_counts_melds_and_jojotte():
    s = score(melds=(0, 20), jj=(20, 0), tp=(40, 40))
    assert s.outcome == "tie" and s.pot == 80


# ---- JJ-9.4: doubled and redoubled -----------------------------------------------------------

def test_JJ_9_4_doubled_winner_enters_both_trick_points_times_two():
    s = score(mult=2, tp=(70, 30), best=(30, 20, 10, 10))
    assert s.outcome == "defender_more" and s.below == (200, 0)
    s = score(mult=4, tp=(30, 70))
    assert s.below == (0, 400)


def test_JJ_9_1_doubled_melds_and_jojotte_are_entered_once_never_multiplied():
    """JJ-9.1 with JJ-9.4 (JJ-9.9 table): redoubled, the winner's melds and jo-jotte are entered
    as they are; only the trick points are x 4."""
    s = score(mult=4, melds=(20, 100), jj=(0, 20), tp=(30, 70))
    assert s.outcome == "declarer_more" and s.below == (20, 100 + 20 + 100 * 4)


def test_JJ_9_4_doubled_tie_pot_is_multiplied():
    s = score(mult=2, tp=(50, 50))
    assert s.pot == 200 and s.below == (0, 0)


# ---- JJ-9.5: the frozen pot ------------------------------------------------------------------

def test_JJ_9_5_pot_goes_to_the_comparison_winner_of_the_next_decided_deal():
    s = score(tp=(10, 90), melds=(100, 0), pot=70)  # defender 110 > declarer 90
    assert s.outcome == "defender_more" and s.pot_to == 0
    assert s.below[0] == 100 + 0 + 70 and s.pot == 0


def test_JJ_9_5_a_doubled_deal_settles_the_pot_too_as_frozen():
    """JJ-9.5, JJ-9.9 ("as frozen"): the winner of a doubled deal's comparison enters the pending
    pot unmultiplied on top of his doubled trick points."""
    s = score(mult=2, tp=(70, 30), pot=70)
    assert s.outcome == "defender_more" and s.pot_to == 0
    assert s.below == (100 * 2 + 70, 0) and s.pot == 0


def test_JJ_9_5_without_a_pending_pot_nobody_enters_one():
    """JJ-9.5: ``pot_to`` names who entered a pending pot in this deal; a decided deal with no
    pot pending enters none, whichever side wins the comparison."""
    assert score(melds=(20, 40), tp=(50, 45)).pot_to is None
    assert score(tp=(90, 40), best=(35, 25, 20, 10)).pot_to is None
    assert score(mult=2, tp=(70, 30)).pot_to is None


def test_JJ_9_5_a_further_tie_adds_to_the_pot_and_nullo_leaves_it():
    assert score(tp=(30, 30), pot=70).pot == 130
    s = score(kind=NULLO, tricks=(0, 9), pot=70)
    assert s.pot == 70 and s.below == (0, 0)


# ---- JJ-9.6: slam --------------------------------------------------------------------------

def test_JJ_9_6_slam_made_500_above_plus_normal_scoring():
    s = score(kind=SLAM, tp=(0, 150), tricks=(0, 9))
    assert s.below == (0, 150) and s.above == (0, 500)


def test_JJ_9_6_slam_failed_500_to_the_opponent_and_his_unbid_slam():
    s = score(kind=SLAM, tp=(20, 130), tricks=(1, 8))
    assert s.above == (500, 0)
    s = score(kind=SLAM, tp=(150, 0), tricks=(9, 0), best=(30, 30, 0, 0))
    assert s.above == (600, 0)  # failed slam 500 + the opponent's unbid slam 100


def test_JJ_9_7_nullo_made_200_and_failed_penalties():
    s = score(kind=NULLO, declarer=1, tricks=(0, 9), melds=(40, 0))
    assert s.above == (200, 0) and s.below == (0, 0) and s.outcome is None
    s = score(kind=NULLO, declarer=1, tricks=(1, 8))
    assert s.above == (0, 200)
    s = score(kind=NULLO, declarer=1, tricks=(3, 6), mult=4)
    assert s.above == (0, 400)  # 200 + 100 + 100, the multiplier ignored


def test_JJ_9_8_unbid_slam_100_above_in_a_normal_contract_either_player():
    assert score(tp=(150, 0), tricks=(9, 0), best=(30, 30, 0, 0)).above == (100, 0)
    assert score(tp=(0, 150), tricks=(0, 9)).above == (0, 100)


# ---- scoring options --------------------------------------------------------------------------

def test_option_outcome_basis_trick_points():
    c = cfg(jj_outcome_basis="trick_points")
    s = score(c, melds=(0, 100), tp=(60, 40), best=(30, 30, 20, 20))
    assert s.outcome == "defender_more" and s.below == (60, 100)


def test_option_undoubled_each_scores_own_no_pot_no_two_best():
    c = cfg(jj_undoubled_scoring="each_scores_own")
    assert score(c, tp=(90, 40), best=(35, 25, 20, 10)).below == (90, 40)
    s = score(c, tp=(50, 50))
    assert s.below == (50, 50) and s.pot == 0
    assert score(c, mult=2, tp=(70, 30)).below == (200, 0)  # doubled deals unchanged


def test_option_defender_win_award():
    both = cfg(jj_defender_win_award="both_trick_points")
    own = cfg(jj_defender_win_award="own_trick_points")
    assert score(both, tp=(90, 40), best=(35, 25, 20, 10)).below == (130, 0)
    assert score(own, tp=(90, 40), best=(35, 25, 20, 10)).below == (90, 0)


def test_option_tie_rule_void():
    c = cfg(jj_tie_rule="void")
    s = score(c, tp=(50, 50), pot=0)
    assert s.pot == 0 and s.below == (0, 0)
    assert score(c, mult=2, tp=(50, 50)).pot == 0


def test_option_scoresheet_single_column_puts_everything_in_one_column():
    c = cfg(jj_scoresheet="single_column")
    s = score(c, kind=SLAM, tp=(0, 150), tricks=(0, 9))
    assert s.below == (0, 650) and s.above == (0, 0)
    s = score(c, kind=NULLO, declarer=1, tricks=(2, 7))
    assert s.below == (0, 300) and s.above == (0, 0)


def test_option_premium_line_below_but_nullo_penalties_stay_above():
    c = cfg(jj_premium_line="below")
    assert score(c, kind=SLAM, tp=(0, 150), tricks=(0, 9)).below == (0, 650)
    # the defender takes all nine: his two best tricks 60, plus the unbid slam 100, below
    assert score(c, tp=(150, 0), tricks=(9, 0), best=(30, 30, 0, 0)).below == (160, 0)
    assert score(c, kind=NULLO, declarer=1, tricks=(0, 9)).below == (200, 0)
    s = score(c, kind=NULLO, declarer=1, tricks=(1, 8))
    assert s.above == (0, 200) and s.below == (0, 0)


def test_option_nullo_penalty_negative():
    c = cfg(jj_nullo_penalty_negative=True)
    assert score(c, kind=NULLO, declarer=1, tricks=(2, 7)).above == (-300, 300)


def test_option_nullo_melds_are_credited():
    c = cfg(jj_nullo_melds=True)
    s = score(c, kind=NULLO, declarer=1, tricks=(0, 9), melds=(40, 100))
    assert s.below == (40, 100) and s.above == (200, 0)


def test_option_multiplier_scope_all_multiplies_premiums():
    c = cfg(jj_multiplier_scope="all")
    assert score(c, kind=SLAM, mult=2, tp=(0, 150), tricks=(0, 9)).above == (0, 1000)
    assert score(c, kind=NULLO, mult=4, tricks=(0, 9)).above == (800, 0)
    assert score(c, kind=NULLO, mult=2, tricks=(2, 7)).above == (0, 600)


def test_option_multiplier_scope_all_multiplies_a_lost_slams_premiums_to_the_opponent():
    """JJ-A13 (scope all) with JJ-9.6 and JJ-7.4: the redoubled slam player (seat 1) takes no
    trick: his opponent's 500 for the lost slam and 100 for his own unbid slam are both x 4."""
    c = cfg(jj_multiplier_scope="all")
    s = score(c, kind=SLAM, mult=4, tp=(150, 0), tricks=(9, 0), best=(30, 30, 0, 0))
    assert s.above == ((500 + 100) * 4, 0)


def test_option_multiplier_scope_all_multiplies_an_unbid_slam_in_a_normal_contract():
    """JJ-A13 (scope all) with JJ-9.8: a doubled normal contract's unbid slam is 100 x 2 above;
    under the default scope it stays 100."""
    assert score(cfg(jj_multiplier_scope="all"), mult=2, tp=(0, 150), tricks=(0, 9)).above == (0, 200)
    assert score(mult=2, tp=(0, 150), tricks=(0, 9)).above == (0, 100)


def test_option_failed_slam_none():
    c = cfg(jj_failed_slam="none")
    assert score(c, kind=SLAM, tp=(20, 130), tricks=(1, 8)).above == (0, 0)


def test_option_unbid_slam_in_nullo():
    c = cfg(jj_unbid_slam_in_nullo=True)
    assert score(c, kind=NULLO, declarer=1, tricks=(0, 9)).above == (200, 100)
    # the nullo player (seat 0) took all nine: penalty 200 + 8 x 100 to seat 1, 100 to him
    assert score(c, kind=NULLO, declarer=1, tricks=(9, 0)).above == (100, 1000)


def test_JJ_A28_A37_unbid_slam_in_nullo_goes_below_with_the_premiums():
    """JJ-A37 with JJ-A28 (``jj_premium_line = below``: nullo 200, slam 500, failed slam 500 and
    unbid slam 100 below): a made nullo's 200 and the opponent's 100 for his nine tricks are both
    entered below; only the nullo penalties stay above (docs: documented choice 10)."""
    c = cfg(jj_unbid_slam_in_nullo=True, jj_premium_line="below")
    s = score(c, kind=NULLO, declarer=1, tricks=(0, 9))
    assert s.below == (200, 100) and s.above == (0, 0)
    # the nullo player (seat 0) took all nine: his 100 below, the 1000 penalty above for seat 1
    s = score(c, kind=NULLO, declarer=1, tricks=(9, 0))
    assert s.below == (100, 0) and s.above == (0, 1000)


def test_JJ_A13_A37_unbid_slam_in_a_doubled_nullo_multiplied_with_scope_all():
    # JJ-A13 (scope all: unbid-slam premium multiplied) with JJ-A37: a doubled nullo made by
    # seat 0 gives him 200 x 2 = 400 and seat 1, who took all nine, 100 x 2 = 200 above
    c = cfg(jj_multiplier_scope="all", jj_unbid_slam_in_nullo=True)
    assert score(c, kind=NULLO, declarer=1, mult=2, tricks=(0, 9)).above == (400, 200)


# ---- JJ-10: game, rubber, match -----------------------------------------------------------

def test_JJ_10_1_game_target_and_simultaneous_games():
    c = cfg()
    assert game_winner(c, (80, 10), (30, 10)) == 0
    assert game_winner(c, (79, 10), (30, 10)) is None
    assert game_winner(c, (90, 120), (50, 20)) == 1  # both: the higher total
    assert game_winner(c, (90, 90), (50, 20)) is None  # equal: play on
    d = cfg(jj_simultaneous_game="deal_winner")
    assert game_winner(d, (90, 120), (50, 20)) == 0
    assert game_winner(d, (90, 120), (20, 20)) is None
    assert game_winner(cfg(jj_game_target=150), (149, 0), (149, 0)) is None


def test_JJ_10_1_one_player_reaching_the_target_wins_whatever_the_deal_and_the_option():
    """JJ-10.1: a game is won by the first player to reach 80; JJ-A32's tie-breaks (higher
    total, or ``deal_winner``: who entered more in the deal) apply only when both reach it in
    the same deal. Seat 0 reaching 85 alone wins although seat 1 entered more in this deal."""
    for c in (cfg(), cfg(jj_simultaneous_game="deal_winner")):
        assert game_winner(c, (85, 10), (5, 10)) == 0
        assert game_winner(c, (10, 85), (10, 5)) == 1


def test_JJ_10_3_rubber_bonus_and_two_consecutive_option():
    assert rubber_bonus(cfg(), (1, 0, 0), 0) == 300
    c = cfg(jj_rubber_bonus_condition="two_consecutive")
    assert rubber_bonus(c, (0, 0), 0) == 300
    assert rubber_bonus(c, (1, 0, 0), 0) == 300
    assert rubber_bonus(c, (0, 1, 0), 0) == 0


def test_JJ_10_5_match_winner_rubbers_then_points_then_both():
    c = cfg(jj_match_rubbers=3)
    assert match_winners(c, (2, 1), ((500, 100), (100, 900), (400, 100))) == [0]
    c = cfg(jj_match_rubbers=2)
    assert match_winners(c, (1, 1), ((500, 100), (100, 900))) == [1]
    assert match_winners(c, (1, 1), ((500, 100), (100, 500))) == [0, 1]
    p = cfg(jj_match_winner="points", jj_match_rubbers=3)
    assert match_winners(p, (2, 1), ((500, 100), (100, 900), (400, 100))) == [1]
