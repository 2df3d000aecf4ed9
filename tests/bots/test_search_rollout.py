"""The search bot's ``greedy`` rollout policy and the rules-core helpers it stands on
(``last_to_trick``, ``winning_ids``, ``trick_rank``, ``wants_trick``: fast path, pure).

The helpers are checked two ways: against the rules' own trick resolution over thousands of
random positions under every option set (a play is in ``winning_ids`` exactly when applying
it gives the trick to the player), and on hand-built tricks that name the rule deciding them.
"""

from __future__ import annotations

import importlib
import random

import pytest

from bot_plugins import search
from bot_plugins.search import DEFAULT_ROLLOUT, PLAYOUT_DECISIONS, SMALL_DEAL_CARDS, SearchBot, SearchParams, greedy_playout
from engine_service.plugins import DecisionRequest
from engine_service.rules import CHANCE, TERMINAL, get_game
from engine_service.rules.cards import card_id
from tests.rules.playout import shuffled
from tests.bots.test_search_bid_inference import SteppingClock as _SteppingClock

SEARCH_GAMES = ("klaberjass", "jojotte", "georgian_joker", "japanese_joker")


def option_sets(game_id: str) -> list[dict]:
    checks = importlib.import_module(f"tests.rules.checks_{game_id}")
    return [{}] + list(getattr(checks, "OPTION_SETS", []))


def _random_decisions(game, opts: dict, rng: random.Random):
    """Every decision of random matches under ``opts``, one after another for ever: the state
    and its legal ids, a random one of which is played once the caller's loop body is done."""
    state = game.new_state(opts, first_dealer=0)
    while True:
        who = state.to_act()
        if who == TERMINAL:  # the next match under the same options
            state = game.new_state(opts, first_dealer=rng.randrange(game.num_seats))
        elif who == CHANCE:
            state.deal(shuffled(game, rng))
        else:
            ids = state.legal_ids()
            yield state, ids
            state.apply_id(ids[rng.randrange(len(ids))])


def _sum_taken(state) -> int:
    return sum(state.view(0)["tricks_taken"])


# ---- the helpers agree with the rules' trick resolution ----------------------------------

@pytest.mark.parametrize("game_id", SEARCH_GAMES)
def test_winning_ids_are_exactly_the_plays_that_take_the_trick(game_id):
    """At every last card to a trick of random matches, ``winning_ids`` is the set of legal
    plays after which the player leads the next trick, i.e. won this one (the rules decide,
    not the helper);
    anywhere else in trick play no card completes a trick."""
    game = get_game(game_id)
    checked = non_last = 0
    for i, opts in enumerate(option_sets(game_id)):
        for state, ids in _random_decisions(game, opts, random.Random(1000 + i)):
            if checked >= 300 * (i + 1):
                break
            who = state.to_act()
            if state.last_to_trick():
                wins = set(state.winning_ids(ids))
                assert wins <= set(ids)
                for a in ids:
                    probe = state.clone()
                    probe.apply_id(a)
                    if not state.action_str(a).startswith("play:"):  # an exchange plays no card
                        assert a not in wins
                    elif probe.to_act() >= 0:  # the trick's winner leads the next one (KL-6.2,
                        # JJ-6.2, GJ-5.9, JJK-6.4); the deal's last trick ends the deal instead
                        assert (probe.to_act() == who) == (a in wins), \
                            (game_id, opts, state.action_str(a), _names(state, wins))
                        checked += 1
                    assert isinstance(state.trick_rank(a), int)
            elif state.action_str(ids[0]).startswith("play:"):
                before = _sum_taken(state)
                probe = state.clone()
                probe.apply_id(ids[0])
                assert probe.to_act() >= 0 and _sum_taken(probe) == before, \
                    (game_id, "a trick ended before its last card")
                non_last += 1
    assert checked >= 300 * len(option_sets(game_id)) and non_last >= 100


@pytest.mark.parametrize("game_id", ["klaberjass", "jojotte"])
def test_trick_rank_puts_announcements_just_below_their_card_and_non_plays_above_every_card(game_id):
    """``trick_rank``'s contract (the greedy rollout gives up the lowest rank): a play with an
    announcement (Klaberjass ``play:KX:bella``, KL-7.1 / KL-A23; Jo-Jotte ``:jo`` / ``:jotte``,
    JJ-7.2) ranks exactly one below the same card played without it, so a rollout that picks
    that card announces; an id that plays no card (the in-play dix exchange KL-4.2, the late
    exchange JJ-A10) ranks above every card."""
    game = get_game(game_id)
    seen_announcement = seen_non_play = 0
    for i, opts in enumerate(option_sets(game_id)):
        for _, (state, ids) in zip(range(3000), _random_decisions(game, opts, random.Random(2000 + i))):
            names = _names(state, ids)
            if any(n.startswith("play:") for n in names):
                card_ranks = [state.trick_rank(a) for a, n in zip(ids, names) if n.count(":") == 1 and n.startswith("play:")]
                for a, n in zip(ids, names):
                    if n.startswith("play:") and n.count(":") == 2:
                        base = state.parse_action(n.rsplit(":", 1)[0])
                        assert state.trick_rank(a) == state.trick_rank(base) - 1, (game_id, n)
                        seen_announcement += 1
                    elif not n.startswith("play:"):
                        assert state.trick_rank(a) > max(card_ranks), (game_id, n)
                        seen_non_play += 1
    assert seen_announcement and seen_non_play

# ---- hand-built tricks --------------------------------------------------------------------

def _cards(*codes: str) -> list[int]:
    return [card_id(c) for c in codes]


def _names(state, ids) -> list[str]:
    return [state.action_str(a) for a in ids]


