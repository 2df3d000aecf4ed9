"""Differential test of the Japanese Joker engine against :mod:`.japanese_joker_oracle`, a plain
model written from ``japanese_joker.md`` and NOTATION.md alone.

* Seeded random matches (default options, every ``target_score``, and the option sets of
  ``checks_japanese_joker.OPTION_SETS``): at every step the acting seat, the declarer
  (``dealer()``), the exact legal set, the JJK-10.4 auto-move, both hands and up-card rows and
  the trick counts; each deal's result; the match result. A sample of well-formed actions that
  the model calls illegal must be refused by the engine, leaving the state unchanged.
* Hand-built scenarios for rules random play rarely reaches, each citing its rule id.
"""

from __future__ import annotations

import json
import random

import pytest

from engine_service.rules import CHANCE, TERMINAL, get_game
from engine_service.rules.cards import card_code
from engine_service.rules.errors import IllegalAction

from engine_service.rules import transcript
from tests.shared_paths import transcripts as shared_transcripts
from tests.shared_paths import vectors as shared_vectors

from .checks_japanese_joker import OPTION_SETS, deck_for
from .japanese_joker_oracle import CHANCE as M_CHANCE
from .japanese_joker_oracle import JOKERS, PACK, SUITS, TERMINAL as M_TERMINAL, TRUMP_CHOICES, Model

GAME = get_game("japanese_joker")

ALL_ACTIONS = ([f"play:{c}" for c in PACK] + [f"play:{j}:{s}" for j in ("X1", "X2") for s in SUITS]
               + [f"trump:{t}" for t in TRUMP_CHOICES])


def engine_who(state):
    who = state.to_act()
    return {CHANCE: M_CHANCE, TERMINAL: M_TERMINAL}.get(who, who)


def expected_view(model, seat):
    """The view the engine's documented format (docs/games/japanese_joker.md, "Views") gives
    for the model's position; ``seat`` None is the public view (JJK-9.1, 9.5)."""
    phase = "over" if model.over else model.phase
    in_deal = phase in ("trump_choice", "playing")
    who = model.to_act()
    hand = sorted(model.hands[seat]) if seat is not None and in_deal else []
    legal = sorted(model.legal()) if seat is not None and who == seat else []
    playing = phase == "playing"
    table = {
        "declarer": model.dealer(), "trump": model.trump if playing else None,
        "tricks_played": model.tricks_played if playing else 0,
        "columns_up": [model.columns_up(s) for s in (0, 1)] if playing else [[], []],
        "column_counts": [len(model.columns[s]) for s in (0, 1)] if playing else [0, 0],
        "played_any": list(model.played_any) if playing else [False, False],
        "known_in_hand": [sorted(model.known[s]) for s in (0, 1)] if playing else [[], []],
        "deal_actions": model.record(seat) if in_deal else [],
    }
    return {
        "phase": phase, "deal_number": len(model.results), "dealer": model.dealer(),
        "to_act": who if isinstance(who, int) else None, "hand": hand, "legal": legal,
        "hand_sizes": [len(model.hands[s]) for s in (0, 1)] if in_deal else [0, 0],
        "trick": [{"seat": q, "card": c, **({"named_suit": n} if n else {})} for q, c, n in model.trick]
        if playing else [],
        "last_trick": model.last_trick, "tricks_taken": list(model.taken) if playing else [0, 0],
        "totals": model.totals, "deal_results": model.results, "over": model.over,
        "winners": model.winners, "table": table,
    }


def in_pack_order(cards):
    """Cards in the pack order (suits S H D C, each A ... 6, then X1 X2), the order in which the
    views list a hand, ``first_three`` and ``known_in_hand`` (docs/games/japanese_joker.md)."""
    return sorted(cards, key=PACK.index)


