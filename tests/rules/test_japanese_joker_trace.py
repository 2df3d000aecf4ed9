"""Rule-id trace tests for Japanese Joker: one focused test per rule id that no other test names
(JJK-1.4, JJK-2.1, JJK-2.4, JJK-3.1, JJK-3.6, JJK-7.2, JJK-8.3, JJK-8.4, JJK-9.6, JJK-9.8,
JJK-10.5), each failing if the rule broke. The operational rules (JJK-8.4, JJK-9.6, JJK-10.5)
are checked through the session layer (engine_service/sessions), which implements them.

Scripted decks use :func:`lay_deck` of the audit (JJK-3.2 / 3.4 position by position); the
deal below is the rulebook's seed example (section 13.1, Giorgi = seat 0 declarer, Nino).
"""

from __future__ import annotations

import itertools
import json
import random
import secrets

import pytest

from engine_service.rules import CHANCE, MalformedAction, transcript
from engine_service.rules.games.japanese_joker import GAME
from engine_service.sessions import chance
from engine_service.sessions.api import Principal

from .test_japanese_joker_audit import PACK, cols, lay_deck

GIORGI = dict(first3="AH TH KC".split(), rest="9C JD 7D 8S QS".split(),
              columns=cols("AC QD 8C 9H JC", "KS 6D QC 8H TD"))
NINO = dict(first3="7H JH X1".split(), rest="TS 8D 9D 7C AD".split(),
            columns=cols("7S KH X2 QH 9S", "AS JS TC 6H KD"))
SEED_DECK = lay_deck(GIORGI, NINO)
DOWN = {0: set("AC QD 8C 9H JC".split()), 1: set("7S KH X2 QH 9S".split())}
# the seed's tricks 1-5 (13.1)
SEED_PLAYS = ["play:AH", "play:7H", "play:8H", "play:6H", "play:QC", "play:7C", "play:JD", "play:KD",
              "play:X1:C", "play:KC"]


def seed_state(options=None):
    state = GAME.new_state(options or {}, first_dealer=0)
    state.deal(SEED_DECK)
    return state


def auto_deal(state):
    """Finish the current deal by the auto-move policy; return the actions applied."""
    n = len(state.deal_results())
    done = []
    while len(state.deal_results()) == n:
        a = GAME.auto_move(state.view(state.to_act()))
        state.apply(a)
        done.append(a)
    return done


def text(obj) -> str:
    return json.dumps(obj, sort_keys=True)


# ---- JJK-1.4: suits are unordered except for the trump --------------------------------------

@pytest.mark.parametrize("trump", ["S", "H", "D", "C", "NT"])
def test_jjk_1_4_no_suit_outranks_another_except_the_trump(trump):
    """JJK-1.4: with no trump involved, a card of another suit never beats the lead whatever
    the two suits (an ace discarded on a seven loses for every ordered pair of suits); only a
    trump does (JJK-6.2)."""
    for led, other in itertools.permutations("SHDC", 2):
        state = GAME.position(trump=trump, hands=[[], [f"A{other}"]], to_act=1,
                              lead=(f"7{led}", None), tricks_taken=(9, 8))
        assert state.legal_actions() == [f"play:A{other}"]
        state.apply(f"play:A{other}")
        follower_wins = other == trump
        assert state.deal_results()[-1]["taken"] == ([9, 9] if follower_wins else [10, 8]), (led, other)


# ---- JJK-2.1: exactly two players -----------------------------------------------------------

def test_jjk_2_1_exactly_two_players():
    """JJK-2.1: the game has two seats: views exist for seats 0 and 1 only, every per-seat list
    has two entries, and every trick has exactly two cards (so 18 tricks use 36 cards)."""
    assert GAME.num_seats == 2
    state = seed_state()
    for bad in (2, -1):
        with pytest.raises(ValueError):
            state.view(bad)
    state.apply("trump:H")
    v = state.public_view()
    assert len(v["hand_sizes"]) == len(v["tricks_taken"]) == len(v["totals"]) == 2
    assert len(v["table"]["columns"]) == 2
    auto_deal(state)
    r = state.deal_results()[0]
    assert len(r["taken"]) == len(r["scores"]) == 2 and sum(r["taken"]) == 18
    assert len(state.public_view()["last_trick"]["plays"]) == 2


# ---- JJK-2.4: no bidding --------------------------------------------------------------------

