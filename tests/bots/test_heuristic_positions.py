"""The heuristic bot on fixed positions: decisions a club player would call blunders.

Each test rigs a deal (``tests/bots/positions.py``), asks the bot for the seat to act and
states what it must (or must not) choose, with the rule that makes the other choice a blunder.
"""

from __future__ import annotations

from bot_plugins.heuristic import make
from tests.bots.positions import deal, played, request


def decide(game_id: str, state) -> str:
    return make(game_id).decide(request(state))


# ---- Georgian Joker --------------------------------------------------------------------------

def test_gj_one_small_trump_in_a_one_card_deal_is_a_pass():
    # deal 1 (one card each), trump hearts (indicator TH, GJ-3.3); the forehand holds the six
    # of trumps: seven higher trumps and both jokers are out, so it wins well under half the
    # time, and a bid of 1 that takes nothing is a khishti, -200 (GJ-7.4), against +50 for a
    # made pass (GJ-7.2). Its "voids" in three suits are no ruffing chances with one card.
    state = deal("georgian_joker", {1: ["6H"]}, fixed={4: "TH"}, first_dealer=0)
    assert state.to_act() == 1
    assert decide("georgian_joker", state) == "bid:0"


def test_gj_two_small_trumps_in_a_two_card_deal_are_not_two_tricks():
    # deal 2, trump diamonds (indicator 9D); the 7 and 8 of trumps, five higher trumps and both
    # jokers out. Each trump ruffs at most once: bidding 2 (both tricks, GJ-7.1) is hopeless.
    state = deal("georgian_joker", {0: ["7D", "8D"]}, fixed={8: "9D"}, first_dealer=2, deal_number=2)
    assert state.to_act() == 0 and state.view(0)["hand"] == ["8D", "7D"]
    assert decide("georgian_joker", state) in ("bid:0", "bid:1")


def test_gj_the_queen_of_trumps_alone_is_a_pass_in_a_one_card_deal():
    # trump clubs (indicator 9C): the ace, the king of clubs and both jokers beat the queen, so
    # she takes the trick about two times in three. A bid of 1 then scores 100p - 200(1-p)
    # (GJ-7.3, GJ-7.4), about 0; a pass 50(1-p) + 10p (GJ-7.2, GJ-7.5), about 23.
    state = deal("georgian_joker", {1: ["QC"]}, fixed={4: "9C"}, first_dealer=0)
    assert decide("georgian_joker", state) == "bid:0"


def test_gj_the_ace_of_trumps_alone_is_a_bid_in_a_one_card_deal():
    # only a joker beats it (GJ-6.1, GJ-6.2): the bid of 1 is the made bid about 80% of the time
    state = deal("georgian_joker", {1: ["AC"]}, fixed={4: "9C"}, first_dealer=0)
    assert decide("georgian_joker", state) == "bid:1"


def gj_three_cards(hands, bids):
    """Deal 3 (three cards each, GJ-2.4), trump clubs (indicator 9C, GJ-3.3), dealer seat 0:
    the forehand, seat 1, bids first and leads (GJ-4.1, GJ-5.1); ``bids`` in that order."""
    state = deal("georgian_joker", hands, fixed={12: "9C"}, first_dealer=2, deal_number=3)
    for seat, bid in zip((1, 2, 3, 0), bids):
        state.apply(f"bid:{bid}", seat)
    assert state.view(0)["table"]["trump"] == "C"
    return state


def test_gj_the_trump_is_the_suit_the_three_cards_make_strongest_and_no_trump_when_low():
    # the chooser of a nine-card deal sees three cards (GJ-3.5): ace and king of hearts name
    # hearts; the six of diamonds, seven of hearts and eight of clubs name no trump
    for cards, choice in ((["AH", "KH", "7S"], "trump:H"), (["6D", "7H", "8C"], "trump:NT")):
        state = deal("georgian_joker", {1: cards}, first_dealer=0, deal_number=9)
        assert state.to_act() == 1 and sorted(state.view(1)["hand"]) == sorted(cards)
        assert decide("georgian_joker", state) == choice


def test_gj_a_made_bid_ducks_with_the_highest_card_that_loses_or_a_low_joker():
    # seat 2 bid 0 and has what it bid: it ducks the forehand's king of spades with the queen
    # (the ace would take the trick, GJ-7.2 broken), keeping the seven as a later duck
    state = gj_three_cards({1: ["KS", "7D", "8H"], 2: ["AS", "QS", "7S"], 3: ["9S", "8D", "6H"], 0: ["JS", "TD", "7H"]},
                           (1, 0, 0, 0))
    state.apply("play:KS", 1)
    assert decide("georgian_joker", state) == "play:QS"
    # every card of its suit wins the seven of spades: the joker goes low (GJ-5.2) and loses
    state = gj_three_cards({1: ["7S", "7D", "8H"], 2: ["AS", "X1", "9D"], 3: ["9S", "8D", "6H"], 0: ["JS", "TD", "7H"]},
                           (1, 0, 0, 0))
    state.apply("play:7S", 1)
    assert decide("georgian_joker", state) == "play:X1:low"


