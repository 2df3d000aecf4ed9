"""Independent rules audit of Japanese Joker (japanese_joker.md, NOTATION.md sections 2-4).

Written from the rulebook alone: a small, slow, string-based reference model of JJK-3 .. JJK-8
and JJK-10.4 (:class:`Ref`) is replayed side by side with the engine over many random matches
(every legal set, every hand and column after every play, every deal result, the declarer of
every deal, the match result), and scripted deals built from explicit decks check the rules one
by one. Decks are laid out by :func:`lay_deck`, which follows JJK-3.2 / 3.4 position by position
and shares no code with the engine or the other test helpers.
"""

from __future__ import annotations

import json
import random
from typing import Sequence

import pytest

from engine_service.rules import (CHANCE, TERMINAL, IllegalAction, InvalidDeck, InvalidOptions,
                                  MatchOver, transcript)
from engine_service.rules.cards import CODES
from engine_service.rules.games.japanese_joker import GAME
from tests.shared_paths import transcripts

RANKS = "AKQJT9876"
SUITS = "SHDC"
STRAINS = ("S", "H", "D", "C", "NT")
PACK = [r + s for s in SUITS for r in RANKS if r + s not in ("6S", "6C")] + ["X1", "X2"]


# ---- the deck, laid out by JJK-3.2 / 3.4 --------------------------------------------------------

def lay_deck(declarer_cards: dict, opponent_cards: dict) -> list[str]:
    """``deck[0 .. 35]`` dealing exactly these cards (each dict: ``first3`` (3 cards), ``rest``
    (the 5 hand cards of phase B), ``columns`` (5 ``(down, up)`` pairs in table order)).

    JJK-3.2: ``deck[k]`` for k < 6 goes to the declarer when k is even; JJK-3.4: ``deck[6..15]``
    hands, ``deck[16..25]`` down cards of columns 1-5, ``deck[26..35]`` up cards, declarer first.
    """
    deck: list[str | None] = [None] * 36
    for offset, who in ((0, declarer_cards), (1, opponent_cards)):
        assert len(who["first3"]) == 3 and len(who["rest"]) == 5 and len(who["columns"]) == 5
        for i, c in enumerate(who["first3"]):
            deck[2 * i + offset] = c
        for i, c in enumerate(who["rest"]):
            deck[6 + 2 * i + offset] = c
        for i, (down, up) in enumerate(who["columns"]):
            deck[16 + 2 * i + offset] = down
            deck[26 + 2 * i + offset] = up
    assert sorted(deck) == sorted(PACK), "a scenario deck must use the 36 cards once each"
    return deck  # type: ignore[return-value]


def cards(s: str) -> list[str]:
    return s.split()


def cols(downs: str, ups: str) -> list[tuple[str, str]]:
    return list(zip(cards(downs), cards(ups)))


def plays(*codes: str) -> set[str]:
    return {f"play:{c}" for c in codes}


def joker_leads(*jokers: str) -> set[str]:
    return {f"play:{j}:{q}" for j in jokers for q in SUITS}


# ---- the reference model -------------------------------------------------------------------------

def rank(card: str) -> int:
    return RANKS.index(card[0])  # 0 = ace, the highest


def is_joker(card: str) -> bool:
    return card[0] == "X"