def same_view(view, expected, where):
    for key, value in expected.items():
        if key == "table":
            for k, v in value.items():
                got = view["table"][k]
                if k == "known_in_hand":
                    assert all(x == in_pack_order(x) for x in got), (where, view["seat"], k)
                    got = [sorted(x) for x in got]
                assert got == v, (where, view["seat"], k)
        elif key in ("hand", "legal"):
            assert sorted(view[key]) == value, (where, view["seat"], key)
            if key == "hand":  # the docs' card order (Views)
                assert view[key] == in_pack_order(view[key]), (where, view["seat"], key)
        else:
            assert view[key] == value, (where, view["seat"], key)


def compare_views(state, model, where) -> None:
    """Every seat's view and the public view against the model (JJK-9.1 .. 9.4)."""
    for seat in (0, 1, None):
        view = state.public_view() if seat is None else state.view(seat)
        same_view(view, expected_view(model, seat), where)
        if seat is not None and model.phase != "dealing" and not model.over:
            # the seat's own first three cards (documented choice 5; JJK-9.8)
            d = model.dealer()
            k0 = 0 if seat == d else 1
            assert view["table"]["first_three"] == in_pack_order(model.deck[k0 + 2 * i] for i in range(3)), where


def documented_order(action: str) -> tuple:
    """NOTATION 2.4 / docs "Actions and their order": normal cards by suit S H D C, within a
    suit A K Q J T 9 8 7 6; then the jokers, X1 before X2, a leading joker's named suits S H D C;
    the trump choices S H D C NT."""
    verb, arg, *rest = action.split(":")
    if verb == "trump":
        return (2, TRUMP_CHOICES.index(arg))
    if arg in JOKERS:
        return (1, JOKERS.index(arg), SUITS.index(rest[0]) if rest else -1)
    return (0, SUITS.index(arg[1]), "AKQJT9876".index(arg[0]))


def compare_position(state, model, where) -> None:
    """Seat to act, declarer, legal set (and its documented order), and (during play) hands,
    up cards, trick counts."""
    assert engine_who(state) == model.to_act(), where
    assert state.dealer() == model.dealer(), where
    legal = state.legal_actions()
    assert set(legal) == model.legal(), where
    assert legal == sorted(legal, key=documented_order) and len(set(legal)) == len(legal), where
    assert state.result() == model.result(), where
    if model.phase == "playing":
        for s in (0, 1):
            view = state.view(s)
            assert set(view["hand"]) == model.hands[s], (where, s)
            assert view["table"]["columns_up"][s] == model.columns_up(s), (where, s)
            assert view["table"]["column_counts"][s] == len(model.columns[s]), (where, s)
            assert view["table"]["played_any"][s] == model.played_any[s], (where, s)
        assert view["tricks_taken"] == model.taken, where
        pub = state.public_view()
        # JJK-9.1 / 9.2: public sizes, known cards, the trick in progress, the deal's record
        assert pub["hand_sizes"] == [len(model.hands[0]), len(model.hands[1])], where
        assert [set(k) for k in pub["table"]["known_in_hand"]] == model.known, where
        assert [(e["seat"], e["card"], e.get("named_suit")) for e in pub["trick"]] == model.trick, where
        assert pub["table"]["deal_actions"] == model.record(None), where
        for s in (0, 1):
            assert state.view(s)["table"]["deal_actions"] == model.record(s), (where, s)
        assert view["table"]["trump"] == model.trump, where


def check_refusals(state, model, rng, where, k=3) -> None:
    """JJK-5.7: actions the model calls illegal are refused, and refusing changes nothing."""
    legal = model.legal()
    before = state.legal_actions()
    for a in rng.sample([a for a in ALL_ACTIONS if a not in legal], k):
        with pytest.raises(IllegalAction):
            state.apply(a)
    assert state.legal_actions() == before, where