def test_jjk_2_4_no_bidding_the_trump_choice_is_the_only_decision_before_play():
    """JJK-2.4: a deal has no auction: its first decision is the declarer's trump choice (the
    five strains, nothing else), the opponent makes no call at all, and right after the choice
    the declarer leads (JJK-2.5); every action of a whole deal is ``trump:`` or ``play:``."""
    state = seed_state()
    assert state.to_act() == 0
    assert state.legal_actions() == ["trump:S", "trump:H", "trump:D", "trump:C", "trump:NT"]
    for bid in ("bid:3", "pass", "bid:0"):
        with pytest.raises(MalformedAction):
            state.apply(bid)
    state.apply("trump:H")
    assert state.public_view()["phase"] == "playing" and state.to_act() == 0
    actions = ["trump:H"] + auto_deal(state)
    assert all(a.startswith("play:") for a in actions[1:]) and len(actions) == 1 + 36


# ---- JJK-3.1: a fresh CSPRNG permutation per deal, server-only --------------------------------

def test_jjk_3_1_every_deck_is_a_fresh_csprng_permutation_of_the_36_cards():
    """JJK-3.1: the server's decks are permutations of the 36-card pack (34 cards + 2 jokers)
    drawn from the operating system's CSPRNG (``secrets.SystemRandom``, not seedable), fresh for
    every deal; the deck never appears in a view (JJK-9.4)."""
    assert isinstance(chance._csprng, secrets.SystemRandom)
    decks = [chance.random_deck(GAME) for _ in range(30)]
    assert all(sorted(d) == sorted(PACK) for d in decks)
    assert len(set(decks)) == len(decks)
    records = [chance.random_deck_record(GAME, i) for i in range(2)]
    assert records[0].cards != records[1].cards and records[0].salt != records[1].salt
    state = GAME.new_state({}, first_dealer=0)
    state.deal(decks[0])
    state.apply(state.legal_actions()[0])
    dumped = [text(state.view(0)), text(state.view(1)), text(state.public_view())]
    assert all("deck" not in json.loads(d) and "deck" not in json.loads(d)["table"] for d in dumped)


# ---- JJK-3.6: the trump is public for the whole deal ----------------------------------------

@pytest.mark.parametrize("strain", ["S", "H", "D", "C", "NT"])
def test_jjk_3_6_the_trump_is_public_from_the_choice_to_the_end_of_the_deal(strain):
    """JJK-3.6: once chosen, the trump (or ``NT``) is in the opponent's and a spectator's view
    at every step of the deal, and in the deal result (NOTATION 4)."""
    state = seed_state()
    assert state.view(1)["table"]["trump"] is None
    state.apply(f"trump:{strain}")
    n = 0
    while not state.deal_results():
        for v in (state.view(0), state.view(1), state.public_view()):
            assert v["table"]["trump"] == strain
        state.apply(GAME.auto_move(state.view(state.to_act())))
        n += 1
    assert n == 36 and state.deal_results()[0]["trump"] == strain


# ---- JJK-7.2: deal points reach the totals as soon as the deal ends ---------------------------

def test_jjk_7_2_deal_points_are_in_the_totals_as_soon_as_the_deal_ends():
    """JJK-7.2: right after trick 18, before the next deck is dealt, the match totals (result,
    every view) already include the deal's points."""
    rng = random.Random(3)
    state = GAME.new_state({"target_score": 31}, first_dealer=0)
    running = [0, 0]
    for _ in range(3):
        deck = PACK[:]
        rng.shuffle(deck)
        state.deal(deck)
        state.apply("trump:NT")
        while state.to_act() >= 0:
            state.apply(GAME.auto_move(state.view(state.to_act())))
        scores = state.deal_results()[-1]["scores"]
        running = [running[0] + scores[0], running[1] + scores[1]]
        assert state.to_act() == CHANCE or state.is_over()
        assert state.result()["totals"] == running
        assert state.public_view()["totals"] == running == state.view(0)["totals"]
        if state.is_over():
            break


def test_jjk_7_2_last_trick_scores_at_once():
    """JJK-7.2 on a position one trick from the end: the 18th trick (11:7) puts 4 on the
    winner's total immediately."""
    state = GAME.position(trump="S", hands=[[], ["7H"]], to_act=1, lead=("AH", None),
                          tricks_taken=(10, 7))
    assert state.result()["totals"] == [0, 0]
    state.apply("play:7H")
    assert state.deal_results()[-1] == {"trump": "S", "taken": [11, 7], "scores": [4, 0]}
    assert state.result()["totals"] == [4, 0] and state.to_act() == CHANCE


# ---- JJK-8.3: otherwise the next deal starts, declared by the other player -------------------

