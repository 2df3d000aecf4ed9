"""The direct wire encoder of google.protobuf.Struct / ListValue / Value (transport/wire.py)
against protobuf's own Python helpers, and the view encoding assembled from it against a
reference built field by field with the protobuf API, over random play of every game."""

from __future__ import annotations

import collections
import json
import math

import pytest
from google.protobuf import struct_pb2
from hypothesis import given, settings, strategies as st

from engine_service.rules.registry import all_game_ids, get_game
from engine_service.sessions import api
from engine_service.transport import codec, wire
from engine_service.transport.generated import card_games_pb2 as pb, match_pb2
from tests.rules.playout import iter_states

# ---- Struct / ListValue / Value ------------------------------------------------------------

_scalars = (st.none() | st.booleans() | st.integers(-(2 ** 53), 2 ** 53)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=300))
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=6)
                     | st.dictionaries(st.text(max_size=20), inner, max_size=6), max_leaves=60)


def reference_struct(data) -> struct_pb2.Struct:
    """What the codec did before the direct encoder: JSON text, then Struct.update."""
    msg = struct_pb2.Struct()
    msg.update(json.loads(json.dumps(data)))
    return msg


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=20), _json, max_size=8))
def test_struct_body_is_what_protobuf_builds(data):
    assert struct_pb2.Struct.FromString(wire.struct_body(data)) == reference_struct(data)
    for _ in range(2):  # the memoized path, first encoding and from the memo
        assert struct_pb2.Struct.FromString(wire.memo_struct_body(data)) == reference_struct(data)


@settings(max_examples=200, deadline=None)
@given(st.lists(_json, max_size=8))
def test_list_body_is_what_protobuf_builds(items):
    ref = struct_pb2.ListValue()
    ref.extend(json.loads(json.dumps(items)))
    assert struct_pb2.ListValue.FromString(wire.list_body(items)) == ref


_wide_scalars = (st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70)
                 | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40))
_nested_lists = st.recursive(_wide_scalars, lambda inner: st.lists(inner, max_size=5)
                             | st.tuples(inner, inner), max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(_nested_lists, max_size=6))
def test_list_body_bytes_are_protobufs_own(items):
    """Byte for byte (no map inside, so no key order to differ): ints past 2**53 and 2**64,
    -0.0 and subnormals, any unicode, nested lists and tuples."""
    ref = struct_pb2.ListValue()
    ref.extend(json.loads(json.dumps(items)))
    assert wire.list_body(items) == ref.SerializeToString()
    assert wire.value_bytes(list(items)) == struct_pb2.Value(list_value=ref).SerializeToString()


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5) | st.integers(-5, 5) | st.booleans() | st.none()
                       | st.floats(allow_nan=False, allow_infinity=False), _json, max_size=6))
def test_codec_structs_have_the_json_semantics_of_the_tables(data):
    """codec.struct_message (event details, results, a trick play's extras) writes mapping keys
    as json.dumps does, like the tables' encoder: True -> "true", None -> "null" (not str())."""
    assert codec.struct_message(data) == reference_struct(data)
    assert codec.struct_message(data) == struct_pb2.Struct.FromString(wire.struct_body(data))


def test_json_semantics_for_keys_tuples_and_sets():
    data = {1: (1, 2), False: "f", None: [], 2.5: {"s": {3, 1}}, "ü": "x" * 200}
    msg = struct_pb2.Struct.FromString(wire.struct_body(data))
    assert set(msg.keys()) == {"1", "false", "null", "2.5", "ü"}
    assert list(msg["1"]) == [1, 2] and msg["false"] == "f" and list(msg["2.5"]["s"]) == [1, 3]
    assert struct_pb2.Struct.FromString(wire.struct_body({True: 1})).keys() == {"true"}
    assert msg["ü"] == "x" * 200  # a length past one varint byte
    # a bool stays a bool, an int a number: 1 and True are not confused by the leaf cache
    both = struct_pb2.Struct.FromString(wire.struct_body({"a": 1, "b": True, "c": 1.0}))
    again = struct_pb2.Struct.FromString(wire.struct_body({"a": True, "b": 1, "c": True}))
    assert both["b"] is True and both["a"] == 1 and again["a"] is True and again["b"] == 1
    assert both.fields["a"].WhichOneof("kind") == "number_value"
    assert again.fields["a"].WhichOneof("kind") == "bool_value"


def test_what_json_cannot_hold_is_refused():
    with pytest.raises(ValueError):
        wire.struct_body({"x": math.nan})
    with pytest.raises(ValueError):
        wire.list_body([math.inf])
    with pytest.raises(TypeError):
        wire.struct_body({"x": object()})
    with pytest.raises(TypeError):
        wire.struct_body({(1, 2): 3})
    # by every entry point, nested, and with the error saying what it is (not a TypeError of
    # some len(None) further on)
    encoders = (wire.struct_body, wire.memo_struct_body, lambda d: wire.value_bytes([d]),
                lambda d: wire.memo_value_bytes([[d]]), lambda d: b"".join(wire.scalar_entry(k, v) for k, v in d.items()))
    for encode in encoders:
        for bad in (math.nan, math.inf, -math.inf):
            with pytest.raises(ValueError, match="non-finite number in a view"):
                encode({"x": bad})
            with pytest.raises(ValueError, match="non-finite number as a key"):
                encode({bad: 1, "x": 1})
        with pytest.raises(TypeError, match="not a JSON value: object"):
            encode({"x": object()})
        with pytest.raises(TypeError, match="not a JSON value: bytes"):
            encode({"x": b"raw"})
        with pytest.raises(TypeError, match="keys must be str, int, float, bool or None, not tuple"):
            encode({(1, 2): 3, "x": 1})
    with pytest.raises(TypeError, match="not a JSON value: object"):
        wire.memo_struct_body({"l": [{"a": 1}, {"b": object()}]})


