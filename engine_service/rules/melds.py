"""Sequence (run) detection shared by Klaberjass and Jo-Jotte.

Cards of a suit occupy nine adjacent bits in natural order ``A K Q J T 9 8 7 6`` (see
:mod:`.cards`), so a run of cards adjacent in the natural order (KL-1.4, JJ-5.2) is a run of
adjacent set bits inside one suit's nine-bit field. :data:`RUNS` answers "which maximal runs of
three or more" for every nine-bit pattern with one tuple lookup; each game applies its own rules
on top (values, comparison, optional splitting: KL-5, JJ-5).
"""

from __future__ import annotations


def _maximal_runs(bits: int) -> tuple[tuple[int, int], ...]:
    """Maximal runs ``(top rank, length)`` of >= 3 adjacent ranks in a nine-bit pattern,
    highest first (KL-5.2 / JJ-5.2: a run is never split by default)."""
    out = []
    r = 0
    while r < 9:
        if bits >> r & 1:
            start = r
            while r < 9 and bits >> r & 1:
                r += 1
            if r - start >= 3:
                out.append((start, r - start))
        else:
            r += 1
    return tuple(out)


#: ``RUNS[bits]``: the maximal runs of a suit's nine-bit pattern, as ``(top, length)``.
RUNS: tuple[tuple[tuple[int, int], ...], ...] = tuple(_maximal_runs(b) for b in range(512))