def _klaberjass_play(trump: int, lead: str, hand: tuple[str, ...]):
    """A Klaberjass state in trick play: seat 0 led ``lead``, seat 1 holds ``hand``."""
    from engine_service.rules.games.klaberjass import state as K
    from engine_service.rules.games.klaberjass.tables import STRENGTH, VALUES
    st = get_game("klaberjass").new_state({}, first_dealer=1)
    st._phase = K.P_PLAY
    st._trump = trump
    st._tmask = 0x1FF << (9 * trump)
    st._vals = VALUES[10][trump]
    st._str = STRENGTH[trump]
    st._lead = card_id(lead)
    st._leader = 0
    st._to_act = 1
    m = 0
    for c in _cards(*hand):
        m |= 1 << c
    st._hands = [0, m]
    return st


def test_klaberjass_follower_takes_with_a_higher_card_of_the_suit_or_a_trump():
    # KL-6.8: a higher card of the led suit wins (plain order A T K Q J 9 8 7, KL-1.3);
    # any trump wins over a plain lead; a card of a third suit never wins.
    st = _klaberjass_play(trump=1, lead="KS", hand=("AS", "TS", "QS", "7H", "JD"))  # trump H
    ids = _cards("AS", "TS", "QS", "7H", "JD")
    assert _names(st, st.winning_ids(ids)) == ["play:AS", "play:TS", "play:7H"]
    assert st.last_to_trick()
    # KL-1.2: in trumps J 9 A T K Q 8 7: the nine beats the ace, the queen does not
    st = _klaberjass_play(trump=1, lead="AH", hand=("9H", "QH", "JH"))
    assert _names(st, st.winning_ids(_cards("9H", "QH", "JH"))) == ["play:9H", "play:JH"]
    # the cheapest winner by card points (KL-8.1): 9H (14) is dearer than... the jack (20)
    assert st.trick_rank(card_id("9H")) < st.trick_rank(card_id("JH"))
    # card points come first (KL-8.1): the plain AS (11) is dearer than the trump 8H (0)
    assert st.trick_rank(card_id("AS")) > st.trick_rank(card_id("8H"))
    # trumps are dearer than plain cards of equal points (7H vs 7S, both 0; AH vs AS, 11; QH vs QS, 3)
    for code in ("7", "A", "Q"):
        assert st.trick_rank(card_id(code + "H")) > st.trick_rank(card_id(code + "S")), code
    # then trick strength (KL-1.3): of the pointless 7S 8S 9S the seven is cheapest, the nine dearest
    assert st.trick_rank(card_id("7S")) < st.trick_rank(card_id("8S")) < st.trick_rank(card_id("9S"))
    assert st.trick_rank(card_id("7H")) < st.trick_rank(card_id("8H"))  # in trumps too (KL-1.2)


def test_klaberjass_a_bella_king_takes_the_trick_as_the_king_does_and_the_exchange_never():
    """KL-A23: ``play:KH:bella`` plays the trump king (KL-7.1), so it wins exactly where
    ``play:KH`` wins (KL-6.8: over the trump 8H, and over a plain lead), and ranks just below
    the plain king (a rollout announces); the in-play ``exchange`` (KL-4.2) never wins."""
    for lead in ("8H", "AS"):
        st = _klaberjass_play(trump=1, lead=lead, hand=("KH", "QH"))  # trump H
        ids = [st.parse_action(a) for a in ("play:KH", "play:KH:bella", "play:QH", "exchange")]
        assert _names(st, st.winning_ids(ids)) == ["play:KH", "play:KH:bella", "play:QH"], lead
        assert st.trick_rank(ids[1]) == st.trick_rank(ids[0]) - 1


def _jojotte_follower_to_ten_of_spades_diamonds_trump():
    """A Jo-Jotte trick in play, diamonds trump, TS led by seat 0, seat 1 to follow (the
    rollout helpers read only these fields)."""
    from engine_service.rules.games.jojotte import state as J
    from engine_service.rules.games.jojotte import tables as T
    st = get_game("jojotte").new_state({}, first_dealer=1)
    st._phase = J.PH_PLAY
    st._pstrain = 2  # diamonds
    st._wins = T.WINS_OVER[2]
    st._vals = T.CARD_VALUE[2]
    st._trumps = T.TRUMP_MASK[2]
    st._lead = card_id("TS")
    st._to_act = 1
    return st


def test_jojotte_follower_takes_by_jj_6_6_and_nobody_wants_a_trick_in_nullo():
    from engine_service.rules.games.jojotte import state as J
    st = _jojotte_follower_to_ten_of_spades_diamonds_trump()
    ids = _cards("AS", "KS", "8D", "AC")
    # JJ-6.6: the ace of the led suit beats the ten (JJ-1.3), the king does not, a trump wins,
    # a card of a third suit never does
    assert _names(st, st.winning_ids(ids)) == ["play:AS", "play:8D"]
    assert st.last_to_trick()
    # JJ-8.1 values: the 8 of trumps (0) is cheaper than the ace of spades (10)
    assert st.trick_rank(card_id("8D")) < st.trick_rank(card_id("AS"))
    # JJ-4.3 / JJ-9.7: in nullo the defender who called it wants no trick, and neither does the
    # declarer, who scores for every trick the nullo player wins
    st._decl = 0
    st._kind = J.NULLO
    assert not st.wants_trick(0) and not st.wants_trick(1)
    st._kind = J.NORMAL
    assert st.wants_trick(0) and st.wants_trick(1)