def test_varint():
    for n in (0, 1, 127, 128, 300, 16383, 16384, 2 ** 32 + 5):
        out, shift, value = wire.varint(n), 0, 0
        for byte in out:
            value |= (byte & 0x7F) << shift
            shift += 7
        assert value == n and all(b & 0x80 for b in out[:-1]) and not out[-1] & 0x80


# ---- views and events ----------------------------------------------------------------------

def reference_view(env: api.ViewEnvelope) -> match_pb2.View:
    """A View built field by field with the protobuf API (the codec's contract, spelled out)."""
    v = json.loads(json.dumps(env.view, default=sorted))
    msg = match_pb2.View(
        match_id=env.match_id, seq=env.seq, status=codec.status_enum(env.status),
        game=str(v.get("game") or ""), phase=str(v.get("phase") or ""),
        deal_number=int(v.get("deal_number") or 0), dealer=int(v.get("dealer") or 0),
        hand_sizes=[int(n) for n in v.get("hand_sizes") or ()],
        over=bool(v.get("over")), winners=[int(w) for w in v.get("winners") or ()])
    if v.get("to_act") is not None:
        msg.to_act = int(v["to_act"])
    seat = env.seat if env.seat is not None else v.get("seat")
    if seat is not None:
        msg.seat = int(seat)
    if env.deadline is not None:
        msg.deadline.FromNanoseconds(round(env.deadline * 1e9))
    msg.trick.CopyFrom(codec._build_trick(v.get("trick")))
    if v.get("last_trick"):
        msg.last_trick.CopyFrom(codec._build_trick(v["last_trick"]))
    msg.trick_history.extend(codec.trick_history(v))
    msg.scores.tricks_taken.extend(int(t) for t in v.get("tricks_taken") or ())
    totals = v.get("totals")
    if isinstance(totals, dict):
        for name, values in totals.items():
            if isinstance(values, list):
                msg.scores.totals.add(name=name, values=[int(x) for x in values])
    elif totals:
        msg.scores.totals.add(name="total", values=[int(x) for x in totals])
    if v.get("deal_results"):
        msg.scores.deal_results.extend(v["deal_results"])
    msg.hand.extend(codec.card_message(c) for c in v.get("hand") or ())
    msg.legal_actions.extend(codec.action_message(a) for a in v.get("legal") or ())
    if v.get("table"):
        msg.table.update(v["table"])
    return msg


@pytest.mark.parametrize("game_id", all_game_ids())
def test_encoded_views_and_events_equal_the_reference(game_id):
    game = get_game(game_id)
    checked = 0
    for i, state in enumerate(iter_states(game, 11)):
        if i % 3:
            continue
        for audience in (*range(game.num_seats), None):
            view = state.view(audience) if audience is not None else state.public_view()
            env = api.ViewEnvelope(match_id="m1", seq=i, status="active", view=view,
                                   deadline=1_700_000_000.5 + i if i % 2 else None, seat=audience)
            assert codec.view_message(env) == reference_view(env), (game_id, i, audience)
            event = api.MatchEvent(kind="action", seq=i, match_id="m1", seat=0, action="pass",
                                   by="bot", view=env)
            want = pb.WatchMatchResponse(kind=match_pb2.EVENT_KIND_ACTION, seq=i, match_id="m1",
                                         seat=0, by=match_pb2.ACTOR_BOT,
                                         action=codec.action_message("pass"), view=reference_view(env))
            assert codec.event_message(event) == want
        checked += 1
        if checked >= 25:
            break
    assert checked >= 10


def test_submit_response_and_event_details():
    env = api.ViewEnvelope("m", 4, "active", {"phase": "play", "hand": ["AS"], "legal": ["play:AS"]}, seat=1)
    res = codec.submit_response(api.SubmitResult(seq=4, action="play:AS", view=env, duplicate=True))
    assert res == pb.SubmitActionResponse(seq=4, action=codec.action_message("play:AS"),
                                          view=codec.view_message(env), duplicate=True)
    ev = api.MatchEvent(kind="presence", seq=4, match_id="m", seat=1, reason="joined",
                        details={"change": "joined", "seats": [{"seat": 1, "present": True}]})
    msg = codec.event_message(ev)
    assert msg.kind == match_pb2.EVENT_KIND_PRESENCE and msg.seat == 1 and not msg.HasField("view")
    assert msg.details["change"] == "joined" and msg.details["seats"][0]["present"] is True


def test_encodings_live_as_long_as_their_envelope():
    """One encoding per envelope, shared by its events; the cache never keeps a view alive."""
    import gc

    env = api.ViewEnvelope("m", 4, "active", {"phase": "play", "hand": ["AS"]}, seat=0)
    first = codec.view_bytes(env)
    assert codec.view_bytes(env) is first
    ev = api.MatchEvent(kind="action", seq=4, match_id="m", seat=1, action="pass", by="player", view=env)
    assert codec.event_bytes(ev) is codec.event_bytes(ev)
    key = id(env)
    assert key in codec._ENCODED
    del env, ev
    gc.collect()
    assert key not in codec._ENCODED
    other = api.ViewEnvelope("m", 5, "active", {"phase": "play", "hand": ["KS"]}, seat=0)
    assert codec.view_message(other).hand[0].code == "KS"  # never an earlier envelope's bytes