def test_gj_a_needed_trick_is_taken_with_the_cheapest_sure_winner():
    # last to play (GJ-6): the jack of spades takes the trick as surely as the ace; earlier,
    # only the ace is sure to hold (the nine may be beaten by the seats after it)
    state = gj_three_cards({1: ["7S", "7D", "8H"], 2: ["8S", "QD", "6H"], 3: ["9S", "8D", "TH"], 0: ["JS", "AS", "7H"]},
                           (0, 0, 0, 1))
    for seat, action in ((1, "play:7S"), (2, "play:8S"), (3, "play:9S")):
        state.apply(action, seat)
    assert decide("georgian_joker", state) == "play:JS"
    state = gj_three_cards({1: ["7S", "7D", "8H"], 2: ["AS", "9S", "7H"], 3: ["QS", "8D", "TH"], 0: ["JS", "KD", "6H"]},
                           (0, 1, 0, 1))
    state.apply("play:7S", 1)
    assert decide("georgian_joker", state) == "play:AS"


def test_gj_a_needed_trick_is_ruffed_by_the_last_seat():
    # the last seat, void in spades, takes the forehand's ace with its small trump (GJ-5.3,
    # GJ-6.3) rather than throw a diamond
    state = gj_three_cards({1: ["AS", "7D", "8H"], 2: ["7S", "QD", "6H"], 3: ["8S", "9D", "TH"], 0: ["7C", "8D", "9H"]},
                           (0, 0, 0, 1))
    for seat, action in ((1, "play:AS"), (2, "play:7S"), (3, "play:8S")):
        state.apply(action, seat)
    assert decide("georgian_joker", state) == "play:7C"


def test_gj_a_master_known_from_the_indicator_or_the_played_cards_is_led():
    # needing tricks, the leader leads a master (the module's docstring). The king of trumps is
    # one when the ace is the trump indicator (GJ-3.3), seen by all
    state = deal("georgian_joker", {1: ["KC", "7D", "8H"]}, fixed={12: "AC"}, first_dealer=2, deal_number=3)
    for seat, bid in zip((1, 2, 3, 0), (1, 0, 0, 0)):
        state.apply(f"bid:{bid}", seat)
    assert decide("georgian_joker", state) == "play:KC"
    # ... or once the ace has been played (GJ-11.1: the played cards are public)
    state = gj_three_cards({1: ["AC", "KC", "7D"], 2: ["8C", "9D", "6H"], 3: ["7C", "8D", "TH"], 0: ["TC", "QD", "9H"]},
                           (2, 0, 0, 0))
    for seat, action in ((1, "play:AC"), (2, "play:8C"), (3, "play:7C"), (0, "play:TC")):
        state.apply(action, seat)
    assert state.to_act() == 1
    assert decide("georgian_joker", state) == "play:KC"


def test_gj_the_joker_goes_high_over_the_other_joker_led_high():
    # one-card deal: the forehand leads the other joker high; the second high joker wins the
    # trick (GJ-6.1), the bid of 1 is made
    state = deal("georgian_joker", {1: ["X1"], 2: ["X2"]}, fixed={4: "9C"}, first_dealer=0)
    for seat, bid in ((1, "bid:1"), (2, "bid:1"), (3, "bid:0"), (0, "bid:0")):
        state.apply(bid, seat)
    state.apply("play:X1:high:S", 1)
    assert decide("georgian_joker", state) == "play:X2:high"


def test_gj_the_joker_is_spent_high_only_when_every_trick_left_is_needed():
    # the forehand bid 3 of 3 without a master: it leads its joker high, naming the suit of its
    # best honour (hearts, its king; GJ-5.5); having bid 1 it keeps the joker for later
    hands = {1: ["X1", "KH", "7D"], 2: ["7S", "QD", "6H"], 3: ["8S", "9D", "TH"], 0: ["JS", "8D", "9H"]}
    state = gj_three_cards(hands, (3, 0, 0, 1))
    assert decide("georgian_joker", state) == "play:X1:high:H"
    state = gj_three_cards(hands, (1, 0, 0, 0))
    assert not decide("georgian_joker", state).startswith("play:X1")
    # following, with one trick needed of three and the other joker still out: no joker either
    state = gj_three_cards({1: ["7S", "7D", "8H"], 2: ["X1", "7H", "8D"], 3: ["9S", "QD", "6H"], 0: ["JS", "TD", "TH"]},
                           (0, 1, 0, 1))
    state.apply("play:7S", 1)
    assert not decide("georgian_joker", state).startswith("play:X1")


def test_gj_the_bid_rounds_the_expected_tricks_passes_under_a_trick_and_dodges_the_forbidden_value():
    # three-card deal, trump clubs. Two jokers are two near-certain tricks (GJ-5.2, GJ-6.1): bid 2
    state = deal("georgian_joker", {1: ["X1", "X2", "7D"]}, fixed={12: "9C"}, first_dealer=2, deal_number=3)
    assert decide("georgian_joker", state) == "bid:2"
    # the jack of trumps and two small cards are well under a trick: a pass (the module's
    # docstring: 0 below 0.9 expected tricks; a bid that takes nothing is -200, GJ-7.4)
    state = deal("georgian_joker", {1: ["JC", "7D", "8H"]}, fixed={12: "9C"}, first_dealer=2, deal_number=3)
    assert decide("georgian_joker", state) == "bid:0"
    # the dealer with the two jokers after bids of 1, 0, 0 may not bid 2 (GJ-4.3): the nearer
    # legal value, 1
    state = deal("georgian_joker", {0: ["X1", "X2", "7D"]}, fixed={12: "9C"}, first_dealer=2, deal_number=3)
    for seat, bid in ((1, "bid:1"), (2, "bid:0"), (3, "bid:0")):
        state.apply(bid, seat)
    assert request(state).legal == ("bid:0", "bid:1", "bid:3")
    assert decide("georgian_joker", state) == "bid:1"