def play_match(options, seed, full_checks=True):
    rng = random.Random(seed)
    first = rng.randrange(2)
    state = GAME.new_state(options, first_dealer=first)
    model = Model(options, first_dealer=first)
    steps = 0
    while True:
        where = (options, seed, len(model.results), steps)
        if full_checks:
            compare_position(state, model, where)
            compare_views(state, model, where)
        who = model.to_act()
        assert engine_who(state) == who, where
        if who == M_TERMINAL:
            break
        if who == M_CHANCE:
            deck = list(PACK)
            rng.shuffle(deck)
            state.deal(deck)
            model.deal(deck)
            continue
        legal = sorted(model.legal())
        assert set(state.legal_actions()) == set(legal), where
        if full_checks:
            assert GAME.auto_move(state.view(who)) == model.auto_move(), where  # JJK-10.4
            if steps % 7 == 0:
                check_refusals(state, model, rng, where)
        a = rng.choice(legal)
        n_results = len(model.results)
        state.apply(a)
        model.apply(a)
        steps += 1
        if len(model.results) > n_results:
            assert state.deal_results() == model.deal_results(), where  # JJK-7.1, NOTATION 4
    assert state.deal_results() == model.deal_results()
    assert state.result() == model.result()  # JJK-8.2
    return model


OPTIONS = [{}, {"target_score": 11}, {"target_score": 15}, {"target_score": 31}] + OPTION_SETS


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: str(o) or "defaults")
def test_random_matches_agree_with_the_rulebook_model(options):
    for seed in range(5):
        play_match(options, 1000 + seed)


def test_many_fast_matches_agree_on_legal_sets_and_results():
    """Legal sets, acting seat and results only (no views), over more matches."""
    seen_trumps, draws = set(), 0
    for seed in range(150):
        model = play_match({"target_score": 11}, 5000 + seed, full_checks=False)
        seen_trumps |= {r["trump"] for r in model.results}
        draws += sum(r["taken"] == [9, 9] for r in model.results)
    assert seen_trumps == set(TRUMP_CHOICES)
    assert draws > 0  # a 9:9 deal was reached (JJK-7.1, JJK-2.3)


# ---------------------------------------------------------------------------------------------
# Scenarios


def both(declarer, first_three, hands, columns, trump, plays, options=None, other_three=None):
    """Engine and model after dealing the given layout, choosing ``trump`` and playing ``plays``
    (legal sets compared before every step)."""
    deck = deck_for(declarer, first_three, hands, columns, other_three)
    state = GAME.new_state(options or {}, first_dealer=declarer)
    model = Model(options or {}, first_dealer=declarer)
    state.deal(deck)
    model.deal(deck)
    for a in [f"trump:{trump}"] + list(plays):
        assert set(state.legal_actions()) == model.legal(), a
        state.apply(a)
        model.apply(a)
    assert set(state.legal_actions()) == model.legal()
    return state, model


# A layout (declarer seat 0): hands and columns [down, up].
HANDS = [["AH", "TH", "KC", "9C", "JD", "7D", "8S", "QS"], ["7H", "JH", "X1", "TS", "8D", "9D", "7C", "AD"]]
COLUMNS = [[["AC", "KS"], ["QD", "6D"], ["8C", "QC"], ["9H", "8H"], ["JC", "TD"]],
           [["7S", "AS"], ["KH", "JS"], ["X2", "TC"], ["QH", "6H"], ["9S", "KD"]]]


def test_JJK_5_1_A2_first_card_only_from_the_hand_then_up_cards_count():
    state, model = both(0, ["AH", "TH", "KC"], HANDS, COLUMNS, "H", ["play:AH"])
    # the follower's first card: hand only (JJK-5.1), hearts in hand 7H JH + the joker
    assert model.legal() == {"play:7H", "play:JH", "play:X1"}
    state.apply("play:7H")
    model.apply("play:7H")
    # the declarer has played: its up cards now count (8H)
    assert "play:8H" in model.legal() and set(state.legal_actions()) == model.legal()


def test_JJK_4_2_4_3_columns_five_to_zero_and_the_clearing_moves_three_cards():
    """Seat 0 leads its up cards one after the other; seat 1 answers from its hand / table."""
    state, model = both(0, ["AH", "TH", "KC"], HANDS, COLUMNS, "NT", ["play:AH", "play:7H"])
    rng = random.Random(3)
    cleared = False
    while model.tricks_played < 18:
        p = model.to_act()
        legal = sorted(model.legal())
        ups = [a for a in legal if a.split(":")[1] in model.up_cards(p)]
        a = rng.choice(ups or legal)
        ncols = len(model.columns[p])
        state.apply(a)
        model.apply(a)
        if ups and ncols == 2:
            cleared = True
            assert model.columns[p] == [] and state.view(p)["table"]["column_counts"][p] == 0
        assert set(state.legal_actions()) == model.legal()
        for s in (0, 1):
            assert set(state.view(s)["hand"]) == model.hands[s]
            assert state.view(s)["table"]["columns_up"][s] == model.columns_up(s)
    assert cleared
    assert state.deal_results() == model.deal_results()


