"""What each seat and a spectator may know (GJ-11): views, secret cards, zones."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from engine_service.rules import CHANCE, TERMINAL
from engine_service.rules.cards import CODES, PACK36_JOKERS_MASK, card_id

from .checks_georgian_joker import GAME, OPTION_SETS, deck_for, state_at_deal
from .last_trick import check_deal_boundaries
from .playout import cards_in, current_deal_cards_in, iter_states, random_match, shuffled

COMMON_KEYS = {"game", "phase", "deal_number", "dealer", "to_act", "seat", "hand", "hand_sizes", "legal",
               "trick", "last_trick", "tricks_taken", "totals", "deal_results", "over", "winners", "table"}
TABLE_KEYS = {"options", "first_dealer", "schedule", "deals_in_match", "deal", "pulka", "cards_per_player",
              "forehand", "trump_chooser", "trump_indicator", "trump", "bids", "forbidden_bid", "leader",
              "tricks", "deal_actions", "standing"}
PRIVATE = ("seat", "hand", "legal")


def public_cards(state) -> int:
    """Cards seen by everybody, from the omniscient zones: the indicator and every played card."""
    z = state.zones()
    return z.get("turn_up", 0) | z.get("played", 0) | z.get("trick", 0)


def mask(cards) -> int:
    return sum(1 << c for c in cards)


def all_states(options=None, seeds=range(3)):
    for seed in seeds:
        yield from iter_states(GAME, 70 + seed, options)


@pytest.mark.parametrize("options", [{}, {"deal_schedule": "nines"}])
def test_view_is_public_view_plus_own_hand_and_legal_gj_11_1_gj_11_2(options):
    """GJ-11.1/11.2/11.6: a seat's view differs from the spectator's only by its own hand and,
    on its turn, its own legal actions; the keys are the documented ones."""
    for state in all_states(options):
        pub = state.public_view()
        assert set(pub) == COMMON_KEYS and set(pub["table"]) == TABLE_KEYS
        assert pub["hand"] == [] and pub["legal"] == [] and pub["seat"] is None
        for seat in range(4):
            v = state.view(seat)
            assert {k: v[k] for k in v if k not in PRIVATE} == {k: pub[k] for k in pub if k not in PRIVATE}
            assert v["seat"] == seat
            assert v["legal"] == (state.legal_actions() if state.to_act() == seat else [])


@pytest.mark.parametrize("options", [{}, {"deal_schedule": "nines"}])
def test_secret_cards_are_exact_gj_11_3(options):
    """secret_cards(seat) is exactly the pack minus the seat's hand and the public cards, and a
    view names exactly the cards that are not secret to its audience (but for the previous
    deal's final trick in last_trick before the deal's first trick is complete: GJ-11.5)."""
    for state in all_states(options):
        public = public_cards(state)
        assert state.secret_cards(None) == PACK36_JOKERS_MASK & ~public
        assert mask(current_deal_cards_in(state.public_view())) == public
        for seat in range(4):
            own = state.zones()[f"hand{seat}"]
            assert state.secret_cards(seat) == PACK36_JOKERS_MASK & ~(public | own)
            assert mask(current_deal_cards_in(state.view(seat))) == public | own


def test_stock_and_phase_b_never_shown_gj_3_4_gj_3_6():
    """The stock is never in any view (during, after the deal, after the match); nine-card
    deals show no phase-B card to anybody before the trump is declared."""
    for options in ({}, {"deal_schedule": "nines"}):
        rng = random.Random(5)
        state = GAME.new_state(options, first_dealer=1)
        stock: set[int] = set()
        while state.to_act() != TERMINAL:
            if state.to_act() == CHANCE:
                for v in [state.public_view()] + [state.view(s) for s in range(4)]:
                    assert not cards_in(v) & stock, "the last deal's stock stays hidden"
                deck = shuffled(GAME, rng)
                state.deal(deck)
                z = state.zones()
                stock = {c for c in range(38) if z.get("stock", 0) >> c & 1}
                if "undealt" in z:
                    assert {c for c in range(38) if z["undealt"] >> c & 1} == set(deck[12:])
            z = state.zones()
            hidden = stock | {c for c in range(38) if z.get("undealt", 0) >> c & 1}
            for v in [state.public_view()] + [state.view(s) for s in range(4)]:
                assert not current_deal_cards_in(v) & hidden
            if state.public_view()["phase"] == "trump_choice":
                for s in range(4):
                    assert len(state.view(s)["hand"]) == 3
            state.apply_id(rng.choice(state.legal_ids()))
        for v in [state.public_view()] + [state.view(s) for s in range(4)]:
            final = {card_id(p["card"]) for p in v["last_trick"]["plays"]}
            assert len(final) == 4 and not final & stock
            assert cards_in(v) == final, "after the match only the last deal's final trick is shown"


def test_view_timeline_in_a_three_card_deal_gj_11_4():
    """GJ-11.4's timeline in a three-card deal (the nine-card one: test_georgian_joker_trace)."""
    state = state_at_deal(3, {}, first_dealer=1)
    hands = [["AS", "KH", "7C"], ["8S", "9H", "JC"], ["X1", "QS", "6H"], ["TS", "8C", "9D"]]
    state.deal(deck_for(hands, 3, "TD"))
    v = state.view(1)
    assert v["phase"] == "bidding" and v["hand"] == ["8S", "9H", "JC"]
    assert v["hand_sizes"] == [3, 3, 3, 3] and v["to_act"] == 0 and v["legal"] == []
    assert v["table"]["trump"] == "D" and v["table"]["trump_indicator"] == "TD"
    assert v["table"]["bids"] == [None] * 4 and v["table"]["forbidden_bid"] is None
    assert state.view(0)["legal"] == ["bid:0", "bid:1", "bid:2", "bid:3"]
    for a in ("bid:1", "bid:0", "bid:1"):
        state.apply(a)
    assert state.view(1)["table"]["forbidden_bid"] == 1  # public while the dealer is to bid
    state.apply("bid:0")
    assert state.view(1)["table"]["forbidden_bid"] is None
    for a in ("play:AS", "play:8S", "play:QS", "play:TS", "play:KH", "play:9H", "play:X1:high"):
        state.apply(a)
    v = state.view(1)
    assert v["phase"] == "playing" and v["to_act"] == 3
    assert v["trick"] == [{"seat": 0, "card": "KH"}, {"seat": 1, "card": "9H"},
                          {"seat": 2, "card": "X1", "joker_mode": "high"}]
    assert v["last_trick"] == {"leader": 0, "winner": 0, "plays": [
        {"seat": 0, "card": "AS"}, {"seat": 1, "card": "8S"}, {"seat": 2, "card": "QS"}, {"seat": 3, "card": "TS"}]}
    assert v["tricks_taken"] == [1, 0, 0, 0] and v["hand_sizes"] == [1, 1, 1, 2]
    assert v["table"]["tricks"] == [v["last_trick"]] and v["table"]["leader"] == 0
    assert v["table"]["deal_actions"] == ["bid:1", "bid:0", "bid:1", "bid:0", "play:AS", "play:8S", "play:QS",
                                          "play:TS", "play:KH", "play:9H", "play:X1:high"]
    assert v["deal_number"] == 2 and v["dealer"] == 3 and v["table"]["deal"] == 3
    for a in ("play:9D", "play:6H", "play:8C", "play:7C", "play:JC"):
        state.apply(a)
    v = state.view(1)
    assert v["phase"] == "deal_setup" and v["to_act"] is None and v["hand"] == [] and v["trick"] == []
    assert v["deal_results"][-1]["scores"] == [100, 50, 20, 50]
    assert v["dealer"] == 0 and v["table"]["deal"] == 4 and v["table"]["cards_per_player"] == 4
    assert v["deal_number"] == 3  # the 0-based index of the next deal
    assert state.secret_cards(1) & (1 << card_id("AS")) == 0  # played cards stay public