# ---- Klaberjass ------------------------------------------------------------------------------

def test_kl_a_declined_dix_exchange_does_not_throw_the_ace_under_the_jack():
    # seat 1 named hearts; seat 0 leads the jass (JH). Seat 1 holds the dix (7H), so
    # `exchange` is legal beside its cards (KL-4.2); the turn-up 9C is not worth taking. Every
    # card loses to the jack (KL-1.2), so the seven goes, not the ace (11 points, KL-8.1). The
    # bot used to answer a declined exchange with the first legal card: the ace.
    deck = ["7C", "JH", "9S", "9H", "7H", "AC", "8C", "7S", "QD", "TH", "JS", "AH", "9C", "QH", "8S",
            "8H", "KH", "KS", "KC", "7D", "9D", "8D", "JD", "TC", "AD", "QS", "QC", "TD", "KD", "AS",
            "JC", "TS"]
    state = played("klaberjass", deck, [(1, "pass"), (0, "pass"), (1, "name:H"), (1, "keep"),
                                        (0, "keep"), (1, "play:JS"), (0, "play:KS"), (0, "play:JH")])
    view = state.view(1)
    assert view["hand"] == ["8S", "AH", "KH", "TH", "9H", "7H", "AC", "KC"]
    assert "exchange" in view["legal"] and view["legal"][0] == "play:AH"
    assert decide("klaberjass", state) == "play:7H"


def test_kl_the_elder_takes_the_menel_with_the_dix_under_a_turned_up_jass():
    # turn-up JS (KL-2.5): the elder holds the menel (9S) and the dix (7S), which he exchanges
    # for the jass (KL-4.1): the two top trumps, 34 card points (KL-8.1), the trick play's
    # control. Passing throws the deal at the opponent or in (KL-3.5).
    state = deal("klaberjass", {0: ["9S", "7S", "QD", "9D", "8D", "KC"]}, fixed={12: "JS"}, first_dealer=1)
    assert state.view(0)["legal"] == ["take", "pass"]
    assert decide("klaberjass", state) == "take"


def test_kl_a_plain_seven_is_ruffed_with_the_small_trump_not_the_jass():
    # diamonds trump (the elder took the turn-up 8D; the dealer exchanged his dix for it). The
    # elder leads the seven of clubs, worth nothing; the dealer has no club and must trump
    # (KL-6.5) with the jass or the eight. The jass wins its trick whenever it is played (no trump
    # beats it, KL-1.2), so spending it here gains nothing and gives up the control of trumps.
    state = deal("klaberjass", {0: ["7C", "8C", "9C", "AS", "TS", "9S"], 1: ["JD", "7D", "AH", "KH", "QH", "TH"]},
                 fixed={12: "8D", 13: "7S", 14: "AC", 15: "8S", 16: "TC", 17: "KS", 18: "KC"}, first_dealer=1)
    for seat, action in [(0, "take"), (0, "keep"), (1, "exchange"), (0, "play:7C")]:
        state.apply(action, seat)
    assert state.view(1)["legal"] == ["play:JD", "play:8D"]
    assert decide("klaberjass", state) == "play:8D"


def test_gj_a_lone_joker_bids_one_in_a_one_card_deal_even_at_an_over_bid_table():
    # played high, the joker takes the trick unless the other joker is out and played high after
    # it (GJ-6.1), about one time in eleven: the bid of 1 is worth about 70, a pass about 5.
    state = deal("georgian_joker", {1: ["X1"]}, fixed={4: "9C"}, first_dealer=0)
    assert decide("georgian_joker", state) == "bid:1"
    # the third bidder after bids of 1 and 1 for one trick: the joker is no weaker for them
    state = deal("georgian_joker", {3: ["X1"]}, fixed={4: "9C"}, first_dealer=0)
    state.apply("bid:1", 1)
    state.apply("bid:1", 2)
    assert decide("georgian_joker", state) == "bid:1"


def test_gj_a_low_joker_led_to_lose_does_not_name_the_trump():
    # one-card deal, trump spades (indicator 9S); the forehand bid 0 and leads its joker, low.
    # Naming spades, the joker is taken only by a spade: with seven left among 33 unseen cards,
    # the three others hold none about half the time and the joker takes the trick (GJ-6.4),
    # breaking the pass (GJ-7.2). Naming a plain suit, a card of it or any trump takes it.
    state = deal("georgian_joker", {1: ["X1"]}, fixed={4: "9S"}, first_dealer=0)
    for seat in (1, 2, 3, 0):
        state.apply("bid:0", seat)
    action = decide("georgian_joker", state)
    assert action.startswith("play:X1:low:") and not action.endswith(":S"), action