class Ref:
    """Japanese Joker from the rulebook, one rule per line, strings only (slow on purpose)."""

    def __init__(self, target: int, first_declarer: int) -> None:
        self.target = target
        self.declarer = first_declarer  # JJK-2.2: given
        self.totals = [0, 0]
        self.results: list[dict] = []
        self.over = False
        self.winners: list[int] = []
        self.phase = "dealing"

    # JJK-3
    def deal(self, deck: Sequence[str]) -> None:
        d, o = self.declarer, 1 - self.declarer
        self.deck = list(deck)
        self.hand = [set(), set()]
        for k in range(6):  # JJK-3.2
            self.hand[d if k % 2 == 0 else o].add(deck[k])
        self.columns: list[list[tuple[str, str]]] = [[], []]
        self.played_any = [False, False]
        self.taken = [0, 0]
        self.lead: tuple[str, str | None] | None = None
        self.leader = -1
        self.tricks = 0
        self.trump = None
        self.phase = "trump"
        self.to_act = d

    def choose(self, strain: str) -> None:  # JJK-3.3, 3.4
        d, o = self.declarer, 1 - self.declarer
        deck = self.deck
        self.trump = strain
        for k in range(6, 16):
            self.hand[d if k % 2 == 0 else o].add(deck[k])
        for i in range(5):
            self.columns[d].append((deck[16 + 2 * i], deck[26 + 2 * i]))
            self.columns[o].append((deck[17 + 2 * i], deck[27 + 2 * i]))
        self.phase = "playing"
        self.to_act = d  # JJK-2.5

    def ups(self, p: int) -> list[str]:
        return [u for _, u in self.columns[p]]

    def available(self, p: int) -> set[str]:  # JJK-5.1
        return set(self.hand[p]) | (set(self.ups(p)) if self.played_any[p] else set())

    def legal(self) -> set[str]:
        if self.phase == "trump":
            return {f"trump:{s}" for s in STRAINS}
        p = self.to_act
        avail = self.available(p)
        jokers = {c for c in avail if is_joker(c)}
        normal = avail - jokers
        if self.lead is None:  # JJK-5.2
            return plays(*normal) | joker_leads(*jokers)
        card, named = self.lead
        asked = named if named is not None else card[1]
        same = [c for c in normal if c[1] == asked]
        if same:  # JJK-5.3 / 5.4 step 2
            if named is not None:
                same = [min(same, key=rank)]
            return plays(*same, *jokers)
        trumps = [c for c in normal if self.trump != "NT" and c[1] == self.trump]
        if trumps:  # step 3
            return plays(*trumps, *jokers)
        return plays(*avail)  # step 4

    def follower_wins(self, follow: str) -> bool:  # JJK-6.1 - 6.3
        card, named = self.lead
        t = self.trump
        if is_joker(follow):
            return True
        if is_joker(card):
            return t != "NT" and named != t and follow[1] == t
        if follow[1] == card[1]:
            return rank(follow) < rank(card)
        return t != "NT" and follow[1] == t

    def apply(self, action: str) -> None:
        parts = action.split(":")
        if parts[0] == "trump":
            self.choose(parts[1])
            return
        p = self.to_act
        c = parts[1]
        named = parts[2] if len(parts) == 3 else None
        if c in self.hand[p]:
            self.hand[p].remove(c)
        else:  # JJK-4.1 - 4.3
            n = len(self.columns[p])
            i = self.ups(p).index(c)
            down, _ = self.columns[p].pop(i)
            self.hand[p].add(down)
            if n == 2:
                other_down, other_up = self.columns[p].pop()
                self.hand[p] |= {other_down, other_up}
        self.played_any[p] = True
        if self.lead is None:
            self.lead = (c, named)
            self.leader = p
            self.to_act = 1 - p
            return
        w = p if self.follower_wins(c) else 1 - p
        self.taken[w] += 1
        self.lead = None
        self.tricks += 1
        self.to_act = w  # JJK-6.4
        if self.tricks == 18:
            self.end_deal()

    def end_deal(self) -> None:  # JJK-7.1, 8.2, 2.3
        a, b = self.taken
        scores = [a - b if a > b else 0, b - a if b > a else 0]
        self.results.append({"trump": self.trump, "taken": [a, b], "scores": scores})
        self.totals = [self.totals[0] + scores[0], self.totals[1] + scores[1]]
        self.declarer = 1 - self.declarer
        reached = [s for s in (0, 1) if self.totals[s] >= self.target]
        if reached:
            self.over, self.winners, self.phase = True, reached, "over"
        else:
            self.phase = "dealing"


def ref_auto_move(phase: str, hand: Sequence[str], legal: Sequence[str]) -> str:
    """JJK-10.4 as written."""
    if phase == "trump_choice":
        best = None
        for si, s in enumerate(SUITS):
            ranks = [rank(c) for c in hand if not is_joker(c) and c[1] == s]
            if ranks:
                key = (-len(ranks), min(ranks), si)
                if best is None or key < best[0]:
                    best = (key, s)
        return f"trump:{best[1]}"
    normal = [a for a in legal if not is_joker(a.split(":")[1])]
    if normal:
        return min(normal, key=lambda a: (-rank(a.split(":")[1]), SUITS.index(a.split(":")[1][1])))
    for a in ("play:X1", "play:X1:S", "play:X2", "play:X2:S"):
        if a in legal:
            return a
    raise AssertionError(legal)