def test_JJK_5_4_A1_joker_lead_demands_the_highest_named_card_from_the_table():
    """The seed example (rulebook 13.1) to trick 4, then seat 1 leads X1 naming spades: seat 0
    holds QS 8S in hand and KS as an up card, so KS alone (JJK-5.4 step 2, JJK-A1)."""
    seed = ["play:AH", "play:7H", "play:8H", "play:6H", "play:QC", "play:7C", "play:JD", "play:KD"]
    state, model = both(0, ["AH", "TH", "KC"], HANDS, COLUMNS, "H", seed + ["play:X1:S"])
    assert model.legal() == {"play:KS"}
    assert model.taken == [3, 1]
    state.apply("play:KS")
    model.apply("play:KS")
    assert "AC" in model.hands[0] and set(state.view(0)["hand"]) == model.hands[0]  # JJK-4.2
    assert model.taken == [3, 2] and state.view(0)["tricks_taken"] == [3, 2]  # JJK-6.3


def first_deal_after_the_trump(rng, declarer, trump):
    """Engine and model at the first card of a match's first deal, from a deck ``rng`` shuffles."""
    deck = list(PACK)
    rng.shuffle(deck)
    state = GAME.new_state({}, first_dealer=declarer)
    model = Model({}, first_dealer=declarer)
    state.deal(deck)
    model.deal(deck)
    state.apply(f"trump:{trump}")
    model.apply(f"trump:{trump}")
    return state, model


def test_JJK_6_1_6_3_joker_leads_and_answers_over_random_layouts():
    """Joker leads naming every suit, in trump and NT deals, answered by every legal card: the
    engine's winner agrees with JJK-6.1 / 6.3 (scanned over seeded layouts)."""
    rng = random.Random(7)
    hits = 0
    for _ in range(150):
        state, model = first_deal_after_the_trump(rng, rng.randrange(2), rng.choice(TRUMP_CHOICES))
        while model.tricks_played < 18:
            legal = sorted(model.legal())
            jl = [a for a in legal if a.count(":") == 2]
            a = rng.choice(jl) if jl and rng.random() < 0.8 else rng.choice(legal)
            if model.trick and model.trick[0][2] is not None:
                hits += 1
            assert set(state.legal_actions()) == set(legal)
            state.apply(a)
            model.apply(a)
            if model.tricks_played < 18:  # between deals the view holds no deal (documented choice 2)
                assert state.view(0)["tricks_taken"] == model.taken
        assert state.deal_results() == model.deal_results()
    assert hits > 200


def test_JJK_8_2_match_ends_at_the_first_deal_reaching_the_target_and_declarer_alternates():
    model = play_match({"target_score": 31}, 77)
    assert model.over and len(model.winners) == 1
    assert max(model.totals) >= 31 and min(model.totals) < 31


def model_transcript(options, seed, stop_inside_last_deal=False):
    """A ``card-transcript/1`` written from the model alone (legal sets, deal results, match
    result), NOTATION 3 / 4."""
    rng = random.Random(seed)
    first = rng.randrange(2)
    model = Model(options, first_dealer=first)
    deals = []
    while model.to_act() != M_TERMINAL:
        deck = list(PACK)
        rng.shuffle(deck)
        deal = {"deck": deck, "expect": {"dealer": model.dealer()}, "steps": []}
        model.deal(deck)
        n = len(model.results)
        while len(model.results) == n:
            legal = sorted(model.legal())
            a = rng.choice(legal)
            deal["steps"].append({"seat": model.to_act(), "legal": legal, "action": a})
            model.apply(a)
            if stop_inside_last_deal and len(deals) == 2 and len(deal["steps"]) == 20:
                deals.append(deal)
                return {"schema": "card-transcript/1", "game": "japanese_joker", "options": options,
                        "first_dealer": first, "deals": deals, "result": model.result()}
        deal["result"] = model.results[-1]
        deals.append(deal)
    return {"schema": "card-transcript/1", "game": "japanese_joker", "options": options,
            "first_dealer": first, "deals": deals, "result": model.result()}


