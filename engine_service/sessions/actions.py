"""A player's action on a match, under the match's lock: :class:`PlayerActions`, a
collaborator that :class:`~.manager.MatchManager` builds in its ``__init__`` (as it does
:class:`~.writer.MatchWriter`) and calls from SubmitAction once the caller is known to act
for its seat.

It owns the checks of the request (the action's notation, ``client_action_id``), the match's
state for acting (not waiting, not over, the seat not left, ``expected_seq`` not stale), and
the answer to a retry: an action whose ``client_action_id`` is in the log is answered with
the result of its one application (``duplicate``), also when the writer finds it there only
after catching up with the stored log.

Why a module of its own: the retry contract (docs/api.md "Acting", under "Reconnecting
without losing anything") is decided here and only here, between the request, which says who acts,
and the writer, which applies an action and knows nothing of retries.
"""

from __future__ import annotations

from ..observability.metrics import Metrics
from ..rules.errors import RulesError
from ..store.base import ActionRecord
from .api import BadRequest, MatchNotActive, PermissionDenied, SessionError, StaleSequence, SubmitResult
from .match import LiveMatch
from .writer import MatchWriter

MAX_ACTION_LENGTH = 64
MAX_CLIENT_ACTION_ID_LENGTH = 128


class PlayerActions:
    """Submits a seat's actions (the caller holds the match's lock). See the module docstring.
    From the manager: ``writer`` (applies an action) and ``metrics``."""

    def __init__(self, writer: MatchWriter, metrics: Metrics) -> None:
        self._writer = writer
        self._metrics = metrics

    async def submit(self, m: LiveMatch, seat: int, action: str, expected_seq: int | None,
                     client_action_id: str) -> SubmitResult:
        """Apply ``action`` for ``seat``, or answer a retry of it. A refusal and a retry's
        answer are counted here (``actions``, by ``player``), an accepted action by the writer."""
        try:
            return await self._submit(m, seat, action, expected_seq, client_action_id)
        except StaleSequence:
            self._metrics.actions.labels(m.game.id, "player", "stale").inc()
            raise
        except (SessionError, RulesError) as exc:
            self._metrics.actions.labels(m.game.id, "player", exc.reason.lower()).inc()
            raise

    async def _submit(self, m: LiveMatch, seat: int, action: str, expected_seq: int | None,
                      client_action_id: str) -> SubmitResult:
        if not isinstance(action, str) or not action or len(action) > MAX_ACTION_LENGTH:
            raise BadRequest(f"an action is a notation string of 1..{MAX_ACTION_LENGTH} characters",
                             reason="BAD_ACTION")
        if not isinstance(client_action_id, str) or len(client_action_id) > MAX_CLIENT_ACTION_ID_LENGTH:
            raise BadRequest(f"client_action_id is at most {MAX_CLIENT_ACTION_ID_LENGTH} characters",
                             reason="BAD_CLIENT_ACTION_ID", field="client_action_id")
        if not client_action_id.isprintable():  # every store can keep it (PostgreSQL text: no NUL)
            raise BadRequest("client_action_id holds control characters", reason="BAD_CLIENT_ACTION_ID",
                             field="client_action_id")
        first = self._first_result(m, seat, action, client_action_id)
        if first is not None:
            return first
        if m.over:
            raise MatchNotActive("the match is over")
        if m.status == "waiting":
            raise MatchNotActive("the match is waiting for players", reason="MATCH_WAITING")
        if m.seats[seat].left:
            raise PermissionDenied("you have left this match", reason="SEAT_LEFT")
        if expected_seq is not None and expected_seq != m.seq:
            raise StaleSequence(f"expected_seq {expected_seq} is not the match's seq {m.seq}",
                                current=m.envelope(seat), expected_seq=str(expected_seq), seq=str(m.seq))
        try:
            rec = await self._writer.apply(m, seat, action, by="player", client_action_id=client_action_id)
        except StaleSequence:
            # the stored log was ahead of the match: the writer caught up with it. If it holds
            # this very request (an earlier attempt was written but its answer was lost), that
            # is its result; otherwise the caller decides again on the new state
            first = self._first_result(m, seat, action, client_action_id)
            if first is None:
                raise
            return first
        return SubmitResult(seq=rec.seq, action=rec.action, view=m.envelope(seat))

    def _first_result(self, m: LiveMatch, seat: int, action: str,
                      client_action_id: str) -> SubmitResult | None:
        """The result of the seat's action with ``client_action_id``, if it is in the log (a
        retry: ``duplicate``); None when the id is new."""
        if not client_action_id:
            return None
        first = m.client_ids.get((seat, client_action_id))
        if first is None:
            return None
        if first.action != action and not self._recorded_as(m, first, action):
            raise BadRequest("client_action_id was already used for another action",
                             reason="CLIENT_ACTION_ID_REUSED")
        self._metrics.actions.labels(m.game.id, "player", "duplicate").inc()
        return SubmitResult(seq=first.seq, action=first.action,
                            view=m.view_at(seat, first.seq), duplicate=True)

    @staticmethod
    def _recorded_as(m: LiveMatch, first: ActionRecord, action: str) -> bool:
        """Whether ``action``, sent at ``first``'s position, is recorded as ``first.action``:
        the log keeps the public form of an action (``State.public_action``: a ``declare``
        that states nothing is a ``conceal``), so a retry of the string the player sent
        differs from it."""
        try:
            state, _ = m.fold(first.seq - 1)
            a = state.parse_action(action)
            return a in state.legal_ids() and state.action_str(state.public_action(a)) == first.action
        except RulesError:  # not an action of that position: another action
            return False