@pytest.mark.parametrize("taken,scores", [((9, 8), [0, 0]), ((7, 10), [0, 4])])
def test_jjk_8_3_below_the_target_the_next_deal_is_declared_by_the_other_player(taken, scores):
    """JJK-8.3 (with JJK-2.3): after a deal that ends below the target (here a 9:9 draw, and a
    win by the opponent) the match goes on: a deck is due, and the new deal's trump choice is
    the other player's."""
    # seat 0 declared; seat 1 leads the last trick and wins it with the higher heart
    state = GAME.position(trump="S", hands=[["7H"], []], to_act=0, lead=("AH", None),
                          declarer=0, tricks_taken=taken)
    state.apply("play:7H")
    assert state.deal_results()[-1]["scores"] == scores
    assert not state.is_over() and state.to_act() == CHANCE and state.dealer() == 1
    state.deal(SEED_DECK)
    assert state.to_act() == 1 and state.public_view()["table"]["declarer"] == 1
    assert state.legal_actions()[0] == "trump:S"


# ---- JJK-9.8: the knowledge timeline ---------------------------------------------------------

def test_jjk_9_8_timeline_of_what_each_player_knows():
    """JJK-9.8, row by row, on the seed deal: TRUMP_CHOICE — each sees only his own three cards,
    the public knows the declarer, no phase-B card anywhere; after the choice — own eight hand
    cards, the trump and both players' five up cards public, five hidden down cards each;
    PLAYING — former down cards join the owner's hand, the public record says only how many
    moved; deal over — the deal points and totals."""
    state = seed_state()
    v0, v1, pub = state.view(0), state.view(1), state.public_view()
    assert pub["table"]["declarer"] == 0 and pub["table"]["trump"] is None
    assert sorted(v0["hand"]) == sorted(GIORGI["first3"]) and sorted(v1["hand"]) == sorted(NINO["first3"])
    phase_b = set(SEED_DECK[6:])
    for v in (v0, v1, pub):
        assert not phase_b & set(json.dumps(v).replace('"', " ").replace(",", " ").split())
        assert v["table"]["columns"] == [[], []]
    assert not set(GIORGI["first3"]) & set(text(v1).replace('"', " ").split())
    state.apply("trump:H")
    v0, v1, pub = state.view(0), state.view(1), state.public_view()
    assert len(v0["hand"]) == 8 and sorted(v0["hand"]) == sorted(GIORGI["first3"] + GIORGI["rest"])
    assert pub["table"]["trump"] == "H" and pub["table"]["column_counts"] == [5, 5]
    assert pub["table"]["columns_up"] == [[u for _, u in GIORGI["columns"]], [u for _, u in NINO["columns"]]]

    def words(v):
        return set(text(v).replace('"', " ").replace(",", " ").replace("]", " ").replace("[", " ").split())

    for v in (v0, v1, pub):  # no down card in any view, not even the owner's
        assert not (DOWN[0] | DOWN[1]) & words(v)
    for a in SEED_PLAYS[:4]:  # tricks 1-2: both play a heart from the table in trick 2
        state.apply(a)
    v0, v1, pub = state.view(0), state.view(1), state.public_view()
    assert "9H" in v0["hand"] and "QH" in v1["hand"]  # former down cards, each to its owner
    assert "9H" not in words(v1) and "9H" not in words(pub) and "QH" not in words(v0)
    moved = [e for e in pub["table"]["deal_actions"] if e.get("from") == "table"]
    assert [e["moved_hidden"] for e in moved] == [1, 1]
    assert pub["hand_sizes"] == [8, 8] and pub["table"]["column_counts"] == [4, 4]
    auto_deal(state)
    pub = state.public_view()
    r = pub["deal_results"][0]
    assert sum(r["taken"]) == 18 and pub["totals"] == r["scores"]


# ---- JJK-10.5: session events are not actions -------------------------------------------------

SESSION_WORDS = ("resign", "leave", "timeout", "disconnect", "forfeit", "reconnect", "auto")


def test_jjk_10_5_session_events_are_never_actions_in_the_rules():
    """JJK-10.5: resigning, leaving, disconnection and timeouts are not actions: they are never
    in a legal-action list of a whole match and the rules refuse them as malformed."""
    rng = random.Random(11)
    state = GAME.new_state({"target_score": 11}, first_dealer=1)
    while not state.is_over():
        deck = PACK[:]
        rng.shuffle(deck)
        state.deal(deck)
        while state.to_act() >= 0:
            legal = state.legal_actions()
            assert all(a.split(":")[0] in ("trump", "play") for a in legal)
            for word in SESSION_WORDS:
                with pytest.raises(MalformedAction):
                    state.apply(word)
            state.apply(rng.choice(legal))


# ---- session layer: JJK-8.4, JJK-9.6, JJK-10.5 ------------------------------------------------

def _session():
    from tests.sessions import helpers
    return helpers


