"""Japanese Joker rules (japanese_joker.md): the shared vectors and transcripts, then scenario
tests per rulebook section with readable cards, options, and bad input."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter

import pytest

from engine_service.rules import (CHANCE, TERMINAL, DealRequired, IllegalAction, InvalidOptions,
                                  MalformedAction, MatchOver, NotYourTurn, transcript)
from engine_service.rules.cards import CODES, card_id
from engine_service.rules.games.japanese_joker import GAME, OPTION_SPECS, deal_scores
from tests.shared_paths import ROOT, transcripts, vectors

from .checks_japanese_joker import deck_for, legal_cards, play, play_match_deal
from .last_trick import check_deal_boundaries
from .playout import iter_states, random_match, shuffled, without_previous_deal_trick

VECTORS = vectors("japanese_joker")
INFORMATIVE = ("notes", "comment", "columns_format")


def informative(key: str) -> bool:
    return key in INFORMATIVE or key.endswith("_assumption") or key.endswith("_note")


def table_options(vec: dict) -> dict:
    return dict(vec.get("table_options") or {})


def state_for(vec_opts: dict, declarer: int, deck: list[str]):
    st = GAME.new_state(vec_opts, first_dealer=declarer)
    st.deal(deck)
    return st


def own_action(st, seat: int, index: int = -1) -> dict:
    return st.view(seat)["table"]["deal_actions"][index]


# ---- vectors ---------------------------------------------------------------------------------

def test_vector_files_have_known_kinds_and_schema():
    """JJK-0.4: every vector file has the common fields of the schema and one of its kinds."""
    kinds = set()
    for name, vec in VECTORS:
        assert vec["schema"] == "card-rules-vector/1", name
        assert vec["game"] == "japanese_joker", name
        assert all(r.startswith("JJK-") for r in vec["rules"]), name
        GAME.options(table_options(vec))  # every vector's options are valid
        kinds.add(vec["kind"])
    assert kinds <= {"jj_deal", "jj_trick_cases", "jj_column_sequence", "jj_match"}
    assert {"jj_deal", "jj_trick_cases", "jj_column_sequence", "jj_match"} <= kinds


def _vectors(kind: str):
    out = [(n, v) for n, v in VECTORS if v["kind"] == kind]
    assert out, kind
    return out


@pytest.mark.parametrize("name,vec", _vectors("jj_deal"), ids=lambda x: x if isinstance(x, str) else "")
def test_vector_deal(name, vec):
    """jj_deal vectors, among them the seed's Giorgi-Nino first tricks (JJK-13.1)."""
    declarer = vec["declarer"]
    hands, cols = vec["initial_hands"], vec["initial_columns"]
    deck = deck_for(declarer, vec["declarer_first_three"], hands, cols)
    st = state_for(table_options(vec), declarer, deck)
    # JJK-3.3: the declarer chooses after seeing only their three cards
    assert st.to_act() == declarer
    assert sorted(st.view(declarer)["hand"]) == sorted(vec["declarer_first_three"])
    assert st.legal_actions() == ["trump:S", "trump:H", "trump:D", "trump:C", "trump:NT"]
    st.apply(f"trump:{vec['trump']}", declarer)
    for seat in (0, 1):
        v = st.view(seat)
        assert sorted(v["hand"]) == sorted(hands[seat])
        assert v["table"]["columns_up"][seat] == [up for _, up in cols[seat]]
        assert v["table"]["trump"] == vec["trump"]
    for trick in vec["tricks"]:
        assert st.to_act() == trick["leader"], trick["number"]
        for play_ in trick["plays"]:
            seat = play_["seat"]
            assert st.to_act() == seat
            if str(seat) in trick.get("expected_legal", {}):
                assert legal_cards(st) == set(trick["expected_legal"][str(seat)]), (trick["number"], seat)
            hand_before = st.view(seat)["hand"]
            play(st, play_["card"], play_.get("named_suit"))
            entry = own_action(st, seat)
            assert entry["seat"] == seat and entry["from"] == play_["expected_source"]
            if play_["expected_source"] == "hand":
                assert play_["card"] in hand_before
            if "expected_moved_hidden" in play_:
                assert entry["moved_hidden"] == play_["expected_moved_hidden"]
        v = st.public_view()
        assert v["last_trick"]["winner"] == trick["expected_winner"], trick["number"]
        assert v["tricks_taken"] == trick["expected_tricks_after"], trick["number"]
        for seat_key, exp in trick.get("expected_state_after", {}).items():
            seat = int(seat_key)
            sv = st.view(seat)
            if "columns_up" in exp:
                assert sv["table"]["columns_up"][seat] == exp["columns_up"]
            if "hand_size" in exp:
                assert sv["hand_sizes"][seat] == exp["hand_size"] == len(sv["hand"])
            if "hand" in exp:
                assert sorted(sv["hand"]) == sorted(exp["hand"])


def _trick_cases():
    out = []
    for name, vec in _vectors("jj_trick_cases"):
        for case in vec["cases"]:
            out.append(pytest.param(vec, case, id=f"{name}:{case['id']}"))
    return out


@pytest.mark.parametrize("vec,case", _trick_cases())
def test_vector_trick_case(vec, case):
    """jj_trick_cases: the follower's exact legal set and the trick winner (JJK-5, JJK-6)."""
    fs = case["follower_state"]
    lead = case["lead"]
    st = GAME.position(trump=case["trump"], hands=[[], fs["hand"]], columns=[[], fs["columns"]],
                       played_any=[True, fs["played_any"]], to_act=1,
                       lead=(lead["card"], lead.get("named_suit")), options=table_options(vec))
    assert legal_cards(st) == set(case["expected_legal"])
    assert all(":" not in a[5:] for a in st.legal_actions()), "a follower never names a suit"
    play(st, case["follow"]["card"])
    winner = st.public_view()["last_trick"]["winner"]
    assert winner == (1 if case["expected_winner"] == "follower" else 0)


def _column_sequence_state(vec):
    """A real deal holding the vector's player (seat 0, declarer, NT) whose opponent can never
    take a trick while following: its hearts, jokers and high clubs lie face down."""
    init = vec["initial_state"]
    assert init["played_any"] is False
    mine = set(init["hand"]) | {c for col in init["columns"] for c in col}
    rest = [c for c in CODES if card_id(c) in GAME.pack_set and c not in mine]
    downs = ["AH", "X1", "X2", "KC", "QC"]
    ups = ["TC", "9C", "8C", "7C", "6D"]
    opp_hand = [c for c in rest if c not in downs + ups]
    assert len(opp_hand) == 8
    deck = deck_for(0, init["hand"][:3], [init["hand"], opp_hand],
                    [init["columns"], [[d, u] for d, u in zip(downs, ups)]])
    st = state_for(table_options(vec), 0, deck)
    st.apply("trump:NT")
    return st


@pytest.mark.parametrize("name,vec", _vectors("jj_column_sequence"), ids=lambda x: x if isinstance(x, str) else "")
def test_vector_column_sequence(name, vec):
    """5 -> 4 -> 3 -> 2 -> 0 columns, the hand growing (JJK-4.1 - 4.7); the first card of the
    deal never comes from the table (JJK-5.1)."""
    st = _column_sequence_state(vec)
    for bad in vec["expected_illegal_first_plays"]:
        with pytest.raises(IllegalAction):
            st.apply(f"play:{bad}", 0)
    for step in vec["steps"]:
        assert st.to_act() == 0
        hand_before = st.view(0)["hand"]
        play(st, step["play"])
        entry = own_action(st, 0)
        assert entry["from"] == step["expected_source"]
        if step["expected_source"] == "hand":
            assert step["play"] in hand_before
        if "expected_moved_hidden" in step:
            assert entry["moved_hidden"] == len(step["expected_moved_hidden"])
            assert entry["moved_cards"] == step["expected_moved_hidden"]
        if "expected_moved_public" in step:
            assert entry["moved_public"] == step["expected_moved_public"]
        v = st.view(0)
        assert v["hand_sizes"][0] == step["expected_hand_size"]
        assert v["table"]["columns_up"][0] == step["expected_columns_up"]
        assert set(entry.get("moved_cards", [])) <= set(v["hand"])
        # the opponent answers with a card that loses the trick, so seat 0 leads again
        for a in st.legal_actions():
            trial = st.clone()
            trial.apply(a)
            if trial.to_act() == 0:
                st.apply(a)
                break
        else:
            raise AssertionError("the opponent could not lose the trick")
        # JJK-4.7: hand + 2 x columns = 18 - cards played
        plays0 = sum(1 for e in st.view(0)["table"]["deal_actions"] if e["seat"] == 0 and "from" in e)
        assert v["hand_sizes"][0] + 2 * v["table"]["column_counts"][0] == 18 - plays0


@pytest.mark.parametrize("name,vec", _vectors("jj_match"), ids=lambda x: x if isinstance(x, str) else "")
def test_vector_match(name, vec):
    """JJK-7.1 scoring cases; a whole match whose deals end with the vector's trick splits,
    with the declarer alternating (JJK-2.3) and the match ending at the target (JJK-8.2)."""
    for case in vec["scoring_cases"]:
        assert list(deal_scores(case["tricks"])) == case["expected_points"], case["id"]
    match = vec["match"]
    opts = dict(table_options(vec), **match.get("table_options", {}))
    st = GAME.new_state(opts, first_dealer=match["first_declarer"])
    for i, deal in enumerate(match["deals"]):
        assert st.dealer() == deal["expected_declarer"], i
        st = play_match_deal(st, tuple(deal["tricks"]), seed=i)
        res = st.deal_results()[-1]
        assert res["taken"] == deal["tricks"]
        r = st.result()
        assert r["totals"] == deal["expected_totals_after"], i
        assert r["over"] is deal["expected_match_over"], i
        if "expected_winner" in deal:
            assert r["winners"] == [deal["expected_winner"]]
    assert st.to_act() == TERMINAL