def test_JJK_3_to_8_engine_matches_the_reference_model_over_random_matches():
    """Every legal set, hand, column row, deal result, declarer and match result of random
    matches (every target score, both first declarers, some moves by the auto-move policy)."""
    rng = random.Random(20240611)
    matches = 0
    for target in (11, 15, 21, 31):
        for first in (0, 1):
            for _ in range(3):
                matches += 1
                st = GAME.new_state({"target_score": target}, first_dealer=first)
                ref = Ref(target, first)
                while True:
                    who = st.to_act()
                    if who == TERMINAL:
                        assert ref.over
                        break
                    if who == CHANCE:
                        assert ref.phase == "dealing"
                        assert st.dealer() == ref.declarer  # expect.dealer
                        deck = PACK[:]
                        rng.shuffle(deck)
                        st.deal(deck)
                        ref.deal(deck)
                        continue
                    assert who == ref.to_act
                    legal = st.legal_actions()
                    assert len(legal) == len(set(legal))
                    assert set(legal) == ref.legal(), (ref.phase, ref.lead, ref.trump)
                    view = st.view(who)
                    if rng.random() < 0.3:
                        action = GAME.auto_move(view)
                        assert action == ref_auto_move(view["phase"], view["hand"], legal)
                    else:
                        action = rng.choice(sorted(legal))
                    st.apply(action, seat=who)
                    ref.apply(action)
                    if ref.phase == "playing":
                        for s in (0, 1):
                            v = st.view(s)
                            assert set(v["hand"]) == ref.hand[s]
                            assert v["table"]["columns_up"][s] == ref.ups(s)
                            assert v["table"]["column_counts"][s] == len(ref.columns[s])
                            assert v["tricks_taken"] == ref.taken
                    assert st.deal_results() == ref.results
                    assert st.result() == {"totals": ref.totals, "winners": ref.winners,
                                           "over": ref.over}
    assert matches == 24


# ---- JJK-3: dealing --------------------------------------------------------------------------------

def test_JJK_3_2_and_3_4_every_deck_position_for_both_declarers():
    """deck[0..5] alternate declarer first; deck[6..15] hands; deck[16..25] downs and
    deck[26..35] ups of columns 1-5, declarer first; the declarer then leads (JJK-2.5)."""
    deck = PACK[:]
    random.Random(3).shuffle(deck)
    for declarer in (0, 1):
        o = 1 - declarer
        st = GAME.new_state(first_dealer=declarer)
        assert st.dealer() == declarer
        st.deal(deck)
        assert st.to_act() == declarer and st.legal_actions() == [f"trump:{s}" for s in STRAINS]
        assert set(st.view(declarer)["hand"]) == {deck[0], deck[2], deck[4]}
        assert set(st.view(o)["hand"]) == {deck[1], deck[3], deck[5]}
        # JJK-3.7 / 9.4: no phase-B card before the choice
        assert st.view(o)["table"]["columns_up"] == [[], []]
        st.apply("trump:C", seat=declarer)
        assert set(st.view(declarer)["hand"]) == set(deck[0:16:2])
        assert set(st.view(o)["hand"]) == set(deck[1:16:2])
        ups = st.public_view()["table"]["columns_up"]
        assert ups[declarer] == deck[26:36:2] and ups[o] == deck[27:36:2]
        zones = st.zones()
        assert zones[f"down{declarer}"] == sum(1 << PACK_ID[c] for c in deck[16:26:2])
        assert zones[f"down{o}"] == sum(1 << PACK_ID[c] for c in deck[17:26:2])
        assert st.to_act() == declarer


PACK_ID = {code: i for i, code in enumerate(CODES)}


def test_JJK_1_1_a_deck_with_6S_or_6C_or_missing_a_joker_is_invalid():
    st = GAME.new_state()
    for bad in (["6S"] + PACK[1:], PACK[:-1] + ["6C"], PACK[:35]):
        with pytest.raises(InvalidDeck):
            st.deal(bad)
    assert st.to_act() == CHANCE


# ---- scripted deal 1: trump H, seat 0 declares --------------------------------------------------

