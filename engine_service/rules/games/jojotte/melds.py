"""Jo-Jotte melds (jojotte.md section 5): quartets and sequences, their comparison, the public
dialogue.

:func:`settle` is pure: two hands (bitmasks), the final strain and the meld options in, a
:class:`Settlement` out. The state calls it once per deal when trick play starts (JJ-4.6); the
vector tests call it on the rulebook's examples. :func:`dialogue` turns a settlement into the
public statements of JJ-5.9, which is all the opponent learns of the loser's melds.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ...cards import RANKS, SUITS
from . import tables as T
from .tables import NT


class Sequence(NamedTuple):
    """A sequence: ``suit`` 0..3, ``top`` natural rank index of its highest card (0 = ace),
    ``length`` >= 3, ``trump`` whether its suit is the trump suit."""

    suit: int
    top: int
    length: int
    trump: bool

    @property
    def points(self) -> int:
        return T.sequence_points(self.length)

    def to_json(self) -> dict[str, Any]:
        return {"suit": SUITS[self.suit], "top": RANKS[self.top], "length": self.length,
                "cards": [RANKS[self.top + i] + SUITS[self.suit] for i in range(self.length)],
                "is_trump": self.trump, "points": self.points}


class Settlement(NamedTuple):
    """The meld phase of one deal, seat-indexed pairs throughout."""

    strain: int
    defender: int
    quartets: tuple[tuple[int, ...], tuple[int, ...]]  # natural ranks, best first (JJ-1.5)
    quartet_winner: int | None
    sequences: tuple[tuple[Sequence, ...], tuple[Sequence, ...]]  # best first (JJ-5.6)
    sequence_winner: int | None
    scored_sequences: tuple[tuple[Sequence, ...], tuple[Sequence, ...]]
    quartet_points: tuple[int, int]
    sequence_points: tuple[int, int]

    @property
    def points(self) -> tuple[int, int]:
        return (self.quartet_points[0] + self.sequence_points[0],
                self.quartet_points[1] + self.sequence_points[1])


def quartet_order(strain: int, nt_natural: bool) -> tuple[int, ...]:
    if strain < NT:
        return T.QUARTET_ORDER_SUIT
    return T.QUARTET_ORDER_NT_NATURAL if nt_natural else T.QUARTET_ORDER_NT_PLAIN


def hand_quartets(hand: int, order: tuple[int, ...]) -> tuple[int, ...]:
    """JJ-5.1: ranks held in all four suits that may form a quartet in this strain, best first."""
    q = hand & (hand >> 9) & (hand >> 18) & (hand >> 27) & 0xFF
    if not q:
        return ()
    ranks = [r for r in range(8) if q >> r & 1 and order[r] >= 0]
    if len(ranks) > 1:
        ranks.sort(key=lambda r: -order[r])
    return tuple(ranks)


def _split(top: int, length: int) -> list[tuple[int, int]]:
    """JJ-A20 ``jj_split_runs``: a run is split into two sequences of >= 3 only when that scores
    more, which only a run of 7 or 8 cards does (7 cards: 4 + 3 = 60; 8 cards: 4 + 4 = 80; against
    50); the longer part on top."""
    return [(top, 4), (top + 4, length - 4)]


def _rank_key(s: Sequence) -> tuple[int, int, int, int]:
    return (-s.length, s.top, 0 if s.trump else 1, s.suit)


def hand_sequences(hand: int, strain: int, split_runs: bool) -> tuple[Sequence, ...]:
    """JJ-5.2: the sequences of a hand, best first (JJ-5.6 ranking; equal ranks in suit order)."""
    out: list[Sequence] = []
    runs = T.RUNS
    for suit in range(4):
        found = runs[(hand >> (9 * suit)) & 0xFF]
        if found:
            for top, length in found:
                if split_runs and length > 6:  # 7 or 8 (a suit has eight cards)
                    for t, n in _split(top, length):
                        out.append(Sequence(suit, t, n, suit == strain))
                else:
                    out.append(Sequence(suit, top, length, suit == strain))
    if not out:
        return ()
    if len(out) > 1:
        out.sort(key=_rank_key)
    return tuple(out)


def _compare_sequences(a: tuple[Sequence, ...], b: tuple[Sequence, ...]) -> int:
    """JJ-5.6: 1 if ``a``'s best beats ``b``'s, -1 if ``b``'s wins, 0 if nobody scores."""
    if not b:
        return 1 if a else 0
    if not a:
        return -1
    x, y = a[0], b[0]
    if x.length != y.length:
        return 1 if x.length > y.length else -1
    if x.top != y.top:
        return 1 if x.top < y.top else -1
    if x.trump != y.trump:
        return 1 if x.trump else -1
    return 0


_ALL_DECLARED = ((True, True), (True, True))
_QUARTET_MASKS = tuple((1 << r) | (1 << (9 + r)) | (1 << (18 + r)) | (1 << (27 + r)) for r in range(9))