def test_trump_choice_view_gj_11_4():
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=0)
    deck = shuffled(GAME, random.Random(3))
    state.deal(deck)
    v = state.view(1)
    assert v["phase"] == "trump_choice" and v["to_act"] == 1 and v["legal"] == [
        "trump:S", "trump:H", "trump:D", "trump:C", "trump:NT"]
    assert sorted(v["hand"]) == sorted(CODES[c] for c in deck[0:12:4])
    assert v["table"]["trump_chooser"] == 1 and v["table"]["trump"] is None
    assert v["table"]["trump_indicator"] is None and v["hand_sizes"] == [3, 3, 3, 3]
    assert state.view(2)["legal"] == []
    state.apply("trump:D")
    assert state.public_view()["table"]["trump"] == "D"
    assert state.public_view()["table"]["deal_actions"] == ["trump:D"]
    assert state.view(2)["hand_sizes"] == [9, 9, 9, 9]


def test_zones_cover_the_pack_and_name_the_places():
    state = state_at_deal(2, {}, first_dealer=0)
    assert state.zones() == {}
    state.deal(list(GAME.pack))
    z = state.zones()
    assert set(z) == {"hand0", "hand1", "hand2", "hand3", "trick", "played", "turn_up", "stock"}
    assert sum(z.values()) == PACK36_JOKERS_MASK


