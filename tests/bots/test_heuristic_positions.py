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


# ---- Jo-Jotte --------------------------------------------------------------------------------

def test_jj_the_jack_and_nine_of_the_turn_up_suit_accept():
    # turn-up 7S: the non-dealer holds the jack and the nine of spades, the two top trumps
    # (JJ-1.2), 35 of the premium points (JJ-8.1). Declaring risks little: a declarer who loses
    # the comparison keeps his melds (JJ-9.1) and the defender enters only two tricks (JJ-9.3 b).
    # The bot passed it (a bar of 34 on a hand valued 33).
    state = deal("jojotte", {0: ["JS", "9S", "8H", "7H", "9D", "8C"]}, fixed={12: "7S"}, first_dealer=1)
    assert state.to_act() == 0 and "accept" in state.view(0)["legal"]
    assert decide("jojotte", state) == "accept"