def kl_deal(elder: list[str], dealer: list[str], turn_up: str, info: str | None = None, options=None):
    """A Klaberjass deal, seat 1 dealing and seat 0 the elder, with each player's nine cards:
    the first deal's six in packets of three (KL-2.4), the turn-up ``D[12]`` (KL-2.5), the
    second deal's three each, dealer first (``D[13]`` .. ``D[18]``, KL-2.8), and the
    information card ``D[31]`` (KL-2.9)."""
    fixed = dict(zip((3, 4, 5, 9, 10, 11, 14, 16, 18), elder)) | dict(zip((0, 1, 2, 6, 7, 8, 13, 15, 17), dealer))
    fixed[12] = turn_up
    if info:
        fixed[31] = info
    return deal("klaberjass", {}, fixed=fixed, first_dealer=1, options=options)


def kl_elder_leads(elder: list[str], dealer: list[str], turn_up: str = "8H", info: str | None = None):
    """The elder took the turn-up suit (hearts), neither exchanged: the elder leads trick 1."""
    state = kl_deal(elder, dealer, turn_up, info)
    for seat, action in [(0, "take"), (0, "keep"), (1, "keep")]:
        state.apply(action, seat)
    assert state.to_act() == 0 and state.view(0)["table"]["trump"] == "H"
    return state


def test_kl_the_queen_of_trumps_goes_before_the_king_to_score_bella():
    # hearts trump; the dealer has no club and must trump the elder's seven of clubs (KL-6.5)
    # with the king or the queen, its only trumps. The queen first scores bella, 20 (KL-7.1,
    # default order queen first, KL-A13); the king first gives it away. With `king_first` the
    # king goes first.
    elder = ["7C", "8C", "9C", "AS", "TS", "9S", "AD", "TD", "9D"]
    dealer = ["KH", "QH", "KS", "QS", "JS", "KD", "QD", "JD", "8S"]
    for options, card in (({}, "play:QH"), ({"kl_bella_order": "king_first"}, "play:KH")):
        state = kl_deal(elder, dealer, "8H", options=options)
        for seat, action in [(0, "take"), (0, "keep"), (1, "keep"), (0, "play:7C")]:
            state.apply(action, seat)
        assert state.view(1)["legal"] == ["play:KH", "play:QH"]
        assert decide("klaberjass", state) == card, options


def test_kl_the_bella_king_is_announced_when_the_table_requires_it():
    # `kl_bella_announcement = required` (KL-A23): the king after the queen scores bella only
    # when flagged; the module's docstring: an announcement variant is always chosen
    state = kl_deal(["7C", "8C", "9C", "AS", "TS", "9S", "AD", "TD", "9D"],
                    ["KH", "QH", "KS", "QS", "JS", "KD", "QD", "JD", "8S"], "8H",
                    options={"kl_bella_announcement": "required"})
    for seat, action in [(0, "take"), (0, "keep"), (1, "keep"), (0, "play:7C"), (1, "play:QH"), (1, "play:KS"),
                         (0, "play:AS"), (0, "play:8C")]:
        state.apply(action, seat)
    assert state.view(1)["legal"] == ["play:KH", "play:KH:bella"]
    assert decide("klaberjass", state) == "play:KH:bella"


def test_kl_round_two_names_the_strong_suit_and_passes_a_weak_hand():
    # both passed the turn-up 8H (KL-3.1); in round 2 the elder may name another suit (KL-3.3).
    # The jack, nine, ace and ten of spades are its best trumps: it names spades, not the suit
    # where it has nothing. A hand of sevens, eights and nines names nothing: a maker who is
    # out-scored loses everything (KL-9.4).
    dealer = ["KH", "QH", "KC", "QC", "JC", "8D", "9D", "TD", "8S"]
    state = kl_deal(["JS", "9S", "AS", "TS", "7D", "8C", "KD", "QD", "JD"], dealer, "8H")
    state.apply("pass", 0)
    state.apply("pass", 1)
    assert state.view(0)["legal"] == ["name:S", "name:D", "name:C", "pass"]
    assert decide("klaberjass", state) == "name:S"
    state = kl_deal(["7S", "8S", "9D", "8D", "7C", "8C", "KD", "QD", "JD"],
                    ["KH", "QH", "KC", "QC", "JC", "AD", "TD", "AC", "AS"], "8H")
    state.apply("pass", 0)
    state.apply("pass", 1)
    assert decide("klaberjass", state) == "pass"


def test_kl_the_auction_counts_side_aces_and_trump_length():
    # turn-up 8H, the elder to speak (KL-3.1). The nine and ace of hearts with the aces of
    # spades and diamonds take: two sure side tricks of 11 (KL-8.1); the same trumps with small
    # side cards pass. Four trumps with the menel, the ace and the king, and the dix to bring in
    # the turn-up (KL-4.1), take on their length; the king, queen and jack of spades, a sequence
    # of 20 (KL-5.3), bring the nine and ace of trumps over the bar; so do the ace of spades and
    # the ten it guards.
    for hand, call in ((["9H", "AH", "AS", "AD", "7C", "8C"], "take"), (["9H", "AH", "7S", "7D", "7C", "8C"], "pass"),
                       (["9H", "AH", "KH", "7H", "7S", "7D"], "take"), (["9H", "AH", "KS", "QS", "JS", "7C"], "take"),
                       (["9H", "AH", "AS", "TS", "7C", "8D"], "take")):
        state = deal("klaberjass", {0: hand}, fixed={12: "8H"}, first_dealer=1)
        assert state.view(0)["legal"] == ["take", "pass"]
        assert decide("klaberjass", state) == call, hand