def test_jojotte_announced_plays_win_as_their_card_and_trick_rank_orders_value_trump_strength():
    """JJ-7.2: ``play:KD:jo`` and ``play:QD:jotte`` play the king and the queen: on a plain
    lead the follower without the suit takes with them as with the bare trumps (JJ-6.6), and a
    late exchange (JJ-A10) plays no card and takes nothing. ``trick_rank`` (the greedy
    rollout gives up the lowest) orders by card value (JJ-8.1) first, then a trump above a
    plain card of equal value, then trick strength (JJ-1.2 in trumps, JJ-1.3 in plain suits).
    Found by mutation testing: the jo / jotte id decoding and every part of the rank packing
    survived the random positions, where such ties and a winning announcement are rare."""
    from engine_service.rules.games.jojotte import actions as A
    st = _jojotte_follower_to_ten_of_spades_diamonds_trump()
    kd, qd = card_id("KD"), card_id("QD")
    ids = [kd, A.JO + kd, qd, A.JOTTE + qd, card_id("AH"), A.EXCHANGE + 3]
    assert _names(st, st.winning_ids(ids)) == ["play:KD", "play:KD:jo", "play:QD", "play:QD:jotte"]
    rank = st.trick_rank
    # equal value, a trump above a plain card: 7D over JS (0 each), KD over QS (5 each)
    assert rank(card_id("7D")) > rank(card_id("JS")) and rank(kd) > rank(card_id("QS"))
    # equal value, same kind: trick strength, A over T in trumps, J 9 8 7 in a plain suit
    assert rank(card_id("AD")) > rank(card_id("TD"))
    assert rank(card_id("JS")) > rank(card_id("9S")) > rank(card_id("8S")) > rank(card_id("7S"))
    assert rank(card_id("JH")) > rank(card_id("9H")) > rank(card_id("8H")) > rank(card_id("7H"))
    # value first: the 9 of trumps (15) over the plain ace (10), the plain king (5) over the 8 of trumps
    assert rank(card_id("9D")) > rank(card_id("AS")) and rank(card_id("KC")) > rank(card_id("8D"))

def test_jojotte_last_to_trick_is_the_follower_also_after_the_ace_of_spades_jj_6_2():
    """JJ-6.2: two cards to a trick, the follower plays the last one; the leader (no card on
    the table) does not. The ace of spades is card id 0: a led card is on the table whatever
    its id (a ``lead > 0`` test would take it for no lead)."""
    from engine_service.rules.games.jojotte import state as J
    st = get_game("jojotte").new_state({}, first_dealer=1)
    st._phase = J.PH_PLAY
    st._to_act = 0
    assert not st.last_to_trick()
    st._lead = card_id("AS")
    st._to_act = 1
    assert st.last_to_trick()


def test_georgian_joker_last_seat_takes_with_high_joker_or_better_card():
    from engine_service.rules.games.georgian_joker import actions as A
    from engine_service.rules.games.georgian_joker import state as G
    game = get_game("georgian_joker")
    st = game.new_state({}, first_dealer=3)
    st.deal(list(game.pack))  # a one-card deal; the trick below is hand-built
    st.phase = G.PLAYING
    st.trump = 1  # hearts
    st.nplayed = 3
    st.cur = 3
    st.values = G._CARD_VALUE[1 * 4 + 0]  # demand spades
    st.best_val = st.values[card_id("QS")]  # the queen of spades holds the trick
    ids = _cards("KS", "JS", "6H", "7D") + [A.follow_joker_id(36, A.HIGH), A.follow_joker_id(36, A.LOW)]
    # GJ-6.3: a higher spade takes; GJ-6.2: any trump beats the demand suit; GJ-6.5: a discard
    # never wins; GJ-6.1: a high joker wins; a low joker never does (GJ-6.2)
    assert _names(st, st.winning_ids(ids)) == ["play:KS", "play:6H", "play:X1:high"]
    assert st.last_to_trick()
    rank = st.trick_rank
    assert rank(A.follow_joker_id(36, A.LOW)) < rank(card_id("7D")) < rank(card_id("KS")) \
        < rank(card_id("6H")) < rank(A.follow_joker_id(36, A.HIGH))
    # GJ-7: a seat wants another trick only while it has taken fewer than it bid
    st.bids = [1, 0, 2, 1]
    st.taken = [1, 0, 1, 0]
    assert [st.wants_trick(s) for s in range(4)] == [False, False, True, True]


def test_georgian_joker_after_an_unfollowed_low_joker_lead_a_discard_takes_nothing_gj_6_4():
    """GJ-6.4 / GJ-6.5: a ``low`` joker led naming spades that nobody follows or trumps stays
    with the leader, so the last seat's discard (the six of diamonds, hearts trump) is no
    winning play, although it is worth as much (nothing) as the leading joker. And GJ-6.2: the
    ``low`` joker, which never takes a trick, is cheaper to give up than any card, the six
    (the lowest rank, GJ-1.2) included. Found by mutation testing: ``>=`` for ``>`` in
    ``winning_ids`` and a plain card rank ``16 - 8 - r`` (the six tying the low joker) survived."""
    from engine_service.rules.games.georgian_joker import actions as A
    from tests.rules.checks_georgian_joker import deck_for
    game = get_game("georgian_joker")
    st = game.new_state({}, first_dealer=3)  # deal 1: one card each, seat 0 leads
    st.deal(deck_for([["X1"], ["7D"], ["8C"], ["6D"]], 3, "9H"))  # trump hearts
    for action in ("bid:0", "bid:0", "bid:0", "bid:0", "play:X1:low:S", "play:7D", "play:8C"):
        st.apply(action)
    ids = st.legal_ids()
    assert _names(st, ids) == ["play:6D"] and st.last_to_trick()
    assert st.winning_ids(ids) == []
    st.apply_id(ids[0])
    assert st.deal_results()[-1]["taken"] == [1, 0, 0, 0]  # the rules agree: the leader keeps it
    low_joker = A.follow_joker_id(37, A.LOW)
    assert st.trick_rank(low_joker) < st.trick_rank(card_id("6D")) < st.trick_rank(card_id("6H"))


