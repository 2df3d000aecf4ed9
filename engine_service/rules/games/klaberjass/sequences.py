"""Klaberjass melds: sequences, their ranking and the meld comparison dialogue (section 5).

Pure functions of hands (bitmasks), the trump suit and the relevant options. The state calls
:func:`resolve` once per deal (after the dix window and, under ``kl_meld_declaration =
optional``, the two declarations); views call :func:`dialogue` to turn the stored outcome into
the public events of KL-5.5, so no dictionaries are built in the hot path.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from ...cards import CODES
from .tables import RANK_CODES, RUNS, RUNS_SPLIT, SUIT_CODES, piece_points


class Seq(NamedTuple):
    """One sequence: suit 0..3, ``top`` natural rank id of its highest card (0 = ace), length."""

    suit: int
    top: int
    length: int

    @property
    def points(self) -> int:
        return piece_points(self.length)

    @property
    def mask(self) -> int:
        base = self.suit * 9 + self.top
        return ((1 << self.length) - 1) << base

    def cards(self) -> list[str]:
        base = self.suit * 9 + self.top
        return [CODES[c] for c in range(base, base + self.length)]

    def top_card(self) -> str:
        return CODES[self.suit * 9 + self.top]


def sequences(hand: int, split_runs: bool = False) -> list[Seq]:
    """The sequences of a hand (KL-5.1-5.2; ``kl_split_runs``, KL-A10), suits S H D C, higher
    first within a suit."""
    table = RUNS_SPLIT if split_runs else RUNS
    return [Seq(s, top, n) for s in range(4) for top, n in table[hand >> (9 * s) & 0x1FF]]


def seq_key(seq: Seq, trump: int, length_compare: bool = False) -> int:
    """Ranking key of KL-5.4: value (or length under ``kl_sequence_compare = length``), then top
    card in the natural order, then trump over non-trump. Equal keys are equal sequences."""
    primary = seq.length if length_compare else piece_points(seq.length)
    return primary * 100 + (8 - seq.top) * 2 + (seq.suit == trump)


def primary_of(key: int) -> int:
    """The first comparison stage of a key (value, or length): what step 2 of KL-5.5 compares."""
    return key // 100


def ranked(hand: int, trump: int, split_runs: bool = False, length_compare: bool = False) -> list[Seq]:
    """Sequences best first (KL-5.4); equal ones in suit order S H D C (KL-5.5 step 3 (D))."""
    return sorted(sequences(hand, split_runs), key=lambda q: (-seq_key(q, trump, length_compare), q.suit))


class MeldOutcome(NamedTuple):
    """The resolved meld phase of one deal (omniscient; views publish only :func:`dialogue`)."""

    elder: int
    trump: int
    length_compare: bool
    seqs: tuple[tuple[Seq, ...], tuple[Seq, ...]]  # per seat, ranked best first
    declared: tuple[bool, bool]  # per seat: False when the seat concealed (KL-A20)
    winner: int | None
    scored: tuple[tuple[Seq, ...], tuple[Seq, ...]]  # per seat, what it scores (KL-5.6)
    points: tuple[int, int]
    scored_mask: tuple[int, int]
    revealed_mask: tuple[int, int]  # cards the public dialogue identifies in each hand

    def best(self, seat: int) -> Seq | None:
        """The sequence ``seat`` states (None: value 0, no sequence or concealed)."""
        if not self.declared[seat] or not self.seqs[seat]:
            return None
        return self.seqs[seat][0]

    def key(self, seat: int) -> int:
        b = self.best(seat)
        return 0 if b is None else seq_key(b, self.trump, self.length_compare)


def _stated_mask(seq: Seq, length_compare: bool) -> int:
    """Cards identified by naming the top card of a stated sequence: the top and the cards
    below it that its stated value (20: exactly 3; 50: at least 4) or length guarantees."""
    n = seq.length if length_compare else (3 if seq.length == 3 else 4)
    return Seq(seq.suit, seq.top, n).mask


_NONE: tuple[tuple[Seq, ...], tuple[Seq, ...]] = ((), ())
_ZERO = (0, 0)


def resolve(hands: Sequence[int], elder: int, trump: int, declared: tuple[bool, bool] = (True, True),
            split_runs: bool = False, length_compare: bool = False,
            best_plus_one: bool = False) -> MeldOutcome:
    """Run the comparison of KL-5.4-5.6 on the hands held after the dix window (KL-4.5)."""
    t = RUNS_SPLIT if split_runs else RUNS
    h0, h1 = hands
    if not (t[h0 & 0x1FF] or t[h0 >> 9 & 0x1FF] or t[h0 >> 18 & 0x1FF] or t[h0 >> 27 & 0x1FF]
            or t[h1 & 0x1FF] or t[h1 >> 9 & 0x1FF] or t[h1 >> 18 & 0x1FF] or t[h1 >> 27 & 0x1FF]):
        return MeldOutcome(elder, trump, length_compare, _NONE, declared, None, _NONE, _ZERO, _ZERO, _ZERO)
    seqs = (tuple(ranked(hands[0], trump, split_runs, length_compare)),
            tuple(ranked(hands[1], trump, split_runs, length_compare)))
    keys = [0, 0]
    for s in (0, 1):
        if declared[s] and seqs[s]:
            keys[s] = seq_key(seqs[s][0], trump, length_compare)
    if keys[0] == keys[1]:
        winner = None
    else:
        winner = 0 if keys[0] > keys[1] else 1
    scored: list[tuple[Seq, ...]] = [(), ()]
    points = [0, 0]
    scored_mask = [0, 0]
    revealed = [0, 0]
    dealer = 1 - elder
    ke, kd = keys[elder], keys[dealer]
    if ke and kd and primary_of(ke) == primary_of(kd):  # how_high: tops are named (KL-5.5 step 3)
        revealed[elder] |= _stated_mask(seqs[elder][0], length_compare)
        if seqs[dealer][0].top <= seqs[elder][0].top:  # higher or same: the dealer names his top
            revealed[dealer] |= _stated_mask(seqs[dealer][0], length_compare)
    if winner is not None:
        won = seqs[winner][:2] if best_plus_one else seqs[winner]
        scored[winner] = won
        points[winner] = sum(q.points for q in won)
        for q in won:
            scored_mask[winner] |= q.mask
        revealed[winner] |= scored_mask[winner]
    return MeldOutcome(elder, trump, length_compare, seqs, declared, winner, tuple(scored),
                       tuple(points), tuple(scored_mask), tuple(revealed))


def value_event(seat: int, say: str, seq: Seq | None, length_compare: bool) -> dict:
    """A ``value`` / ``not_good`` event (KL-5.5 steps 1-2; ``length`` under length compare)."""
    ev = {"seat": seat, "say": say, "value": 0 if seq is None else seq.points}
    if length_compare:
        ev["length"] = 0 if seq is None else seq.length
    return ev


def dialogue(outcome: MeldOutcome, reveal_cards: bool = False) -> list[dict]:
    """The public events of KL-5.5, in order (JSON-ready; seats are match seats)."""
    e = outcome.elder
    d = 1 - e
    lc = outcome.length_compare
    be, bd = outcome.best(e), outcome.best(d)
    ke, kd = outcome.key(e), outcome.key(d)
    events = [value_event(e, "value", be, lc)]
    pe, pd = primary_of(ke), primary_of(kd)
    if pe == 0 and pd == 0:
        events.append(value_event(d, "value", None, lc))
    elif pd > pe:
        events.append(value_event(d, "not_good", bd, lc))
    elif pd < pe:
        events.append({"seat": d, "say": "good"})
    else:
        assert be is not None and bd is not None
        events.append({"seat": d, "say": "how_high"})
        events.append({"seat": e, "say": "top", "card": be.top_card()})
        if bd.top < be.top:
            events.append({"seat": d, "say": "higher", "card": bd.top_card()})
        elif bd.top > be.top:
            events.append({"seat": d, "say": "lower"})
        else:
            events.append({"seat": d, "say": "same", "card": bd.top_card()})
            trumps = [False, False]
            trumps[e] = be.suit == outcome.trump
            trumps[d] = bd.suit == outcome.trump
            events.append({"seat": None, "say": "trump_check", "seat0_trump": trumps[0],
                           "seat1_trump": trumps[1], "result": outcome.winner})
    w = outcome.winner
    if w is not None:
        seqs = []
        for q in outcome.scored[w]:
            item = {"suit": SUIT_CODES[q.suit], "top": RANK_CODES[q.top], "length": q.length}
            if reveal_cards:
                item["cards"] = q.cards()
            seqs.append(item)
        events.append({"seat": w, "say": "scores", "sequences": seqs, "points": outcome.points[w]})
    return events


def describe(seq: Seq, trump: int) -> dict:
    """A sequence in the vector files' shape: suit, top, length, cards, is_trump, points."""
    return {"suit": SUIT_CODES[seq.suit], "top": RANK_CODES[seq.top], "length": seq.length,
            "cards": seq.cards(), "is_trump": seq.suit == trump, "points": seq.points}