@pytest.mark.parametrize("options, stop", [({}, False), ({"target_score": 11}, False),
                                           ({"target_score": 15}, True)])
def test_NOTATION_3_transcripts_written_by_the_model_check_out(options, stop):
    data = json.loads(json.dumps(model_transcript(options, 42, stop)))
    diff, state = transcript.check(transcript.validate(data))
    assert diff is None, str(diff)
    assert state.is_over() == (not stop)


@pytest.mark.parametrize("name, values", [
    ("target_score", [11, 15, 21, 31, 0, 10, 20, 22, 30, 32, 100, "21", 21.0, True, None]),
    ("turn_time_s", [10, 11, 30, 120, 9, 121, 0, -1, "30", 30.5, True, None]),
    ("reconnect_grace_s", [15, 16, 60, 600, 14, 601, "60", 60.0, False, None]),
])
def test_JJK_11_option_values_accepted_exactly_as_the_table_allows(name, values):
    from engine_service.rules.errors import InvalidOptions

    for v in values:
        try:
            Model({name: v})
            allowed = True
        except AssertionError:
            allowed = False
        if allowed:
            assert GAME.new_state({name: v}).options[name] == v
        else:
            with pytest.raises(InvalidOptions):
                GAME.new_state({name: v})


def test_biased_playouts_reach_the_rare_rules_and_agree():
    """Play biased towards up cards and joker leads, so that the rare situations come up often:
    a table cleared early (JJK-4.3) and hands of 13 cards (JJK-4.6), joker leads naming the trump
    (JJK-A4), led from the table or made public by a clearing (JJK-9.2), or answered by the
    other joker (JJK-6.1), the highest named-suit card forced from the
    table (JJK-A1), and trick 1 with the led suit only on the follower's table (JJK-A2). Engine and
    model agree at every step (positions and views)."""
    rng = random.Random(11)
    seen = dict.fromkeys(["clear", "hand13", "joker_trump", "two_jokers", "forced_from_table",
                          "a2_table_only", "nt_joker", "joker_led_from_table", "joker_made_public"], 0)
    for game in range(60):
        trump = TRUMP_CHOICES[game % 5]
        state, model = first_deal_after_the_trump(rng, game % 2, trump)
        while model.tricks_played < 18:
            where = (game, model.tricks_played, model.trick)
            compare_position(state, model, where)
            compare_views(state, model, where)
            p = model.to_act()
            legal = sorted(model.legal())
            if model.trick:
                lead, named = model.trick[0][1], model.trick[0][2]
                if named is not None:
                    seen["joker_trump"] += named == trump
                    seen["nt_joker"] += trump == "NT"
                    seen["two_jokers"] += any(a.startswith("play:X") for a in legal)
                    if len(legal) == 1 and legal[0].split(":")[1] in model.up_cards(p):
                        seen["forced_from_table"] += 1
                elif model.tricks_played == 0 and not model.played_any[p]:
                    if any(c[1:] == lead[1:] for c in model.up_cards(p) if c not in JOKERS) \
                            and not any(c[1:] == lead[1:] for c in model.hands[p] if c not in JOKERS):
                        seen["a2_table_only"] += 1
            if game % 2:  # keep up jokers on the table, so that a clearing can make them public
                legal = [a for a in legal if not (a.split(":")[1] in JOKERS and
                                                  a.split(":")[1] in model.up_cards(p))] or legal
            jl = [a for a in legal if a.count(":") == 2]
            ups = [a for a in legal if a.split(":")[1] in model.up_cards(p)]
            r = rng.random()
            a = rng.choice(jl if jl and r < 0.5 else ups if ups and r < 0.9 else legal)
            ncols = len(model.columns[p])
            seen["joker_led_from_table"] += a.count(":") == 2 and a.split(":")[1] in model.up_cards(p)
            state.apply(a)
            model.apply(a)
            seen["clear"] += ncols == 2 and not model.columns[p]
            seen["joker_made_public"] += bool(model.known[p] & set(JOKERS)) and ncols == 2 and not model.columns[p]
            seen["hand13"] += len(model.hands[p]) == 13
        assert state.deal_results() == model.deal_results()
    assert all(v >= 2 for v in seen.values()), seen