def test_georgian_joker_no_last_card_to_a_trick_between_deals_or_after_the_match_gj_10_1():
    """``last_to_trick`` asks whether the seat to act plays a trick's fourth card; once a
    deal's final trick is complete the state waits for the next deck (GJ-10: deal_setup) or
    the match is over, no seat acts and there is no trick in progress, so the answer is no,
    although the completed trick had four cards. Found by mutation testing: dropping the
    ``PLAYING`` check survived."""
    from tests.rules.checks_georgian_joker import deck_for
    game = get_game("georgian_joker")
    st = game.new_state({}, first_dealer=3)  # deal 1: one card each, seat 0 leads
    st.deal(deck_for([["AS"], ["KS"], ["QS"], ["JS"]], 3, "9H"))
    for action in ("bid:1", "bid:0", "bid:0", "bid:1", "play:AS", "play:KS", "play:QS"):
        st.apply(action)
    assert st.last_to_trick()
    st.apply("play:JS")
    assert st.to_act() == CHANCE and not st.last_to_trick()
    while st.to_act() != TERMINAL:  # the rest of the match by the auto-move policy (GJ-12.2)
        if st.to_act() == CHANCE:
            st.deal(list(game.pack))
        else:
            st.apply(game.auto_move(st.view(st.to_act())))
    assert not st.last_to_trick()


def _trumps_then_rank(st, set_trump):
    """Under each strain S H D C NT (``set_trump(index)``), ``st.trick_rank`` orders the pack's
    normal cards as the Joker rulebooks do: a trump above any other card, then the higher rank,
    and equal ranks equal whatever their suits. Yields (strain index, the normal cards' ranks)
    for the jokers' checks, which differ between the games."""
    from engine_service.rules.cards import CODES, PACK36_JOKERS, STRAINS
    normal = [c for c in PACK36_JOKERS if c < 36]
    for trump in range(5):
        set_trump(trump)

        def key(c: int) -> tuple[bool, int]:
            return CODES[c][1] == STRAINS[trump], -"AKQJT9876".index(CODES[c][0])

        for c in normal:
            for d in normal:
                assert (st.trick_rank(c) < st.trick_rank(d)) == (key(c) < key(d)), (trump, CODES[c], CODES[d])
                assert (st.trick_rank(c) == st.trick_rank(d)) == (key(c) == key(d)), (trump, CODES[c], CODES[d])
        yield trump, [st.trick_rank(c) for c in normal]


def test_georgian_joker_trick_rank_is_trump_then_rank_whatever_the_suit_gj_1_2_gj_1_5():
    """``trick_rank``'s order over every card of the pack, under every trump and ``NT``, against
    the rulebook written out here: a trump (GJ-6.2) is dearer than any other card; otherwise
    the higher rank (A K Q J T 9 8 7 6, GJ-1.2) is dearer, and cards of equal rank rank equal
    whatever their suits (GJ-1.5: suits have no order); a ``low`` joker (GJ-6.2) is below and a
    ``high`` one (GJ-6.1) above every card. Found by mutation testing: ``trick_rank`` ranking by
    suit (``a // 9`` for ``a % 9``) or a shifted suit boundary survived."""
    from engine_service.rules.games.georgian_joker import actions as A
    st = get_game("georgian_joker").new_state({}, first_dealer=0)
    for _, ranks in _trumps_then_rank(st, lambda trump: setattr(st, "trump", trump)):
        for joker in (36, 37):
            assert st.trick_rank(A.follow_joker_id(joker, A.LOW)) < min(ranks)
            assert st.trick_rank(A.follow_joker_id(joker, A.HIGH)) > max(ranks)


def test_japanese_joker_follower_takes_by_jjk_6():
    from engine_service.rules.games.japanese_joker import state as S
    from engine_service.rules.games.japanese_joker.tables import NUM_LEAD_KEYS, TRUMP_MASK
    st = get_game("japanese_joker").new_state({}, first_dealer=0)
    st._phase = S.PLAY
    st._trump = 2  # diamonds
    st._tbase = 2 * NUM_LEAD_KEYS * 38
    st._tmask = TRUMP_MASK[2]
    st._lead = card_id("JS")
    st._to_act = 1
    ids = _cards("QS", "9S", "6D", "AH") + [36]
    # JJK-6.2: a higher spade or a trump wins, a lower spade or another suit does not;
    # JJK-6.1: a following joker always wins
    assert _names(st, st.winning_ids(ids)) == ["play:QS", "play:6D", "play:X1"]
    # JJK-6.3: a joker lead naming spades is beaten only by a trump
    st._lead = 36 + 0
    assert _names(st, st.winning_ids(ids)) == ["play:6D", "play:X1"]
    assert st.trick_rank(card_id("AH")) < st.trick_rank(card_id("6D")) < st.trick_rank(36)


def test_japanese_joker_last_to_trick_is_the_follower_also_after_the_ace_of_spades_jjk_6():
    """JJK-6: a trick is one card by the leader and one by the follower, so the follower plays
    the last card and the leader does not. The ace of spades is lead key 0: a led card is on
    the table whatever its id (a ``lead > 0`` test would take it for no lead)."""
    game = get_game("japanese_joker")
    st = game.position(trump="H", hands=[["AS", "7D"], ["KS", "8D"]], to_act=0)
    assert not st.last_to_trick()
    st.apply("play:AS", 0)
    assert st.to_act() == 1 and st.last_to_trick()
    st = game.position(trump="H", hands=[["7D"], ["KS", "8D"]], to_act=1, lead=("AS", None))
    assert st.last_to_trick()
    assert _names(st, st.winning_ids(st.legal_ids())) == []  # KS is lower (JJK-6.2)


