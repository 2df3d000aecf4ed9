"""Delayed spectators (ARCHITECTURE.md section 4: "spectators (public information only,
optionally delayed)"; research/servers.md, recommendation 8: a delay against ghosting, as
Lichess keeps its spectators a few moves behind).

A match created with ``spectator_delay_actions`` = D shows its spectators the match as it was
D accepted actions ago while it is played: their *horizon* is ``seq - D`` (never below 0).
Each accepted action releases the one that is now D actions old to them, as an ordinary
``action`` event with the public view after it; once the match is over, whatever was
withheld is released at once, in order, before ``match_ended`` (there is nothing left to
protect). What spectators see is still only public information (GJ-11.6, JJK-9.5): the delay
hides *when* it became public, which matters where the same public play is worth knowing
elsewhere (a duplicate tournament deals the same decks at several tables: one table's play
reveals another's hands). A delayed view has no deadline (the decision it shows was
taken long ago); seats and the admin are never delayed.

The unit is the match's own sequence number, which every game shares and every client
already follows, rather than a trick or a deal (the research's open question): a table that
wants "about one trick behind" sets the number of actions a trick takes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from ..rules.game import State
from ..store.base import ActionRecord

if TYPE_CHECKING:
    from .api import ViewEnvelope
    from .match import LiveMatch

#: The longest delay a match may ask for, in actions: a few deals of any game, and within
#: the default watcher queue (256), which receives every withheld action at the end at once.
MAX_SPECTATOR_DELAY = 200


def horizon(seq: int, delay: int, active: bool) -> int:
    """The last sequence number spectators may see: ``seq - delay`` while the match is
    played, ``seq`` before it starts (nothing to hide: no action yet) and once it is over."""
    return max(0, seq - delay) if active and delay else seq


class SpectatorCursor:
    """The public position of a delayed match's spectators: the state after the first ``seq``
    actions, advanced one action at a time as the horizon moves (a fold from the nearest
    checkpoint only when it is first needed), with the envelope of that position built once
    for every spectator. Its states are its own: the match's are never shared with it."""

    __slots__ = ("seq", "state", "dealt", "scored", "envelope")

    def __init__(self, seq: int, state: State, dealt: int) -> None:
        self.seq = seq
        self.state = state
        self.dealt = dealt
        self.scored = len(state.deal_results())
        self.envelope: ViewEnvelope | None = None

    def step(self, m: "LiveMatch", rec: ActionRecord) -> dict[str, Any]:
        """Apply the next action of the log (and deal the deck it makes due, as the writer
        did); returns the details of its ``action`` event (``deal_scored``)."""
        from .match import action_details, play_logged

        # a copy: the views already queued for spectators may share the old state's parts
        state = self.state = self.state.clone()
        self.dealt = play_logged(state, rec, m.decks, self.dealt, m.dealt_at_most())
        self.seq = rec.seq
        self.envelope = None
        before, self.scored = self.scored, len(state.deal_results())
        return action_details(before, self.scored)


def cursor_at(m: "LiveMatch", cursor: SpectatorCursor | None, seq: int) -> SpectatorCursor:
    """``cursor`` moved to ``seq`` (forwards by steps, or a new fold when it is ahead)."""
    if cursor is None or cursor.seq > seq:
        state, dealt = m.fold(seq)
        return SpectatorCursor(seq, state, dealt)
    for rec in m.actions[cursor.seq:seq]:
        cursor.step(m, rec)
    return cursor


def released(m: "LiveMatch", cursor: SpectatorCursor | None, after: int,
             upto: int) -> Iterator[tuple[ActionRecord, SpectatorCursor, dict[str, Any]]]:
    """The actions of seq in (``after``, ``upto``], each with the cursor just after it and its
    event's details; the cursor starts from ``after``."""
    c = cursor_at(m, cursor, after)
    for rec in m.actions[after:upto]:
        details = c.step(m, rec)
        yield rec, c, details