def model_position(trump, follower, hand, columns, played_any, lead, named=None):
    """The model in the middle of a trick: ``follower`` holds ``hand`` and ``columns`` and must
    answer ``lead`` (named ``named`` for a joker); only the follower's cards matter."""
    m = Model({}, first_dealer=1 - follower)
    m.phase, m.trump, m.tricks_played = "playing", trump, 5
    m.check_invariants = False
    m.hands[follower] = set(hand)
    m.columns[follower] = [list(c) for c in columns]
    m.played_any[follower] = played_any
    m.leader = 1 - follower
    m.trick = [(1 - follower, lead, named)]
    return m


def test_random_positions_agree_on_follow_legality_and_trick_winner():
    """Random mid-deal positions laid out with ``GAME.position`` (docs "Positions"): every
    normal or joker lead (naming every suit) in every strain, followers with 0/2/3/4/5 columns,
    before and after their first card. The engine's legal set equals the model's (JJK-5.1,
    5.3, 5.4) and each legal answer wins or loses as JJK-6.1 .. 6.3 say."""
    rng = random.Random(5)
    for _ in range(3000):
        cards = list(PACK)
        rng.shuffle(cards)
        trump = rng.choice(TRUMP_CHOICES)
        lead = cards.pop()
        named = rng.choice(SUITS) if lead in JOKERS else None
        first = rng.random() < 0.25
        ncols = 5 if first else rng.choice([0, 2, 3, 4, 5])
        hsize = 8 if first else rng.randint(1, 13 - 2 * ncols if ncols else 13) if ncols < 5 else rng.randint(1, 8)
        hand = [cards.pop() for _ in range(hsize)]
        columns = [[cards.pop(), cards.pop()] for _ in range(ncols)]
        model = model_position(trump, 1, hand, columns, not first, lead, named)
        state = GAME.position(trump=trump, hands=[[], hand], columns=[[], columns],
                              played_any=[True, not first], to_act=1, lead=(lead, named), declarer=0,
                              tricks_taken=(3, 2))
        where = (trump, lead, named, hand, columns, first)
        assert set(state.legal_actions()) == model.legal(), where
        for a in sorted(model.legal()):
            st, m = state.clone(), model_position(trump, 1, hand, columns, not first, lead, named)
            st.apply(a)
            m.apply(a)  # the model's trick winner
            want = [3, 2]
            want[m.leader] += 1
            assert st.view(1)["tricks_taken"] == want, (where, a)
            assert set(st.view(1)["hand"]) == m.hands[1], (where, a)
            assert st.view(1)["table"]["columns_up"][1] == m.columns_up(1), (where, a)


# ---------------------------------------------------------------------------------------------
# The oracle itself against the rulebook's own vectors and sample transcript (JJK-13)

VECTORS = dict(shared_vectors("japanese_joker"))


def test_oracle_reproduces_the_trick_case_vectors():
    """JJK-13.2 / 13.3: exact legal sets and winners (JJK-5.1, 5.3, 5.4, 6.1 .. 6.3)."""
    n = 0
    for vec in VECTORS.values():
        if vec["kind"] != "jj_trick_cases":
            continue
        for case in vec["cases"]:
            fs = case["follower_state"]
            args = (case["trump"], 1, fs["hand"], fs["columns"], fs["played_any"], case["lead"]["card"],
                    case["lead"].get("named_suit"))
            m = model_position(*args)
            assert m.legal_cards(1) == set(case["expected_legal"]), case["id"]
            m.apply(f"play:{case['follow']['card']}")
            assert m.leader == (0 if case["expected_winner"] == "leader" else 1), case["id"]
            n += 1
    assert n >= 13


