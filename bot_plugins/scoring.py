"""What one deal was worth to each seat, read from the rules core's deal result (NOTATION.md
section 4). Shared by the arena (score differences) and the search bot (rollout values)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def deal_scores(game_id: str, result: Mapping[str, Any], num_seats: int) -> list[float]:
    """Points each seat entered on the score sheet for this deal.

    * klaberjass: ``scored`` (KL-9; a thrown-in deal scores nothing);
    * jojotte: ``below`` + ``above`` (JJ scoring: both lines count towards the rubber);
    * georgian_joker, japanese_joker: ``scores`` (GJ-7, JJK scoring), a pulka premium or
      moshla entered with the deal included where the result reports it.
    """
    if result.get("thrown_in"):
        return [0.0] * num_seats
    if game_id == "jojotte":
        below = result.get("below") or [0] * num_seats
        above = result.get("above") or [0] * num_seats
        return [float(b) + float(a) for b, a in zip(below, above)]
    for key in ("scored", "scores"):
        if key in result:
            values: Sequence[Any] = result[key]
            out = [float(v) for v in values]
            if game_id == "georgian_joker":
                for extra in ("premium", "moshla"):
                    if extra in result:
                        out = [o + float(e) for o, e in zip(out, result[extra])]
            return out
    raise KeyError(f"{game_id}: the deal result has no score field: {sorted(result)}")


def relative(scores: Sequence[float], seat: int) -> float:
    """A seat's score minus the mean of the other seats' (zero-sum view of any seat count)."""
    others = [s for i, s in enumerate(scores) if i != seat]
    return scores[seat] - (sum(others) / len(others) if others else 0.0)