def settle(hands: tuple[int, int] | list[int], strain: int, defender: int, *,
           nt_natural: bool = False, card_in_two_melds: bool = True, split_runs: bool = False,
           winner_all_sequences: bool = True,
           declared: tuple[tuple[bool, bool], tuple[bool, bool]] = _ALL_DECLARED,
           quartet_hands: tuple[int, int] | list[int] | None = None,
           ) -> Settlement:
    """Settle both categories (JJ-5.4 to JJ-5.7) for two hands in a strain.

    ``declared[seat] = (quartets, sequences)``: False where the player conceals that category
    (``jj_meld_declaration = optional``, JJ-A21); he is then treated as holding none.
    ``quartet_hands``: the hands when the quartets were stated, if a hand changed since (a late
    seven exchange between the statements, JJ-A10); by default ``hands``.
    """
    h0, h1 = hands[0], hands[1]
    d0, d1 = declared
    order = quartet_order(strain, nt_natural)
    qh = quartet_hands if quartet_hands is not None else hands
    q0 = hand_quartets(qh[0], order) if d0[0] else ()
    q1 = hand_quartets(qh[1], order) if d1[0] else ()
    qw: int | None = None
    qpts = (0, 0)
    if q0 or q1:  # JJ-5.5: the higher best quartet scores 100 for each of its owner's quartets
        qw = 0 if not q1 or (q0 and order[q0[0]] > order[q1[0]]) else 1
        if qw == 0:
            qpts = (100 * len(q0), 0)
            if not card_in_two_melds:  # JJ-A20: a scored quartet's cards leave the sequences
                for r in q0:
                    h0 &= ~_QUARTET_MASKS[r]
        else:
            qpts = (0, 100 * len(q1))
            if not card_in_two_melds:
                for r in q1:
                    h1 &= ~_QUARTET_MASKS[r]
    s0 = hand_sequences(h0, strain, split_runs) if d0[1] else ()
    s1 = hand_sequences(h1, strain, split_runs) if d1[1] else ()
    cmp = _compare_sequences(s0, s1)
    if cmp == 0:
        return Settlement(strain, defender, (q0, q1), qw, (s0, s1), None, ((), ()), qpts, (0, 0))
    won = s0 if cmp > 0 else s1
    if not winner_all_sequences:
        won = won[:2]
    pts = 0
    for q in won:
        pts += T.sequence_points(q.length)
    if cmp > 0:
        return Settlement(strain, defender, (q0, q1), qw, (s0, s1), 0, (won, ()), qpts, (pts, 0))
    return Settlement(strain, defender, (q0, q1), qw, (s0, s1), 1, ((), won), qpts, (0, pts))


def dialogue(st: Settlement) -> list[dict[str, Any]]:
    """The public statements of JJ-5.9, in order; nothing else about the melds is revealed."""
    q, s = dialogue_parts(st)
    return q + s


def dialogue_parts(st: Settlement) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(quartet statements, sequence statements) of JJ-5.9."""
    d = st.defender
    c = 1 - d
    out: list[dict[str, Any]] = []
    # quartets
    dq, cq = st.quartets[d], st.quartets[c]
    out.append({"seat": d, "say": f"quartet {RANKS[dq[0]]}" if dq else "quartet none"})
    if st.quartet_winner == c:
        out.append({"seat": c, "say": f"not_good {RANKS[cq[0]]}"})
    else:
        out.append({"seat": c, "say": "good"})
    if st.quartet_winner is not None:
        w = st.quartet_winner
        out.append({"seat": w, "say": "scores", "quartets": [RANKS[r] for r in st.quartets[w]],
                    "points": st.quartet_points[w]})
    quartet_lines = out
    out = []
    # sequences
    ds, cs = st.sequences[d], st.sequences[c]
    dl = ds[0].length if ds else 0
    cl = cs[0].length if cs else 0
    out.append({"seat": d, "say": f"length {dl}"})
    if cl < dl or cl == 0:
        out.append({"seat": c, "say": "good"})
    elif cl > dl:
        out.append({"seat": c, "say": f"not_good {cl}"})
    else:
        out.append({"seat": c, "say": "how_high"})
        out.append({"seat": d, "say": f"top {RANKS[ds[0].top]}"})
        if cs[0].top < ds[0].top:
            out.append({"seat": c, "say": f"higher {RANKS[cs[0].top]}"})
        elif cs[0].top > ds[0].top:
            out.append({"seat": c, "say": "lower"})
        else:
            out.append({"seat": c, "say": "same"})
            out.append({"seat": None, "say": "trump_check", "winner": st.sequence_winner})
    if st.sequence_winner is not None:
        w = st.sequence_winner
        out.append({"seat": w, "say": "scores",
                    "sequences": [s.to_json() for s in st.scored_sequences[w]],
                    "points": st.sequence_points[w]})
    return quartet_lines, out


def revealed_by(lines: list[dict[str, Any]]) -> int:
    """Cards that public meld statements pin down exactly: a stated quartet (its four cards)
    and a scored sequence (its cards)."""
    m = 0
    for line in lines:
        say = line["say"]
        ranks: list[str] = []
        if say.startswith("quartet ") and say != "quartet none":
            ranks = [say[8:]]
        ranks += line.get("quartets", [])
        for r in ranks:
            i = RANKS.index(r)
            m |= (1 << i) | (1 << (9 + i)) | (1 << (18 + i)) | (1 << (27 + i))
        for seq in line.get("sequences", []):
            base = SUITS.index(seq["suit"]) * 9 + RANKS.index(seq["top"])
            m |= ((1 << seq["length"]) - 1) << base
    return m