def test_oracle_reproduces_the_seed_deal_vector():
    """JJK-13.1 (Giorgi vs Nino): legal sets, sources, moved cards, winners, running score."""
    vec = VECTORS["japanese_joker_seed_first_tricks.json"]
    deck = deck_for(vec["declarer"], vec["declarer_first_three"], vec["initial_hands"], vec["initial_columns"])
    m = Model(vec["table_options"], first_dealer=vec["declarer"])
    m.deal(deck)
    m.apply(f"trump:{vec['trump']}")
    for trick in vec["tricks"]:
        assert m.to_act() == trick["leader"]
        for play in trick["plays"]:
            seat = play["seat"]
            assert m.to_act() == seat
            if str(seat) in trick.get("expected_legal", {}):
                assert m.legal_cards(seat) == set(trick["expected_legal"][str(seat)]), trick["number"]
            m.apply(f"play:{play['card']}" + (f":{play['named_suit']}" if "named_suit" in play else ""))
            assert m.events[-1]["from"] == play["expected_source"]
            assert m.events[-1].get("moved_hidden", 0) == play.get("expected_moved_hidden", 0)
        assert m.last_trick["winner"] == trick["expected_winner"]
        assert m.taken == trick["expected_tricks_after"]


def test_oracle_reproduces_the_column_sequence_vector():
    """JJK-13.4: columns 5 -> 4 -> 3 -> 2 -> 0, the hand growing to 13 (JJK-4.2, 4.3, 4.6)."""
    vec = VECTORS["japanese_joker_column_sequence.json"]
    st = vec["initial_state"]
    m = Model({}, first_dealer=0)
    m.phase, m.trump, m.leader = "playing", "NT", 0
    m.check_invariants = False
    m.hands[0], m.columns[0], m.played_any[0] = set(st["hand"]), [list(c) for c in st["columns"]], st["played_any"]
    for card in vec["expected_illegal_first_plays"]:
        assert f"play:{card}" not in m.legal()
    for step in vec["steps"]:
        m.trick, m.leader = [], 0
        m.apply(f"play:{step['play']}")
        m.trick = []
        e = m.events[-1]
        assert e["from"] == step["expected_source"]
        if "expected_moved_hidden" in step:
            assert m.private_moved[len(m.events) - 1] == step["expected_moved_hidden"]
            assert e["moved_public"] == step["expected_moved_public"]
        assert len(m.hands[0]) == step["expected_hand_size"]
        assert m.columns_up(0) == step["expected_columns_up"]


def test_oracle_reproduces_the_scoring_and_match_vector():
    """JJK-13.5: JJK-7.1 scoring, JJK-2.3 alternation, JJK-8.2 match end."""
    vec = VECTORS["japanese_joker_seed_scoring_and_match.json"]
    for case in vec["scoring_cases"]:
        m = Model({}, first_dealer=0)
        m.trump, m.taken = "S", list(case["tricks"])
        m._score_deal()
        assert m.results[-1]["scores"] == case["expected_points"], case["id"]
    match = vec["match"]
    m = Model(match["table_options"], first_dealer=match["first_declarer"])
    for deal in match["deals"]:
        assert m.dealer() == deal["expected_declarer"]
        m.trump, m.taken = "S", list(deal["tricks"])
        m._score_deal()
        assert m.totals == deal["expected_totals_after"] and m.over == deal["expected_match_over"]
        if "expected_winner" in deal:
            assert m.winners == [deal["expected_winner"]]


def test_oracle_replays_the_sample_transcripts():
    """NOTATION 3: the rulebook folder's sample Japanese Joker transcripts check out on the model."""
    for path in shared_transcripts("japanese_joker"):
        data = json.loads(path.read_text())
        m = Model(data.get("options") or {}, first_dealer=data["first_dealer"])
        for deal in data["deals"]:
            if "dealer" in deal.get("expect", {}):
                assert m.dealer() == deal["expect"]["dealer"]
            m.deal(deal["deck"])
            for step in deal["steps"]:
                assert m.to_act() == step["seat"]
                if "legal" in step:
                    assert m.legal() == set(step["legal"])
                m.apply(step["action"])
            if "result" in deal:
                assert m.results[-1] == deal["result"]
        assert m.result()["totals"] == data["result"]["totals"]
        assert m.result()["over"] == data["result"]["over"]