def deal_one():
    """Seat 0 (declarer) and seat 1, trump H. Columns are ``(down, up)``.

    seat 0: hand AH KH QH AS KS QS JS TS; columns 9S/JD 8S/TD AD/9D KD/8D QD/7D
    seat 1: hand JH TH AC KC QC JC TC 9C; columns 6D/7S 8C/8H 7C/7H 9H/6H X2/X1
    """
    deck = lay_deck(
        {"first3": cards("AH KH QH"), "rest": cards("AS KS QS JS TS"),
         "columns": cols("9S 8S AD KD QD", "JD TD 9D 8D 7D")},
        {"first3": cards("JH TH AC"), "rest": cards("KC QC JC TC 9C"),
         "columns": cols("6D 8C 7C 9H X2", "7S 8H 7H 6H X1")})
    st = GAME.new_state(first_dealer=0)
    st.deal(deck)
    assert set(st.view(0)["hand"]) == {"AH", "KH", "QH"}
    st.apply("trump:H", seat=0)
    return st


def step(st, seat: int, legal: set[str], action: str, winner: int | None = None) -> None:
    """Check the seat to act and its exact legal set, play, and check the trick's winner."""
    assert st.to_act() == seat
    assert set(st.legal_actions()) == legal
    st.apply(action, seat=seat)
    if winner is not None:
        assert st.view(seat)["last_trick"]["winner"] == winner
        assert st.to_act() == winner  # JJK-6.4


def test_JJK_5_1_A2_first_card_from_the_hand_and_suit_only_on_the_table_counts_as_absent():
    st = deal_one()
    # the declarer's first card: hand only, although five up cards lie in front of him
    with pytest.raises(IllegalAction, match="first card"):
        st.clone().apply("play:JD")
    step(st, 0, plays(*cards("AH KH QH AS KS QS JS TS")), "play:TS")
    # seat 1's first card: its only spade 7S is an up card, so it must trump from the hand
    with pytest.raises(IllegalAction, match="first card"):
        st.clone().apply("play:7S")
    step(st, 1, plays("JH", "TH"), "play:TH", winner=1)


def test_JJK_deal_one_scripted_columns_follow_joker_and_clearing():
    """JJK-4.2, 4.3, 4.5, 5.3, 5.4 (A1), 6.1, 6.3, 9.2 along one scripted deal."""
    st = deal_one()
    step(st, 0, plays(*cards("AH KH QH AS KS QS JS TS")), "play:TS")
    step(st, 1, plays("JH", "TH"), "play:TH", winner=1)
    # trick 2: seat 1 has played, so its up cards (and the up joker) are available now
    step(st, 1, plays(*cards("JH AC KC QC JC TC 9C 7S 8H 7H 6H")) | joker_leads("X1"),
         "play:7S")
    # JJK-4.2: five columns -> the down card 6D goes to seat 1's hand at once, unseen by seat 0
    assert "6D" in st.view(1)["hand"] and "6D" not in json.dumps(st.view(0))
    assert st.view(0)["hand_sizes"] == [7, 8] and st.public_view()["table"]["column_counts"] == [5, 4]
    act = st.public_view()["table"]["deal_actions"][-1]
    assert act["from"] == "table" and act["moved_hidden"] == 1 and act["moved_public"] == []
    # seat 0 follows spades from the hand; its up diamonds do not matter
    step(st, 0, plays("AS", "KS", "QS", "JS"), "play:JS", winner=0)
    # trick 3: seat 0 leads its up JD (down 9S to hand); seat 1 must follow with 6D, the card
    # that reached its hand in the previous trick (JJK-4.5), or its up joker
    step(st, 0, plays(*cards("AH KH QH AS KS QS JD TD 9D 8D 7D")), "play:JD")
    assert "9S" in st.view(0)["hand"]
    step(st, 1, plays("6D", "X1"), "play:X1", winner=1)  # JJK-6.1: a joker always takes
    assert "X2" in st.view(1)["hand"]  # the joker's column: its down card X2 moved
    # trick 4: seat 1 leads the moved X2 naming D; seat 0 holds no diamond in hand, its
    # highest available diamond is the up TD (AD KD QD are face down and never count)
    step(st, 1, plays(*cards("JH AC KC QC JC TC 9C 6D 8H 7H 6H")) | joker_leads("X2"),
         "play:X2:D")
    step(st, 0, plays("TD"), "play:TD", winner=1)  # JJK-6.3: no trump, the joker wins
    # trick 5: seat 1 plays an up card with three columns: one column goes (JJK-4.2)
    step(st, 1, plays(*cards("JH AC KC QC JC TC 9C 6D 8H 7H 6H")), "play:8H")
    assert st.public_view()["table"]["column_counts"] == [3, 2]
    step(st, 0, plays("AH", "KH", "QH"), "play:QH", winner=0)
    # trick 6: seat 0 with three columns plays one, leaving two
    step(st, 0, plays(*cards("AH KH AS KS QS 9S 8S 9D 8D 7D")), "play:9D")
    assert st.public_view()["table"]["column_counts"] == [2, 2]
    step(st, 1, plays("6D"), "play:6D", winner=0)
    # trick 7: seat 1, with exactly two columns, plays the up 6H: the table clears (JJK-4.3)
    step(st, 0, plays(*cards("AH KH AS KS QS 9S 8S AD 8D 7D")), "play:AH")
    step(st, 1, plays("JH", "7H", "6H"), "play:6H", winner=0)
    assert set(st.view(1)["hand"]) == set(cards("JH AC KC QC JC TC 9C 8C 9H 7C 7H"))
    pub = st.public_view()["table"]
    assert pub["column_counts"] == [2, 0] and pub["columns_up"][1] == []
    assert pub["known_in_hand"][1] == ["7H"]  # JJK-9.2: the up card was public
    act = pub["deal_actions"][-1]
    assert act["moved_hidden"] == 2 and act["moved_public"] == ["7H"]
    assert st.public_view()["hand_sizes"] == [7, 11]  # JJK-4.7: 7 + 2*2 == 11 + 2*0 == 18 - 7
    # trick 8: the three cleared cards are available now (JJK-4.5)
    step(st, 0, plays(*cards("KH AS KS QS 9S 8S AD 8D 7D")), "play:KH")
    step(st, 1, plays("JH", "9H", "7H"), "play:9H", winner=0)
    assert st.view(0)["tricks_taken"] == [5, 3]