def test_japanese_joker_trick_rank_is_trump_then_rank_whatever_the_suit_jjk_1_2_jjk_1_4():
    """``trick_rank``'s order over every card of the pack, under every trump and ``NT``, against
    the rulebook written out here: a trump is dearer than any other card (JJK-6.2: it takes a
    plain lead); otherwise the higher rank (A K Q J T 9 8 7 6, JJK-1.2) is dearer, and cards of
    equal rank rank equal whatever their suits (JJK-1.4: suits are unordered but for the trump);
    a joker (both follow ids, JJK-1.3: X1 and X2 alike) is dearer than every card, since it
    always takes (JJK-6.1)."""
    from engine_service.rules.games.japanese_joker.tables import TRUMP_MASK
    st = get_game("japanese_joker").new_state({}, first_dealer=0)
    for trump, ranks in _trumps_then_rank(st, lambda trump: setattr(st, "_tmask", TRUMP_MASK[trump])):
        assert st.trick_rank(36) == st.trick_rank(37) > max(ranks), trump


# ---- the policy ---------------------------------------------------------------------------

def test_greedy_playout_takes_cheaply_or_throws_cheaply_when_epsilon_is_zero():
    """With epsilon 0, every last card to a trick is the cheapest winner when one exists (and the
    seat wants the trick), else the cheapest card; a seat that has made its bid (Georgian Joker)
    ducks with its dearest losing card."""
    for game_id in SEARCH_GAMES:
        game = get_game(game_id)
        rng = random.Random(3)
        seen = ducked = 0
        for m in range(30):
            opts = {"deal_schedule": "nines"} if game_id == "georgian_joker" else {}  # 9 cards each
            state = game.new_state(opts, first_dealer=0)
            state.deal(shuffled(game, rng))
            # replay the greedy playout step by step to compare each choice with the rule
            trace = state.clone()
            greedy_playout(state, random.Random(m), 0.0, game_id in ("georgian_joker", "jojotte"))
            played = state.history()[len(trace.history()):]
            for a in played:
                if trace.to_act() >= 0 and trace.last_to_trick():
                    ids = trace.legal_ids()
                    if len(ids) > 1:
                        who = trace.to_act()
                        rank = trace.trick_rank
                        wins = trace.winning_ids(ids)
                        wants = game_id not in ("georgian_joker", "jojotte") or trace.wants_trick(who)
                        if wants:
                            assert rank(a) == rank(min(wins or ids, key=rank)), (game_id, trace.action_str(a))
                            assert (a in wins) == bool(wins)
                        else:
                            losers = [b for b in ids if b not in wins]
                            assert (a in wins) == (not losers)
                            if losers:
                                assert rank(a) == rank(max(losers, key=rank))
                            ducked += 1
                        seen += 1
                trace.apply_id(a)
            assert trace.to_act() < 0  # the playout finished the deal
        assert seen > 30, game_id
        if game_id == "georgian_joker":
            assert ducked > 10  # seats that made their bid (GJ-7) were seen ducking


class _LastCardOnly:
    """A one-step stand-in state for :func:`greedy_playout`: one seat to play the last card to a
    trick from ``ids`` (ranked by their own value), ``wins`` the plays that take it."""

    def __init__(self, ids, wins, wants):
        self.ids, self.wins, self.wants, self.played = list(ids), list(wins), wants, []

    def to_act(self):
        return -1 if self.played else 0

    def legal_ids(self):
        return self.ids

    def apply_id(self, a):
        self.played.append(a)

    def last_to_trick(self):
        return True

    def winning_ids(self, ids):
        return [a for a in ids if a in self.wins]

    def trick_rank(self, a):
        return a

    def wants_trick(self, seat):
        return self.wants


def test_greedy_playout_when_every_play_wins_a_seat_that_wants_no_trick_takes_it_cheaply():
    """docs/bots.md, "The search's rollout policy": a seat that does not want the trick (GJ-7,
    JJ-4.3 / JJ-9.7) plays its dearest losing card, "or its cheapest winner when everything
    wins"; a seat that wants it throws its cheapest card when nothing wins."""
    for ids, wins, wants, expected in (([3, 1, 2], [3, 1, 2], False, 1),  # all win: cheapest winner
                                       ([3, 1, 2], [2], False, 3),  # the dearest loser
                                       ([3, 1, 2], [], True, 1),  # nothing wins: cheapest card
                                       ([3, 1, 2], [3, 2], True, 2)):  # cheapest winner
        st = _LastCardOnly(ids, wins, wants)
        greedy_playout(st, random.Random(0), 0.0, True)
        assert st.played == [expected], (ids, wins, wants)


def test_the_search_defaults_are_the_documented_ones():
    """docs/bots.md, "The first-party bots": 600 iterations or 85% of the time budget, UCB
    exploration 0.7, 24 sampled worlds, greedy ``epsilon`` 0.1; bid inference from 24 x 4 candidates within a quarter of the
    decision's time; the flat playouts decide Jo-Jotte's double, redouble and nullo (JJ-3.3,
    JJ-4.3); only Georgian Joker's and Jo-Jotte's states say whether a seat wants a trick."""
    p = SearchParams()
    assert (p.iterations, p.worlds, p.time_fraction, p.epsilon, p.exploration) == (600, 24, 0.85, 0.1, 0.7)
    assert (p.inference_candidates, p.inference_time) == (4, 0.25)
    assert PLAYOUT_DECISIONS == {"double", "redouble", "nullo"}
    assert SMALL_DEAL_CARDS == 3