def test_jjk_8_4_leaving_ends_the_match_for_the_opponent():
    """JJK-8.4 (with JJK-10.1): leaving an active match, even without asking to resign, ends it
    at once; the opponent wins and the unfinished deal scores nothing."""
    h = _session()

    async def go():
        async with h.manager() as mgr:
            match_id, ps = await h.open_match(mgr, "japanese_joker")
            seat, p, env = await h.to_act(mgr, match_id, ps)
            await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq)
            summary = await mgr.leave_match(match_id, ps[1], resign=False)
            return summary, mgr._matches[match_id].state.result()

    summary, rules_result = h.run(go())
    assert summary.status == "finished" and summary.result["winners"] == [0]
    assert summary.result["outcome"] == "resigned" and summary.result["resigned"] == 1
    assert rules_result["totals"] == [0, 0]


def test_jjk_8_4_a_disconnection_forfeit_ends_the_match():
    """JJK-8.4 (with JJK-10.2): a player who stays away past the grace period loses: the match
    ends with the opponent as winner."""
    h = _session()

    async def go():
        async with h.manager(h.config(time_scale=0.01)) as mgr:  # grace 60 s -> 0.6 s
            match_id, ps = await h.open_match(mgr, "japanese_joker")
            m = mgr._matches[match_id]
            streams = [h.Stream(mgr, match_id, p) for p in ps]
            await h.until(lambda: all(s.present for s in m.seats))
            await streams[0].close()
            await h.until(lambda: m.over, timeout=30)
            await streams[1].close()
            return m.result, m.status

    result, status = h.run(go())
    assert status == "finished"
    assert result["outcome"] == "forfeit" and result["forfeited"] == 0 and result["winners"] == [1]


def test_jjk_9_6_reconnection_restores_the_complete_private_view_and_the_position():
    """JJK-9.6: a player who drops and comes back gets his complete private view again (hand,
    legal actions on his turn, his own table record), equal to the one he had, and play goes on
    from the same position."""
    h = _session()

    async def go():
        async with h.manager(h.config(reconnect_grace_s=30.0)) as mgr:
            match_id, ps = await h.open_match(mgr, "japanese_joker")
            m = mgr._matches[match_id]
            streams = [h.Stream(mgr, match_id, p) for p in ps]
            await h.until(lambda: all(s.present for s in m.seats))
            for _ in range(5):  # the trump choice and a few cards
                seat, p, env = await h.to_act(mgr, match_id, ps)
                await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq)
            seat = m.state.to_act()
            before = (await mgr.get_view(match_id, ps[seat])).view
            seq = m.seq
            await streams[seat].close()
            await h.until(lambda: not m.seats[seat].present)
            back = h.Stream(mgr, match_id, ps[seat])
            await h.until(lambda: back.events)
            snapshot = back.events[0]
            after = await mgr.submit_action(match_id, ps[seat], snapshot.view.view["legal"][0], seq)
            await back.close()
            await streams[1 - seat].close()
            return before, snapshot, seq, after, m.state.view(seat)

    before, snapshot, seq, after, _ = h.run(go())
    assert snapshot.kind == "snapshot"
    view = snapshot.view.view
    assert view["hand"] == before["hand"] and view["legal"] == before["legal"]
    assert view["table"]["deal_actions"] == before["table"]["deal_actions"]
    assert view["to_act"] == before["to_act"] and view["seat"] == before["seat"]
    assert after.seq == seq + 1


def test_jjk_10_5_a_timeout_is_recorded_as_the_ordinary_action_it_made():
    """JJK-10.5: the auto-move played on a timeout is recorded as the plain action (the
    transcript step has only seat and action); a resignation adds no step."""
    h = _session()

    async def go():
        async with h.manager(h.config(time_scale=0.01)) as mgr:  # 30 s -> 0.3 s
            match_id, ps = await h.open_match(mgr, "japanese_joker")
            m = mgr._matches[match_id]
            state0 = m.state.clone()
            streams = [h.Stream(mgr, match_id, p) for p in ps]
            spectator = h.Stream(mgr, match_id, Principal("spectator", match_id))
            await h.until(lambda: len(spectator.actions()) >= 1)
            for s in streams:
                await s.close()
            await mgr.leave_match(match_id, ps[0], resign=True)
            exported = await mgr.export_transcript(match_id)
            await spectator.close()
            return state0, spectator.actions()[0], exported

    state0, first, exported = h.run(go())
    seat = state0.to_act()
    assert (first.by, first.reason) == ("auto", "timeout")
    assert first.action == GAME.auto_move(state0.view(seat))
    steps = [s for d in exported["deals"] for s in d["steps"]]
    assert steps[0]["seat"] == seat and steps[0]["action"] == first.action
    assert set(steps[0]) <= {"seat", "legal", "action"}
    assert all(s["action"].split(":")[0] in ("trump", "play") for s in steps)
    transcript.replay(exported)  # the record (auto-move included) replays through the rules alone