# ---- scripted deal 2: seat 1 declares; joker leads -------------------------------------------

def deal_two(trump: str):
    """Seat 1 declares.

    seat 1: hand X1 AS 7H KH QH JH TH 9C; columns 6D/KS 7D/9S 8C/AC 7C/KC 6H/QC
    seat 0: hand 8S 7S AH X2 AD KD QD JD; columns 9H/QS 8H/JS TD/TS 9D/JC 8D/TC
    """
    deck = lay_deck(
        {"first3": cards("X1 AS 7H"), "rest": cards("KH QH JH TH 9C"),
         "columns": cols("6D 7D 8C 7C 6H", "KS 9S AC KC QC")},
        {"first3": cards("8S 7S AH"), "rest": cards("X2 AD KD QD JD"),
         "columns": cols("9H 8H TD 9D 8D", "QS JS TS JC TC")})
    st = GAME.new_state(first_dealer=1)
    st.deal(deck)
    assert st.to_act() == 1
    st.apply(f"trump:{trump}", seat=1)
    assert st.to_act() == 1  # JJK-2.5
    return st


def test_JJK_A4_joker_lead_naming_the_trump_forces_the_highest_trump_and_wins():
    st = deal_two("S")
    step(st, 1, plays(*cards("AS 7H KH QH JH TH 9C")) | joker_leads("X1"), "play:X1:S")
    # first card: only the hand counts, so 8S (not the up QS) is the highest spade
    step(st, 0, plays("8S", "X2"), "play:8S", winner=1)
    step(st, 1, plays(*cards("AS 7H KH QH JH TH 9C KS 9S AC KC QC")), "play:7H")
    step(st, 0, plays("AH", "X2"), "play:AH", winner=0)
    # JJK-A5 / 5.4 step 3 / 6.3: joker names D; seat 1 holds diamonds only face down, so it
    # must trump (any trump, not the highest) and the trump beats the joker
    step(st, 0, plays(*cards("7S AD KD QD JD QS JS TS JC TC")) | joker_leads("X2"), "play:X2:D")
    step(st, 1, plays("AS", "KS", "9S"), "play:9S", winner=1)
    assert "7D" in st.view(1)["hand"]
    step(st, 1, plays(*cards("AS KH QH JH TH 9C 7D KS AC KC QC")), "play:7D")
    step(st, 0, plays("AD", "KD", "QD", "JD"), "play:JD", winner=0)
    # a normal spade lead from the table: any spade may follow, the higher one wins
    st2 = st.clone()
    step(st, 0, plays(*cards("7S AD KD QD QS JS TS JC TC")), "play:QS")
    step(st, 1, plays("AS", "KS"), "play:KS", winner=1)  # JJK-6.2: higher same suit wins
    assert st.view(0)["tricks_taken"] == [2, 3]
    # a normal trump lead: any trump (not only the highest) may follow (JJK-5.3 step 2)
    step(st2, 0, plays(*cards("7S AD KD QD QS JS TS JC TC")), "play:7S")
    step(st2, 1, plays("AS", "KS"), "play:AS", winner=1)