def test_kl_the_dealer_takes_a_hand_the_elder_passes():
    # TAKE_THRESHOLD's comment: the bar of the hand's value, plus 3 for the dealer. The nine and
    # ace of trumps with the ace of spades fall just short of it for the elder, not the dealer
    hand = ["9H", "AH", "AS", "8C", "7C", "8D"]
    state = deal("klaberjass", {0: hand}, fixed={12: "8H"}, first_dealer=1)
    assert decide("klaberjass", state) == "pass"
    state = deal("klaberjass", {1: hand}, fixed={12: "8H"}, first_dealer=1)
    state.apply("pass", 0)
    assert state.view(1)["legal"] == ["take", "pass"]
    assert decide("klaberjass", state) == "take"


def _to_the_dix(state):
    while "exchange" not in state.view(state.to_act())["legal"]:
        state.apply(state.view(state.to_act())["legal"][0], state.to_act())
    return state


def test_kl_the_dix_is_exchanged_for_a_trump_turn_up_or_a_ten():
    # the module's docstring: the dix (KL-4.1) is exchanged when the turn-up is a trump better
    # than the seven, or, of another suit, an ace or a ten (10 card points, KL-8.1, for a seven)
    state = kl_deal(["JH", "9H", "AS", "TS", "7D", "8C", "KD", "QD", "JD"],
                    ["7H", "QH", "KC", "QC", "9C", "8D", "9D", "TD", "8S"], "8H")
    state.apply("take", 0)
    assert _to_the_dix(state).to_act() == 1
    assert decide("klaberjass", state) == "exchange"
    # hearts named in round 2 under a turned-up ten of spades (no sequence made by it)
    state = kl_deal(["JH", "9H", "AH", "TH", "7D", "8C", "KD", "QD", "JD"],
                    ["7H", "QS", "KC", "QC", "9C", "8D", "9D", "AD", "8S"], "TS")
    for seat, action in [(0, "pass"), (1, "pass"), (0, "name:H")]:
        state.apply(action, seat)
    assert _to_the_dix(state).to_act() == 1
    assert decide("klaberjass", state) == "exchange"


def test_kl_the_maker_draws_trumps_with_the_jass():
    # the maker leads; he holds the jass and the king of trumps: no unseen trump beats the jass
    # (KL-1.2), so he draws trumps with it (the module's docstring: "draw trumps while holding
    # trump control")
    state = kl_elder_leads(["JH", "KH", "8S", "9S", "7D", "8C", "9C", "8D", "9D"],
                           ["AH", "TH", "KS", "QS", "JS", "KD", "QD", "JD", "7H"])
    assert decide("klaberjass", state) == "play:JH"


def test_kl_masters_are_cashed_the_most_valuable_first():
    # the ace of spades is the information card (KL-2.9), seen by both: the ten of spades is
    # the highest spade left, a master worth 10 (KL-8.1), and is cashed; beside the ace of
    # diamonds, also a master, the ace (11) goes first. The leader has no trump.
    dealer = ["AH", "TH", "KS", "QS", "JS", "KD", "QD", "JD", "7S"]
    state = kl_elder_leads(["TS", "8S", "9S", "7D", "8C", "9C", "8D", "9D", "7C"], dealer, info="AS")
    assert decide("klaberjass", state) == "play:TS"
    state = kl_elder_leads(["TS", "8S", "9S", "AD", "8C", "9C", "8D", "9D", "7C"], dealer, info="AS")
    assert decide("klaberjass", state) == "play:AD"


def test_kl_no_lead_away_from_a_ten_guarded_once():
    # no trump, no master: the leader leads low where nothing is lost, not the seven of clubs
    # beside the ten of clubs (the ace of clubs is out: the ten would fall to it, KL-1.3)
    state = kl_elder_leads(["TC", "7C", "8D", "9D", "QD", "JD", "KS", "QS", "JS"],
                           ["AH", "TH", "AS", "TS", "9S", "KD", "7D", "AD", "7S"])
    assert decide("klaberjass", state) in ("play:8D", "play:9D")


def test_kl_a_worthless_trick_is_taken_with_the_lowest_winner():
    # the elder leads the seven of spades; the dealer's eight and nine of spades both win it and
    # both are worth nothing (KL-8.1): the eight is the cheapest winning card
    state = kl_elder_leads(["7S", "7C", "8D", "9D", "QD", "JD", "KC", "QC", "JC"],
                           ["AH", "TH", "8S", "9S", "KH", "KD", "7D", "AD", "TD"])
    state.apply("play:7S", 0)
    assert state.view(1)["legal"] == ["play:9S", "play:8S"]
    assert decide("klaberjass", state) == "play:8S"


# ---- Jo-Jotte --------------------------------------------------------------------------------

def test_jj_the_jack_and_nine_of_the_turn_up_suit_accept():
    # turn-up 7S: the non-dealer holds the jack and the nine of spades, the two top trumps
    # (JJ-1.2), 35 of the premium points (JJ-8.1). Declaring risks little: a declarer who loses
    # the comparison keeps his melds (JJ-9.1) and the defender enters only two tricks (JJ-9.3 b).
    # The bot passed it (a bar of 34 on a hand valued 33).
    state = deal("jojotte", {0: ["JS", "9S", "8H", "7H", "9D", "8C"]}, fixed={12: "7S"}, first_dealer=1)
    assert state.to_act() == 0 and "accept" in state.view(0)["legal"]
    assert decide("jojotte", state) == "accept"