@pytest.mark.parametrize("game_id", SEARCH_GAMES)
def test_the_tree_rolls_out_with_its_epsilon_and_the_wants_of_its_game(game_id, monkeypatch):
    """Each rollout gets ``params.epsilon`` and asks ``wants_trick`` only where the deal score
    hangs on which tricks a seat takes (Georgian Joker's bids, GJ-7; Jo-Jotte's nullo, JJ-4.3)."""
    seen = set()
    real = search.greedy_playout

    def spy(state, rng, epsilon, wants):
        seen.add((epsilon, wants))
        real(state, rng, epsilon, wants)

    monkeypatch.setattr(search, "greedy_playout", spy)
    bot = SearchBot(game_id, SearchParams(iterations=3, worlds=1, epsilon=0.25))
    who, view = next((w, v) for w, v in _decision_points(game_id, 12, 4) if not _flat_decision(game_id, v))
    bot.decide(DecisionRequest(game_id, who, view, tuple(view["legal"]), random.Random(1), 30.0))
    assert seen == {(0.25, game_id in ("georgian_joker", "jojotte"))}


def test_a_decision_with_one_legal_action_is_answered_at_once(monkeypatch):
    """bot_plugins/search.py: "A decision with one legal action is answered at once": no world
    is sampled and no iteration run."""
    who, view = _decision_points("klaberjass", 1, 2)[0]
    bot = SearchBot("klaberjass")
    monkeypatch.setattr(bot.game, "determinize", lambda *a: pytest.fail("sampled a world"))
    only = view["legal"][-1]
    assert bot.decide(DecisionRequest("klaberjass", who, view, (only,), random.Random(1), 30.0)) == only
    assert bot.last_iterations == 0


def _decision_points(game_id: str, count: int, seed: int):
    game = get_game(game_id)
    rng = random.Random(seed)
    state = game.new_state({}, first_dealer=0)
    out = []
    while len(out) < count and state.to_act() != TERMINAL:
        who = state.to_act()
        if who == CHANCE:
            state.deal(shuffled(game, rng))
            continue
        view = state.view(who)
        if len(view["legal"]) > 1:
            out.append((who, view))
        state.apply_id(rng.choice(state.legal_ids()))
    return out


def _flat_decision(game_id: str, view) -> bool:
    """The search answers this decision by flat playouts, without its tree
    (``SearchBot._by_playouts``): a small Georgian Joker deal's bid, a Jo-Jotte double,
    redouble or nullo (the Klaberjass auction stays with the tree by default)."""
    if game_id == "georgian_joker":
        return view["legal"][0].startswith("bid:") and view["table"]["cards_per_player"] <= SMALL_DEAL_CARDS
    return game_id == "jojotte" and not PLAYOUT_DECISIONS.isdisjoint(view["legal"])


@pytest.mark.parametrize("game_id", SEARCH_GAMES)
def test_search_is_deterministic_for_a_seed_with_either_rollout(game_id):
    """With a generous budget the iteration cap binds, so a seed replays the same answers
    (a decision answered without the tree, ``_flat_decision``, counts no iterations)."""
    for rollout in ("greedy", "random"):
        params = SearchParams(iterations=60, worlds=6, rollout=rollout)
        answers = []
        for _ in range(2):
            bot = SearchBot(game_id, params)
            run = []
            for who, view in _decision_points(game_id, 8, 11):
                req = DecisionRequest(game_id, who, view, tuple(view["legal"]), random.Random(5), 30.0)
                run.append(bot.decide(req))
                assert bot.last_iterations == (0 if _flat_decision(game_id, view) else 60)
            answers.append(run)
        assert answers[0] == answers[1]
        assert all(a in v["legal"] for a, (_, v) in zip(answers[0], _decision_points(game_id, 8, 11)))


@pytest.mark.parametrize("game_id", SEARCH_GAMES)
def test_greedy_search_answers_legally_within_its_budget(game_id):
    """No iteration cap: only the 0.1 s budget stops the greedy search (as in
    test_bots_play_legally.test_search_stops_at_its_budget), and the answer is legal at every
    sampled decision point. That the budget stopped the search is ``last_iterations < 10**9``;
    the wall-clock bound is only a guard against a hang (CI's other test worker can hold this
    process off the CPU: a 0.2 s margin was overrun once, at 0.26 s)."""
    import time
    bot = SearchBot(game_id, SearchParams(iterations=10**9, worlds=8, rollout="greedy"))
    for who, view in _decision_points(game_id, 6, 21):
        req = DecisionRequest(game_id, who, view, tuple(view["legal"]), random.Random(1), 0.1)
        t = time.monotonic()
        a = bot.decide(req)
        spent = time.monotonic() - t
        assert a in view["legal"]
        assert spent < 30, (game_id, spent)  # a hang guard only
        if _flat_decision(game_id, view):
            assert bot.last_iterations == 0  # flat playouts, no tree (SearchBot._by_playouts)
        else:
            assert 0 < bot.last_iterations < 10**9


def test_default_rollouts():
    """The production bot searches with each game's measured default (docs/bots.md)."""
    for game_id in SEARCH_GAMES:
        assert SearchBot(game_id).rollout == DEFAULT_ROLLOUT[game_id]
    assert set(DEFAULT_ROLLOUT.values()) == {"greedy"}  # not weaker than random anywhere
    assert SearchBot("jojotte", SearchParams(rollout="random")).rollout == "random"


