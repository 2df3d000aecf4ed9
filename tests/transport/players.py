"""API clients for the transport tests: per-seat players driven by their own WatchMatch
stream, spectators, and the audience "truth" rebuilt from the admin's transcript export."""

from __future__ import annotations

import base64
import json
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import descriptor, json_format

from engine_service.rules.game import CHANCE
from engine_service.rules.registry import get_game
from engine_service.transport.generated import admin_pb2, card_games_pb2 as pb, match_pb2
from tests.rules.playout import IDENTIFIER_KEYS, cards_in, codes_in_string, without_previous_deal_trick

from .harness import ADMIN_TOKEN, bearer, error_of

SPECTATOR = "spectator"
ENDED = match_pb2.EVENT_KIND_MATCH_ENDED


def message_cards(msg: Any) -> set[int]:
    """Every card code anywhere in a protobuf message (field values, Struct keys and values),
    except in its random identifiers (match ids, client action ids, tokens)."""
    return cards_in(json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                              use_integers_for_enums=True))


def current_deal_cards(msg: Any) -> set[int]:
    """:func:`message_cards` but for a previous deal's final trick in a View's ``last_trick``
    (its deal is over; :func:`tests.rules.playout.without_previous_deal_trick`). The
    reference for :class:`CurrentDealCards`, which finds the same set faster."""
    return cards_in(without_previous_deal_trick(json_format.MessageToDict(
        msg, preserving_proto_field_name=True, use_integers_for_enums=True)))


_INT64 = frozenset({descriptor.FieldDescriptor.CPPTYPE_INT64, descriptor.FieldDescriptor.CPPTYPE_UINT64})
_FLOAT = frozenset({descriptor.FieldDescriptor.CPPTYPE_FLOAT, descriptor.FieldDescriptor.CPPTYPE_DOUBLE})


def _scalar_json(fd: Any, value: Any) -> Any:
    """A scalar field value as json_format.MessageToDict writes it (integer enums)."""
    ct = fd.cpp_type
    if ct == descriptor.FieldDescriptor.CPPTYPE_STRING:
        return base64.b64encode(value).decode("utf-8") if fd.type == descriptor.FieldDescriptor.TYPE_BYTES else str(value)
    if ct in _INT64:
        return str(value)
    if ct in _FLOAT and (math.isinf(value) or math.isnan(value)):
        return "NaN" if math.isnan(value) else ("-Infinity" if value < 0 else "Infinity")
    if ct == descriptor.FieldDescriptor.CPPTYPE_BOOL:
        return bool(value)
    return value


class CurrentDealCards:
    """:func:`current_deal_cards`, computed field by field on the message itself instead of on
    its MessageToDict copy (which took most of a whole-match leak check), each submessage's
    cards found once per distinct content (a View repeats its score table, hand and table in
    every message). It mirrors MessageToDict, :func:`without_previous_deal_trick` and
    :func:`cards_in` exactly: a message's cards are the union over its fields (those
    json_format lists: ``ListFields``) of the field name's and the value's cards, skipping the
    IDENTIFIER_KEYS fields and a ``last_trick`` that is the previous deal's final trick; a
    google.protobuf message (Struct, Value, Timestamp...), or a message with a map field or a
    ``tricks_taken`` beside its ``last_trick``, goes through the reference path as it is.
    :func:`check_no_leaks` compares it with the reference on a sample of its messages."""

    def __init__(self) -> None:
        self._memo: dict[tuple[str, bytes], tuple[frozenset[int], bool]] = {}

    def __call__(self, msg: Any) -> set[int]:
        return set(self._message(msg)[0])

    @staticmethod
    def _str(s: str) -> frozenset[int]:
        return frozenset(codes_in_string(s))

    def _message(self, msg: Any) -> tuple[frozenset[int], bool]:
        """(the cards, whether its converted value is truthy) for a message field's value."""
        desc = msg.DESCRIPTOR
        key = (desc.full_name, msg.SerializeToString(deterministic=True))
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._regular(msg, desc)
        return hit

    def _reference(self, msg: Any) -> tuple[frozenset[int], bool]:
        value = without_previous_deal_trick(json_format.MessageToDict(
            msg, preserving_proto_field_name=True, use_integers_for_enums=True))
        return frozenset(cards_in(value)), bool(value)

    def _value(self, fd: Any, value: Any) -> tuple[frozenset[int], bool]:
        if fd.cpp_type == descriptor.FieldDescriptor.CPPTYPE_MESSAGE:
            return self._message(value)
        v = _scalar_json(fd, value)
        return (self._str(v) if isinstance(v, str) else frozenset()), bool(v)

    def _regular(self, msg: Any, desc: Any) -> tuple[frozenset[int], bool]:
        if desc.full_name.startswith("google.protobuf."):
            return self._reference(msg)
        fields = msg.ListFields()
        names = {fd.name for fd, _ in fields}
        if ("last_trick" in names and "tricks_taken" in names) or any(
                fd.is_extension or (fd.message_type is not None and fd.message_type.GetOptions().map_entry)
                for fd, _ in fields):
            return self._reference(msg)
        out: dict[str, tuple[frozenset[int], bool]] = {}
        for fd, value in fields:
            if fd.is_repeated:
                parts = [self._value(fd, v) for v in value]
                out[fd.name] = frozenset().union(*(c for c, _ in parts)), bool(parts)
            else:
                out[fd.name] = self._value(fd, value)
        last = out.get("last_trick")
        if last is not None and last[1]:
            history = out.get("trick_history")
            if not (history is not None and history[1]):  # the previous deal's final trick
                del out["last_trick"]
        found: set[int] = set()
        for name, (cards, _) in out.items():
            if name not in IDENTIFIER_KEYS:
                found |= self._str(name)
                found |= cards
        return frozenset(found), bool(out)