# ---- transcripts -----------------------------------------------------------------------------

@pytest.mark.parametrize("path", transcripts("japanese_joker"), ids=lambda p: p.name)
def test_sample_transcript_checks_out(path):
    diff, state = transcript.check(transcript.load(path))
    assert diff is None, str(diff)
    # and it round-trips through export
    again = transcript.export(state)
    assert transcript.check(json.loads(json.dumps(again)))[0] is None


def test_replay_cli_checks_the_samples():
    files = [str(p) for p in transcripts("japanese_joker")]
    out = subprocess.run([sys.executable, "-m", "engine_service", "replay", "--check", *files],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert all(line.endswith(": ok") for line in out.stdout.strip().splitlines()), out.stdout


def test_a_changed_sample_step_is_reported():
    data = transcript.load(transcripts("japanese_joker")[0])
    data["deals"][0]["steps"][2]["legal"].append("play:X2")
    diff, _ = transcript.check(data)
    assert diff is not None and diff.where == "deal 0 step 2" and diff.what == "legal"


def test_sample_transcript_results_and_seats_are_compared_in_full():
    """NOTATION sections 3-4: the sample's deal results equal the engine's exactly (JJK-7.1
    ``trump``, ``taken``, ``scores``, no other key), and a change to any result field, to an
    extra or missing result key, to a step's seat, or to the match totals is the reported
    difference."""
    data = transcript.load(transcripts("japanese_joker")[0])
    diff, state = transcript.check(data)
    assert diff is None, str(diff)
    assert [d["result"] for d in data["deals"] if "result" in d] == state.deal_results()
    assert state.result() == data["result"]
    for key, value in (("trump", "NT"), ("taken", [10, 8]), ("scores", [2, 0])):
        bad = json.loads(json.dumps(data))
        bad["deals"][1]["result"][key] = value
        diff, _ = transcript.check(bad)
        assert diff is not None and (diff.where, diff.what) == ("deal 1 result", f"result.{key}")
    bad = json.loads(json.dumps(data))
    bad["deals"][0]["result"]["thrown_in"] = False  # not a Japanese Joker result field
    diff, _ = transcript.check(bad)
    assert diff is not None and diff.what == "result.thrown_in"
    bad = json.loads(json.dumps(data))
    del bad["deals"][0]["result"]["scores"]
    diff, _ = transcript.check(bad)
    assert diff is not None and diff.what == "result.scores"
    bad = json.loads(json.dumps(data))
    bad["deals"][1]["steps"][5]["seat"] ^= 1
    diff, _ = transcript.check(bad)
    assert diff is not None and (diff.where, diff.what) == ("deal 1 step 5", "seat")
    bad = json.loads(json.dumps(data))
    bad["result"]["totals"] = [2, 0]
    diff, _ = transcript.check(bad)
    assert diff is not None and diff.what == "result.totals"


# ---- JJK-1: deck -----------------------------------------------------------------------------

def test_pack_is_34_normal_cards_and_two_jokers():
    """JJK-1.1: 6S and 6C are replaced by X1 and X2."""
    codes = {CODES[c] for c in GAME.pack}
    assert len(GAME.pack) == 36 and {"X1", "X2"} <= codes
    assert "6S" not in codes and "6C" not in codes and {"6H", "6D"} <= codes
    st = GAME.new_state()
    for bad in ("play:6S", "play:6C"):
        with pytest.raises(MalformedAction, match="not in the Japanese Joker pack"):
            st.parse_action(bad)


@pytest.mark.parametrize("text, message", [
    ("trump:Z", "not a suit or NT: 'Z'"),
    ("play:ZZ", "not a card code: 'ZZ'"),
    ("trump:NT:x", "the trump choice is trump:S, trump:H, trump:D, trump:C or trump:NT"),
    ("play:AS:H:x", "a play is play:<card> or, for a leading joker, play:<joker>:<suit>"),
    ("play:X1:Q", "a joker names one of the suits S, H, D, C"),
    ("bid:3", "is not a Japanese Joker action (trump:<strain>, play:<card>, play:<joker>:<suit>)"),
])
def test_malformed_actions_say_what_is_wrong(text, message):
    """JJK-5.7, NOTATION section 2: text outside the vocabulary is MalformedAction with a
    message that names the fault (a bad strain, a card that is no card code, too many parts, a
    bad named suit, an unknown verb), not a generic one."""
    with pytest.raises(MalformedAction) as err:
        GAME.new_state().parse_action(text)
    assert message in str(err.value)


def test_jokers_behave_identically():
    """JJK-1.3 (D): swapping X1 and X2 in a deck changes nothing but the joker names."""
    swap = str.maketrans({"1": "2", "2": "1"})
    rng = random.Random(11)
    for _ in range(20):
        deck = shuffled(GAME, rng)
        a, b = GAME.new_state(first_dealer=0), GAME.new_state(first_dealer=0)
        a.deal(deck)
        b.deal([{36: 37, 37: 36}.get(c, c) for c in deck])
        while a.to_act() >= 0:
            legal = a.legal_actions()
            assert {x.translate(swap) for x in legal} == set(b.legal_actions())
            act = rng.choice(legal)
            a.apply(act)
            b.apply(act.translate(swap))
        assert a.deal_results() == b.deal_results()


# ---- JJK-2 / JJK-3: declarer, dealing, trump --------------------------------------------------

def test_without_a_first_dealer_seat_0_declares_first_jjk_2_2():
    """JJK-2.2: the first declarer is an input of the match (the session's draw); when none is
    given, ``Game.new_state``'s documented default is seat 0, so seat 0 receives deck[0] and
    chooses the trump."""
    deck = [CODES[c] for c in GAME.pack]
    st = GAME.new_state()
    st.deal(deck)
    assert st.dealer() == 0 and st.to_act() == 0 and st.view(0)["phase"] == "trump_choice"
    assert st.view(0)["hand"] == sorted(deck[0:6:2], key=card_id)


def test_dealing_procedure_is_exact():
    """JJK-3.2: deck[0..5] one at a time, declarer first; JJK-3.4: deck[6..15] hands,
    deck[16..25] down cards and deck[26..35] up cards of columns 1-5, declarer first."""
    deck = [CODES[c] for c in GAME.pack]
    for declarer in (0, 1):
        st = GAME.new_state(first_dealer=declarer)
        st.deal(deck)
        o = 1 - declarer
        assert st.view(declarer)["hand"] == sorted(deck[0:6:2], key=card_id)
        assert st.view(o)["hand"] == sorted(deck[1:6:2], key=card_id)
        assert st.zones()["stock"] == sum(1 << card_id(c) for c in deck[6:])
        st.apply("trump:NT")
        assert st.view(declarer)["hand"] == sorted(deck[0:6:2] + deck[6:16:2], key=card_id)
        assert st.view(o)["hand"] == sorted(deck[1:6:2] + deck[7:16:2], key=card_id)
        assert st.view(declarer)["table"]["columns_up"] == (
            [deck[26::2], deck[27::2]] if declarer == 0 else [deck[27::2], deck[26::2]])
        assert st.zones()[f"down{declarer}"] == sum(1 << card_id(c) for c in deck[16:26:2])
        assert st.zones()[f"down{o}"] == sum(1 << card_id(c) for c in deck[17:26:2])
        assert st.to_act() == declarer  # JJK-2.5: the declarer leads


def test_zones_of_a_dealt_deal_are_the_documented_ones_and_follow_the_trick_jjk_3_4_jjk_6():
    """docs/games/japanese_joker.md, ``zones()``: during play exactly ``hand0/1``, ``up0/1``,
    ``down0/1``, ``trick``, ``won0/1`` (no ``out``: a dealt deal places all 36 cards). The up
    cards are deck[26..35] (JJK-3.4); a lead lies in ``trick`` until the follower plays, then
    both cards lie in the zone of the seat that took the trick (JJK-6), nothing in the other."""
    deck = [CODES[c] for c in GAME.pack]
    st = GAME.new_state(first_dealer=0)
    st.deal(deck)
    st.apply("trump:NT")
    z = st.zones()
    assert sorted(z) == sorted(["hand0", "hand1", "up0", "up1", "down0", "down1", "trick", "won0", "won1"])
    assert z["up0"] == sum(1 << card_id(c) for c in deck[26::2])
    assert z["up1"] == sum(1 << card_id(c) for c in deck[27::2])
    assert z["trick"] == z["won0"] == z["won1"] == 0
    lead = st.legal_actions()[0]
    st.apply(lead)
    lead_bit = 1 << card_id(lead.split(":")[1])
    assert st.zones()["trick"] == lead_bit and st.zones()["won0"] == st.zones()["won1"] == 0
    follow = st.legal_actions()[-1]
    st.apply(follow)
    taker = st.view(0)["tricks_taken"].index(1)
    z = st.zones()
    assert z["trick"] == 0 and z[f"won{1 - taker}"] == 0
    assert z[f"won{taker}"] == lead_bit | 1 << card_id(follow.split(":")[1])


def test_trump_choice_offers_five_strains_and_is_public():
    """JJK-3.3, 3.6: S, H, D, C or NT; the choice is public for the whole deal."""
    st = GAME.new_state(first_dealer=1)
    st.deal(shuffled(GAME, random.Random(1)))
    assert st.to_act() == 1
    assert st.legal_actions() == ["trump:S", "trump:H", "trump:D", "trump:C", "trump:NT"]
    with pytest.raises(NotYourTurn):
        st.apply("trump:H", seat=0)
    st.apply("trump:NT", seat=1)
    assert st.public_view()["table"]["trump"] == "NT"
    assert st.view(0)["table"]["trump"] == "NT"


def test_declarer_alternates_including_draws():
    """JJK-2.3 (D): the declarer alternates after every deal, 9:9 draws included."""
    st = GAME.new_state({"target_score": 31}, first_dealer=1)
    seen = []
    for i, want in enumerate([(9, 9), (9, 9), (10, 8), (9, 9)]):
        seen.append(st.dealer())
        st = play_match_deal(st, want, seed=10 + i)
        assert st.public_view()["dealer"] == st.dealer()
    assert seen == [1, 0, 1, 0]
    assert st.result()["totals"] == [2, 0]


def test_draw_first_dealer_is_uniform_and_pure():
    """JJK-2.2 (D): the documented draw: parity of the top card's position in the pack."""
    rng = random.Random(5)
    counts = [0, 0]
    for _ in range(4000):
        deck = shuffled(GAME, rng)
        seat = GAME.draw_first_dealer(deck)
        assert seat == GAME.draw_first_dealer(list(deck))
        assert seat == GAME.pack.index(deck[0]) % 2
        counts[seat] += 1
    assert abs(counts[0] - 2000) < 200, counts
    assert GAME.draw_first_dealer([CODES[c] for c in GAME.pack]) == 0


def test_the_pack_order_of_the_first_declarers_draw_ends_x1_x2():
    """JJK-1.1 / JJK-2.2 (D): the draw's "position in the game's pack order"
    (docs/games/japanese_joker.md) is the order S H D C, each A ... 6 (no 6S, no 6C), then
    X1 X2: a pack topped by X1 (position 34) gives seat 0, by X2 (35) seat 1."""
    assert [CODES[c] for c in GAME.pack] == (
        [r + "S" for r in "AKQJT987"] + [r + "H" for r in "AKQJT9876"]
        + [r + "D" for r in "AKQJT9876"] + [r + "C" for r in "AKQJT987"] + ["X1", "X2"])
    rest = [CODES[c] for c in GAME.pack[:34]]
    assert GAME.draw_first_dealer(["X1", "X2"] + rest) == 0
    assert GAME.draw_first_dealer(["X2", "X1"] + rest) == 1


# ---- JJK-4: columns ---------------------------------------------------------------------------

SEED = json.loads(json.dumps(dict(VECTORS)["japanese_joker_seed_first_tricks.json"]))


def seed_state():
    """The seed's Giorgi (0) - Nino (1) deal after Giorgi's trump choice H (JJK-13.1)."""
    deck = deck_for(0, SEED["declarer_first_three"], SEED["initial_hands"], SEED["initial_columns"])
    st = GAME.new_state(first_dealer=0)
    st.deal(deck)
    st.apply("trump:H")
    return st


def test_seed_example_giorgi_nino_first_five_tricks():
    """JJK-13.1, written out: Giorgi (0) declares H on AH TH KC and leads; follower legal sets
    7H JH X1 (first card: hand only), JH 6H X1, 7C TC X1, 8D 9D AD KD X1, and KC alone (the
    highest available club after Nino's X1 naming C; AC lies face down); score 1:0 ... 3:2."""
    st = seed_state()
    tricks = [("AH", None, "7H", {"7H", "JH", "X1"}, [1, 0]),
              ("8H", None, "6H", {"JH", "6H", "X1"}, [2, 0]),
              ("QC", None, "7C", {"7C", "TC", "X1"}, [3, 0]),
              ("JD", None, "KD", {"8D", "9D", "AD", "KD", "X1"}, [3, 1]),
              ("X1", "C", "KC", {"KC"}, [3, 2])]
    for lead, named, follow, follower_legal, score in tricks:
        play(st, lead, named)
        assert legal_cards(st) == follower_legal, lead
        play(st, follow)
        assert st.public_view()["tricks_taken"] == score
    assert st.to_act() == 1  # Nino won the joker trick and leads trick 6
    assert sorted(st.view(0)["hand"]) == sorted(["TH", "9H", "9C", "8C", "7D", "8S", "QS"])


def test_a_clone_between_lead_and_follow_shows_the_trick_and_plays_on_alike_jjk_9_1():
    """JJK-9.1: the card led to the trick in progress is public, with its leader. A clone taken
    between the lead and the follow (search bots copy a match with ``clone``) shows every
    audience the original's views, and the follow completes the trick alike (JJK-6.4)."""
    st = seed_state()
    play(st, "AH")
    twin = st.clone()
    assert twin.public_view()["trick"] == [{"seat": 0, "card": "AH"}]
    for seat in (0, 1):
        assert twin.view(seat) == st.view(seat)
    assert twin.public_view() == st.public_view()
    play(st, "7H"), play(twin, "7H")
    assert twin.public_view() == st.public_view() and twin.to_act() == st.to_act() == 0


def test_down_card_goes_to_hand_at_once_unseen_by_the_opponent():
    """JJK-4.2, 4.5, 9.2: Giorgi plays up 8H in trick 2: its down 9H reaches his hand at once,
    Nino sees only that one hidden card moved."""
    st = seed_state()
    play(st, "AH"), play(st, "7H")
    play(st, "8H")
    g, n = st.view(0), st.view(1)
    assert "9H" in g["hand"] and g["table"]["deal_actions"][-1]["moved_cards"] == ["9H"]
    assert "9H" not in json.dumps(n) and "9H" not in json.dumps(st.public_view())
    assert n["table"]["deal_actions"][-1] == {"seat": 0, "action": "play:8H", "from": "table",
                                             "moved_hidden": 1, "moved_public": []}
    assert n["hand_sizes"][0] == 8 and n["table"]["column_counts"] == [4, 5]
    # the moved card does not join the current trick: Nino's obligations are unchanged
    assert legal_cards(st) == {"6H", "JH", "X1"}


def test_two_column_clearing_moves_three_cards():
    """JJK-4.3, 4.4 (A8): with exactly two columns, playing one moves both down cards and
    the other up card to the hand; the column count goes 2 -> 0, never 1."""
    st = GAME.position(trump="NT", hands=[["7D"], ["8D"]],
                       columns=[[["9H", "8C"], ["TD", "KH"]], [["AS", "KS"], ["QS", "JS"]]],
                       to_act=0)
    play(st, "KH")
    v0, v1 = st.view(0), st.view(1)
    assert v0["table"]["column_counts"][0] == 0
    assert sorted(v0["hand"]) == sorted(["7D", "TD", "9H", "8C"])
    assert v0["table"]["deal_actions"] == [{"seat": 0, "action": "play:KH", "from": "table",
                                            "moved_hidden": 2, "moved_public": ["8C"],
                                            "moved_cards": ["TD", "9H"]}]
    assert v1["table"]["deal_actions"][0]["moved_hidden"] == 2 and "moved_cards" not in v1["table"]["deal_actions"][0]
    assert v1["table"]["known_in_hand"][0] == ["8C"]  # JJK-9.2: the moved up card is public
    assert st.secret_cards(1) & (1 << card_id("8C")) == 0
    assert st.secret_cards(1) & (1 << card_id("9H")) and st.secret_cards(1) & (1 << card_id("TD"))
    play(st, "8D")  # NT, another suit: seat 0 wins and leads the moved up card from the hand
    assert st.to_act() == 0 and st.view(0)["legal"] == ["play:9H", "play:TD", "play:7D", "play:8C"]
    play(st, "8C")
    assert st.view(1)["table"]["known_in_hand"][0] == []
    assert st.view(1)["table"]["deal_actions"][-1]["from"] == "hand"


def test_a_clone_clearing_the_other_column_leaves_the_originals_public_card_alone_jjk_4_3():
    """JJK-4.3, 9.2: the up card moved to the hand by the two-column clearing is public
    (``known_in_hand``). A clone (search bots copy a match) that clears through the other column
    knows its own moved card, and the original keeps its own: the two share no such record."""
    st = GAME.position(trump="NT", hands=[["7D"], ["8D"]],
                       columns=[[["9H", "8C"], ["TD", "KH"]], []], to_act=0)
    twin = st.clone()
    play(st, "KH")
    play(twin, "8C")
    assert st.view(1)["table"]["known_in_hand"][0] == ["8C"]
    assert twin.view(1)["table"]["known_in_hand"][0] == ["KH"]
    assert st.secret_cards(1) & (1 << card_id("8C")) == 0
    assert twin.secret_cards(1) & (1 << card_id("KH")) == 0


def test_a_card_the_clearing_made_public_in_one_deal_is_not_public_in_the_next_jjk_9_2_9_4():
    """JJK-9.2, 9.4: the up card a seat's clearing moved to its hand (JJK-4.3) is public only
    for that deal; every deal clears both tables, and a card dealt into the same seat's hand
    in the next deal is a hidden hand card like any other (not in the opponent's view, still
    in ``secret_cards``)."""
    rng = random.Random(7)
    st = GAME.new_state({}, first_dealer=0)
    st.deal(shuffled(GAME, rng))
    cleared = [set(), set()]
    while st.to_act() != CHANCE:
        st.apply(rng.choice(st.legal_actions()))
        if st.to_act() != CHANCE:
            for seat in (0, 1):
                cleared[seat] |= set(st.public_view()["table"]["known_in_hand"][seat])
    assert all(len(c) == 1 for c in cleared), cleared  # each table cleared once (JJK-4.3)
    c0, c1 = (card_id(next(iter(c))) for c in cleared)
    deck = shuffled(GAME, rng)
    # deal 2 is declared by seat 1 (JJK-2.3): deck[0] goes to seat 1, deck[1] to seat 0 (JJK-3.2)
    for pos, card in ((1, c0), (0, c1)):
        i = deck.index(card)
        deck[i], deck[pos] = deck[pos], deck[i]
    st.deal(deck)
    st.apply("trump:NT")
    assert st.public_view()["table"]["known_in_hand"] == [[], []]
    assert st.view(1)["table"]["known_in_hand"] == st.view(0)["table"]["known_in_hand"] == [[], []]
    assert CODES[c0] not in json.dumps(st.view(1)) and CODES[c1] not in json.dumps(st.view(0))
    assert st.secret_cards(1) >> c0 & 1 and st.secret_cards(0) >> c1 & 1
    assert st.secret_cards(None) >> c0 & 1 and st.secret_cards(None) >> c1 & 1


def test_a_positions_leader_has_played_its_lead_so_its_up_cards_are_available_jjk_5_1():
    """JJK-5.1: a seat that has played a card in the deal may play its up cards. A position
    whose ``lead`` was played by the other seat counts that lead as the leader's card even when
    ``played_any`` says neither had played: the leader's view shows it has played, and when it
    wins the trick its up card is available for the next lead at once."""
    st = GAME.position(trump="NT", hands=[["7D"], ["8D"]], columns=[[["9H", "AS"], ["TD", "AH"]], []],
                       played_any=(False, False), to_act=1, lead=("KS", None))
    assert st.view(1)["table"]["played_any"] == [True, False]
    play(st, "8D")  # NT, another suit: the leader, seat 0, takes the trick and leads again
    assert st.to_act() == 0 and st.view(0)["legal"] == ["play:AS", "play:AH", "play:7D"]


def test_a_positions_lone_column_moves_its_down_card_and_leaves_no_down_card_jjk_4_4():
    """JJK-4.4 (a lone column exists only in explicit positions, which allow it): playing its
    up card moves its down card to the hand and leaves no column, so no down card remains on
    the table (JJK-4.7: hand + 2 x columns = cards still to play) and none stays secret from
    the owner (JJK-9.3 hides only down cards on the table)."""
    st = GAME.position(trump="NT", hands=[["7D"], ["8D"]], columns=[[["9H", "KH"]], []], to_act=0)
    play(st, "KH")
    z = st.zones()
    assert z["down0"] == 0 and z["up0"] == 0 and z["hand0"] == (1 << card_id("7D")) | (1 << card_id("9H"))
    assert st.secret_cards(0) == 1 << card_id("8D")
    assert st.view(0)["table"]["column_counts"][0] == 0 and sorted(st.view(0)["hand"]) == ["7D", "9H"]


def test_a_position_was_never_dealt_so_no_seat_view_lists_first_three_cards_jjk_9_3():
    """JJK-9.3: ``first_three`` lists the three cards the seat was dealt before the trump
    choice, its own knowledge alone. An explicit position has no phase A, so each seat's view
    lists none; a card named there (``AS`` is seat 1's here) would be a card of another hand."""
    st = GAME.position(trump="H", hands=[["7D", "KS"], ["AS", "8D"]], columns=[[["9H", "QC"]], [["TD", "AC"]]],
                       to_act=0)
    for seat in (0, 1):
        assert st.view(seat)["table"]["first_three"] == [], seat
    play(st, "KS")
    assert st.view(0)["table"]["first_three"] == st.view(1)["table"]["first_three"] == []


def test_three_columns_move_only_one_card():
    st = GAME.position(trump="S", hands=[["7D"], ["8D"]],
                       columns=[[["9H", "8C"], ["TD", "KH"], ["QD", "AC"]], []], to_act=0)
    play(st, "KH")
    assert st.view(0)["table"]["columns_up"][0] == ["8C", "AC"]
    assert st.view(0)["hand"] == ["TD", "7D"]
    assert st.view(1)["table"]["known_in_hand"][0] == []


def test_hand_has_no_limit_and_reaches_thirteen():
    """JJK-4.6: the largest hand is 13 (first card from the hand, then all ten table cards)."""
    vec = dict(VECTORS)["japanese_joker_column_sequence.json"]
    st = _column_sequence_state(vec)
    sizes = []
    for step in vec["steps"]:
        play(st, step["play"])
        sizes.append(st.view(0)["hand_sizes"][0])
        for a in st.legal_actions():  # the opponent loses the trick
            trial = st.clone()
            trial.apply(a)
            if trial.to_act() == 0:
                st.apply(a)
                break
    assert sizes == [7, 8, 9, 10, 13, 12]


def test_random_play_keeps_the_column_invariants():
    """JJK-4.4 (never one column), 4.7 (hand + 2 x columns = 18 - played), JJK-3.5."""
    for seed in range(6):
        for st in iter_states(GAME, 700 + seed):
            v = st.public_view()
            if v["phase"] != "playing":
                continue
            played = [0, 0]
            for e in v["table"]["deal_actions"]:
                if "from" in e:
                    played[e["seat"]] += 1
            for s in (0, 1):
                assert v["table"]["column_counts"][s] in (5, 4, 3, 2, 0)
                assert v["hand_sizes"][s] + 2 * v["table"]["column_counts"][s] == 18 - played[s]
                assert v["hand_sizes"][s] <= 13


# ---- JJK-5: legal cards -----------------------------------------------------------------------

def test_first_card_comes_from_the_hand():
    """JJK-5.1, A2: before a player's first card the up cards are not available at all."""
    st = seed_state()
    assert legal_cards(st) == set(SEED["initial_hands"][0])
    with pytest.raises(IllegalAction, match="first card of the deal must come from your hand"):
        play(st, "KS")
    play(st, "AH")
    assert legal_cards(st) == {"7H", "JH", "X1"}  # Nino's hearts on the table (6H) don't count yet
    play(st, "7H")
    assert {"KS", "6D", "QC", "8H", "TD"} <= legal_cards(st)


def test_follow_obligations_count_up_cards():
    """JJK-5.3: a suit present only among the up cards must be followed from the table."""
    st = GAME.position(trump="S", hands=[[], ["7D", "AS"]], columns=[[], [["9H", "8C"], ["TD", "KH"]]],
                       to_act=1, lead=("QC", None))
    assert st.legal_actions() == ["play:8C"]
    with pytest.raises(IllegalAction, match="you must follow suit C"):
        play(st, "AS")


def test_must_trump_any_trump_when_void():
    """JJK-5.3 step 3: void in the led suit, any trump (not necessarily the highest)."""
    st = GAME.position(trump="H", hands=[[], ["7H", "AH", "9S", "X2"]], to_act=1, lead=("QD", None))
    assert st.legal_actions() == ["play:AH", "play:7H", "play:X2"]
    with pytest.raises(IllegalAction, match=r"you have no D: you must play a trump \(H\)"):
        play(st, "9S")
    play(st, "7H")
    assert st.public_view()["last_trick"]["winner"] == 1


def test_a_follower_holding_both_jokers_lists_x1_before_x2_jjk_5_3():
    """JJK-5.3: both jokers are always legal when following; the legal list is ascending by id
    (tables.py), so ``X1`` comes before ``X2`` after the normal cards."""
    st = GAME.position(trump="H", hands=[[], ["X2", "7D", "X1"]], to_act=1, lead=("QD", None))
    assert st.legal_actions() == ["play:7D", "play:X1", "play:X2"]
    st = GAME.position(trump="H", hands=[[], ["X2", "9S", "X1"]], to_act=1, lead=("QD", None))
    assert st.legal_actions() == ["play:9S", "play:X1", "play:X2"]


def test_joker_lead_highest_of_named_suit_even_from_the_table():
    """JJK-5.4 step 2, A1: the single highest card of the named suit, wherever it lies."""
    st = GAME.position(trump="H", hands=[[], ["7C", "9S"]], columns=[[], [["AD", "QC"], ["6D", "KD"]]],
                       to_act=1, lead=("X1", "C"))
    assert st.legal_actions() == ["play:QC"]
    with pytest.raises(IllegalAction, match="you must play your highest C, QC"):
        play(st, "7C")


def test_joker_lead_naming_trump_and_trump_beating_a_non_trump_demand():
    """JJK-5.4, 6.3, A4: named trump -> highest trump, the joker wins; a non-trump demand the
    follower is void in -> any trump, which beats the joker."""
    st = GAME.position(trump="H", hands=[[], ["7H", "AH", "9S"]], to_act=1, lead=("X2", "H"))
    assert st.legal_actions() == ["play:AH"]
    play(st, "AH")
    assert st.public_view()["last_trick"]["winner"] == 0
    st = GAME.position(trump="H", hands=[[], ["7H", "AH", "9S"]], to_act=1, lead=("X2", "D"))
    assert st.legal_actions() == ["play:AH", "play:7H"]
    play(st, "7H")
    assert st.public_view()["last_trick"]["winner"] == 1


def test_joker_lead_names_any_suit_in_any_deal():
    """JJK-5.2, A6: four named forms per joker, trump and NT deals alike; the named suit is
    part of the public record and of the trick."""
    for trump in ("S", "NT"):
        st = GAME.position(trump=trump, hands=[["X1", "7D"], ["8D"]], to_act=0)
        assert st.legal_actions() == ["play:7D", "play:X1:S", "play:X1:H", "play:X1:D", "play:X1:C"]
        st.apply("play:X1:S")
        assert st.public_view()["trick"] == [{"seat": 0, "card": "X1", "named_suit": "S"}]


@pytest.mark.parametrize("joker", ["X1", "X2"])
def test_a_leading_jokers_named_suit_is_public_in_trick_and_last_trick_jjk_9_1(joker):
    """JJK-9.1: every played card is public with, for a joker lead, its named suit; X1 and X2
    alike (JJK-1.3). The follower gives its highest spade (JJK-5.4) and names nothing (JJK-5.5);
    in NT the joker takes (JJK-6.3)."""
    st = GAME.position(trump="NT", hands=[[joker, "7D"], ["8S", "9D"]], to_act=0)
    play(st, joker, "S")
    lead = {"seat": 0, "card": joker, "named_suit": "S"}
    for view in (st.public_view(), st.view(0), st.view(1)):
        assert view["trick"] == [lead]
    play(st, "8S")
    for view in (st.public_view(), st.view(0), st.view(1)):
        assert view["last_trick"] == {"plays": [lead, {"seat": 1, "card": "8S"}], "winner": 0}


def test_joker_play_form_errors():
    """JJK-5.7: a named suit if and only if a joker leads; specific messages."""
    st = GAME.position(trump="S", hands=[["X1", "7D"], ["X2", "8D"]], to_act=0)
    with pytest.raises(IllegalAction, match="a leading joker names a suit: play:X1:S"):
        st.apply("play:X1")
    st.apply("play:X1:D")
    with pytest.raises(IllegalAction, match="a joker that follows names no suit: play:X2"):
        st.apply("play:X2:D")
    with pytest.raises(MalformedAction, match="only a leading joker names a suit"):
        st.apply("play:8D:D")
    st.apply("play:X2")
    assert st.public_view()["last_trick"]["winner"] == 1  # JJK-6.1: the later joker
    st = GAME.position(trump="S", hands=[["X2", "7D"], ["8D"]], to_act=0)  # JJK-5.2: X2 as X1
    with pytest.raises(IllegalAction, match="a leading joker names a suit: play:X2:S, play:X2:H"):
        st.apply("play:X2")


def test_no_obligation_to_win():
    """JJK-5.6: following suit with a lower card or discarding is always allowed."""
    st = GAME.position(trump="NT", hands=[[], ["AS", "7S", "X1", "9D"]], to_act=1, lead=("TS", None))
    assert legal_cards(st) == {"AS", "7S", "X1"}


# ---- JJK-6: trick winner ----------------------------------------------------------------------

@pytest.mark.parametrize("trump,lead,named,follow,winner", [
    ("S", "AS", None, "X2", 1),    # normal L, joker -> follower (even over a trump lead)
    ("NT", "9H", None, "TH", 1),   # higher L
    ("NT", "TH", None, "9H", 0),   # lower L
    ("D", "AH", None, "6D", 1),    # trump over a non-trump lead
    ("D", "6H", None, "AC", 0),    # other suit never wins
    ("D", "6D", None, "AD", 1),    # trump lead, higher trump
    ("D", "X1", "C", "AC", 0),     # joker naming Q != T, card of Q
    ("D", "X1", "C", "6D", 1),     # joker naming Q != T, trump
    ("D", "X1", "D", "AD", 0),     # joker naming the trump
    ("NT", "X1", "C", "AH", 0),    # NT deal
    ("H", "X1", "S", "X2", 1),     # the other joker
])
def test_trick_winner_table(trump, lead, named, follow, winner):
    """JJK-6.5 summary table, one row per case."""
    st = GAME.position(trump=trump, hands=[[], [follow]], to_act=1, lead=(lead, named))
    play(st, follow)
    assert st.public_view()["last_trick"] == {
        "plays": [dict({"seat": 0, "card": lead}, **({"named_suit": named} if named else {})),
                  {"seat": 1, "card": follow}],
        "winner": winner}
    assert st.public_view()["tricks_taken"][winner] == 1


def test_winner_leads_next_and_deal_has_18_tricks():
    """JJK-6.4: the winner leads; after the 18th trick every card has been played."""
    st = GAME.new_state(first_dealer=0)
    st.deal(shuffled(GAME, random.Random(3)))
    st.apply("trump:S")
    tricks = 0
    rng = random.Random(3)
    while st.to_act() >= 0:
        st.apply(rng.choice(st.legal_actions()))
        if not st.public_view()["trick"] and st.to_act() >= 0:
            tricks += 1
            assert st.to_act() == st.public_view()["last_trick"]["winner"]
    assert st.to_act() == CHANCE and sum(st.deal_results()[0]["taken"]) == 18 and tricks == 17


# ---- JJK-7 / JJK-8: scoring and match end -----------------------------------------------------

def test_deal_scores():
    """JJK-7.1: 11:7 -> 4/0, 10:8 -> 2/0, 9:9 -> 0/0, 18:0 -> 18/0, 5:13 -> 0/8."""
    assert deal_scores((11, 7)) == (4, 0)
    assert deal_scores((10, 8)) == (2, 0)
    assert deal_scores((9, 9)) == (0, 0)
    assert deal_scores((18, 0)) == (18, 0)
    assert deal_scores((5, 13)) == (0, 8)


@pytest.mark.parametrize("target", [11, 15, 21, 31])
def test_target_score_option_ends_the_match(target):
    """JJK-8.1, 8.2: each target value; the match ends after the first deal that reaches it."""
    st = GAME.new_state({"target_score": target} if target != 21 else {}, first_dealer=0)
    assert st.public_view()["table"]["target_score"] == target
    # deals of 12:6 for seat 0 (6 points each) until it reaches the target
    deals = 0
    while st.to_act() == CHANCE:
        before = st.result()["totals"][0]
        assert before < target
        st = play_match_deal(st, (12, 6), seed=deals)
        deals += 1
    assert st.result() == {"totals": [6 * deals, 0], "winners": [0], "over": True}
    assert 6 * (deals - 1) < target <= 6 * deals
    with pytest.raises(MatchOver):
        st.apply("trump:S")
    with pytest.raises(MatchOver):
        st.deal(shuffled(GAME, random.Random(0)))


def test_random_matches_under_every_target():
    for i, target in enumerate((11, 15, 21, 31)):
        st = random_match(GAME, 90 + i, {"target_score": target})
        totals = st.result()["totals"]
        assert max(totals) >= target and min(totals) < target
        prev = [a - b for a, b in zip(totals, st.deal_results()[-1]["scores"])]
        assert max(prev) < target


# ---- JJK-9: information -----------------------------------------------------------------------

def test_trump_choice_views_show_only_own_three_cards():
    """JJK-3.7, 9.4: during the choice no phase-B card and no other hand is visible."""
    deck = shuffled(GAME, random.Random(8))
    st = GAME.new_state(first_dealer=0)
    st.deal(deck)
    for seat in (0, 1):
        v = st.view(seat)
        assert v["phase"] == "trump_choice" and v["hand_sizes"] == [3, 3]
        shown = {CODES[c] for c in deck} & set(json.dumps(v).replace('"', " ").replace(",", " ").split())
        assert shown == set(v["hand"]) and len(shown) == 3
        assert v["table"]["columns_up"] == [[], []]
        assert st.secret_cards(seat) == GAME.pack_mask & ~sum(1 << card_id(c) for c in v["hand"])
    assert st.view(0)["legal"] and not st.view(1)["legal"]
    assert st.public_view()["hand"] == [] and st.secret_cards(None) == GAME.pack_mask


def test_down_cards_are_hidden_from_everyone_and_secret_cards_is_exact():
    """JJK-9.3, 9.4: down cards hidden even from their owner until they reach the hand; the
    other hand is secret except the up card moved there by JJK-4.3."""
    for seed in range(4):
        for st in iter_states(GAME, 900 + seed):
            z = st.zones()
            if "down0" not in z:
                continue
            downs = z["down0"] | z["down1"]
            for seat in (0, 1):
                o = 1 - seat
                known = st.known_in_hand(o)
                assert st.secret_cards(seat) == downs | (z[f"hand{o}"] & ~known)
                # (last_trick before the deal's first complete trick: the previous deal's final one)
                text = json.dumps(without_previous_deal_trick(st.view(seat)))
                assert not any(f'"{CODES[c]}"' in text for c in range(38) if downs >> c & 1)
            assert st.secret_cards(None) == downs | ((z["hand0"] | z["hand1"]) & ~(st.known_in_hand(0) | st.known_in_hand(1)))


def test_public_view_is_a_spectator_view():
    """JJK-9.5: no hand, no legal actions, the same public record as the seats' views."""
    st = seed_state()
    play(st, "AH"), play(st, "7H"), play(st, "8H")
    pub = st.public_view()
    assert pub["seat"] is None and pub["hand"] == [] and pub["legal"] == []
    mine = st.view(0)
    assert "first_three" not in pub["table"] and mine["table"]["first_three"] == ["AH", "TH", "KC"]
    strip = [{k: v for k, v in e.items() if k != "moved_cards"} for e in mine["table"]["deal_actions"]]
    assert strip == pub["table"]["deal_actions"]
    assert st.view(1)["legal"] == st.legal_actions() and mine["legal"] == []


def test_views_between_deals_and_at_the_end():
    st = GAME.new_state({"target_score": 11}, first_dealer=0)
    st = play_match_deal(st, (10, 8), seed=1)
    v = st.view(1)
    assert v["phase"] == "dealing" and v["to_act"] is None and v["hand"] == []
    assert v["deal_results"] == [{"trump": st.deal_results()[0]["trump"], "taken": [10, 8], "scores": [2, 0]}]
    assert v["dealer"] == 1 and v["deal_number"] == 1 and v["totals"] == [2, 0]
    assert st.secret_cards(0) == 0 and st.zones() == {}
    with pytest.raises(DealRequired):
        st.apply("trump:S")
    st.deal(shuffled(GAME, random.Random(2)))
    assert st.view(0)["deal_number"] == 1 and st.view(0)["phase"] == "trump_choice"


def test_no_seat_to_act_means_no_legal_ids_while_a_deck_is_awaited_and_after_the_match_jjk_8_2():
    """The fast path's ``legal_ids()`` lists the ids of the seat to act (rules/game.py). While a
    deck is awaited (before the first deal, and between deals, JJK-8.3) and once the match is
    over (JJK-8.2) nobody acts: the list is empty, not the trump choices of JJK-3.3, which only
    the declarer of a dealt deal may make."""
    st = GAME.new_state({"target_score": 11}, first_dealer=0)
    assert st.to_act() == CHANCE and st.legal_ids() == []
    st = play_match_deal(st, (10, 8), seed=1)
    assert st.to_act() == CHANCE and st.legal_ids() == []
    st.deal(shuffled(GAME, random.Random(4)))
    assert st.legal_ids() == [46, 47, 48, 49, 50] and st.legal_actions()[-1] == "trump:NT"
    finished = random_match(GAME, 3, {"target_score": 11})
    assert finished.to_act() == TERMINAL and finished.legal_ids() == []


def test_between_deals_and_after_the_match_a_seat_sees_nothing_private_jjk_9_8():
    """JJK-9.8 (deal over: nothing private, every card has been played, JJK-9.7): while the
    next deck is due and once the match is over, each seat's view is the public view naming
    the seat: no hand, no legal set, no ``first_three`` of the deal that ended; no deal-level
    information (docs/games/japanese_joker.md: no hand sizes, no trick counts, no trick)."""
    rng = random.Random(5)
    st = GAME.new_state({"target_score": 11}, first_dealer=0)
    checked = 0
    while True:
        who = st.to_act()
        if who in (CHANCE, TERMINAL):
            public = st.public_view()
            for seat in (0, 1):
                assert st.view(seat) == {**public, "seat": seat}, (seat, public["phase"])
            assert public["hand_sizes"] == public["tricks_taken"] == [0, 0] and public["trick"] == []
            checked += 1
            if who == TERMINAL:
                break
            st.deal(shuffled(GAME, rng))
        else:
            st.apply(rng.choice(st.legal_actions()))
    assert checked >= 3 and st.public_view()["over"]


JJK_TABLE_KEYS = ["declarer", "first_declarer", "options", "target_score", "trump", "tricks_played", "columns",
                  "columns_up", "column_counts", "played_any", "known_in_hand", "deal_actions"]


def _table_views(st):
    return [(seat, (st.public_view() if seat is None else st.view(seat))["table"]) for seat in (None, 0, 1)]


def test_every_view_has_the_documented_table_keys_and_no_table_before_the_choice_jjk_3_7():
    """docs/games/japanese_joker.md lists the ``table`` keys (a seat adds ``first_three`` during
    a deal); they are there in every phase. JJK-3.7: during the trump choice no table card
    exists yet (no columns, no count, nobody has played, nothing known in a hand, no action)."""
    rng = random.Random(3)
    st = GAME.new_state({"target_score": 11}, first_dealer=1)
    phases = set()
    while True:
        phase = st.public_view()["phase"]
        phases.add(phase)
        for seat, table in _table_views(st):
            own = ["first_three"] if seat is not None and phase in ("trump_choice", "playing") else []
            assert sorted(table) == sorted(JJK_TABLE_KEYS + own), (seat, phase)
            if phase != "playing":
                assert table["columns"] == table["columns_up"] == [[], []], (seat, phase)
                assert table["column_counts"] == [0, 0] and table["played_any"] == [False, False]
                assert table["known_in_hand"] == [[], []] and table["deal_actions"] == []
        who = st.to_act()
        if who == TERMINAL:
            break
        if who == CHANCE:
            st.deal(shuffled(GAME, rng))
        elif phase == "trump_choice":
            st.apply("trump:H")
        else:
            st.apply(rng.choice(st.legal_actions()))
    assert phases == {"dealing", "trump_choice", "playing", "over"}


# ---- JJK-10.4: auto-move ----------------------------------------------------------------------

def test_auto_move_trump_choice():
    """JJK-10.4: most cards; ties by the highest card; then S H D C; never NT."""
    def choice(cards):
        return GAME.auto_move({"phase": "trump_choice", "hand": cards,
                               "legal": ["trump:S", "trump:H", "trump:D", "trump:C", "trump:NT"]})
    assert choice(["AH", "TH", "KC"]) == "trump:H"
    assert choice(["9S", "KD", "7C"]) == "trump:D"
    assert choice(["AS", "AH", "X1"]) == "trump:S"
    assert choice(["7C", "AD", "X2"]) == "trump:D"
    assert choice(["X1", "X2", "6D"]) == "trump:D"
    assert choice(["QC", "8H", "QD"]) == "trump:D"  # Q of D and C tie, D comes first
    assert choice(["QC", "8H", "KC"]) == "trump:C"


def test_auto_move_cards():
    """JJK-10.4: lowest legal normal card, ties S H D C; jokers only: X1, naming S. The policy
    moves for the seat to act only: a view without legal actions is refused."""
    def move(legal, phase="playing"):
        return GAME.auto_move({"phase": phase, "hand": [], "legal": legal})
    assert move(["play:AS", "play:7H", "play:7D", "play:X1"]) == "play:7H"
    assert move(["play:KS", "play:6D", "play:6H"]) == "play:6H"
    assert move(["play:X1", "play:X2"]) == "play:X1"
    assert move(["play:X2:S", "play:X2:H", "play:X2:D", "play:X2:C"]) == "play:X2:S"
    assert move(["play:X1:S", "play:X1:H", "play:X1:D", "play:X1:C", "play:X2:S", "play:X2:H",
                 "play:X2:D", "play:X2:C"]) == "play:X1:S"
    # the policy reads the legal actions as a set: X1 first, naming S, wherever the list has them
    assert move(["play:X2", "play:X1"]) == "play:X1"
    assert move(["play:X2:S", "play:X2:H", "play:X1:C", "play:X1:D", "play:X1:H", "play:X1:S"]) == "play:X1:S"
    assert move(["play:X2:C", "play:X2:S"]) == "play:X2:S"
    st = seed_state()
    assert GAME.auto_move(st.view(0)) == "play:7D"
    # a seat not to act has no legal action: nothing to choose, an error rather than a guess
    assert st.view(1)["legal"] == []
    with pytest.raises(ValueError, match="legal actions"):
        GAME.auto_move(st.view(1))


# ---- options and bad input ---------------------------------------------------------------------

def test_option_specs():
    """JJK-11: every table option with its allowed values, default first, and rule ids."""
    specs = {s.name: s for s in OPTION_SPECS}
    assert set(specs) == {"target_score", "turn_time_s", "reconnect_grace_s"}
    assert specs["target_score"].values == (21, 11, 15, 31) and specs["target_score"].default == 21
    assert (specs["turn_time_s"].default, specs["turn_time_s"].minimum, specs["turn_time_s"].maximum) == (30, 10, 120)
    assert (specs["reconnect_grace_s"].default, specs["reconnect_grace_s"].minimum,
            specs["reconnect_grace_s"].maximum) == (60, 15, 600)
    assert all(s.help and s.rules for s in OPTION_SPECS)
    assert dict(GAME.options({})) == {"target_score": 21, "turn_time_s": 30, "reconnect_grace_s": 60}
    assert GAME.options({"turn_time_s": 10, "reconnect_grace_s": 600}).non_default() == {
        "turn_time_s": 10, "reconnect_grace_s": 600}


@pytest.mark.parametrize("raw,name,allowed", [
    ({"target_score": 20}, "target_score", "21, 11, 15, 31"),
    ({"target_score": "21"}, "target_score", "21, 11, 15, 31"),
    ({"turn_time_s": 9}, "turn_time_s", "[10, 120]"),
    ({"turn_time_s": True}, "turn_time_s", "[10, 120]"),
    ({"reconnect_grace_s": 601}, "reconnect_grace_s", "[15, 600]"),
])
def test_bad_option_values_name_the_option_and_allowed_values(raw, name, allowed):
    with pytest.raises(InvalidOptions) as info:
        GAME.new_state(raw)
    assert name in info.value.message and allowed in info.value.message


def test_unknown_option():
    with pytest.raises(InvalidOptions, match="unknown option 'kl_target_score'.*target_score"):
        GAME.new_state({"kl_target_score": 500})


@pytest.mark.parametrize("bad", ["", "play", "play:", "PLAY:AS", "play:as", "play:AS:", "play:ZZ",
                                 "play:X3", "play:X1:NT", "play:X1:s", "play:X1:S:S", "trump",
                                 "trump:", "trump:N", "trump:nt", "trump:H:S", "bid:3", "pass",
                                 " play:AS", "play:AS ", "play:6S", "play:TS:H"])
def test_malformed_actions(bad):
    st = seed_state()
    before = json.dumps([st.view(0), st.view(1), st.zones(), st.legal_actions()])
    with pytest.raises(MalformedAction):
        st.apply(bad)
    with pytest.raises(MalformedAction):
        st.parse_action(bad)
    assert json.dumps([st.view(0), st.view(1), st.zones(), st.legal_actions()]) == before


def test_the_last_action_id_is_trump_nt_and_the_next_one_names_nothing():
    """NOTATION 2: ids 46 .. 50 are ``trump:S`` .. ``trump:NT``, the last actions of the game;
    id 51, one past them, is MalformedAction like any id that names no action."""
    st = GAME.new_state({}, first_dealer=0)
    assert [st.action_str(a) for a in range(46, 51)] == ["trump:S", "trump:H", "trump:D", "trump:C", "trump:NT"]
    with pytest.raises(MalformedAction, match="not a Japanese Joker action id: 51"):
        st.action_str(51)


def test_parse_accepts_well_formed_illegal_actions():
    st = seed_state()
    for text in ("play:AS", "play:X2:C", "trump:NT", "play:X1", "play:7S"):
        assert st.action_str(st.parse_action(text)) == text


def test_illegal_actions_explain_and_change_nothing():
    st = seed_state()
    play(st, "AH")
    before = json.dumps([st.view(0), st.view(1), st.zones(), st.legal_actions(), len(st.history())])
    cases = {
        "play:TS": "you must follow suit H",
        "play:AS": "first card of the deal must come from your hand",
        "play:KH": "neither in your hand nor a face-up card",   # Nino's down card: no leak of where
        "play:QS": "neither in your hand nor a face-up card",   # Giorgi's card
        "play:X1:C": "a joker that follows names no suit",
        "trump:S": "already chosen",
    }
    for text, message in cases.items():
        with pytest.raises(IllegalAction, match=message):
            st.apply(text, seat=1)
    with pytest.raises(NotYourTurn):
        st.apply("play:7H", seat=0)
    assert json.dumps([st.view(0), st.view(1), st.zones(), st.legal_actions(), len(st.history())]) == before


def test_a_card_before_the_trump_choice_is_refused_naming_the_choice():
    """JJK-3.3: until the declarer has chosen the trump, a card (even one of his own three)
    is refused with the trump choice he owes, and nothing changes."""
    st = GAME.new_state({}, first_dealer=0)
    st.deal(shuffled(GAME, random.Random(5)))
    seat = st.to_act()
    own = st.view(seat)["hand"][0]
    before = json.dumps([st.view(0), st.view(1), st.legal_actions()])
    with pytest.raises(IllegalAction, match="the declarer must first choose the trump"):
        st.apply(f"play:{own}", seat=seat)
    assert json.dumps([st.view(0), st.view(1), st.legal_actions()]) == before


def test_refusals_name_the_duty_a_joker_lead_of_spades_imposes():
    """JJK-5.4 / JJK-A1: after a joker lead naming S the follower must give his highest spade;
    the refusal names it and cites JJK-5.4 (not the normal-lead JJK-5.3). JJK-5.5: after a
    normal lead, even of the ace of spades, a joker that follows names no suit."""
    st = GAME.position(trump="H", hands=[["X1", "7D"], ["AS", "8S", "8D"]], to_act=0)
    st.apply("play:X1:S")
    with pytest.raises(IllegalAction) as err:
        st.apply("play:8S")
    assert "the joker asks for S: you must play your highest S, AS, or a joker (JJK-5.4)" in str(err.value)
    for joker in ("X1", "X2"):  # X1:S is the lowest leading-joker id
        st = GAME.position(trump="H", hands=[["AS", "7D"], [joker, "8S", "8D"]], to_act=0)
        st.apply("play:AS")
        with pytest.raises(IllegalAction, match=f"a joker that follows names no suit: play:{joker} "):
            st.apply(f"play:{joker}:S")


def test_refusals_after_a_normal_lead_cite_jjk_5_3():
    """JJK-5.3: after a normal lead the follower must follow suit, or, void, trump; both
    refusals cite JJK-5.3 (the joker lead's JJK-5.4 is a different duty)."""
    st = GAME.position(trump="H", hands=[["AS", "7D"], ["8S", "8D", "TH"]], to_act=0)
    st.apply("play:AS")
    with pytest.raises(IllegalAction) as err:
        st.apply("play:8D")
    assert "you must follow suit S or play a joker (JJK-5.3)" in str(err.value)
    st = GAME.position(trump="H", hands=[["AS", "7D"], ["8D", "TH"]], to_act=0)
    st.apply("play:AS")
    with pytest.raises(IllegalAction) as err:
        st.apply("play:8D")
    assert "you have no S: you must play a trump (H) or a joker (JJK-5.3)" in str(err.value)


def test_a_first_card_refusal_counts_a_suit_only_on_the_table_as_absent_jjk_a2():
    """JJK-5.1, JJK-A2: before its first card a follower's up cards are not available, so a
    spade lying only on its table counts as absent and the duty is to trump from the hand; the
    refusal of a discard says so (not "follow suit S", which the table spade cannot do)."""
    st = GAME.position(trump="H", hands=[["AS", "7D"], ["8D", "TH"]], columns=[[], [["9C", "KS"], ["TD", "QC"]]],
                       played_any=(True, False), to_act=0)
    st.apply("play:AS")
    assert st.legal_actions() == ["play:TH"]
    with pytest.raises(IllegalAction) as err:
        st.apply("play:8D")
    assert "you have no S: you must play a trump (H) or a joker (JJK-5.3)" in str(err.value)


def test_position_puts_every_unplaced_card_out_of_play():
    """``GAME.position``: cards not placed are out of play (zone ``out``), so the zones still
    partition the 36-card pack (JJK-1.1) and no unplaced card counts as a hand or table card."""
    st = GAME.position(trump="H", hands=[["AS", "7D"], ["8S", "X1"]], columns=[[["9C", "KD"]], []],
                       to_act=1, lead=("QH", None))
    z = st.zones()
    placed = {card_id(c) for c in ("AS", "7D", "8S", "X1", "9C", "KD", "QH")}
    assert z["out"] == sum(1 << c for c in GAME.pack if c not in placed)
    assert sum(bin(m).count("1") for m in z.values()) == 36


def test_a_clone_of_a_position_keeps_its_cards_out_of_play():
    """``GAME.position``'s unplaced cards (zone ``out``) stay out of play in a clone (search
    bots copy a position with ``clone``): the clone's zones are the original's, and after the
    same play both still partition the 36-card pack (JJK-1.1)."""
    st = GAME.position(trump="H", hands=[["AS", "7D"], ["8S", "X1"]], columns=[[["9C", "KD"]], []],
                       to_act=1, lead=("QH", None))
    twin = st.clone()
    assert twin.zones() == st.zones() and twin.zones()["out"]
    play(st, "8S"), play(twin, "8S")
    assert twin.zones() == st.zones()
    assert sum(bin(m).count("1") for m in twin.zones().values()) == 36


@pytest.mark.parametrize("trump", ["S", "H", "D", "C"])
def test_a_positions_record_names_the_trick_winner_by_its_trump_jjk_6_2(trump):
    """JJK-6.2, JJK-6.4 in an explicit position (its record has no trump action): the follower,
    void in the led suit, trumps with its 7 and takes the trick; every audience's record says
    so and the follower leads next."""
    lead = "7S" if trump != "S" else "7D"
    st = GAME.position(trump=trump, hands=[[lead, "AD"], [f"7{trump}", "8C" if trump != "C" else "8H"]], to_act=0)
    play(st, lead)
    play(st, f"7{trump}")
    assert st.to_act() == 1
    for view in (st.public_view(), st.view(0), st.view(1)):
        assert view["table"]["deal_actions"][-1] == {"seat": 1, "action": f"play:7{trump}", "from": "hand",
                                                     "winner": 1}


@pytest.mark.parametrize("trump", ["S", "H", "D", "C", "NT"])
def test_a_positions_record_names_the_higher_card_of_the_led_suit_the_winner_jjk_6_2(trump):
    """JJK-6.2 in an explicit position of every trump (its record has no trump action, so the
    record reads the trick's winner from the position's trump): a higher spade takes a lower
    one, whoever leads it; every audience's record says so, as the trick count does."""
    st = GAME.position(trump=trump, hands=[["AS", "QS"], ["KS", "8D"]], to_act=0)
    play(st, "AS")
    play(st, "KS")  # lower: the leader, seat 0, takes the trick and leads again
    play(st, "QS")
    play(st, "8D")  # seat 1, void in spades: a trump in a diamond deal (it takes), else a discard
    expected = [{"seat": 0, "action": "play:AS", "from": "hand"},
                {"seat": 1, "action": "play:KS", "from": "hand", "winner": 0},
                {"seat": 0, "action": "play:QS", "from": "hand"},
                {"seat": 1, "action": "play:8D", "from": "hand", "winner": 1 if trump == "D" else 0}]
    for view in (st.public_view(), st.view(0), st.view(1)):
        assert view["table"]["deal_actions"] == expected, trump
    assert st.public_view()["tricks_taken"] == ([1, 1] if trump == "D" else [2, 0])
    st = GAME.position(trump=trump, hands=[["KS"], ["AS"]], to_act=0)
    play(st, "KS")
    play(st, "AS")  # higher: the follower takes it
    assert st.public_view()["table"]["deal_actions"][-1]["winner"] == 1, trump


def test_a_positions_record_starts_with_the_seat_to_act_and_the_lead_given_jjk_6_2():
    """JJK-6.1, JJK-6.2, JJK-9.1: the record of an explicit position starts where the position
    does, not at a new deal's start (the declarer leading): with seat 1 to lead although seat 0
    declared, its lead is seat 1's and the trick is won by the card that wins it; with a lead
    already on the table (seat 0's, not in the record, shown as the trick in progress with its
    named suit if a joker), seat 1's answer completes that trick, so the record names its
    winner, then the winner's lead."""
    st = GAME.position(trump="H", hands=[["KS", "7D"], ["AS", "8C"]], to_act=1, declarer=0)
    play(st, "AS")
    play(st, "KS")
    assert st.to_act() == 1
    expected = [{"seat": 1, "action": "play:AS", "from": "hand"},
                {"seat": 0, "action": "play:KS", "from": "hand", "winner": 1}]
    for view in (st.public_view(), st.view(0), st.view(1)):
        assert view["table"]["deal_actions"] == expected
    st = GAME.position(trump="S", hands=[["7H"], ["KD", "9C"]], to_act=1, lead=("8D", None), declarer=0)
    for view in (st.public_view(), st.view(0), st.view(1)):  # the lead given is seat 0's, on the table
        assert view["trick"] == [{"seat": 0, "card": "8D"}] and view["table"]["deal_actions"] == []
    led = GAME.position(trump="S", hands=[["7H"], ["KD"]], to_act=0, lead=("X2", "H"), declarer=0)
    assert led.public_view()["trick"] == [{"seat": 1, "card": "X2", "named_suit": "H"}]
    play(st, "KD")  # seat 1 follows the 8D led, higher: it takes the trick
    play(st, "9C")
    expected = [{"seat": 1, "action": "play:KD", "from": "hand", "winner": 1},
                {"seat": 1, "action": "play:9C", "from": "hand"}]
    for view in (st.public_view(), st.view(0), st.view(1)):
        assert view["table"]["deal_actions"] == expected
    assert st.to_act() == 0 and st.public_view()["tricks_taken"] == [0, 1]


def test_a_position_by_default_has_seat_0_declare_and_lead_with_both_seats_having_played():
    """``GAME.position``'s documented defaults (its signature): seat 0 declared and is to act,
    no trick taken, no column, no lead on the table, both seats past their first card (JJK-5.1:
    their up cards would count)."""
    st = GAME.position(trump="C", hands=[["AS"], ["KS"]])
    view = st.public_view()
    assert st.to_act() == 0 and view["to_act"] == 0 and view["table"]["declarer"] == 0
    assert view["tricks_taken"] == [0, 0] and view["trick"] == [] and view["table"]["trump"] == "C"
    assert view["table"]["played_any"] == [True, True] and view["table"]["columns"] == [[], []]


def test_a_position_may_place_the_whole_pack_jjk_3_5():
    """JJK-3.5, JJK-1.1: a position as dealt, 8 cards in hand and 5 columns each, places all 36
    cards of the pack; it is accepted (no card is out of play) and plays on."""
    codes = [CODES[c] for c in GAME.pack]
    cols = [[[codes[16 + 2 * k + s], codes[26 + 2 * k + s]] for k in range(5)] for s in (0, 1)]
    st = GAME.position(trump="H", hands=[codes[0:8], codes[8:16]], columns=cols, played_any=(False, False))
    view = st.public_view()
    assert view["hand_sizes"] == [8, 8] and view["table"]["column_counts"] == [5, 5]
    # JJK-5.1: the first card of the deal comes from the hand
    assert {a.split(":")[1] for a in st.view(0)["legal"]} == set(codes[0:8])
    st.apply("play:7S")
    assert st.to_act() == 1


ONCE = "a position uses each card of the pack at most once"
NAMES = r"a lead names a suit if and only if it is a joker \(JJK-5.2\)"


@pytest.mark.parametrize("kwargs,message", [
    ({"hands": [["AS", "7D"], ["AS", "8D"]]}, ONCE),  # one card in two hands
    ({"hands": [["AS"], ["8D"]], "columns": [[["7D", "AS"]], []]}, ONCE),  # in a hand and on the table
    ({"hands": [["6S"], ["8D"]]}, ONCE),  # JJK-1.1: 6S is not in the pack
    ({"hands": [["AS"], ["8D"]], "to_act": 1, "lead": ("6C", None)}, ONCE),  # JJK-1.1: nor 6C, a normal card
    ({"hands": [["AS"], ["8D"]], "to_act": 1, "lead": ("8D", None)}, ONCE),  # led and still held
    ({"hands": [["AS"], ["8D"]], "to_act": 1, "lead": ("7D", "S")}, NAMES),  # JJK-5.2: only a joker names
    ({"hands": [["AS"], ["8D"]], "to_act": 1, "lead": ("X1", None)}, NAMES),  # JJK-5.2: a joker lead names
])
def test_position_refuses_an_impossible_layout(kwargs, message):
    """``GAME.position`` builds rule-test positions: a card placed twice, a card outside the
    pack (JJK-1.1) or a named suit on a normal lead, or none on a joker lead, is a ValueError
    saying which, never a silent position."""
    with pytest.raises(ValueError, match=f"^{message}$"):
        GAME.position(trump="H", **kwargs)


def test_session_options_are_exposed_and_session_events_are_never_actions():
    """JJK-10.2, 10.3, 10.5: the timers are session options (validated, shown in every view);
    resigning, leaving, disconnection and timeouts never appear among the legal actions."""
    opts = {"turn_time_s": 45, "reconnect_grace_s": 120}
    for st in iter_states(GAME, 4242, opts):
        assert st.public_view()["table"]["options"] == dict(opts, target_score=21)
        assert all(a.startswith(("play:", "trump:")) for a in st.legal_actions())


def test_bad_seat_and_first_dealer():
    for bad in (2, -1, True):  # the first declarer is a seat (JJK-2.2, JJK-2.1), as in the other games
        with pytest.raises(InvalidOptions) as info:
            GAME.new_state(first_dealer=bad)
        # the refusal names the option and its allowed values (what a client reads in the details)
        assert info.value.message == f"first_dealer must be seat 0 or 1, got {bad!r}"
        assert info.value.details == {"option": "first_dealer", "allowed": "0, 1"}
    with pytest.raises(ValueError):
        seed_state().view(2)


# ---- last_trick across deals (game.py's view keys; JJK-6, JJK-9.1) ------------------------------------

def _jjk_no_trick(view: dict) -> bool:
    return view["table"]["tricks_played"] == 0 and not any("winner" in e for e in view["table"]["deal_actions"])


def test_last_trick_is_the_previous_deals_18th_until_the_first_trick_jjk_6_jjk_9_1():
    """JJK-9.1 (every played card and the trick's winner are public): every audience's
    ``last_trick`` after the 18th card pair of a deal, while the next deck is due, after it is
    dealt (the trump choice, the first lead: ``tricks_played`` 0, no winner in the log) and in
    the final views of the match is the deal's final trick, its plays and its winner (JJK-6:
    from the deal's ``taken`` against the counts before the final card); the next deal's first
    complete trick replaces it. Determinization at a deal's start restores it (also from the
    plays alone)."""
    seen = Counter()
    for seed in range(4):
        seen += check_deal_boundaries(GAME, 700 + seed, {}, play_of=lambda s, a: {"seat": s, "card": a.split(":")[1]},
                                      taken_after=lambda st: st.deal_results()[-1]["taken"],
                                      deal_has_no_trick=_jjk_no_trick, determinize_every=2)
    assert seen["final_tricks"] == seen["deals"] >= 10 and seen["first_tricks"] == seen["deals"], seen
    assert seen["determinized"] >= 4


# ---- JJK-1.2: the order within a suit; JJK-0.2 / JJK-0.3 conventions ---------------------------

JJK_ORDER = "A K Q J T 9 8 7 6".split()


@pytest.mark.parametrize("suit", ["S", "H", "D", "C"])
@pytest.mark.parametrize("trump", ["NT", "S", "H"])
def test_jjk_1_2_order_within_a_suit_A_K_Q_J_T_9_8_7_6(suit, trump):
    """JJK-1.2: within a suit, trump included (no jack or nine is promoted as in the 32-card
    games), A K Q J T 9 8 7 6 from high to low: of two cards of the led suit the higher one
    takes the trick, whoever played it. (6S and 6C are jokers in this pack, JJK-1.1.)"""
    ranks = [r for r in JJK_ORDER if r + suit in {CODES[c] for c in GAME.pack}]
    assert len(ranks) == (8 if suit in "SC" else 9)
    for i, high in enumerate(ranks):
        for low in ranks[i + 1:]:
            for lead, follow, winner in ((low, high, 1), (high, low, 0)):
                st = GAME.position(trump=trump, hands=[[], [follow + suit]], to_act=1, lead=(lead + suit, None))
                play(st, follow + suit)
                assert st.public_view()["last_trick"]["winner"] == winner, (lead + suit, follow + suit, trump)


def test_jjk_0_2_card_codes_and_jjk_0_3_declarer_chooses_trump_and_leads():
    """JJK-0.2: rank + suit codes (A K Q J T 9 8 7 6; S H D C), jokers X1 X2, no trump NT.
    JJK-0.3: the declarer chooses the trump (NT included) and leads the first trick; opp(s) = 1 - s
    is the other seat."""
    codes = sorted(CODES[c] for c in GAME.pack)
    assert codes == sorted([r + s for r in "AKQJT9876" for s in "SHDC" if r + s not in ("6S", "6C")] + ["X1", "X2"])
    for declarer in (0, 1):
        st = GAME.new_state(first_dealer=declarer)
        st.deal([CODES[c] for c in GAME.pack])
        assert st.to_act() == declarer and st.legal_actions()[-1] == "trump:NT"
        st.apply("trump:NT")
        assert st.public_view()["table"]["trump"] == "NT" and st.to_act() == declarer
        st.apply(st.legal_actions()[0])
        assert st.to_act() == 1 - declarer