def test_unknown_rollout_is_refused():
    with pytest.raises(ValueError):
        SearchBot("klaberjass", SearchParams(rollout="smart"))


# ---- the decision loop (SearchBot.decide) -----------------------------------------------------

def _first_tree_decision(game_id: str, seed: int = 4):
    """A decision point of ``game_id`` that the tree answers (not ``_flat_decision``)."""
    return next((w, v) for w, v in _decision_points(game_id, 12, seed) if not _flat_decision(game_id, v))


def _counted_worlds(monkeypatch, bot) -> list:
    """The worlds ``bot.game.determinize`` hands out from now on."""
    worlds = []
    real = bot.game.determinize

    def counted(*args):
        worlds.append(real(*args))
        return worlds[-1]

    monkeypatch.setattr(bot.game, "determinize", counted)
    return worlds


@pytest.mark.parametrize("game_id", SEARCH_GAMES)
def test_a_spent_budget_still_searches_one_world_once(game_id, monkeypatch):
    """bot_plugins/search.py (``_by_playouts``): the search stops at its deadline "after at
    least one world, like the tree": a request whose budget is already spent samples one world
    and runs one iteration, and is not answered by the heuristic fallback (which is for a view
    the sampler gives up on). Found by mutation testing: checking the clock before the first
    world or the first iteration, and sampling every world whatever the clock, survived."""
    who, view = _first_tree_decision(game_id)
    bot = SearchBot(game_id, SearchParams(iterations=50, worlds=6))
    worlds = _counted_worlds(monkeypatch, bot)
    req = DecisionRequest(game_id, who, view, tuple(view["legal"]), random.Random(1), 0.0)
    assert bot.decide(req) in view["legal"]
    assert len(worlds) == 1
    assert bot.last_iterations == 1 and bot.fallbacks == 0


@pytest.mark.parametrize("game_id", SEARCH_GAMES)
def test_the_budget_is_what_is_left_of_it_when_the_search_starts(game_id, monkeypatch):
    """docs/bots.md, "Time limits": ``budget_s`` counts from ``started`` and a bot reads
    ``request.time_left()`` (time spent waiting for a worker counts against it); the search
    stops at ``time_fraction`` (85%) of what is left. A request started 60 ms before a 100 ms
    budget leaves 40 ms: the tree stops within 34 ms of clock checks, not 85. Found by mutation
    testing: the search reading ``budget_s`` instead of ``time_left()`` survived."""
    from engine_service.plugins import protocol
    who, view = _first_tree_decision(game_id)
    bot = SearchBot(game_id, SearchParams(iterations=10**6, worlds=4))
    clock = _SteppingClock(tick=0.001)
    for module in (search, protocol):
        monkeypatch.setattr(module, "time", clock)
    started = clock.monotonic() - 0.06
    req = DecisionRequest(game_id, who, view, tuple(view["legal"]), random.Random(1), 0.1, started=started)
    assert bot.decide(req) in view["legal"]
    assert 0 < bot.last_iterations <= 0.04 * bot.params.time_fraction / clock.tick
    assert clock.now <= started + 0.1 - 0.04 * (1 - bot.params.time_fraction) + 2 * clock.tick


@pytest.mark.parametrize("game_id", SEARCH_GAMES)
def test_each_iteration_plays_a_clone_of_its_world(game_id, monkeypatch):
    """bot_plugins/search.py, "One decision": "each iteration clones the next world": the
    sampled worlds are left as they were sampled, so every iteration starts from the decision
    and not from a deal an earlier iteration finished. Found by mutation testing: playing the
    worlds themselves survived."""
    who, view = _first_tree_decision(game_id)
    bot = SearchBot(game_id, SearchParams(iterations=40, worlds=4))
    worlds = _counted_worlds(monkeypatch, bot)
    bot.decide(DecisionRequest(game_id, who, view, tuple(view["legal"]), random.Random(1), 30.0))
    assert len(worlds) == 4 and bot.last_iterations == 40
    for world in worlds:
        assert world.to_act() == who
        assert world.view(who)["legal"] == view["legal"]
        assert len(world.deal_results()) == len(view["deal_results"])


@pytest.mark.parametrize("game_id", SEARCH_GAMES)
def test_the_tree_scores_the_deal_being_decided_not_an_earlier_one(game_id, monkeypatch):
    """bot_plugins/search.py, "One decision": "the deal's score for every seat is backed up":
    in a later deal of a match (Georgian Joker's fourth, the first whose bids the tree decides)
    every rollout is scored by the result of that deal (the entry after the view's
    ``deal_results``), never by the first deal's, which no action can change. Found by mutation
    testing: reading ``deal_results[0]`` whatever the deal survived."""
    from tests.bots.positions import deal, request
    number = SMALL_DEAL_CARDS + 1 if game_id == "georgian_joker" else 2
    state = deal(game_id, {}, first_dealer=0, deal_number=number)
    while len(state.view(state.to_act())["legal"]) < 2:
        state.apply(state.view(state.to_act())["legal"][0], state.to_act())
    req = request(state)
    earlier = req.view["deal_results"]
    assert len(earlier) == number - 1
    scored = []
    real = search.deal_scores

    def spy(gid, result, n):
        scored.append(result)
        return real(gid, result, n)

    monkeypatch.setattr(search, "deal_scores", spy)
    bot = SearchBot(game_id, SearchParams(iterations=30, worlds=4))
    assert bot.decide(req) in req.legal
    assert len(scored) >= 30
    assert sum(result == earlier[0] for result in scored) < len(scored) / 2