def test_memoized_encodings_never_confuse_equal_looking_values():
    """The table's values are memoized by content: 1, 1.0 and True compare equal in Python but
    are different on the wire (a number, a number, a bool), so they must not share an entry;
    a value met again (another audience, a later action) gets the same bytes."""
    tables = [{"x": [1], "y": {"a": [1, {"b": 1}]}}, {"x": [True], "y": {"a": [True, {"b": True}]}},
              {"x": [1.0], "y": {"a": [1.0, {"b": 1.0}]}}, {"x": [1], "y": {"a": [1, {"b": 1}]}}]
    got = [struct_pb2.Struct.FromString(wire.memo_struct_body(t)) for t in tables]
    assert got == [reference_struct(t) for t in tables]
    assert got[1]["x"][0] is True and got[0]["y"]["a"][1]["b"] == 1
    assert got[1].fields["y"].struct_value.fields["a"].list_value.values[0].WhichOneof("kind") == "bool_value"
    assert got[0].fields["x"].list_value.values[0].WhichOneof("kind") == "number_value"
    assert wire.memo_struct_body(tables[3]) == wire.memo_struct_body(tables[0])
    assert wire.memo_value_bytes([{"k": "v"}, [1, 2]]) == wire.value_bytes([{"k": "v"}, [1, 2]])


def test_services_may_answer_with_encoded_bytes():
    """server.add_with_encoded_responses: a response given as wire bytes is sent as it is,
    a message is serialized as usual; every method of the generated table is registered."""
    from engine_service.transport import server as srv
    from engine_service.transport.generated import card_games_pb2_grpc

    class Recorder:
        def __init__(self):
            self.generic, self.registered = [], {}

        def add_generic_rpc_handlers(self, handlers):
            self.generic.extend(handlers)

        def add_registered_method_handlers(self, service, handlers):
            self.registered[service] = handlers

    rec = Recorder()
    srv.add_with_encoded_responses(card_games_pb2_grpc.add_CardGamesServiceServicer_to_server,
                                   card_games_pb2_grpc.CardGamesServiceServicer(), rec)
    handlers = rec.registered["cardgames.v1.CardGamesService"]
    assert {"SubmitAction", "WatchMatch", "CreateMatch", "GetView"} <= set(handlers)
    assert len(rec.generic) == 1
    submit = handlers["SubmitAction"].response_serializer
    msg = pb.SubmitActionResponse(seq=3, duplicate=True)
    assert submit(msg) == msg.SerializeToString()
    assert submit(b"\x08\x03") == b"\x08\x03"
    env = api.ViewEnvelope("m", 3, "active", {"phase": "play"}, seat=0)
    raw = codec.submit_response_bytes(api.SubmitResult(seq=3, action="pass", view=env))
    assert pb.SubmitActionResponse.FromString(submit(raw)).view.phase == "play"
    with pytest.raises(RuntimeError):
        srv.add_with_encoded_responses(lambda servicer, server: None, object(), rec)


def test_a_growing_list_extends_its_previous_encoding_exactly():
    """A deal's log grows by one entry an action: its encoding extends the previous one
    (wire._grown_list). Each step must equal a fresh encoding, also when the previous list
    differs only by values Python finds equal (1, 1.0, True) or the list shrinks."""
    log: list = []
    for i, entry in enumerate([{"seat": 0, "action": "play:AS"}, {"seat": 1, "action": "play:KS", "winner": 0},
                               {"seat": 0, "n": 1}, {"seat": 0, "n": True}, [1, 2.5, None], "x" * 200]):
        log.append(entry)
        for _ in range(2):  # from the prefix, then from the memo
            got = struct_pb2.Struct.FromString(wire.memo_struct_body({"deal_actions": log}))
            assert got == reference_struct({"deal_actions": log}), i
    equal_looking = [{"seat": 0, "n": True}, {"seat": 0, "n": 1}]  # prefix [{n: True}] was encoded
    wire.memo_struct_body({"l": equal_looking[:1]})
    got = struct_pb2.Struct.FromString(wire.memo_struct_body({"l": equal_looking}))
    assert got.fields["l"].list_value.values[1].struct_value.fields["n"].WhichOneof("kind") == "number_value"
    assert got.fields["l"].list_value.values[0].struct_value.fields["n"].WhichOneof("kind") == "bool_value"
    assert wire.memo_struct_body({"l": log[:2]}) == wire.struct_body({"l": log[:2]})


def test_a_list_whose_prefix_was_encoded_is_not_walked_again(monkeypatch):
    """What wire._grown_list is for: a deal's log grown by one action is encoded by extending
    the previous action's encoding with the new entry, not by walking the whole log again
    (a key cut wrongly from the list's marshal, or of another marshal version, misses it)."""
    log = [{"seat": seat, "action": f"play:{card}", "grown": "prefix-test"}
           for seat, card in enumerate(["AS", "KS", "QS"])]
    wire.memo_struct_body({"deal_actions": log[:2]})
    monkeypatch.setattr(wire, "_memo_list", lambda items: pytest.fail("the whole list was encoded again"))
    assert wire.memo_struct_body({"deal_actions": log}) == wire.struct_body({"deal_actions": log})