@dataclass
class Inbox:
    """What one audience received: (seq, message, kind of message)."""

    audience: Any
    items: list[tuple[int, Any, str]] = field(default_factory=list)
    action_seqs: list[int] = field(default_factory=list)  # ACTION events, in arrival order
    reconnects: int = 0

    def add(self, seq: int, msg: Any, kind: str) -> None:
        self.items.append((seq, msg, kind))


async def create_open_match(stub, game: str, **fields: Any) -> tuple[str, list[str]]:
    """Create a match whose seats are all open, join every seat; return id and seat tokens."""
    created = await stub.CreateMatch(pb.CreateMatchRequest(game=game, **fields))
    match_id = created.match.match_id
    tokens = []
    for seat in range(len(created.match.seats)):
        joined = await stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=seat,
                                                          player_name=f"player {seat}"))
        assert joined.seat == seat
        tokens.append(joined.seat_token)
    return match_id, tokens


async def watch(stub, match_id: str, inbox: Inbox, token: str | None, *, seat: int | None = None,
                rng: random.Random | None = None, cut_probability: float = 0.0,
                start_after: int | None = 0, act=None) -> None:
    """Follow a match to MATCH_ENDED, reconnecting with after_seq after random cuts; for a
    seat, ``act(view)`` is awaited whenever the seat is to act on the newest view."""
    rng = rng or random.Random(0)
    after = start_after
    md = bearer(token) if token else None
    while True:
        req = pb.WatchMatchRequest(match_id=match_id)
        if after is not None:
            req.after_seq = after
        call = stub.WatchMatch(req, metadata=md)
        cut = False
        async for ev in call:
            if ev.kind == match_pb2.EVENT_KIND_HEARTBEAT:
                continue
            inbox.add(ev.seq, ev, "event")
            if ev.kind == match_pb2.EVENT_KIND_ACTION:
                inbox.action_seqs.append(ev.seq)
            if ev.kind in (match_pb2.EVENT_KIND_ACTION, match_pb2.EVENT_KIND_SNAPSHOT):
                after = ev.seq
            if ev.kind == ENDED:
                call.cancel()
                return
            if act is not None and ev.HasField("view"):
                await act(ev.view)
            if ev.kind == match_pb2.EVENT_KIND_ACTION and rng.random() < cut_probability:
                cut = True
                break
        call.cancel()
        if not cut:
            raise AssertionError(f"{inbox.audience}: stream ended without MATCH_ENDED")
        inbox.reconnects += 1


class RandomPlayer:
    """One seat's client: acts with a random legal action whenever its newest view says so,
    with expected_seq and a client_action_id; records every answer for the leak checks."""

    def __init__(self, stub, match_id: str, seat: int, token: str, rng: random.Random,
                 inbox: Inbox, retry_probability: float = 0.0) -> None:
        self.stub, self.match_id, self.seat, self.token = stub, match_id, seat, token
        self.rng, self.inbox, self.retry_probability = rng, inbox, retry_probability
        self.acted_at = -1
        self.acknowledged: list[tuple[int, str]] = []
        self.stale = 0

    async def act(self, view: match_pb2.View) -> None:
        if not view.HasField("to_act") or view.to_act != self.seat or view.seq <= self.acted_at:
            return
        if not view.legal_actions:
            return
        self.acted_at = view.seq
        action = self.rng.choice(list(view.legal_actions)).notation
        req = pb.SubmitActionRequest(match_id=self.match_id, action=action, expected_seq=view.seq,
                                     client_action_id=f"{self.seat}-{view.seq}")
        try:
            res = await self.stub.SubmitAction(req, metadata=bearer(self.token))
        except grpc.aio.AioRpcError as exc:
            err = error_of(exc)
            if err.code == grpc.StatusCode.ABORTED:  # the view was not the newest: wait
                self.stale += 1
                self.inbox.add(err.view.seq, err.view, "stale_view")
                return
            if err.code == grpc.StatusCode.FAILED_PRECONDITION and err.reason == "MATCH_NOT_ACTIVE":
                return
            raise
        assert res.seq == view.seq + 1 and not res.duplicate and res.action.notation == action
        self.acknowledged.append((res.seq, action))
        self.inbox.add(res.seq, res.view, "submit_view")
        if self.rng.random() < self.retry_probability:  # a retry after a lost answer
            again = await self.stub.SubmitAction(req, metadata=bearer(self.token))
            assert again.duplicate and again.seq == res.seq and again.action.notation == action
            self.inbox.add(again.seq, again.view, "submit_view")