def jj_deal(nondealer: list[str], dealer: list[str], turn_up: str):
    """A Jo-Jotte deal, seat 1 dealing, with each player's nine cards: the first deal's six in
    packets of two, the non-dealer served first (JJ-2.4), the turn-up ``D[12]`` (JJ-2.5), the
    second deal's three each, non-dealer first (``D[13]`` .. ``D[18]``, JJ-2.6)."""
    fixed = dict(zip((0, 1, 4, 5, 8, 9, 13, 14, 15), nondealer)) | dict(zip((2, 3, 6, 7, 10, 11, 16, 17, 18), dealer))
    fixed[12] = turn_up
    return deal("jojotte", {}, fixed=fixed, first_dealer=1)


def jj_to_play(state):
    """The non-dealer accepts the turn-up suit; then every window (exchange, nullo) is passed,
    up to the first trick, led by the defender (JJ-6.1)."""
    state.apply("accept", 0)
    while state.view(state.to_act())["phase"] != "play":
        legal = state.view(state.to_act())["legal"]
        state.apply("pass" if "pass" in legal else legal[0], state.to_act())
    return state


def test_jj_the_answer_to_a_suit_doubles_a_clear_winner_and_overcalls_with_aces_and_tens():
    # seat 0 names spades (JJ-3.1); seat 1 answers with its six cards. The jack, nine, ace, ten
    # and king of spades clearly win the comparison: double (JJ-3.3, JJ-9.4 multiplies both
    # players' trick points). The jack, nine and ace alone do not: pass. Aces and tens in every
    # suit overcall with no trump (JJ-3.2).
    nondealer = ["QS", "8S", "7S", "KH", "QH", "JH", "KD", "QD", "JD"]
    for hand, answer in ((["JS", "9S", "AS", "TS", "KS", "7H", "8H", "7D", "8C"], "double"),
                         (["JS", "9S", "AS", "8H", "9D", "8D", "7H", "7D", "8C"], "pass"),
                         (["AS", "TS", "AH", "TH", "AD", "TD", "AC", "TC", "9D"], "no_trump")):
        state = jj_deal(nondealer, hand, "9H")
        state.apply("name:S", 0)
        assert state.view(1)["legal"] == ["no_trump", "double", "pass"]
        assert decide("jojotte", state) == answer, hand


def test_jj_the_seven_of_the_shortest_side_suit_is_exchanged_for_the_turn_up():
    # spades accepted under the turned-up queen: the declarer alone holds sevens and may give
    # one for it (JJ-4.2); the lone seven of diamonds goes, not the seven guarding its clubs
    state = jj_deal(["JS", "9S", "AS", "7D", "7C", "8C", "9C", "KH", "QH"],
                    ["TS", "KS", "8S", "AH", "TH", "8D", "9D", "AD", "AC"], "QS")
    state.apply("accept", 0)
    state.apply("pass", 1)
    state.apply("no_exchange", 1)
    assert state.view(0)["legal"] == ["exchange:7D", "exchange:7C", "no_exchange"]
    assert decide("jojotte", state) == "exchange:7D"


def test_jj_the_trump_king_goes_before_the_queen_with_jo():
    # spades trump; the defender leads a heart, the declarer has none and must trump (JJ-6.4):
    # the king goes first, announced "jo", so that the queen can follow with "jotte" for the
    # 20 (JJ-7.1, JJ-7.2; the queen first scores nothing)
    state = jj_to_play(jj_deal(["KS", "QS", "8S", "AD", "TD", "KD", "AC", "TC", "KC"],
                               ["JS", "9S", "AS", "7H", "8H", "9H", "QD", "JD", "9D"], "7S"))
    state.apply("play:7H", 1)
    assert state.view(0)["legal"] == ["play:KS", "play:KS:jo", "play:QS", "play:8S"]
    assert decide("jojotte", state) == "play:KS:jo"


def test_jj_a_trick_is_headed_with_the_cheapest_card_that_wins():
    # the king of hearts led; the follower must beat it (JJ-6.3) with the ace or the ten, each
    # worth 10 (JJ-8.1): the ten, the lower card, keeps the ace for later
    state = jj_to_play(jj_deal(["JS", "9S", "8S", "AH", "TH", "7H", "KD", "AC", "TC"],
                               ["AS", "TS", "QS", "KH", "8H", "9H", "QD", "JD", "9D"], "7S"))
    state.apply("play:KH", 1)
    assert state.view(0)["legal"] == ["play:AH", "play:TH"]
    assert decide("jojotte", state) == "play:TH"


def _jj_nullo_window(dealer: list[str]):
    """Seat 0 declares spades with the top trumps and three aces; seat 1, the defender, is at
    the nullo window (JJ-4.3)."""
    state = jj_deal(["JS", "9S", "AS", "KH", "QH", "AH", "AD", "AC", "KD"], dealer, "7S")
    state.apply("accept", 0)
    while "nullo" not in state.view(state.to_act())["legal"]:
        state.apply("pass", state.to_act())
    assert state.to_act() == 1 and state.view(1)["legal"] == ["nullo", "pass"]
    return state