@settings(max_examples=300, deadline=None)
@given(st.lists(_json, min_size=2, max_size=8))
def test_the_key_of_a_list_without_its_last_item_is_cut_from_its_own(items):
    """wire._grown_list cuts the version-2 marshal of ``items[:-1]`` from that of ``items``
    (marshal's format for a list: ``[``, a 4-byte count, the items one after another)."""
    import marshal

    key, last = marshal.dumps(items, 2), marshal.dumps(items[-1], 2)
    assert key.endswith(last)
    assert b"[" + wire._pack_count(len(items) - 1) + key[5:len(key) - len(last)] == marshal.dumps(items[:-1], 2)


def _env(view, seat):
    return api.ViewEnvelope(match_id="m9", seq=3, status="active", view=view, seat=seat)


def test_audiences_share_only_equal_fields():
    """The trick, history, scores and table of a view are memoized by content across audiences
    (codec._shared_parts): two seats of one action share them, their hands never cross, and
    a table that differs only by 1 / True gets its own encoding."""
    base = {"game": "test_shared", "phase": "play", "hand_sizes": [2, 2], "trick": [{"seat": 0, "card": "AS"}],
            "tricks_taken": [1, 0], "totals": [10, 0], "table": {"deal_actions": [{"seat": 0, "action": "play:AS"}], "x": 1}}
    views = [dict(base, seat=0, hand=["KS", "QS"], legal=["play:KS"]), dict(base, seat=1, hand=["7H", "8H"]),
             dict(base, seat=1, hand=["7H", "8H"], table={**base["table"], "x": True})]
    for i, v in enumerate(views):
        msg = codec.view_message(_env(v, v["seat"]))
        assert msg == reference_view(_env(v, v["seat"])), i
        assert [c.code for c in msg.hand] == v["hand"]
    assert codec.view_message(_env(views[2], 1)).table.fields["x"].WhichOneof("kind") == "bool_value"


def _count_shared_lookups(monkeypatch) -> list:
    """Put an empty shared-fields memo in place that records every key looked up in it; the
    list of those keys."""
    looked_up = []

    class Counting(collections.OrderedDict):
        def get(self, key, default=None):
            looked_up.append(key)
            return super().get(key, default)

    monkeypatch.setattr(codec, "_SHARED", Counting())
    return looked_up


def test_the_shared_memo_steps_aside_where_audiences_never_share(monkeypatch):
    """A game whose audiences' fields always differ stops paying for the memo's key after a probe
    window, and probes again later; the bytes are the same either way."""
    monkeypatch.setattr(codec, "_SHARED_PROBE", 4)
    monkeypatch.setattr(codec, "_SHARED_BYPASS", 12)
    monkeypatch.setitem(codec._SHARED_STATS, "test_bypass", [0, 0])
    looked_up = _count_shared_lookups(monkeypatch)
    for i in range(20):
        v = {"game": "test_bypass", "phase": "play", "hand": ["AS"], "hand_sizes": [1, 1], "table": {"i": i}}
        assert codec.view_message(_env(v, 0)) == reference_view(_env(v, 0))
    # views 1-4 are looked up (the probe), 5-11 bypass it, 12 starts a new window: 12-16 looked
    # up, 17-20 bypass
    assert len(looked_up) == 9
    assert codec._SHARED_STATS["test_bypass"] == [8, 0]


def test_the_shared_memo_stays_where_audiences_share(monkeypatch):
    """A game whose audiences share these fields keeps the memo past every probe window: its
    hits are counted, so it is never bypassed."""
    monkeypatch.setattr(codec, "_SHARED_PROBE", 4)
    monkeypatch.setattr(codec, "_SHARED_BYPASS", 12)
    monkeypatch.setattr(codec, "_SHARED_STATS", {})  # a game's window starts at [0 lookups, 0 hits]
    looked_up = _count_shared_lookups(monkeypatch)
    for i in range(20):
        v = {"game": "test_shared_kept", "phase": "play", "hand": ["AS"], "hand_sizes": [1, 1], "table": {"i": 0}}
        assert codec.view_message(_env(v, i % 2)) == reference_view(_env(v, i % 2))
    assert len(looked_up) == 20 and codec._SHARED_STATS["test_shared_kept"] == [20, 19]


def test_the_shared_memo_steps_aside_below_one_hit_in_eight_lookups(monkeypatch):
    """Past the probe window, the memo is bypassed where its hits are fewer than one in eight
    lookups (16 hits of 128 keep it, 16 of 129 do not); the next window counts from nothing."""
    monkeypatch.setattr(codec, "_SHARED_PROBE", 4)
    looked_up = _count_shared_lookups(monkeypatch)
    for lookups, kept in ((127, True), (128, False)):  # counting this one: 128 and 129
        monkeypatch.setattr(codec, "_SHARED_STATS", {"test_ratio": [lookups, 16]})
        looked_up.clear()
        v = {"game": "test_ratio", "phase": "play", "hand_sizes": [1, 1], "table": {"i": lookups}}
        assert codec.view_message(_env(v, 0)) == reference_view(_env(v, 0))
        assert len(looked_up) == kept, lookups
    # a window past the bypass starts again from nothing: the hits of the last one are gone
    monkeypatch.setattr(codec, "_SHARED_STATS", {"test_ratio": [codec._SHARED_BYPASS, 1]})
    v = {"game": "test_ratio", "phase": "play", "hand_sizes": [1, 1], "table": {"i": -1}}
    assert codec.view_message(_env(v, 0)) == reference_view(_env(v, 0))
    assert codec._SHARED_STATS["test_ratio"] == [0, 0]