async def play_through_outage(stub, match_id: str, tokens: list[str], call, rng: random.Random,
                              acked: list, until) -> None:
    """Play random legal actions until ``until()`` or the match is no longer active, every call
    made through ``call(method, request, token)`` (the caller's retrying wrapper: the outage
    tests put the store or the network down meanwhile). Each acknowledged action is appended
    to ``acked`` as ``(seq, action, seat, monotonic time)``. The ``client_action_id`` names
    the seat and the seq, so that a retry of an action whose answer was lost is a duplicate."""
    while not until():
        view = (await call(stub.GetView, pb.GetViewRequest(match_id=match_id), tokens[0])).view
        if view.status != match_pb2.MATCH_STATUS_ACTIVE:
            return
        seat = view.to_act
        mine = (await call(stub.GetView, pb.GetViewRequest(match_id=match_id), tokens[seat])).view
        action = rng.choice(list(mine.legal_actions)).notation
        res = await call(stub.SubmitAction, pb.SubmitActionRequest(
            match_id=match_id, action=action, expected_seq=mine.seq,
            client_action_id=f"{seat}-{mine.seq}"), tokens[seat])
        acked.append((res.seq, action, seat, time.monotonic()))


async def export_transcript(stub_admin, match_id: str) -> dict:
    res = await stub_admin.ExportTranscript(admin_pb2.ExportTranscriptRequest(match_id=match_id),
                                            metadata=bearer(ADMIN_TOKEN))
    return json.loads(res.transcript_json)


def truth_by_seq(transcript: dict, audiences: list[Any]) -> dict[int, dict[Any, tuple[dict, set[int]]]]:
    """For every sequence number of the match: each audience's rules view and the set of
    cards it may not know (secret_cards), replayed from the admin's transcript."""
    game = get_game(transcript["game"])
    state = game.new_state(transcript.get("options") or {}, first_dealer=transcript["first_dealer"])
    decks = [d["deck"] for d in transcript["deals"]]
    steps = [s for d in transcript["deals"] for s in d["steps"]]
    dealt = 0

    def deal_if_due() -> None:
        nonlocal dealt
        if state.to_act() == CHANCE and dealt < len(decks):
            state.deal(decks[dealt])
            dealt += 1

    def snapshot() -> dict[Any, tuple[dict, set[int]]]:
        out = {}
        for a in audiences:
            seat = None if a == SPECTATOR else a
            view = state.public_view() if seat is None else state.view(seat)
            mask = state.secret_cards(seat)
            out[a] = (view, {i for i in range(38) if mask >> i & 1})
        return out

    deal_if_due()
    truth = {0: snapshot()}
    for seq, step in enumerate(steps, start=1):
        state.apply(step["action"], step["seat"])
        deal_if_due()
        truth[seq] = snapshot()
    return truth


def check_no_leaks(inboxes: dict[Any, Inbox], truth: dict) -> int:
    """Every message an audience received names no card it may not know at that seq, and
    every view in it is exactly the rules' view for that audience. Returns messages checked."""
    checked = 0
    cards_of = CurrentDealCards()
    for aud, inbox in inboxes.items():
        for seq, msg, kind in inbox.items:
            expected, secret = truth[seq][aud]
            if kind == "event":
                copy = type(msg)()
                copy.CopyFrom(msg)
                copy.ClearField("action")  # an action is public once it is made (GJ-11.1)
                view = msg.view if msg.HasField("view") else None
            else:
                copy, view = msg, msg
            found = cards_of(copy)
            if checked % 16 == 0:  # the fast search finds what the reference does
                assert found == current_deal_cards(copy), (aud, seq, kind)
            leaked = found & secret
            assert not leaked, f"{aud} got hidden cards {sorted(leaked)} at seq {seq} ({kind})"
            if view is not None:
                assert [c.code for c in view.hand] == list(expected.get("hand") or []), (aud, seq)
                assert [a.notation for a in view.legal_actions] == list(expected.get("legal") or []), (aud, seq)
                assert view.phase == expected["phase"] and list(view.hand_sizes) == list(expected["hand_sizes"])
            checked += 1
    return checked