def test_jj_nullo_is_called_on_a_hand_of_small_cards_only():
    # the module's docstring: nullo (win no trick, JJ-4.3) only with a hand of small cards.
    # The bot answered every nullo window with `pass`: its nullo rule sat after the catch-all
    # for decisions without a card play, and never ran.
    state = _jj_nullo_window(["9H", "8H", "7H", "9D", "8D", "7D", "9C", "8C", "QC"])
    assert decide("jojotte", state) == "nullo"
    # a king is a trick the nullo player may be unable to lose (JJ-6.3: he must beat the lead)
    state = _jj_nullo_window(["9H", "8H", "7H", "9D", "8D", "7D", "KC", "8C", "QC"])
    assert decide("jojotte", state) == "pass"


def test_jj_a_nullo_is_answered_by_a_slam_only_with_every_trick_sure():
    # the declarer holds the jack, nine and ace of trumps and three side aces: six sure tricks
    # of nine, and a slam must take them all (JJ-4.4): pass. Then, playing against the nullo,
    # he leads his lowest card, one the nullo player must beat (JJ-6.1, JJ-6.3).
    state = _jj_nullo_window(["9H", "8H", "7H", "9D", "8D", "7D", "9C", "8C", "QC"])
    state.apply("nullo", 1)
    assert state.view(0)["legal"] == ["slam:S", "pass"]
    assert decide("jojotte", state) == "pass"
    state.apply("pass", 0)
    assert state.to_act() == 0 and state.view(0)["table"]["contract"]["kind"] == "nullo"
    assert decide("jojotte", state) == "play:9S"


def test_jj_a_nullo_is_answered_by_a_slam_when_no_trick_can_be_lost():
    # spades accepted under the turned-up seven; the declarer holds every other spade and the
    # ace and ten of hearts. The defender leads (JJ-6.1): a diamond or club is ruffed (JJ-6.4),
    # then the trumps, all masters, leave him none, and the ace and ten of hearts head his
    # king: all nine tricks, so the nullo is answered by the slam (JJ-4.4, 500 above, JJ-9.6).
    # Its docstring's rule: the bot passed every slam window, its sure-trick bar (8) above
    # the six its count could reach.
    defender = ["9H", "8H", "7H", "9D", "8D", "7D", "9C", "8C", "QC"]
    slam = ["JS", "9S", "AS", "TS", "KS", "QS", "8S", "AH", "TH"]
    state = jj_deal(slam, defender, "7S")
    state.apply("accept", 0)
    while "nullo" not in state.view(state.to_act())["legal"]:
        state.apply("pass", state.to_act())
    state.apply("nullo", 1)
    assert state.view(0)["legal"] == ["slam:S", "pass"]
    assert decide("jojotte", state) == "slam:S"


def test_jj_every_trick_sure_counts_what_the_opponent_may_hold():
    """``all_tricks_sure``: the opponent may hold every card the seat has not seen (JJ-6.1:
    he leads first; JJ-6.3, JJ-6.4: following, beating and ruffing)."""
    from bot_plugins.heuristic.jojotte import ALL_CARDS, all_tricks_sure

    def sure(hand, trump, seen=("7S",)):
        return all_tricks_sure(hand, trump, [c for c in ALL_CARDS if c not in set(hand) | set(seen)])

    # every spade but the turn-up, the ace and ten of hearts: sure (the ruff spends the eight)
    assert sure(["JS", "9S", "AS", "TS", "KS", "QS", "8S", "AH", "TH"], "S")
    # the nine of hearts loses to his king on the second round of hearts
    assert not sure(["JS", "9S", "AS", "TS", "KS", "QS", "8S", "AH", "9H"], "S")
    # the jack and nine of trumps are above his ace (JJ-1.4 trump order): still sure
    assert sure(["JS", "9S", "TS", "KS", "QS", "8S", "AH", "TH", "AD"], "S", seen=("7D",))
    # his ace of trumps outranks the ten: a trump trick lost
    assert not sure(["TS", "KS", "QS", "8S", "AH", "TH", "AD", "AC", "TC"], "S", seen=("7D",))
    # four trumps to his four: after the ruff of his first lead three are left to draw four
    assert not sure(["JS", "9S", "AS", "TS", "AH", "TH", "KH", "QH", "AD"], "S", seen=("7D",))
    assert sure(["JS", "9S", "AS", "TS", "KS", "AH", "TH", "KH", "AD"], "S", seen=("7D",))
    # no trump (JJ-6.7): a void suit is one he leads and wins
    assert sure(["AS", "TS", "KS", "AH", "TH", "KH", "AD", "TD", "AC"], None)
    assert not sure(["AS", "TS", "KS", "AH", "TH", "KH", "AD", "TD", "KD"], None)


# ---- the heuristics' card arithmetic against the rulebooks -------------------------------------