def test_JJK_A1_joker_lead_demands_the_highest_card_even_from_the_table():
    st = deal_two("S")
    step(st, 1, plays(*cards("AS 7H KH QH JH TH 9C")) | joker_leads("X1"), "play:7H")
    step(st, 0, plays("AH", "X2"), "play:AH", winner=0)
    step(st, 0, plays(*cards("8S 7S AD KD QD JD QS JS TS JC TC")) | joker_leads("X2"), "play:JD")
    step(st, 1, plays("AS", "KS", "9S", "X1"), "play:9S", winner=1)
    step(st, 1, plays(*cards("AS KH QH JH TH 9C 7D KS AC KC QC")) | joker_leads("X1"), "play:X1:S")
    # 8S and 7S are in the hand, but the up QS is the highest available spade
    step(st, 0, plays("QS", "X2"), "play:QS", winner=1)
    assert "9H" in st.view(0)["hand"]


def test_JJK_6_1_two_jokers_in_one_trick_the_later_joker_wins_and_leads():
    st = deal_two("S")
    step(st, 1, plays(*cards("AS 7H KH QH JH TH 9C")) | joker_leads("X1"), "play:X1:H")
    step(st, 0, plays("AH", "X2"), "play:X2", winner=0)
    with pytest.raises(IllegalAction, match="names no suit"):
        _follow_with_named_joker()
    # the follower's joker made no declaration (JJK-5.5)
    last = st.public_view()["last_trick"]["plays"]
    assert last[0] == {"seat": 1, "card": "X1", "named_suit": "H"}
    assert last[1] == {"seat": 0, "card": "X2"}


def _follow_with_named_joker() -> None:
    st = deal_two("S")
    st.apply("play:X1:H")
    st.apply("play:X2:S")


def test_JJK_5_2_a_leading_joker_must_name_a_suit_and_may_name_any_in_NT():
    st = deal_two("NT")
    legal = set(st.legal_actions())
    assert joker_leads("X1") <= legal and "play:X1" not in legal  # JJK-A6: NT deals too
    with pytest.raises(IllegalAction, match="names a suit"):
        st.clone().apply("play:X1")


def test_JJK_NT_deal_joker_lead_always_wins_and_voids_may_discard_anything():
    st = deal_two("NT")
    step(st, 1, plays(*cards("AS 7H KH QH JH TH 9C")) | joker_leads("X1"), "play:X1:D")
    step(st, 0, plays("AD", "X2"), "play:AD", winner=1)  # 5.4 step 2: the highest diamond
    step(st, 1, plays(*cards("AS 7H KH QH JH TH 9C KS 9S AC KC QC")), "play:9C")
    step(st, 0, plays("JC", "TC", "X2"), "play:TC", winner=0)
    # seat 1 has diamonds only face down and there is no trump: every available card is legal
    step(st, 0, plays(*cards("8S 7S AH KD QD JD 8D QS JS TS JC")) | joker_leads("X2"), "play:KD")
    step(st, 1, plays(*cards("AS 7H KH QH JH TH KS 9S AC KC QC")), "play:AS", winner=0)


def test_JJK_6_5_a_trump_is_not_beaten_by_a_discard_and_a_joker_beats_a_trump_lead():
    st = deal_two("S")
    step(st, 1, plays(*cards("AS 7H KH QH JH TH 9C")) | joker_leads("X1"), "play:AS")
    step(st, 0, plays("8S", "7S", "X2"), "play:X2", winner=0)


# ---- JJK-7 / JJK-8 / JJK-2.3: scoring, declarer alternation, match end ---------------------------

STRONG = cards("AH KH QH JH TH 9H 8H 7H 6H X1 X2 AS KS QS AD KD AC KC")
WEAK = cards("JS TS 9S 8S 7S QD JD TD 9D 8D 7D 6D QC JC TC 9C 8C 7C")