def test_JJK_9_7_refusing_a_card_outside_A_p_says_the_same_for_own_down_cards_and_other_cards():
    """JJK-9.7: an error is computed from the sender's view only. Every card outside the actor's
    available cards (JJK-5.1, by the oracle) is refused with one reason, the card's code aside,
    whether it is the actor's own down card (whose identity the actor must not learn, JJK-9.4)
    or a card elsewhere."""
    rng = random.Random(4)
    reasons: dict[str, set[str]] = {}
    for game in range(12):
        deck = list(PACK)
        rng.shuffle(deck)
        state = GAME.new_state({}, first_dealer=game % 2)
        model = Model({}, first_dealer=game % 2)
        state.deal(deck)
        model.deal(deck)
        trump = TRUMP_CHOICES[game % 5]
        state.apply(f"trump:{trump}")
        model.apply(f"trump:{trump}")
        while model.tricks_played < 18:
            p = model.to_act()
            own_down = {col[0] for col in model.columns[p]}
            for c in PACK:
                if c in model.hands[p] or c in model.up_cards(p):
                    continue
                action = f"play:{c}" + (":S" if c in JOKERS and not model.trick else "")
                with pytest.raises(IllegalAction) as err:
                    state.apply(action)
                reasons.setdefault(err.value.message.replace(c, "??"), set()).add(
                    "own_down" if c in own_down else "elsewhere")
            a = rng.choice(sorted(model.legal()))
            state.apply(a)
            model.apply(a)
    # one reason for a normal card, one for a leading joker's form; each covers both kinds
    assert len(reasons) <= 2 and all(v == {"own_down", "elsewhere"} for v in reasons.values()), reasons


def test_determinized_deals_are_rulebook_deals_that_the_seat_cannot_tell_apart():
    """``GAME.determinize(view, rng)`` (docs "Determinization") draws a deal consistent with a
    seat's view: replayed by the oracle from its deck, every action of it is legal by the
    rulebook (JJK-3 .. JJK-6), and the oracle's view for that seat is the view it was drawn
    from (JJK-9.3 / 9.4: the seat's knowledge is all it keeps)."""
    rng = random.Random(21)
    checked = 0
    for game in range(16):
        options = {"target_score": 31}
        first = game % 2
        state = GAME.new_state(options, first_dealer=first)
        stop_deal, stop_trick = rng.randrange(3), rng.randrange(0, 18)
        while True:
            if state.to_act() == CHANCE:
                deck = list(PACK)
                rng.shuffle(deck)
                state.deal(deck)
            if (len(state.deal_results()) == stop_deal and state.to_act() >= 0
                    and state.view(0)["table"]["tricks_played"] >= stop_trick) or state.is_over():
                break
            state.apply(rng.choice(state.legal_actions()))
        if state.is_over():
            continue
        for seat in (0, 1):
            view = state.view(seat)
            for k in range(2):
                det = GAME.determinize(view, random.Random(k))
                # the drawn deal as its deck and actions (its history starts at this deal; the
                # finished deals are context only, so transcript.export does not apply)
                (_, deck), *actions = det.history()
                model = Model(options, first_dealer=first)
                model.results = [dict(r) for r in state.deal_results()]
                model.totals = list(state.result()["totals"])
                model.declarer = state.dealer()
                model.last_trick = view["last_trick"]  # the previous deal's, until a trick is complete
                model.deal([card_code(c) for c in deck])
                for a in actions:
                    assert det.action_str(a) in model.legal(), (game, seat, k, det.action_str(a))
                    model.apply(det.action_str(a))
                same_view(view, expected_view(model, seat), (game, seat, k))
                checked += 1
    assert checked >= 40