def _around(*bounds):
    # wide enough that each piece, nested up to three deep (their lengths growing with it), hits it
    return sorted({n for b in bounds for n in range(b - 16, b + 3) if n >= 0})


@pytest.mark.parametrize("char", ["x", "é"])  # one and two bytes a character: lengths count bytes
def test_lengths_at_the_varint_boundaries_are_protobufs_own(char, monkeypatch):
    """Byte for byte against protobuf at every length next to a varint step (127/128, 16383/16384;
    longer varints take the same loop, test_varint): each length-delimited piece (a string, a key,
    an entry, a struct, a list, a list element) is written through a one-byte lookup below 128
    and a varint from there."""
    monkeypatch.setattr(wire, "_MEMO_VALUES", collections.OrderedDict())  # long values: not kept
    monkeypatch.setattr(wire, "_MEMO_ELEMENTS", collections.OrderedDict())

    def value(v):
        msg = struct_pb2.Value()
        if isinstance(v, str):
            msg.string_value = v
        elif isinstance(v, dict):
            msg.struct_value.update(v)
        else:
            msg.list_value.extend(v)
        return msg.SerializeToString()

    def struct(d):
        msg = struct_pb2.Struct()
        msg.update(d)
        return msg.SerializeToString()

    def list_value(items):
        msg = struct_pb2.ListValue()
        msg.extend(items)
        return msg.SerializeToString()

    for n in _around(128, 16384):
        s = char * (n // len(char.encode()))
        t = "y" * n
        assert wire.value_bytes(s) == value(s), n
        assert wire.struct_body({"k": s}) == wire.memo_struct_body({"k": s}) == struct({"k": s}), n
        assert wire.scalar_entry("k", s) == wire.map_entry("k", wire.value_bytes(s)) == struct({"k": s}), n
        assert wire.struct_body({s: 1}) == struct({s: 1}), n
        assert wire.struct_body({s: [1]}) == wire.memo_struct_body({s: [1]}) == struct({s: [1]}), n
        assert wire.struct_body({"k": {"a": s}}) == wire.memo_struct_body({"k": {"a": s}}) == struct({"k": {"a": s}}), n
        assert wire.list_body([s]) == list_value([s]), n
        assert wire.list_body([{"a": s}]) == list_value([{"a": s}]), n
        assert wire.list_body([[s]]) == list_value([[s]]), n
        assert wire.value_bytes([s]) == wire.value_bytes((s,)) == wire.memo_value_bytes([s]) == value([s]), n
        assert wire.value_bytes({"a": s}) == value({"a": s}), n
        assert wire.memo_value_bytes([{"a": s}, [s]]) == value([{"a": s}, [s]]), n
        assert wire.memo_struct_body({"k": [[t], {"a": s}]}) == struct({"k": [[t], {"a": s}]}), n
        # a list grown by one element from its encoded prefix
        assert wire.memo_value_bytes([t]) == value([t]), n
        assert wire.memo_value_bytes([t, s]) == value([t, s]), n
        assert wire.memo_value_bytes([t, s, {"a": s}]) == value([t, s, {"a": s}]), n
        assert wire.field(0x0A, wire.value_bytes(s)) == list_value([s]), n
        assert wire.list_value_payload(wire.value_bytes([s])) == list_value([s]), n


def test_subclasses_and_other_containers_encode_as_json_dumps_writes_them():
    """What value_bytes' exact-type fast paths pass on (wire._other_value) and the keys json_key
    converts: subclasses of str, int, float, dict, list and tuple as json.dumps writes them (a
    str subclass as its characters, whatever its __str__ or encode say; an IntEnum as its number), other mappings as objects, sets
    and frozensets as sorted arrays; at the one-byte length boundary too."""
    import enum

    class Name(str):
        def __str__(self):
            return "not this"

        def encode(self, *args, **kwargs):  # json.dumps writes the characters, not this either
            return b"not this"

    class Seat(enum.IntEnum):
        NORTH = 3

    class Points(float):
        def __repr__(self):
            return "not this"

    class Table(dict):
        pass

    class Log(list):
        pass

    class Pair(tuple):
        pass

    for n in (1, 100, 130, 200):
        s = "s" * n
        data = {Name("name"): Name(s), Seat.NORTH: Seat.NORTH, Points(2.5): Points(0.5), "t": Table(a=Name(s)),
                "ordered": collections.OrderedDict(b=[s], a=1), "log": Log([Seat.NORTH, Log([s])]),
                "pair": Pair((s, Points(1.5))), "set": {s, "a", "b"}, "frozen": frozenset({3, 1, 2}),
                "proxy": __import__("types").MappingProxyType({"x": s, "y": Table(z=[s])})}
        plain = json.loads(json.dumps(data, default=lambda o: sorted(o) if isinstance(o, (set, frozenset)) else dict(o)))
        assert set(plain) == {"name", "3", "2.5", "t", "ordered", "log", "pair", "set", "frozen", "proxy"}
        assert plain["name"] == s and plain["3"] == 3 and plain["set"] == sorted({s, "a", "b"})
        want = struct_pb2.Struct()
        want.update(plain)
        for encode in (wire.struct_body, wire.memo_struct_body):
            assert struct_pb2.Struct.FromString(encode(data)) == want, (n, encode)
        for k, v in data.items():
            for encode in (wire.value_bytes, wire.memo_value_bytes):
                assert struct_pb2.Value.FromString(encode(v)) == want.fields[wire.json_key(k)], (n, k, encode)
    assert wire.json_key(Name("k")) == "k" and type(wire.json_key(Name("k"))) is str
    assert wire.json_key(Seat.NORTH) == "3" and wire.json_key(Points(0.25)) == "0.25"

    class Count(int):  # json.dumps writes int.__repr__'s digits, for a key and for a value
        def __str__(self):
            return "not this"

        def __float__(self):
            return 0.5

    assert wire.json_key(Count(7)) == "7"
    data = {Count(7): Count(7), "l": [Count(9)], "t": Table(n=Count(-2))}
    want = reference_struct(data)
    assert want["7"] == 7 and want["l"][0] == 9 and want["t"]["n"] == -2
    for encode in (wire.struct_body, wire.memo_struct_body):
        assert struct_pb2.Struct.FromString(encode(data)) == want, encode
    # a non-finite float subclass is refused as a float is, by every entry point
    for bad in (Points(math.nan), Points(math.inf)):
        for encode in (wire.struct_body, wire.memo_struct_body, wire.value_bytes, wire.memo_value_bytes):
            with pytest.raises(ValueError, match="non-finite number in a view"):
                encode({"x": [bad]})
        with pytest.raises(ValueError, match="non-finite number in a view"):
            wire.scalar_entry("x", bad)
    # sorted, not in the order a set iterates (which for these small ints is not sorted)
    for unsorted in ({8, 1}, frozenset({16, 1, 8})):
        assert list(unsorted) != sorted(unsorted)
        assert list(struct_pb2.Value.FromString(wire.value_bytes(unsorted)).list_value) == sorted(unsorted)


def test_memo_tables_keep_the_most_recently_used_within_their_bound():
    """wire.lru_get / lru_put (the memos here and codec's): a hit returns what was stored and
    becomes the most recently used; past the limit the least recently used entry goes."""
    table: collections.OrderedDict = collections.OrderedDict()
    assert wire.lru_get(table, "a") is None and not table
    for k in "abc":
        assert wire.lru_put(table, k, k.upper(), 3) == k.upper()
    assert wire.lru_get(table, "a") == "A"  # now the most recently used
    assert wire.lru_put(table, "d", "D", 3) == "D"
    assert list(table.items()) == [("c", "C"), ("a", "A"), ("d", "D")]  # b went, the oldest use
    assert wire.lru_get(table, "b") is None


def test_the_encoders_caches_stay_within_their_bounds(monkeypatch):
    """A long-running engine meets ever new strings (match ids, player names in a table) and
    ever new tables: every cache of encodings fills up to its bound and no further, short
    strings only (a long one is encoded afresh), the memos keeping the most recent."""
    for name in ("_STRING_CACHE", "_KEY_CACHE", "_LEAF_CACHE"):
        monkeypatch.setattr(wire, name, {})
    monkeypatch.setattr(wire, "_MEMO_VALUES", collections.OrderedDict())
    monkeypatch.setattr(wire, "_MEMO_ELEMENTS", collections.OrderedDict())
    monkeypatch.setattr(wire, "_CACHE_MAX", 5)
    monkeypatch.setattr(wire, "_MEMO_VALUES_MAX", 4)
    monkeypatch.setattr(wire, "_MEMO_ELEMENTS_MAX", 6)
    long = "L" * 200
    for encode in (wire.struct_body, wire.memo_struct_body):
        assert struct_pb2.Struct.FromString(encode({long: long})) == reference_struct({long: long})
    assert not wire._STRING_CACHE and not wire._KEY_CACHE and not wire._LEAF_CACHE
    for encode in (wire.struct_body, wire.memo_struct_body):  # a leaf entry is as long as key and value
        assert struct_pb2.Struct.FromString(encode({long: "v", "k": long})) == reference_struct({long: "v", "k": long})
    assert not wire._LEAF_CACHE
    wire._STRING_CACHE.clear()
    wire._KEY_CACHE.clear()
    for i in range(12):
        table = {f"k{i}": f"v{i}", f"n{i}": [f"s{i}", {"e": i}], f"m{i}": {"x": 0.5}}
        assert wire.memo_struct_body(table) == wire.struct_body(table)
        assert wire.list_body([f"l{i}"]) == wire.value_bytes([f"l{i}"])[2:]
    for cache in (wire._STRING_CACHE, wire._KEY_CACHE, wire._LEAF_CACHE):
        assert len(cache) == 5
    assert len(wire._MEMO_VALUES) == 4 and len(wire._MEMO_ELEMENTS) == 6


def test_list_value_payload_takes_only_the_value_of_a_list():
    """codec cuts deal_results' ListValue out of a memoized Value: anything else is an error,
    never a payload cut from a struct or a string."""
    assert wire.list_value_payload(wire.value_bytes([])) == b""
    for other in ({"a": [1]}, "[1]", 1, None, True):
        with pytest.raises(ValueError, match="not the Value of a list"):
            wire.list_value_payload(wire.value_bytes(other))


def test_cached_encodings_never_confuse_values_python_finds_equal():
    """Every cache path (struct_body's and scalar_entry's leaf cache, the memos of
    memo_struct_body and their list elements) meets, one after another, values and keys that
    Python finds equal but the wire does not: 0.0 and -0.0, 1 and True and 1.0 (as keys too),
    (1,) and (True,), and containers marshal cannot key (subclasses inside), which are encoded
    as they are, each its own."""
    import enum

    class Name(str):
        pass

    Seat = enum.IntEnum("Seat", {"NORTH": 1})
    groups = [[0.0, -0.0], [1, True, 1.0, Seat.NORTH], [(1,), (True,), (1.0,)], [frozenset({1}), frozenset({True})],
              [[{"a": Name("x")}], [{"a": Name("y")}], [{"a": Seat.NORTH}], [{"a": 1}], [{"a": True}]],
              [[[Name("p")]], [[Name("q")]], [[1]], [[True]]], [{"a": [Name("x")]}, {"a": [Name("y")]}]]
    encoders = (wire.struct_body, wire.memo_struct_body,
                lambda d: b"".join([wire.scalar_entry(k, v) for k, v in d.items()]))

    def serialized(d):  # of one entry: map order cannot differ
        msg = struct_pb2.Struct()
        msg.update(json.loads(json.dumps(d, default=sorted)))
        return msg.SerializeToString()

    for encode in encoders:
        for group in groups:
            for rounds in range(2):
                for v in group:
                    want = serialized({"k": v})
                    assert encode({"k": v}) == want, (encode, v, rounds)
                    assert wire.memo_value_bytes([v, v]) == wire.value_bytes([v, v]), (v, rounds)
        for rounds in range(2):
            for key, name in ((1, "1"), (True, "true"), (1.0, "1.0"), (None, "null"), (False, "false"),
                              (0, "0"), (-0.0, "-0.0"), (0.0, "0.0"), (Name("n"), "n"), (Seat.NORTH, "1")):
                for value in ("x", [1], 7.5):
                    assert encode({key: value}) == serialized({name: value}), (key, value)


def _never(what):
    def refuse(*args):
        pytest.fail(f"{what} again: {args!r}"[:300])
    return refuse


def test_a_leaf_entry_met_again_is_the_cached_one(monkeypatch):
    """struct_body's and scalar_entry's leaf entries (a str key and a str, bool, None or small
    int value: {"up": "8H"}) recur in every view: met again, each is taken from the leaf cache,
    not built again, and is the same bytes."""
    monkeypatch.setattr(wire, "_LEAF_CACHE", {})
    table = {"up": "8H", "n": 3, "neg": -1024, "yes": True, "no": False, "none": None}
    first = wire.struct_body(table)
    assert len(wire._LEAF_CACHE) == len(table)
    monkeypatch.setattr(wire, "_leaf_entry", _never("a leaf entry built"))
    assert wire.struct_body(dict(table)) == first
    assert b"".join(wire.scalar_entry(k, v) for k, v in table.items()) == first
    assert wire.memo_struct_body(table) == first


def test_a_table_met_again_is_encoded_from_the_memos(monkeypatch):
    """memo_struct_body and memo_value_bytes: a container value (a dict or a list) met again
    (another audience's table, a later action) is the memo's encoding: nothing of it is encoded
    again. A list is keyed by its content alone (an equal copy hits it too); the memo of a list
    is memo_value_bytes' too."""
    monkeypatch.setattr(wire, "_MEMO_VALUES", collections.OrderedDict())
    monkeypatch.setattr(wire, "_MEMO_ELEMENTS", collections.OrderedDict())
    table = {"columns": {"we": [10, 20], "they": [0]}, "deal_actions": [{"seat": 0, "action": "play:AS"}, [1, 2]],
             "bids": ["pass"], "up": "8H"}
    first = wire.memo_struct_body(table)
    assert first == wire.struct_body(table) and len(wire._MEMO_VALUES) == 3
    lists = json.loads(json.dumps([table["deal_actions"], table["bids"]]))  # equal content, other objects
    for name in ("value_bytes", "struct_body", "list_body", "_memo_list", "_grown_list"):
        monkeypatch.setattr(wire, name, _never(f"{name} called"))
    assert wire.memo_struct_body(table) == first
    assert wire.memo_struct_body({"columns": table["columns"], "deal_actions": lists[0], "bids": lists[1],
                                  "up": "8H"}) == first
    for k, v in zip(("deal_actions", "bids"), lists):
        assert wire.map_entry(k, wire.memo_value_bytes(v)) in first, k


def test_the_elements_of_a_list_are_memoized_one_by_one(monkeypatch):
    """_memo_element: a container element (a dict or a list: a deal log's entries) met again in
    another list is its memo's encoding, not walked again."""
    monkeypatch.setattr(wire, "_MEMO_VALUES", collections.OrderedDict())
    monkeypatch.setattr(wire, "_MEMO_ELEMENTS", collections.OrderedDict())
    entry, pair = {"seat": 1, "action": "bid:80:H"}, [3, "QS"]
    wire.memo_value_bytes([entry, pair, "x"])
    assert len(wire._MEMO_ELEMENTS) == 2
    want = wire.value_bytes([pair, entry])
    for name in ("value_bytes", "struct_body", "list_body"):
        monkeypatch.setattr(wire, name, _never(f"{name} called"))
    assert wire.memo_value_bytes([[3, "QS"], {"seat": 1, "action": "bid:80:H"}]) == want


@pytest.mark.parametrize("memo", ["_MEMO_VALUES", "_MEMO_ELEMENTS"])
def test_the_memos_keep_the_most_recently_used(memo, monkeypatch):
    """Both memos are LRU (lru_get on a hit, lru_put): full, a new entry drops the one least
    recently used, not the one put first, and an entry kept is a hit."""
    monkeypatch.setattr(wire, "_MEMO_VALUES", collections.OrderedDict())
    monkeypatch.setattr(wire, "_MEMO_ELEMENTS", collections.OrderedDict())
    monkeypatch.setattr(wire, memo + "_MAX", 2)
    a, b, c = ["a", 1], ["b", 2], ["c", 3]
    fresh = iter(range(100))
    if memo == "_MEMO_VALUES":
        use, missed = wire.memo_value_bytes, "_grown_list"  # a table's value
    else:
        def use(v):  # an element of a list never met before
            wire.memo_value_bytes([v, next(fresh)])
        missed = "value_bytes"
    for v in (a, b, a, c):
        use(v)
    misses = []
    real = getattr(wire, missed)
    monkeypatch.setattr(wire, missed, lambda v, *rest: misses.append(v) or real(v, *rest))
    for v in (a, c, b):
        use(v)
    assert [m for m in misses if type(m) is list] == [b]


def test_a_list_grows_from_its_encoded_prefix_from_its_second_item(monkeypatch):
    """_grown_list: each step of a log growing from one entry (a two-entry list from the one
    before it too) extends the previous step's encoding; only the first is encoded whole."""
    monkeypatch.setattr(wire, "_MEMO_VALUES", collections.OrderedDict())
    log = [{"seat": s, "action": f"play:{c}", "grown": "from-one"} for s, c in enumerate(["9D", "TD", "JD"])]
    wire.memo_value_bytes(log[:1])
    monkeypatch.setattr(wire, "_memo_list", _never("the whole list encoded"))
    for n in (2, 3):
        assert wire.memo_value_bytes(log[:n]) == wire.value_bytes(log[:n]), n


def test_large_containers_are_encoded_whole(monkeypatch):
    """Nothing is dropped from a long list, a wide table or a large set (json.dumps +
    Struct.update keep every item), where the hypothesis tests' containers stay under ten items
    and the played views' tables are not much larger. Every entry point, the memos empty (a
    long list encoded whole, not from a prefix) and then from them."""
    monkeypatch.setattr(wire, "_MEMO_VALUES", collections.OrderedDict())
    monkeypatch.setattr(wire, "_MEMO_ELEMENTS", collections.OrderedDict())
    n = 300
    log = [{"seat": i % 4, "action": f"play:{i}"} if i % 3 else [i, str(i)] for i in range(n)]
    table = {**{f"k{i}": i for i in range(n)}, "log": log, "wide": {str(i): [i] for i in range(n)},
             "set": set(range(n)), "strings": [f"s{i}" for i in range(n)]}
    want = struct_pb2.Struct()
    want.update(json.loads(json.dumps(table, default=sorted)))
    assert len(want["log"]) == n and len(want["wide"]) == n and len(want) == n + 4
    for rounds in range(2):
        for encode in (wire.struct_body, wire.memo_struct_body):
            assert struct_pb2.Struct.FromString(encode(table)) == want, (encode, rounds)
        for k, v in table.items():
            for encode in (wire.value_bytes, wire.memo_value_bytes):
                assert struct_pb2.Value.FromString(encode(v)) == want.fields[k], (k, encode, rounds)
        assert struct_pb2.ListValue.FromString(wire.list_body(log)) == want.fields["log"].list_value
        assert struct_pb2.ListValue.FromString(wire.list_value_payload(wire.memo_value_bytes(list(log)))) \
            == want.fields["log"].list_value


def test_the_shared_memo_serves_only_views_equal_in_every_field_it_holds(monkeypatch):
    """codec._shared_parts memoizes the trick, last trick, trick history, scores and table of
    a view by content: a view that differs from an earlier one only in its last trick, its
    number of seats (the history's tricks), its tricks taken or its deal results gets its own
    fields, the same as with the memo off (each is in the memo's key)."""
    log = [{"seat": 0, "action": "play:AS"}, {"seat": 1, "action": "play:KS"}]  # its winner: last_trick's
    last = {"plays": [{"seat": 0, "card": "AS"}, {"seat": 1, "card": "KS"}], "winner": 1}
    base = {"game": "test_shared_key", "phase": "play", "hand_sizes": [1, 1], "trick": [], "last_trick": last,
            "tricks_taken": [1, 0], "totals": [10, 0], "deal_results": [{"points": [10, 0]}],
            "table": {"deal_actions": log}}
    views = [base, dict(base, last_trick=dict(last, winner=0)), dict(base, hand_sizes=[1, 1, 1, 1]),
             dict(base, tricks_taken=[0, 0]), dict(base, deal_results=[{"points": [0, 5]}])]
    monkeypatch.setattr(codec, "_SHARED", collections.OrderedDict())
    monkeypatch.setitem(codec._SHARED_STATS, "test_shared_key", [0, 0])
    for i, v in enumerate(views):
        assert codec.view_message(_env(v, 0)) == reference_view(_env(v, 0)), i
    assert len(codec._SHARED) == len(views)