def lopsided_deck(strong_seat: int, declarer: int) -> list[str]:
    """``strong_seat`` gets every heart, both jokers and the top spades/diamonds/clubs (its
    hand holds hearts), so with trump H it takes all 18 tricks whatever anyone plays."""
    def layout(c: list[str]) -> dict:
        return {"first3": c[0:3], "rest": c[3:8], "columns": list(zip(c[8:13], c[13:18]))}
    strong = layout(STRONG)
    weak = layout(WEAK)
    return lay_deck(strong if strong_seat == declarer else weak,
                    weak if strong_seat == declarer else strong)


def play_out(st, rng: random.Random, steps: list | None = None, trump: str = "H") -> None:
    """Play the deal just dealt to its end: the given trump, then random legal cards."""
    assert st.to_act() >= 0
    if steps is not None:
        steps.append({"seat": st.to_act(), "action": f"trump:{trump}"})
    st.apply(f"trump:{trump}")
    while st.to_act() >= 0:
        action = rng.choice(st.legal_actions())
        if steps is not None:
            steps.append({"seat": st.to_act(), "action": action})
        st.apply(action)


@pytest.mark.parametrize("target,strong_seats,totals,winner", [
    (11, [0], [18, 0], 0),
    (15, [1], [0, 18], 1),
    (21, [0, 1, 0], [36, 18], 0),
    (31, [0, 1, 1], [18, 36], 1),
])
def test_JJK_8_1_8_2_match_ends_after_the_deal_that_reaches_the_target(target, strong_seats,
                                                                        totals, winner):
    """JJK-7.1 (18:0 scores 18), 7.2, 8.2 (checked after each deal, >= target), 2.3
    (declarers 0, 1, 0, ...), NOTATION section 3/4 (deal result and match result fields)."""
    rng = random.Random(target)
    st = GAME.new_state({"target_score": target}, first_dealer=0)
    running = [0, 0]
    for i, strong in enumerate(strong_seats):
        assert st.to_act() == CHANCE and not st.result()["over"]
        assert st.dealer() == i % 2
        st.deal(lopsided_deck(strong, declarer=i % 2))
        play_out(st, rng)
        taken = [18, 0] if strong == 0 else [0, 18]
        running[strong] += 18
        assert st.deal_results()[-1] == {"trump": "H", "taken": taken, "scores": taken}
        assert st.result()["totals"] == running
    assert st.to_act() == TERMINAL
    assert st.result() == {"totals": totals, "winners": [winner], "over": True}
    # documented choice: the declaration passed on after the last deal too (JJK-2.3)
    assert st.dealer() == len(strong_seats) % 2 == st.public_view()["dealer"]
    with pytest.raises(MatchOver):
        st.deal(PACK)
    with pytest.raises(MatchOver):
        st.apply("trump:S")


def test_JJK_7_1_9_9_draw_scores_nothing_and_the_declarer_still_alternates():
    """The sample transcript's two 9:9 deals, replayed with target 11: nothing scored, the
    match goes on, the declarer changes (JJK-2.3 (D), A9)."""
    (path,) = [p for p in transcripts("japanese_joker") if "two_deals" in str(p)]
    data = json.loads(path.read_text())
    data["options"] = {"target_score": 11}
    diff, st = transcript.check(data)
    assert diff is None, str(diff)
    assert [r["scores"] for r in st.deal_results()] == [[0, 0], [0, 0]]
    assert st.result() == {"totals": [0, 0], "winners": [], "over": False}
    assert st.to_act() == CHANCE and st.dealer() == 0


def test_NOTATION_3_hand_written_transcript_of_a_whole_match_checks_out():
    """A card-transcript/1 written by hand (not by ``export``): `expect.dealer`, deal results
    with JSON lists and strings, the final totals / winners / over, and target 31 as a JSON
    integer option. A wrong total or winner is reported as the first difference."""
    rng = random.Random(7)
    st = GAME.new_state({"target_score": 31}, first_dealer=1)
    deals = []
    for i, strong in enumerate([1, 0, 1]):
        deck = lopsided_deck(strong, declarer=1 - i % 2)
        st.deal(deck)
        steps: list = []
        play_out(st, rng, steps, trump="H")
        taken = [18, 0] if strong == 0 else [0, 18]
        deals.append({"deck": deck, "expect": {"dealer": 1 - i % 2}, "steps": steps,
                      "result": {"trump": "H", "taken": taken, "scores": taken}})
    data = {"schema": "card-transcript/1", "game": "japanese_joker",
            "options": {"target_score": 31}, "first_dealer": 1, "deals": deals,
            "result": {"totals": [18, 36], "winners": [1], "over": True}}
    data = json.loads(json.dumps(data))
    diff, _ = transcript.check(data)
    assert diff is None, str(diff)
    assert transcript.export(st, with_legal=False)["deals"] == deals
    bad = json.loads(json.dumps(data))
    bad["result"]["winners"] = [0]
    diff, _ = transcript.check(bad)
    assert diff is not None and diff.what == "result.winners"
    bad = json.loads(json.dumps(data))
    bad["deals"][1]["expect"]["dealer"] = 1
    diff, _ = transcript.check(bad)
    assert diff is not None and diff.what == "expect.dealer"