# ---- last_trick across deals (game.py's view keys; GJ-11.5, GJ-6, GJ-5.9) ---------------------------

def _gj_play(seat: int, action: str) -> dict:
    parts = action.split(":")  # the final card follows: a joker has a mode, never a named suit
    play = {"seat": seat, "card": parts[1]}
    if len(parts) > 2:
        play["joker_mode"] = parts[2]
    return play


def _gj_final(state, before: dict, last: dict) -> None:
    """The final trick's leader is the seat that led it (GJ-5.9: the view's leader)."""
    assert last["leader"] == last["plays"][0]["seat"] == before["table"]["leader"]


@pytest.mark.parametrize("options", [{}, *OPTION_SETS])
def test_last_trick_is_the_previous_deals_final_trick_until_the_first_trick_gj_11_5(options):
    """GJ-11.5 (the winners of completed tricks are public): every audience's ``last_trick``
    after the final card of a deal, while the next deck is due, after it is dealt (trump
    choice, bidding: no trick in ``table.tricks``) and in the final views of the match is the
    deal's final trick, its plays and its winner (GJ-6: from the deal's ``taken`` against the
    counts before the final card); the next deal's first complete trick replaces it.
    Determinization at a deal's start restores it (also from the plays alone)."""
    seen = Counter()
    for seed in range(2):
        seen += check_deal_boundaries(GAME, 800 + seed, options, play_of=_gj_play,
                                      taken_after=lambda st: st.deal_results()[-1]["taken"],
                                      deal_has_no_trick=lambda v: v["table"]["tricks"] == [],
                                      check_final=_gj_final, determinize_every=5)
    # (a one-card deal's first trick is its final one)
    assert seen["final_tricks"] == seen["deals"] >= 32 and seen["first_tricks"] >= 32, seen
    assert seen["determinized"] >= 6


def test_previous_deals_final_trick_winner_follows_high_joker_lead_trumpable_gj_6_6():
    """GJ-6.6 with option ``high_joker_lead_trumpable`` (GJ-13) and GJ-11.5: deal 1 (one card,
    trump D) is a single trick, a ``high`` joker lead naming S, the ace of spades, a trump 7D
    and a heart; the trump wins it. Between deals and after the next deal is dealt,
    ``last_trick`` shows that trick with the winner the deal's ``taken`` records (seat 2), not
    the leading joker (the default rule, GJ-6.1)."""
    state = GAME.new_state({"high_joker_lead_trumpable": True}, first_dealer=3)  # forehand 0
    state.deal(deck_for([["X1"], ["AS"], ["7D"], ["AH"]], dealer=3, indicator="TD"))
    for action in ("bid:0", "bid:0", "bid:0", "bid:0", "play:X1:high:S", "play:AS", "play:7D", "play:AH"):
        state.apply(action)
    assert state.deal_results()[-1]["taken"] == [0, 0, 1, 0]
    assert state.public_view()["last_trick"]["winner"] == 2
    state.deal(list(GAME.pack))  # deal 2: no trick yet, the previous final trick is shown
    assert state.public_view()["table"]["tricks"] == []
    for view in [state.public_view()] + [state.view(s) for s in range(4)]:
        assert view["last_trick"]["winner"] == 2
        assert view["last_trick"]["plays"][0] == {"seat": 0, "card": "X1", "joker_mode": "high", "named_suit": "S"}


# ---- GJ-11.2 and GJ-11.6 as scenarios on an explicit deck --------------------------------------