@pytest.mark.parametrize("game_id", ["klaberjass", "jojotte"])
def test_random_rollouts_play_random_legal_actions_from_the_requests_rng(game_id, monkeypatch):
    """docs/bots.md, "The search's rollout policy": ``random`` plays "every action uniformly
    random among ``legal_ids()``", drawn from the request's rng (deterministic for a seed, not
    constant). In one fixed world (the true deal), one iteration per root action, the rollouts
    of ten seeds finish the deal in more ways than there are root actions. Found by mutation
    testing: random rollouts always playing the first legal id survived."""
    import json
    game = get_game(game_id)
    rng = random.Random(4)
    truth = game.new_state({}, first_dealer=0)
    while True:  # the first decision of a seeded random match that the tree answers
        who = truth.to_act()
        if who == CHANCE:
            truth.deal(shuffled(game, rng))
            continue
        view = truth.view(who)
        if len(view["legal"]) > 1 and not _flat_decision(game_id, view):
            break
        truth.apply_id(rng.choice(truth.legal_ids()))
    bot = SearchBot(game_id, SearchParams(iterations=len(view["legal"]), worlds=1, rollout="random"))
    monkeypatch.setattr(bot.game, "determinize", lambda v, rng: truth.clone())
    finished = set()
    real = search.deal_scores

    def spy(gid, result, n):
        finished.add(json.dumps(result, sort_keys=True))
        return real(gid, result, n)

    monkeypatch.setattr(search, "deal_scores", spy)
    for seed in range(10):
        bot.decide(DecisionRequest(game_id, who, view, tuple(view["legal"]), random.Random(seed), 30.0))
    assert len(finished) > len(view["legal"]), finished


class _MislabelledWorld:
    """A sampled world that names every action ``play:ZZ`` (as a world inconsistent with the
    view, from a broken sampler, could name actions the seat does not have)."""

    def __init__(self, world) -> None:
        self.world = world

    def clone(self):
        return self.world.clone()

    def action_str(self, a):
        return "play:ZZ"


def test_the_answer_is_a_legal_action_whatever_the_worlds_name(monkeypatch):
    """bot_plugins/search.py, "One decision": "the answer is the most visited *legal* root
    action": a root action whose name is not among the request's legal actions is never the
    answer, even when every visited one is such (the bot then answers a legal action all the
    same). Found by mutation testing: dropping the ``legal_set`` check survived."""
    who, view = _first_tree_decision("klaberjass")
    bot = SearchBot("klaberjass", SearchParams(iterations=20, worlds=2))
    real = bot.game.determinize
    monkeypatch.setattr(bot.game, "determinize", lambda v, rng: _MislabelledWorld(real(v, rng)))
    assert bot.decide(DecisionRequest("klaberjass", who, view, tuple(view["legal"]), random.Random(1), 30.0)) \
        in view["legal"]
    assert bot.last_iterations == 20


def test_the_random_rollout_never_plays_the_greedy_policy(monkeypatch):
    """docs/bots.md: ``SearchParams(rollout="random")`` (the ``search_random`` bot) plays
    "uniformly random rollouts everywhere": the tree never calls ``greedy_playout``. Found by
    mutation testing: the tree rolling out greedily whatever ``rollout`` says survived."""
    monkeypatch.setattr(search, "greedy_playout", lambda *a: pytest.fail("a greedy rollout"))
    for game_id in SEARCH_GAMES:
        who, view = _first_tree_decision(game_id)
        bot = SearchBot(game_id, SearchParams(iterations=20, worlds=2, rollout="random"))
        assert bot.decide(DecisionRequest(game_id, who, view, tuple(view["legal"]), random.Random(1), 30.0)) \
            in view["legal"]
        assert bot.last_iterations == 20


class _CountedClones:
    """A sampled world that counts the iterations started from it."""

    def __init__(self, world) -> None:
        self.world, self.clones = world, 0

    def clone(self):
        self.clones += 1
        return self.world.clone()

    def action_str(self, a):
        return self.world.action_str(a)


def test_the_iterations_cycle_through_the_sampled_worlds(monkeypatch):
    """bot_plugins/search.py, "One decision": "each iteration clones the *next* world": 40
    iterations over 4 sampled worlds start 10 times from each. Found by mutation testing: a
    randomly chosen world per iteration survived."""
    for game_id in SEARCH_GAMES:
        who, view = _first_tree_decision(game_id)
        bot = SearchBot(game_id, SearchParams(iterations=40, worlds=4))
        worlds = []
        real = bot.game.determinize

        def counted(*args):
            worlds.append(_CountedClones(real(*args)))
            return worlds[-1]

        monkeypatch.setattr(bot.game, "determinize", counted)
        bot.decide(DecisionRequest(game_id, who, view, tuple(view["legal"]), random.Random(1), 30.0))
        assert [w.clones for w in worlds] == [10] * 4, game_id


@pytest.mark.parametrize("game_id", SEARCH_GAMES)
def test_a_decision_depends_only_on_its_request(game_id):
    """engine_service/plugins/protocol.py, ``Bot``: one bot object serves many matches in a
    worker, "so ``decide`` must depend only on its request": a bot that has just answered
    decisions of other matches answers a request as a fresh bot does, for the same seed."""
    params = SearchParams(iterations=40, worlds=4)
    target = _decision_points(game_id, 3, 31)[-1]
    used = SearchBot(game_id, params)
    for who, view in _decision_points(game_id, 3, 32):
        used.decide(DecisionRequest(game_id, who, view, tuple(view["legal"]), random.Random(7), 30.0))

    def answer(bot):
        who, view = target
        return bot.decide(DecisionRequest(game_id, who, view, tuple(view["legal"]), random.Random(3), 30.0))

    assert answer(used) == answer(SearchBot(game_id, params))