# ---- JJK-10.4: auto-move ----------------------------------------------------------------------

@pytest.mark.parametrize("three,choice", [
    (cards("9H 8H AS"), "trump:H"),      # most normal cards
    (cards("X1 AS KH"), "trump:S"),      # tie: the suit with the highest card
    (cards("KD KC X1"), "trump:D"),      # still tied: S, H, D, C order
    (cards("X1 X2 6D"), "trump:D"),
    (cards("7C 6H 6D"), "trump:C"),      # 7 beats 6
    (cards("QS QH QD"), "trump:S"),
])
def test_JJK_10_4_auto_trump_choice(three, choice):
    rest = [c for c in PACK if c not in three]
    deck = [three[0], rest[0], three[1], rest[1], three[2], rest[2]] + rest[3:]
    st = GAME.new_state(first_dealer=0)
    st.deal(deck)
    assert GAME.auto_move(st.view(0)) == choice


def test_JJK_10_4_auto_card_lowest_rank_then_suit_order_then_jokers():
    st = deal_two("S")
    # seat 1 leads: lowest normal card of its hand is 7H (first card: hand only)
    assert GAME.auto_move(st.view(1)) == "play:7H"
    st.apply("play:X1:S")
    # seat 0 must give 8S or X2: the normal card, never the joker
    assert GAME.auto_move(st.view(0)) == "play:8S"
    st = deal_two("S")
    st.apply("play:X1:H")
    assert GAME.auto_move(st.view(0)) == "play:AH"
    st = deal_one()
    st.apply("play:TS")
    assert GAME.auto_move(st.view(1)) == "play:TH"  # TH below JH
    # only jokers legal: X1 before X2 (following: no suit; leading: naming S)
    st = GAME.position(trump="S", hands=[["X1", "X2"], ["7D", "8D"]], to_act=1, lead=None,
                       tricks_taken=(8, 8))
    st.apply("play:7D")
    assert GAME.auto_move(st.view(0)) == "play:X1"
    st = GAME.position(trump="S", hands=[["X2", "X1"], ["7D", "8D"]], to_act=0,
                       tricks_taken=(8, 8))
    assert GAME.auto_move(st.view(0)) == "play:X1:S"
    # ties in rank: suit order S H D C
    st = GAME.position(trump="NT", hands=[["7C", "7H", "7D", "X1"], ["AS", "KS", "QS", "JS"]],
                       to_act=0, tricks_taken=(7, 7))
    assert GAME.auto_move(st.view(0)) == "play:7H"


# ---- JJK-11: table options --------------------------------------------------------------------

@pytest.mark.parametrize("raw", [
    {"target_score": 11}, {"target_score": 15}, {"target_score": 21}, {"target_score": 31},
    {"turn_time_s": 10}, {"turn_time_s": 120}, {"reconnect_grace_s": 15},
    {"reconnect_grace_s": 600}, {},
])
def test_JJK_11_allowed_option_values(raw):
    opts = GAME.options(raw)
    assert dict(opts) == {"target_score": 21, "turn_time_s": 30, "reconnect_grace_s": 60, **raw}


@pytest.mark.parametrize("raw", [
    {"target_score": 12}, {"target_score": "21"}, {"target_score": 21.0}, {"target_score": True},
    {"turn_time_s": 9}, {"turn_time_s": 121}, {"reconnect_grace_s": 14},
    {"reconnect_grace_s": 601}, {"target": 21},
])
def test_JJK_11_rejected_option_values(raw):
    with pytest.raises(InvalidOptions):
        GAME.options(raw)