def _nines_state():
    """Deal 1 of a ``nines`` match, first dealer 0, so the forehand (seat 1) chooses the trump;
    deck[k] goes to seat (1 + k) mod 4 (GJ-3.5)."""
    deck = [CODES[c] for c in GAME.pack]  # pack order, top card first
    state = GAME.new_state({"deal_schedule": "nines"}, first_dealer=0)
    state.deal(deck)
    return state, deck


def test_gj_11_2_own_cards_and_own_legal_actions_are_private_to_each_seat():
    """GJ-11.2: each player sees exactly their own cards — the three phase-A cards while the
    trump is chosen, all nine after it — and their legal actions only on their own turn; no
    other player's card or legal set appears in their view."""
    from engine_service.rules.cards import codes_of
    state, deck = _nines_state()
    assert state.public_view()["phase"] == "trump_choice" and state.to_act() == 1
    for seat in range(4):
        own_a = [deck[k] for k in range(12) if (1 + k) % 4 == seat]
        v = state.view(seat)
        assert sorted(v["hand"]) == sorted(own_a)
        others = set(deck) - set(own_a)
        assert not {CODES[c] for c in cards_in(v)} & others, seat
        assert v["legal"] == (["trump:S", "trump:H", "trump:D", "trump:C", "trump:NT"] if seat == 1 else [])
    state.apply("trump:H")
    for seat in range(4):
        own = [deck[k] for k in range(36) if (1 + k) % 4 == seat]
        v = state.view(seat)
        assert sorted(v["hand"]) == sorted(own) == sorted(codes_of(state.zones()[f"hand{seat}"]))
        assert not {CODES[c] for c in cards_in(v)} & (set(deck) - set(own)), seat
        assert v["legal"] == (state.legal_actions() if seat == state.to_act() else [])
    bidder = state.to_act()
    assert state.view(bidder)["legal"] and all(state.view(s)["legal"] == [] for s in range(4) if s != bidder)


def test_gj_11_6_spectators_receive_exactly_the_public_view():
    """GJ-11.6: the spectator audience (the rules core's ``view_maker()(None)`` and the session
    layer's SPECTATOR view) is the public view: no hand, no legal actions, no seat, and no card
    but the played ones; it equals every seat's view with that seat's private keys removed."""
    from engine_service.sessions.views import SPECTATOR, view_for
    state, deck = _nines_state()
    state.apply("trump:S")
    for _ in range(4):
        state.apply(GAME.auto_move(state.view(state.to_act())))  # the four bids
    state.apply(GAME.auto_move(state.view(state.to_act())))  # the first card
    played = {CODES[c] for c in cards_in(state.public_view()["trick"])}
    assert len(played) == 1
    for spectator in (state.view_maker()(None), view_for(state, SPECTATOR), view_for(state, SPECTATOR, state.view_maker())):
        assert spectator == state.public_view()
        assert spectator["hand"] == [] and spectator["legal"] == [] and spectator["seat"] is None
        assert {CODES[c] for c in cards_in(spectator)} == played
        for seat in range(4):
            v = state.view(seat)
            assert {k: v[k] for k in v if k not in PRIVATE} == {k: spectator[k] for k in spectator if k not in PRIVATE}
    assert state.secret_cards(None) == PACK36_JOKERS_MASK & ~mask(card_id(c) for c in played)


def test_between_deals_no_hand_trick_or_bid_is_shown_gj_11_1():
    """GJ-11.1 / GJ-7.7: once a deal is scored and the next is not yet dealt, every view shows
    empty hands (sizes 0), no trick in progress, no bids and no trump: the finished deal lives
    on in the score sheet only. ``table.leader`` is the leader of the next trick (docs/games/
    georgian_joker.md): the next deal's forehand, who leads its first trick (GJ-2.7, GJ-5.9)."""
    rng = random.Random(3)
    state = GAME.new_state({}, first_dealer=0)
    assert state.public_view()["table"]["leader"] == state.public_view()["table"]["forehand"] == 1
    state.deal(shuffled(GAME, rng))
    while state.to_act() != CHANCE:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    for view in [state.view(s) for s in range(4)] + [state.public_view()]:
        assert view["table"]["leader"] == view["table"]["forehand"] == (view["dealer"] + 1) % 4 == 2
        assert view["hand_sizes"] == [0, 0, 0, 0] and view["trick"] == [] and view["hand"] == []
        assert view["tricks_taken"] == [0, 0, 0, 0]
        table = view["table"]
        assert table["bids"] == [None, None, None, None] and table["forbidden_bid"] is None
        assert table["trump"] is None and table["trump_indicator"] is None and table["tricks"] == []