def test_kl_sequence_points_and_trick_strength_follow_the_rulebook():
    from bot_plugins.heuristic.klaberjass import sequence_points, strength

    # KL-5.2's examples: A K Q T is the one sequence A K Q; K Q J 9 8 7 is two; KL-5.3: 20 for
    # three cards, 50 for four or more (an eight-card run is one sequence)
    assert sequence_points(["AS", "KS", "QS", "TS"]) == 20
    assert sequence_points(["KH", "QH", "JH", "9H", "8H", "7H"]) == 40
    assert sequence_points(["KD", "QD", "JD", "TD", "AC"]) == 50
    assert sequence_points(["AC", "KC", "QC", "JC", "TC", "9C", "8C", "7C"]) == 50
    assert sequence_points(["AS", "KS", "JS", "TS"]) == 0
    # KL-1.2, KL-1.3, KL-6.8: any trump beats the led suit, a card of another suit takes nothing
    assert strength("7H", "H", "S") > strength("AS", "H", "S") > strength("TS", "H", "S") > 0
    assert strength("JH", "H", "S") > strength("9H", "H", "S") > strength("AH", "H", "S")
    assert strength("AD", "H", "S") == 0


def test_jj_card_values_and_trick_strength_follow_the_rulebook():
    from bot_plugins.heuristic.jojotte import card_value, strength

    # JJ-8.1: jack of trumps 20, nine of trumps 15, aces and tens 10, kings and queens 5; other
    # jacks and nines, and all of them in no trump, 0
    assert [card_value(c, "S") for c in ("JS", "9S", "AS", "TS", "KS", "QS", "8S")] == [20, 15, 10, 10, 5, 5, 0]
    assert [card_value(c, "S") for c in ("JH", "9H", "AH", "TH")] == [0, 0, 10, 10]
    assert [card_value(c, None) for c in ("JS", "9S")] == [0, 0]
    # JJ-6.6: a trump takes a non-trump lead; another suit never takes
    assert strength("7S", "S", "H") > strength("AH", "S", "H") > strength("KH", "S", "H") > 0
    assert strength("AD", "S", "H") == 0


def test_gj_trick_winner_follows_the_rulebook():
    from bot_plugins.heuristic.georgian_joker import trick_winner

    def plays(*cards):
        out = []
        for c in cards:
            card, _, rest = c.partition(":")
            mode, _, named = rest.partition(":")
            out.append({"card": card, "joker_mode": mode or None, "named_suit": named or None})
        return out

    # GJ-6.1: of two high jokers the later wins
    assert trick_winner(plays("X1:high:S", "7S", "X2:high", "AS"), "C") == 2
    # GJ-6.2: a trump takes a plain lead; GJ-6.3: the highest card of the led suit otherwise
    assert trick_winner(plays("AS", "KS", "7C", "QS"), "C") == 2
    assert trick_winner(plays("9S", "KS", "7C", "AS"), "NT") == 3
    # a low joker led names the suit the others answer (GJ-5.5): its highest card takes it
    assert trick_winner(plays("X1:low:H", "7H", "AS", "9H"), "C") == 3


def test_the_shared_card_helpers_do_what_their_docstrings_say():
    from bot_plugins.heuristic.cards import neutral_choice, played_cards, plays_by_card

    # a card may have several variants (an announcement, KL-7.1 / JJ-7.2): all are kept, in order
    assert plays_by_card(["play:KH", "play:KH:bella", "play:7C", "pass"]) == {
        "KH": ["play:KH", "play:KH:bella"], "7C": ["play:7C"]}
    assert played_cards([{"seat": 1, "action": "play:JS"}, {"seat": 0, "action": "pass"},
                         {"seat": 0, "action": "play:9S:jo"}]) == [(1, "JS"), (0, "9S")]
    # a decision the strategy does not model: declare, keep, no_exchange, accept, pass, in this
    # order; else the first legal action
    assert neutral_choice(["pass", "declare"]) == "declare"
    assert neutral_choice(["pass", "accept"]) == "accept"
    assert neutral_choice(["refuse", "schmeiss"]) == "refuse"


def test_the_neutral_choice_takes_the_first_word_of_its_list_present():
    """``cards.NEUTRAL``: declare, keep, no_exchange, accept, pass, "in this order", else the
    first legal action; each word goes before every later one, whatever the legal actions'
    order. Found by mutation testing: keep before declare, accept before no_exchange and pass
    dropped from the list survived."""
    from bot_plugins.heuristic.cards import neutral_choice

    words = ("declare", "keep", "no_exchange", "accept", "pass")
    for i, word in enumerate(words):
        for later in words[i + 1:]:
            assert neutral_choice([later, word]) == word, (word, later)
            assert neutral_choice(["bid:1", word, later]) == word, (word, later)
        assert neutral_choice(["bid:1", word]) == word


def test_gj_expected_tricks_rank_the_honours_and_shrink_with_small_deals():
    from bot_plugins.heuristic.georgian_joker import GeorgianJokerHeuristic

    est = GeorgianJokerHeuristic.expected_tricks
    # the module's docstring: trump honours by rank; a plain king guarded by the ace counts
    assert est(["AC"], "C", 3) > est(["KC"], "C", 3) > est(["QC"], "C", 3) > est(["JC"], "C", 3)
    assert est(["AS", "KS", "7D"], "C", 3) > est(["AS", "7S", "7D"], "C", 3)
    # ... and the estimate shrinks with small deals: a middling trump, a plain ace, a lone king
    assert est(["QC"], "C", 1) < est(["QC"], "C", 3)
    assert est(["AS"], "C", 1) < est(["AS"], "C", 2)
    assert est(["KS", "7D", "8H"], "C", 3) < est(["KS", "7D", "8H"], "C", 4)