def test_the_final_views_name_the_match_winners_gj_9_1_gj_9_3():
    """GJ-9.1 / GJ-9.3: once the last scheduled deal is scored the match is over; every
    audience's view says so (phase ``match_over``, docs/games/georgian_joker.md) and names the
    winners ``result()`` names, the seats sharing the first place of the final standing."""
    state = random_match(GAME, 5, {"deal_schedule": "nines"})
    winners = state.result()["winners"]
    totals = state.result()["totals"]
    assert winners == [s for s in range(4) if totals[s] == max(totals)]
    for view in [state.view(s) for s in range(4)] + [state.public_view()]:
        assert view["over"] is True and view["phase"] == "match_over" and view["winners"] == winners
        assert view["table"]["standing"][winners[0]] == 1


def test_a_view_s_deal_results_are_copies_of_the_score_sheet_gj_11_1():
    """GJ-11.1: every view shows the deal results, but as copies: a caller editing the lists
    of a view (a bot, a client adapter) cannot change the match's score sheet, which
    ``deal_results()`` hands out read-only by contract."""
    rng = random.Random(4)
    state = GAME.new_state({}, first_dealer=2)
    state.deal(shuffled(GAME, rng))
    while state.to_act() != CHANCE:
        state.apply(GAME.auto_move(state.view(state.to_act())))
    sheet = [{k: list(v) if isinstance(v, list) else v for k, v in r.items()} for r in state.deal_results()]
    for view in [state.view(s) for s in range(4)] + [state.public_view()]:
        for r in view["deal_results"]:
            for key in ("bids", "taken", "scores"):
                r[key].append(99)
                r[key][0] = -7
    assert state.deal_results() == sheet
    assert state.public_view()["deal_results"] == sheet


# GJ-2.4 / GJ-2.5, spelled out from the rulebook's tables: (n, pulka) of each deal
STANDARD_DEALS = ([(n, 1) for n in range(1, 9)] + [(9, 2)] * 4 + [(n, 3) for n in range(8, 0, -1)]
                  + [(9, 4)] * 4)
NINES_DEALS = [(9, k // 4 + 1) for k in range(16)]


@pytest.mark.parametrize("options,deals", [({}, STANDARD_DEALS),
                                           ({"deal_schedule": "nines", "moshla": "off"}, NINES_DEALS)])
def test_table_shows_the_match_frame_in_every_phase_gj_11_1_gj_2(options, deals):
    """GJ-11.1: the table options, the first dealer (GJ-2.2), the schedule and its length, the
    deal and pulka numbers and ``n`` (GJ-2.4, GJ-2.5), the forehand (GJ-2.7) and, in a
    nine-card deal, the trump chooser (GJ-3.5) are public, before the deal and during it."""
    rng = random.Random(8)
    first = 2
    state = GAME.new_state(options, first_dealer=first)
    seen = []
    while state.to_act() != TERMINAL:
        if state.to_act() == CHANCE:
            state.deal(shuffled(GAME, rng))
        else:
            state.apply(GAME.auto_move(state.view(state.to_act())))
        if state.to_act() == TERMINAL:
            break
        table = state.public_view()["table"]
        n, pulka = deals[table["deal"] - 1]
        dealer = (first + table["deal"] - 1) % 4
        assert table["options"] == dict(GAME.options(options))
        assert table["options"]["deal_schedule"] == table["schedule"] == options.get("deal_schedule", "standard")
        assert table["first_dealer"] == first and table["deals_in_match"] == len(deals)
        assert (table["cards_per_player"], table["pulka"]) == (n, pulka)
        assert table["forehand"] == (dealer + 1) % 4 and state.public_view()["dealer"] == dealer
        assert table["trump_chooser"] == (table["forehand"] if n == 9 else None)
        seen.append(table["deal"])
    assert sorted(set(seen)) == list(range(1, len(deals) + 1))
