"""Bad input changes nothing, over a real channel against the real session layer.

The developers' standard: "Bad input (malformed requests, illegal moves, wrong tokens, garbage
files) gets a clear error with the right gRPC status code and changes nothing." test_edge.py
pins the error table against a scripted double and test_service.py walks a few error paths
once; neither sends *random* bad input to the real service, nor checks that a refused call left
the match exactly as it was. Here, for each game, a match with every seat joined is played a
little, then a seeded mix of bad requests is sent between legal moves (so that they meet many
positions): junk and overlong action strings, well-formed actions that are illegal now, actions
of another game, the seat not on turn, stale and future ``expected_seq``, absent / garbage /
malformed / revoked tokens, another match's token, the admin token where a seat is needed and
the reverse, unknown match ids, random bytes and broken UTF-8 as the body of every method,
out-of-range numbers and unknown enum values, overlong and unprintable text fields, garbage
decks, calls that are not allowed now. After EACH one:

* the status is the one docs/api.md's error table gives for that mistake (the table is read from
  the document), never UNKNOWN or INTERNAL, with a non-empty message, a ``google.rpc.Status``
  whose first detail is an ``ErrorInfo`` (domain ``cardgames.v1``) and whose last is a
  ``RequestInfo`` naming the call, and the metadata keys the docs promise for its reason;
* the error names no card the caller may not know (besides the cards it named itself), and
  refusing a card the caller cannot see reads the same wherever that card is (a refusal must
  not tell an opponent's hand from the stock); no token ever comes back;
* nothing changed: the match's summary (its ``seq``), every seat's and the spectator's
  ``GetView``, the admin's ``InspectMatch`` (the omniscient view), the admin's list of matches
  and the matches the server holds are byte-identical to what they were; the server still
  answers health SERVING.

Watch streams of every seat, a spectator and the admin stay open meanwhile: between two legal
moves they get the second move's ACTION event and nothing else, and a refused action's
client_action_id is not used up. Then the match is played to its end with legal moves (its log
is those moves exactly), and a few calls that the end forbids are refused too. Requests over
the server's 64 KiB limit (docs/api.md "Connecting"), metadata over gRPC's 16 KiB and unknown
methods are refused by gRPC itself, with a bare RESOURCE_EXHAUSTED / UNIMPLEMENTED: checked for
the code and "changes nothing" only. The decks are the admin's, drawn from the seed, so that a
run repeats exactly.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import random
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from engine_service.rules import CHANCE
from engine_service.rules.cards import CODES, STRAINS, card_id
from engine_service.rules.errors import MalformedAction
from engine_service.rules.options import BOOL, ENUM
from engine_service.rules.registry import all_game_ids, get_game
from engine_service.sessions.config import SessionConfig
from engine_service.transport.errors import DOMAIN
from engine_service.transport.generated import admin_pb2, card_games_pb2 as pb, match_pb2
from tests.rules.playout import cards_in
from tests.shared_paths import ROOT

from .harness import ADMIN_TOKEN, bearer, error_of, run
from .players import SPECTATOR, create_open_match, export_transcript
from .test_service import served

GAMES = all_game_ids()
ADMIN = "admin"  # an audience that may know everything
ATTEMPTS = 250  # bad requests per game, between the legal moves
BLOCK = 10  # bad requests between two legal moves
DECKS = 120  # the admin's decks of the match under test (more than any match of these tests deals)
MAX_REQUEST_BYTES = 64 * 1024  # ServerLimits.max_receive_message_bytes, docs/api.md "Connecting"
OVERSIZE = ("RESOURCE_EXHAUSTED", "")  # gRPC's own refusals: no ErrorInfo
UNIMPLEMENTED = ("UNIMPLEMENTED", "")


# ---- the error table of docs/api.md --------------------------------------------------------

def _documented_errors() -> dict[str, set[str]]:
    """docs/api.md "Errors": status code -> the reasons its table lists for it."""
    lines = (ROOT / "docs" / "api.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("| code | reasons | what to do |")
    table: dict[str, set[str]] = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        code, reasons = (c.strip() for c in line.strip("|").split("|")[:2])
        table.setdefault(code.strip("`"), set()).update(re.findall(r"`([A-Z_]+)`", reasons))
    return table


DOCUMENTED = _documented_errors()

#: docs/api.md's table of ErrorInfo.metadata keys, for the reasons this test provokes.
METADATA_KEYS = {"INVALID_OPTIONS": {"option"}, "ILLEGAL_ACTION": {"action"}, "NOT_YOUR_TURN": {"to_act"},
                 "STALE_SEQUENCE": {"expected_seq", "seq"}, "UNKNOWN_BOT": {"bot"},
                 "MISSING_FIELD": {"field"}, "FIELD_TOO_LONG": {"field"}, "BAD_LIMIT": {"field"},
                 "BAD_EXPECTED_SEQ": {"field"}, "BAD_DURATION": {"field"}, "BAD_CLIENT_JOIN_ID": {"field"},
                 "BAD_CLIENT_CREATE_ID": {"field"}, "BAD_PAGE_TOKEN": {"field"}, "BAD_SEAT": {"field"},
                 "BAD_SEATS": {"field"}, "BAD_FIRST_DEALER": {"field"}, "BAD_SPECTATOR_DELAY": {"field"},
                 "BAD_TURN_TIME": {"field"}, "BAD_AFTER_SEQ": {"field"}}


def test_the_error_table_is_read_from_the_docs():
    assert DOCUMENTED["FAILED_PRECONDITION"] >= {"ILLEGAL_ACTION", "NOT_YOUR_TURN", "MATCH_NOT_OVER"}
    assert DOCUMENTED["INVALID_ARGUMENT"] >= {"MALFORMED_REQUEST", "MALFORMED_ACTION", "BAD_EXPECTED_SEQ"}
    assert DOCUMENTED["ABORTED"] == {"STALE_SEQUENCE"} and DOCUMENTED["NOT_FOUND"] == {"MATCH_NOT_FOUND"}
    assert "UNKNOWN" not in DOCUMENTED


# ---- the API's methods, called with raw bytes -----------------------------------------------

@dataclass(frozen=True)
class Method:
    name: str
    path: str
    request: Any  # the request message class
    streaming: bool
    admin: bool
    bidi: bool = False


def _methods() -> dict[str, Method]:
    out = {}
    for module, service, admin in ((pb, "CardGamesService", False), (admin_pb2, "AdminService", True)):
        desc = module.DESCRIPTOR.services_by_name[service]
        for m in desc.methods:
            out[m.name] = Method(m.name, f"/{desc.full_name}/{m.name}",
                                 message_factory.GetMessageClass(m.input_type), m.server_streaming, admin)
    return out


METHODS = _methods()
HEALTH_CHECK = Method("Check", "/grpc.health.v1.Health/Check", health_pb2.HealthCheckRequest, False, False)
REFLECTION = Method("ServerReflectionInfo", "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                    reflection_pb2.ServerReflectionRequest, True, False, bidi=True)
OTHER_SERVICES = (HEALTH_CHECK, REFLECTION)  # docs/api.md "Connecting": health and server reflection
SEAT_ONLY = ("LeaveMatch", "SubmitAction")  # a seat token is required
VIEWERS = ("GetView", "RevealDeals", "WatchMatch")  # a seat, a spectator (no token) or the admin
READ_ONLY = {"ListGames", "ListBots", "ListOpenMatches", "GetMatch", "GetView", "RevealDeals",
             "ListMatches", "InspectMatch", "ExportTranscript"}
MATCH_METHODS = sorted(n for n, m in METHODS.items() if "match_id" in m.request.DESCRIPTOR.fields_by_name)


def test_every_method_is_fuzzed():
    assert set(METHODS) >= {"SubmitAction", "WatchMatch", "RevealDeals", "TerminateMatch", "ReissueSeatToken"}
    assert set(MATCH_METHODS) == set(METHODS) - {"ListGames", "ListBots", "ListOpenMatches", "CreateMatch",
                                                  "ListMatches"}


# ---- one bad request and what it must get ------------------------------------------------------

@dataclass
class Bad:
    kind: str
    method: Method
    body: bytes
    metadata: tuple = ()
    expected: frozenset = frozenset()  # (code, reason) pairs; empty: any documented pair
    audience: Any = SPECTATOR  # whose secrets the error must not name
    request: Any = None  # the typed request, when there is one
    may_succeed: bool = False  # parsed random bytes of a read-only method
    card: str = ""  # play:<card> of a card the sender may not know (the indistinguishability check)


def _bad(kind: str, name: str, request: Any, expected: set[tuple[str, str]], metadata: tuple = (),
         audience: Any = SPECTATOR, **kw: Any) -> Bad:
    return Bad(kind, METHODS[name], request.SerializeToString(), tuple(metadata), frozenset(expected),
               audience, request, **kw)


INVALID = "INVALID_ARGUMENT"
PRECONDITION = "FAILED_PRECONDITION"
UNAUTHENTICATED = "UNAUTHENTICATED"
DENIED = "PERMISSION_DENIED"


# ---- random text ---------------------------------------------------------------------------------

#: Characters str.isprintable() refuses and str.split() keeps (names: BAD_NAME, client action ids:
#: BAD_CLIENT_ACTION_ID): C0/C1 controls, DEL, format characters, private use, unassigned.
UNPRINTABLE = [c for c in ("\x00", "\x01", "\x07", "\x1b", "\x7f", "\x80", "\x9f", "\u00ad", "\u200b",
                           "\u200e", "\u2066", "\ufeff", "\ue000", "\u0378", "\U000e0001")
               if unicodedata.category(c).startswith("C") and not c.isspace()]
#: Ranges of code points to draw "unicode" junk from (no surrogates: they cannot be encoded).
UNICODE_RANGES = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
                  (0x300, 0x36F), (0x2000, 0x206F), (0x3040, 0x30FF), (0x4E00, 0x4FFF),
                  (0xFF00, 0xFFEF), (0x1F300, 0x1F64F), (0xE000, 0xE0FF), (0x10FFF0, 0x10FFFD)]
HOMOGLYPHS = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "S": "\u0405",
              "H": "\u041d", "A": "\u0410", "K": "\u041a", "T": "\u0422", "X": "\u0425", "1": "\uff11",
              "3": "\uff13", ":": "\uff1a"}


def _printable(rng: random.Random, n: int) -> str:
    return "".join(chr(rng.randint(0x20, 0x7E)) for _ in range(n))


def _unicode(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        lo, hi = rng.choice(UNICODE_RANGES)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def _token_like(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~+/=")
                   for _ in range(n))


def _mutate(rng: random.Random, text: str) -> str:
    """A near miss of a real action string."""
    i = rng.randrange(len(text) + 1)
    ops = [
        lambda: text.upper(), lambda: text.title(), lambda: " " + text, lambda: text + " ",
        lambda: text + "\n", lambda: "\t" + text, lambda: text + ":", lambda: ":" + text,
        lambda: text.replace(":", "::"), lambda: text.replace(":", " "), lambda: text.replace(":", ";"),
        lambda: text + "\x00", lambda: text[:i] + rng.choice(UNPRINTABLE) + text[i:],
        lambda: text[:i] + "\u200b" + text[i:], lambda: text[:-1], lambda: text + text[-1:],
        lambda: text[:i] + text[i + 1:],
        lambda: text + ":" + rng.choice(["high", "low", "S", "NT", "jo", "bella", "x"]),
        lambda: "".join(HOMOGLYPHS.get(ch, ch) if rng.random() < 0.5 else ch for ch in text),
        lambda: unicodedata.normalize("NFKD", text) + "\u0301", lambda: text + "," + text,
    ]
    return rng.choice(ops)()


# ---- every action string of every game ----------------------------------------------------------

def _candidate_actions() -> list[str]:
    words = ["take", "pass", "keep", "exchange", "accept", "refuse", "schmeiss", "declare", "conceal",
             "no_trump", "double", "redouble", "no_exchange", "nullo"]
    out = list(words)
    out += [f"{verb}:{s}" for verb in ("name", "trump", "slam") for s in STRAINS]
    out += [f"bid:{k}" for k in range(14)]
    for code in CODES:
        out += [f"play:{code}", f"exchange:{code}"]
        out += [f"play:{code}:{a}" for a in ("bella", "jo", "jotte")]
    for joker in ("X1", "X2"):
        out += [f"play:{joker}:{s}" for s in "SHDC"]
        out += [f"play:{joker}:{m}" for m in ("high", "low")]
        out += [f"play:{joker}:{m}:{s}" for m in ("high", "low") for s in "SHDC"]
    return out


CANDIDATES = _candidate_actions()


# ---- the table under test -------------------------------------------------------------------------

@dataclass
class Table:
    srv: Any
    mgr: Any
    game: Any
    rng: random.Random
    match_id: str
    tokens: list[str]
    other_id: str
    other_tokens: list[str]
    revoked: str  # seat ``revoked_seat``'s first token, replaced by the admin
    revoked_seat: int
    join_ids: list[str] = field(default_factory=list)  # each seat's client_join_id (the revoked seat's: stale)
    state: Any = None  # the rules state replayed from the admin's transcript
    views: list[Any] = field(default_factory=list)  # each seat's current View
    notations: list[str] = field(default_factory=list)  # this game's well-formed actions
    foreign: list[str] = field(default_factory=list)  # other games' actions, not this game's
    used_ids: dict[tuple[int, str], str] = field(default_factory=dict)  # (seat, id) -> action
    moves: list[tuple[int, str]] = field(default_factory=list)  # the legal moves made, in order
    queue: list[Bad] = field(default_factory=list)  # bad requests to send next (twins)
    watchers: list[Watcher] = field(default_factory=list)  # every seat's, a spectator's, the admin's
    refused_ids: dict[int, list[str]] = field(default_factory=dict)  # seat -> ids of refused actions
    refusals: dict[tuple, set] = field(default_factory=dict)  # (seq, seat, kind) -> distinct refusals
    hidden_refusals: collections.Counter = field(default_factory=collections.Counter)  # (seq, seat, kind) -> sent
    counts: collections.Counter = field(default_factory=collections.Counter)
    sent: int = 0
    fresh: int = 0
    calls: dict[str, Any] = field(default_factory=dict)

    @property
    def seq(self) -> int:
        return self.views[0].seq

    @property
    def to_act(self) -> int:
        return self.views[0].to_act

    @property
    def n(self) -> int:
        return len(self.tokens)

    def legal(self) -> list[str]:
        return [a.notation for a in self.views[self.to_act].legal_actions]

    def hand(self, seat: int) -> list[str]:
        return [c.code for c in self.views[seat].hand]

    def secret(self, audience: Any) -> set[int]:
        if audience == ADMIN:
            return set()
        mask = self.state.secret_cards(None if audience == SPECTATOR else audience)
        return {i for i in range(len(CODES)) if mask >> i & 1}

    def is_notation(self, text: str) -> bool:
        """``text`` is an action of this game as NOTATION.md writes it (legal or not): the rules
        parse it, and write the action back as ``text`` (no other spelling is an action)."""
        try:
            action = self.state.parse_action(text)
        except MalformedAction:
            return False
        return self.state.action_str(action) == text

    def cid(self) -> str:
        self.fresh += 1
        return f"fuzz-{self.fresh}"

    def unary(self, path: str) -> Any:
        if path not in self.calls:
            self.calls[path] = self.srv.channel.unary_unary(path, request_serializer=None,
                                                            response_deserializer=None)
        return self.calls[path]

    def stream(self, path: str) -> Any:
        if path not in self.calls:
            self.calls[path] = self.srv.channel.unary_stream(path, request_serializer=None,
                                                             response_deserializer=None)
        return self.calls[path]


@dataclass
class Watcher:
    """A WatchMatch stream kept open through the bad input: between two legal moves it must
    receive nothing but the second move's ACTION event (and heartbeats)."""

    audience: Any
    events: list[Any] = field(default_factory=list)
    seen: int = 0  # events checked so far
    task: Any = None

    async def follow(self, t: Table, metadata: tuple) -> None:
        async for ev in t.srv.games.WatchMatch(pb.WatchMatchRequest(match_id=t.match_id), metadata=metadata):
            if ev.kind != match_pb2.EVENT_KIND_HEARTBEAT:
                self.events.append(ev)
            if ev.kind == match_pb2.EVENT_KIND_MATCH_ENDED:
                return


async def _watch(t: Table) -> None:
    """Open the watchers (every seat is present from then on) and wait for their first events."""
    for audience, metadata in [*((s, bearer(tok)) for s, tok in enumerate(t.tokens)), (SPECTATOR, ()),
                               (ADMIN, bearer(ADMIN_TOKEN))]:
        w = Watcher(audience)
        w.task = asyncio.ensure_future(w.follow(t, metadata))
        t.watchers.append(w)
    while not all(w.events for w in t.watchers):
        await asyncio.sleep(0.005)


async def _watched(t: Table, seq: int) -> None:
    """Every watcher received the ACTION event of ``seq`` and, since the previous one, nothing
    else (before the first check: its snapshot and the seats' connections)."""
    for _ in range(2000):
        if all(any(ev.seq >= seq and ev.kind == match_pb2.EVENT_KIND_ACTION for ev in w.events[w.seen:])
               for w in t.watchers):
            break
        await asyncio.sleep(0.005)
    for w in t.watchers:
        got = [(ev.kind, ev.seq) for ev in w.events[w.seen:]]
        if w.seen:
            assert got == [(match_pb2.EVENT_KIND_ACTION, seq)], f"{t.game.id}: {w.audience} got {got} by seq {seq}"
        w.seen = len(w.events)


def _replay(transcript: dict) -> Any:
    """The match's rules state, replayed from the admin's transcript (decks included)."""
    game = get_game(transcript["game"])
    state = game.new_state(transcript.get("options") or {}, first_dealer=transcript["first_dealer"])
    decks = [d["deck"] for d in transcript["deals"]]
    dealt = 0
    steps = [s for d in transcript["deals"] for s in d["steps"]]
    for step in [None, *steps]:
        if step is not None:
            state.apply(step["action"], step["seat"])
        if state.to_act() == CHANCE and dealt < len(decks):
            state.deal(decks[dealt])
            dealt += 1
    return state


async def _get_views(t: Table) -> list[Any]:
    return [(await t.srv.games.GetView(pb.GetViewRequest(match_id=t.match_id), metadata=bearer(tok))).view
            for tok in t.tokens]


async def _refresh(t: Table) -> None:
    """After a legal move: the seats' views and the rules state of the new position."""
    t.views = await _get_views(t)
    t.state = _replay(await export_transcript(t.srv.admin, t.match_id))
    if not t.views[0].over:
        assert t.state.to_act() == t.to_act and t.state.legal_actions() == t.legal(), \
            "the replayed state is the service's"
    if not t.notations:
        t.notations = [a for a in CANDIDATES if t.is_notation(a)]
        t.foreign = [a for a in CANDIDATES if a not in t.notations]
        assert t.notations and t.foreign


async def _legal_move(t: Table) -> None:
    """A random legal move; its client_action_id is often one a refused action of the seat carried
    (a refusal does not use an id up: the move is applied, not answered as a duplicate)."""
    seat = t.to_act
    action = t.rng.choice(t.legal())
    refused = [c for c in t.refused_ids.get(seat, ()) if (seat, c) not in t.used_ids]
    cid = t.rng.choice(refused) if refused and t.rng.random() < 0.7 else t.cid()
    res = await t.srv.games.SubmitAction(pb.SubmitActionRequest(
        match_id=t.match_id, action=action, expected_seq=t.seq, client_action_id=cid), metadata=bearer(t.tokens[seat]))
    assert res.seq == t.seq + 1 and not res.duplicate
    t.used_ids[(seat, cid)] = action
    t.moves.append((seat, action))
    if t.watchers:
        await _watched(t, res.seq)
    await _refresh(t)


async def _play_to_the_end(t: Table) -> int:
    """The match still plays: random legal moves to its end (lighter than _legal_move: the
    seat on turn's view only). Returns the number of moves."""
    moves = 0
    view = t.views[t.to_act]
    while not view.over:
        seat = view.to_act
        view = (await t.srv.games.GetView(pb.GetViewRequest(match_id=t.match_id),
                                          metadata=bearer(t.tokens[seat]))).view
        action = t.rng.choice([a.notation for a in view.legal_actions])
        res = await t.srv.games.SubmitAction(pb.SubmitActionRequest(
            match_id=t.match_id, action=action, expected_seq=view.seq, client_action_id=t.cid()),
            metadata=bearer(t.tokens[seat]))
        assert res.seq == view.seq + 1
        t.moves.append((seat, action))
        view, moves = res.view, moves + 1
    await _refresh(t)
    return moves


# ---- "changes nothing" ---------------------------------------------------------------------------

async def _snapshot(t: Table) -> dict[str, bytes]:
    """What a refused call must leave as it was, as the wire bytes the server answers."""
    get_view = pb.GetViewRequest(match_id=t.match_id).SerializeToString()
    calls = {
        "GetMatch": t.unary(METHODS["GetMatch"].path)(pb.GetMatchRequest(match_id=t.match_id).SerializeToString()),
        "spectator GetView": t.unary(METHODS["GetView"].path)(get_view),
        "InspectMatch": t.unary(METHODS["InspectMatch"].path)(
            admin_pb2.InspectMatchRequest(match_id=t.match_id).SerializeToString(), metadata=bearer(ADMIN_TOKEN)),
        "ListMatches": t.unary(METHODS["ListMatches"].path)(
            admin_pb2.ListMatchesRequest(limit=1000).SerializeToString(), metadata=bearer(ADMIN_TOKEN)),
    }
    for seat, token in enumerate(t.tokens):
        calls[f"seat {seat} GetView"] = t.unary(METHODS["GetView"].path)(get_view, metadata=bearer(token))
    answers = await asyncio.gather(*calls.values())
    return {**dict(zip(calls, answers)), "matches held": repr(sorted(t.mgr.match_ids())).encode()}


async def _serving(t: Table) -> None:
    health = await health_pb2_grpc.HealthStub(t.srv.channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
    assert health.status == health_pb2.HealthCheckResponse.SERVING


# ---- sending and checking one bad request ------------------------------------------------------

async def _send(t: Table, bad: Bad) -> grpc.aio.AioRpcError | None:
    """The call's error; None when it succeeded (a stream: its first message came)."""
    try:
        if bad.method.bidi:
            call = t.srv.channel.stream_stream(bad.method.path, request_serializer=None, response_deserializer=None)(
                metadata=bad.metadata, timeout=30)
            await call.write(bad.body)
            await call.done_writing()
            async for _ in call:
                pass
        elif bad.method.streaming:
            call = t.stream(bad.method.path)(bad.body, metadata=bad.metadata, timeout=30)
            try:
                await call.read()
            finally:
                call.cancel()
        else:
            await t.unary(bad.method.path)(bad.body, metadata=bad.metadata, timeout=30)
    except grpc.aio.AioRpcError as exc:
        return exc
    return None


def _check_error(t: Table, bad: Bad, exc: grpc.aio.AioRpcError, request_id: str, where: str) -> tuple:
    """The checks of one error (see the module docstring); returns code, reason, metadata."""
    code = exc.code().name
    assert code not in ("UNKNOWN", "INTERNAL", "OK"), f"{where}: {code} {exc.details()!r}"
    if bad.expected in ({OVERSIZE}, {UNIMPLEMENTED}):  # refused by gRPC before the service saw it
        assert (code, "") in bad.expected, f"{where}: {code} {exc.details()!r}"
        return code, "", {}
    status = rpc_status.from_call(exc)  # checks that the Status agrees with the call's code and message
    assert status is not None and status.details, f"{where}: {code} without a google.rpc.Status"
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info), f"{where}: the first detail is not an ErrorInfo"
    reason, metadata = info.reason, dict(info.metadata)
    assert info.domain == DOMAIN and reason, where
    assert reason in DOCUMENTED.get(code, ()), f"{where}: {code} / {reason} is not in docs/api.md's table"
    if bad.expected:
        assert (code, reason) in bad.expected, f"{where}: got {code} / {reason} {exc.details()!r}, " \
                                               f"expected one of {sorted(bad.expected)}"
    request = error_details_pb2.RequestInfo()
    assert status.details[-1].Unpack(request), f"{where}: the last detail is not a RequestInfo"
    assert request.request_id == request_id if request_id else re.fullmatch("[0-9a-f]{16}", request.request_id), where
    message = exc.details() or ""
    assert message.strip() and len(message) <= 500, f"{where}: message {message!r}"
    assert METADATA_KEYS.get(reason, set()) <= set(metadata), f"{where}: {reason} metadata {metadata}"
    # no secret comes back: no token, no card the caller may not know (but those it named)
    tokens = [*t.tokens, *t.other_tokens, t.revoked, ADMIN_TOKEN]
    said = " ".join([message, *metadata.keys(), *metadata.values()])
    assert not [tok for tok in tokens if tok in said], f"{where}: a token in the error"
    named = cards_in(_request_text(bad))
    leaked = (cards_in({"message": message, **metadata}) - named) & t.secret(bad.audience)
    assert not leaked, f"{where}: the error names hidden cards {sorted(CODES[c] for c in leaked)}: {said!r}"
    if reason == "STALE_SEQUENCE":
        view = match_pb2.View()
        assert len(status.details) == 3 and status.details[1].Unpack(view), where
        assert view.SerializeToString(deterministic=True) == \
            t.views[bad.audience].SerializeToString(deterministic=True), f"{where}: not the seat's current view"
        assert metadata["seq"] == str(t.seq) and metadata["expected_seq"] == str(bad.request.expected_seq)
    if reason == "ILLEGAL_ACTION":
        assert metadata["action"] == bad.request.action[:200], where
    if reason == "NOT_YOUR_TURN":
        assert metadata["to_act"] == str(t.to_act), where
    return code, reason, metadata


def _request_text(bad: Bad) -> Any:
    """Every string the caller put in its request (cards it named may come back)."""
    if bad.request is None:
        try:
            request = bad.method.request.FromString(bad.body)
        except DecodeError:
            return []
    else:
        request = bad.request
    strings = []
    stack = [request]
    while stack:
        msg = stack.pop()
        for fd, value in msg.ListFields():
            values = value if fd.is_repeated else [value]
            if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
                values = [*value.keys(), *value.values()]
            for v in values:
                if isinstance(v, str):
                    strings.append(v)
                elif hasattr(v, "ListFields"):
                    stack.append(v)
    return strings


def _card_free(card: str, code: str, reason: str, message: str, metadata: dict[str, str]) -> str:
    """An answer with the refused card written ``<card>`` (where it stands as a card code)."""
    text = json.dumps([message, metadata], sort_keys=True)
    return f"{code} {reason} " + re.sub(rf"(?<![A-Za-z0-9]){card}(?![A-Za-z0-9])", "<card>", text)


async def _attempt(t: Table, bad: Bad, before: dict[str, bytes]) -> None:
    t.sent += 1
    t.counts[bad.kind] += 1
    request_id: str | None = f"fuzz-{t.game.id}-{t.sent}"
    if t.rng.random() < 0.2:  # not a plain token of 1-64 characters: the server draws one
        bad.metadata = (*bad.metadata, ("x-request-id", t.rng.choice(["", "a b", "x" * 65, "id%C3%A9", "id;drop"])))
        request_id = None
    elif t.rng.random() < 0.9:
        bad.metadata = (*bad.metadata, ("x-request-id", request_id))
    else:
        request_id = None
    shown = repr(bad.request if bad.request is not None else bad.body)[:300]
    where = f"{t.game.id} #{t.sent} {bad.kind} {bad.method.name} seq {t.seq}: {shown}"
    exc = await _send(t, bad)
    if exc is None:
        assert bad.may_succeed, f"{where}: succeeded; an error was expected"
    else:
        code, reason, metadata = _check_error(t, bad, exc, request_id or "", where)
        if bad.card:  # the same refusal wherever the hidden card is (hand, stock, face-down column)
            key = (t.seq, bad.audience, bad.kind)
            t.hidden_refusals[key] += 1
            t.refusals.setdefault(key, set()).add(_card_free(bad.card, code, reason, exc.details(), metadata))
        cid = bad.request.client_action_id if bad.method.name == "SubmitAction" and bad.request is not None else ""
        if isinstance(bad.audience, int) and cid and len(cid) <= 128 and cid.isprintable() \
                and (bad.audience, cid) not in t.used_ids:
            t.refused_ids.setdefault(bad.audience, []).append(cid)
    after = await _snapshot(t)
    changed = [k for k in before if after[k] != before[k]]
    assert not changed, f"{where}: changed {changed}"
    await _serving(t)


# ---- the kinds of bad input ------------------------------------------------------------------------

def _submit(t: Table, seat_or_token: Any, action: str, *, expected_seq: int | None = None,
            client_action_id: str | None = None, match_id: str | None = None) -> tuple[pb.SubmitActionRequest, tuple]:
    req = pb.SubmitActionRequest(match_id=t.match_id if match_id is None else match_id, action=action,
                                 client_action_id=t.cid() if client_action_id is None else client_action_id)
    if expected_seq is not None:
        req.expected_seq = expected_seq
    token = t.tokens[seat_or_token] if isinstance(seat_or_token, int) else seat_or_token
    return req, bearer(token) if token else ()


def _maybe_seq(t: Table) -> int | None:
    return t.seq if t.rng.random() < 0.5 else None


def junk_action(t: Table) -> Bad | None:
    """Syntactically invalid action strings by the seat on turn: INVALID_ARGUMENT (an empty one is
    MISSING_FIELD, a long one FIELD_TOO_LONG: docs/api.md "Errors"); a string that happens to be
    this game's notation is ILLEGAL_ACTION (never a legal one: that would be a move)."""
    rng, seat = t.rng, t.to_act
    pick = rng.random()
    if pick < 0.05:
        text = ""
    elif pick < 0.25:
        text = _printable(rng, rng.randint(1, 70))
    elif pick < 0.45:
        text = _unicode(rng, rng.randint(1, 70))
    elif pick < 0.55:
        text = "".join(rng.choice([*UNPRINTABLE, "\n", "\t", "\r", " ", ":"]) for _ in range(rng.randint(1, 8)))
    elif pick < 0.9:
        text = _mutate(rng, rng.choice([*t.legal(), *t.notations]))
    else:
        text = rng.choice([_printable, _unicode])(rng, rng.randint(65, 5000))
    if text in t.legal():
        return None
    if not text:
        expected = (INVALID, "MISSING_FIELD")
    elif len(text) > 64:
        expected = (INVALID, "FIELD_TOO_LONG")
    elif t.is_notation(text):
        expected = (PRECONDITION, "ILLEGAL_ACTION")
    else:
        expected = (INVALID, "MALFORMED_ACTION")
    req, md = _submit(t, seat, text, expected_seq=_maybe_seq(t))
    return _bad("junk action string", "SubmitAction", req, {expected}, md, seat)


def _plays(t: Table, seat: int, hidden: bool) -> list[str]:
    """play:<card> of the cards ``seat`` may not know (``hidden``), or of the cards it sees
    that are not in its hand (the table's, its columns', the tricks')."""
    secret, hand = t.secret(seat), set(t.hand(seat))
    return [f"play:{c}" for i, c in enumerate(CODES)
            if (i in secret) == hidden and c not in hand and f"play:{c}" in t.notations]


def _hidden_card(t: Table, seat: int, text: str) -> str:
    card = text[5:] if text.startswith("play:") and text.count(":") == 1 else ""
    return card if card and card_id(card) in t.secret(seat) else ""


def illegal_action(t: Table) -> Bad | None:
    """Well-formed actions that are not legal now, by the seat on turn: a card it may not know
    (in another seat's hand, the stock, a face-down column), a card it sees elsewhere, an action
    of another phase. FAILED_PRECONDITION / ILLEGAL_ACTION."""
    rng, seat = t.rng, t.to_act
    pick = rng.random()
    text = rng.choice(_plays(t, seat, pick < 0.5) or t.notations) if pick < 0.75 else rng.choice(t.notations)
    if text in t.legal():
        return None
    return _with_twin(t, _illegal(t, seat, text))


def _illegal(t: Table, seat: int, text: str) -> Bad:
    req, md = _submit(t, seat, text, expected_seq=_maybe_seq(t))
    return _bad("illegal action", "SubmitAction", req, {(PRECONDITION, "ILLEGAL_ACTION")}, md, seat,
                card=_hidden_card(t, seat, text))


def _with_twin(t: Table, bad: Bad) -> Bad:
    """A refusal of a hidden card is followed by the same refusal of another hidden card, so
    that the two can be compared (_check_refusals_read_alike)."""
    others = [p for p in _plays(t, bad.audience, True) if p != f"play:{bad.card}"]
    if bad.card and others:
        make = _illegal if bad.kind == "illegal action" else _out_of_turn
        t.queue.append(make(t, bad.audience, t.rng.choice(others)))
    return bad


def other_game_action(t: Table) -> Bad:
    """Another game's action (bid:3 in Klaberjass, take in the Joker games): not this game's
    notation, INVALID_ARGUMENT / MALFORMED_ACTION."""
    req, md = _submit(t, t.to_act, t.rng.choice(t.foreign), expected_seq=_maybe_seq(t))
    return _bad("another game's action", "SubmitAction", req, {(INVALID, "MALFORMED_ACTION")}, md, t.to_act)


def not_your_turn(t: Table) -> Bad:
    """A seat not on turn sends the seat on turn's legal action, a card of its own hand or any
    action of the game: FAILED_PRECONDITION / NOT_YOUR_TURN (with ``to_act``)."""
    rng = t.rng
    seat = rng.choice([s for s in range(t.n) if s != t.to_act])
    own = [f"play:{c}" for c in t.hand(seat) if f"play:{c}" in t.notations]
    text = rng.choice([rng.choice(t.legal()), rng.choice(own or t.notations), rng.choice(t.notations),
                       rng.choice(_plays(t, seat, True) or t.notations)])
    return _with_twin(t, _out_of_turn(t, seat, text))


def _out_of_turn(t: Table, seat: int, text: str) -> Bad:
    req, md = _submit(t, seat, text, expected_seq=_maybe_seq(t))
    return _bad("not your turn", "SubmitAction", req, {(PRECONDITION, "NOT_YOUR_TURN")}, md, seat,
                card=_hidden_card(t, seat, text))


def stale_sequence(t: Table) -> Bad:
    """A legal action decided on an old view (or a seq ahead of the match): ABORTED /
    STALE_SEQUENCE with the caller's current View (docs/api.md "Deciding on fresh information")."""
    rng = t.rng
    seat = t.to_act if rng.random() < 0.75 else rng.choice([s for s in range(t.n) if s != t.to_act])
    choices = [t.seq + rng.randint(1, 3), rng.randint(t.seq + 1, 2 ** 63 - 1)]
    if t.seq:
        choices += [rng.randrange(t.seq)] * 2
    req, md = _submit(t, seat, rng.choice(t.legal()), expected_seq=rng.choice(choices))
    return _bad("stale or future expected_seq", "SubmitAction", req, {("ABORTED", "STALE_SEQUENCE")}, md, seat)


def _match_request(t: Table, name: str, match_id: str | None = None) -> Any:
    """A well-formed request of ``name`` about the match (or ``match_id``)."""
    mid = t.match_id if match_id is None else match_id
    rng = t.rng
    if name == "SubmitAction":
        return _submit(t, 0, rng.choice(t.legal()), expected_seq=t.seq, match_id=mid)[0]
    if name == "LeaveMatch":
        return pb.LeaveMatchRequest(match_id=mid, resign=rng.random() < 0.5)
    if name == "WatchMatch":
        req = pb.WatchMatchRequest(match_id=mid)
        if rng.random() < 0.5:
            req.after_seq = rng.randint(0, t.seq)
        return req
    if name == "JoinMatch":
        return pb.JoinMatchRequest(match_id=mid, player_name="fuzz")
    if name == "TerminateMatch":
        return admin_pb2.TerminateMatchRequest(match_id=mid, reason="fuzz")
    if name == "ReissueSeatToken":
        return admin_pb2.ReissueSeatTokenRequest(match_id=mid, seat=rng.randrange(t.n))
    return METHODS[name].request(match_id=mid)


TOKEN_CASES = ("absent token", "garbage token", "malformed authorization", "revoked token",
               "another match's token", "wrong kind of token")


def _token_case(t: Table, case: str, name: str) -> tuple[tuple, tuple[str, str] | None]:
    """Metadata for ``case`` and what ``name`` answers it (None: the call is not refused)."""
    rng = t.rng
    admin = METHODS[name].admin
    if case == "absent token":
        if name in VIEWERS:
            return (), None  # a spectator
        return (), (UNAUTHENTICATED, "ADMIN_TOKEN_REQUIRED" if admin else "MISSING_OR_BAD_TOKEN")
    if case == "garbage token":
        real = rng.choice([*t.tokens, ADMIN_TOKEN])
        token = rng.choice([
            _token_like(rng, rng.randint(1, 512)), real + rng.choice("aZ9-"), real[:-1], real[1:], real.swapcase(),
            real[: len(real) // 2] + " " + real[len(real) // 2:], _printable(rng, rng.randint(1, 100)).strip() or "x"])
        value = rng.choice(["Bearer ", "bearer ", "BEARER "]) + token
        expected = (DENIED, "NOT_ADMIN") if admin else (UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN")
        return (("authorization", value),), expected
    if case == "malformed authorization":
        token = rng.choice(t.tokens)
        value = rng.choice(["Bearer", "Bearer   ", token, f"Basic {token}", f"Token {token}", "Bearer " + "a" * 513,
                            f"Bearer{token}", ""])
        metadata = (("authorization", value),)
        if rng.random() < 0.3:
            metadata = (("authorization", f"Bearer {token}"), ("authorization", f"Bearer {ADMIN_TOKEN}"))
        return metadata, (UNAUTHENTICATED, "MALFORMED_TOKEN")
    if case == "revoked token":
        return bearer(t.revoked), (DENIED, "NOT_ADMIN") if admin else (UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN")
    if case == "another match's token":
        return bearer(rng.choice(t.other_tokens)), (DENIED, "NOT_ADMIN") if admin else (DENIED, "WRONG_MATCH")
    assert case == "wrong kind of token"
    if admin:  # a seat token for the admin API
        return bearer(rng.choice(t.tokens)), (DENIED, "NOT_ADMIN")
    if name in SEAT_ONLY:  # the admin token acting for a seat
        return bearer(ADMIN_TOKEN), (DENIED, "NOT_A_SEAT")
    return (), None


def bad_token(t: Table) -> Bad | None:
    """Absent, garbage, malformed, revoked, another match's or the wrong kind of token on the
    calls that check one, each with an otherwise valid request (a legal move, a resignation,
    a termination...): UNAUTHENTICATED or PERMISSION_DENIED, as docs/api.md's table says."""
    rng = t.rng
    name = rng.choice([*SEAT_ONLY, *VIEWERS, "CreateMatch", *(n for n, m in METHODS.items() if m.admin)])
    case = rng.choice(TOKEN_CASES)
    if name == "CreateMatch":  # decks and first_dealer are the admin's (valid ones here)
        request = _admin_create(t)
        metadata, expected = _token_case(t, case, "ListMatches")  # refused as the admin API refuses
        return _bad(case, name, request, {expected}, metadata)
    metadata, expected = _token_case(t, case, name)
    if expected is None:
        return None
    request = _match_request(t, name) if name != "ListMatches" else admin_pb2.ListMatchesRequest()
    return _bad(case, name, request, {expected}, metadata)


def _admin_create(t: Table) -> pb.CreateMatchRequest:
    """A valid CreateMatch that only the admin may send: scripted decks or the first dealer."""
    req = pb.CreateMatchRequest(game=t.game.id)
    if t.rng.random() < 0.5:
        deck = [CODES[c] for c in t.game.pack]
        t.rng.shuffle(deck)
        req.decks.add(cards=deck)
    else:
        req.first_dealer = t.rng.randrange(t.n)
    return req


def _unknown_id(t: Table) -> str:
    rng = t.rng
    real = rng.choice([t.match_id, t.other_id])
    mid = rng.choice([
        _token_like(rng, 16), _printable(rng, rng.randint(1, 128)), _unicode(rng, rng.randint(1, 40)),
        real.swapcase(), real[:-1], real + "A", " " + real, real + "\x00", real.replace(real[0], "\u0410", 1),
        "../" + real, "%", "*", real + "'; DROP TABLE matches; --"])
    return mid if mid not in (t.match_id, t.other_id) else mid + "x"


def unknown_match(t: Table) -> Bad:
    """A match id nobody created, on every call that takes one: NOT_FOUND / MATCH_NOT_FOUND
    whatever token comes with it (another match's seat token included), unless the call needs a
    seat and the caller sent none or the admin's."""
    rng = t.rng
    name = rng.choice(MATCH_METHODS)
    request = _match_request(t, name, _unknown_id(t))
    not_found = ("NOT_FOUND", "MATCH_NOT_FOUND")
    if METHODS[name].admin:
        return _bad("unknown match id", name, request, {not_found}, bearer(ADMIN_TOKEN), ADMIN)
    if name in ("GetMatch", "JoinMatch"):
        return _bad("unknown match id", name, request, {not_found})
    case = rng.choice(["none", "seat", "admin", "garbage"])
    metadata = {"none": (), "seat": bearer(rng.choice(t.tokens)), "admin": bearer(ADMIN_TOKEN),
                "garbage": bearer(_token_like(rng, 43))}[case]
    expected = not_found
    if name in SEAT_ONLY and case == "none":
        expected = (UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN")
    if name in SEAT_ONLY and case == "admin":
        expected = (DENIED, "NOT_A_SEAT")
    return _bad("unknown match id", name, request, {expected}, metadata)


def _string_field_tags(cls: Any) -> list[int]:
    return [f.number for f in cls.DESCRIPTOR.fields if f.type == f.TYPE_STRING and not f.is_repeated]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _unknown_fields(rng: random.Random, cls: Any) -> bytes:
    """Random fields of numbers ``cls`` does not use, in valid wire format (protobuf keeps them
    as unknown fields)."""
    used = {f.number for f in cls.DESCRIPTOR.fields}
    out = b""
    for _ in range(rng.randint(1, 5)):
        number = rng.choice([n for n in (rng.randint(1, 30), rng.randint(100, 2 ** 29 - 1)) if n not in used] or [999])
        kind = rng.choice([0, 1, 2, 5])
        value = {0: _varint(rng.getrandbits(rng.choice([7, 35, 64]))), 1: rng.randbytes(8),
                 5: rng.randbytes(4)}.get(kind)
        if value is None:
            data = rng.randbytes(rng.randint(0, 40))
            value = _varint(len(data)) + data
        out += _varint(number << 3 | kind) + value
    return out


BAD_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe2\x82", b"\x80"]


def garbage_body(t: Table, method: Method | None = None) -> Bad | None:
    """Random bytes, a valid request cut or flipped, broken UTF-8 in a string field, as the body of
    every method (and the health check): INVALID_ARGUMENT / MALFORMED_REQUEST when the bytes are
    not a message of the method; bytes that happen to parse are a random request, refused (or,
    for a read-only call, answered) like any other."""
    rng = t.rng
    if method is None:
        method = rng.choice(OTHER_SERVICES) if rng.random() < 0.06 else METHODS[rng.choice(sorted(METHODS))]
    pick = rng.random()
    if pick < 0.1:  # well-formed fields the method does not have: a request with nothing in it
        body = _unknown_fields(rng, method.request)
    elif pick < 0.4:
        body = bytes(rng.getrandbits(8) for _ in range(rng.choice([rng.randint(1, 4), rng.randint(5, 300)])))
    elif pick < 0.7 and method.name in METHODS and method.name in MATCH_METHODS:
        # a stand-in for the match id (the server's random one would make the mutations' fate,
        # and so the test, vary from run to run): only bytes that do not parse are sent
        body = bytearray(_match_request(t, method.name, "M" * len(t.match_id)).SerializeToString())
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(body))
            action = rng.randrange(3)
            if action == 0:
                body[i] = rng.getrandbits(8)
            elif action == 1:
                del body[i:]
                if not body:
                    body = bytearray(b"\xff")
            else:
                body[i:i] = bytes([rng.getrandbits(8)])
        body = bytes(body)
    else:
        tags = _string_field_tags(method.request)
        if not tags:
            return None
        text = (_printable(rng, rng.randint(0, 10)).encode() + rng.choice(BAD_UTF8)
                + _printable(rng, rng.randint(0, 10)).encode())
        body = _varint(rng.choice(tags) << 3 | 2) + _varint(len(text)) + text
    try:
        method.request.FromString(body)
        parses = True
    except DecodeError:  # bad wire format, bad UTF-8 in a string field
        parses = False
    if parses and (method in OTHER_SERVICES or pick >= 0.4):
        return None  # only random bytes are sent as a random request
    metadata = rng.choice([(), bearer(rng.choice(t.tokens)), bearer(ADMIN_TOKEN), bearer(_token_like(rng, 43))])
    audience = ADMIN if metadata == bearer(ADMIN_TOKEN) else SPECTATOR
    if metadata and metadata[0][1][7:] in t.tokens:
        audience = t.tokens.index(metadata[0][1][7:])
    if not parses:
        return Bad("garbage request body", method, body, metadata, frozenset({(INVALID, "MALFORMED_REQUEST")}),
                   audience)
    return Bad("garbage request body (it parses)", method, body, metadata, frozenset(), audience,
               may_succeed=method.name in READ_ONLY)


def garbage_to_every_method(t: Table) -> list[Bad]:
    """Bytes that are no message of the method, once to each method of both services, the health
    check and server reflection."""
    out = []
    for method in [*METHODS.values(), *OTHER_SERVICES]:
        bad = None
        while bad is None or bad.kind != "garbage request body":
            bad = garbage_body(t, method)
        out.append(bad)
    return out


def _bad_option(t: Table) -> tuple[str, match_pb2.OptionValue]:
    spec = t.rng.choice(t.game.option_specs)
    if spec.kind == BOOL:
        return spec.name, match_pb2.OptionValue(int_value=1)
    if spec.kind == ENUM:
        wrong = [v for v in ("", "zz", spec.values[0].upper(), spec.values[0] + " ") if v not in spec.values]
        return spec.name, match_pb2.OptionValue(string_value=t.rng.choice(wrong))
    if spec.values:
        return spec.name, match_pb2.OptionValue(int_value=max(spec.values) + 7)
    if spec.maximum is not None and t.rng.random() < 0.5:
        return spec.name, match_pb2.OptionValue(int_value=spec.maximum + 1)
    assert spec.minimum is not None, spec
    return spec.name, match_pb2.OptionValue(int_value=spec.minimum - 1)


def out_of_range(t: Table) -> Bad | None:
    """Numbers outside their range and unknown enum values in otherwise valid requests:
    INVALID_ARGUMENT with the field's reason (BAD_EXPECTED_SEQ, BAD_AFTER_SEQ, BAD_SEAT,
    BAD_STATUS, BAD_LIMIT, BAD_DURATION, BAD_TURN_TIME, BAD_SPECTATOR_DELAY, BAD_FIRST_DEALER,
    INVALID_OPTIONS, BAD_SEATS)."""
    rng = t.rng
    n = t.n
    pick = rng.randrange(11)
    if pick == 0:
        req, md = _submit(t, t.to_act, rng.choice(t.legal()), expected_seq=rng.choice([-1, -2, -(2 ** 63), -t.seq - 1]))
        return _bad("out-of-range number", "SubmitAction", req, {(INVALID, "BAD_EXPECTED_SEQ")}, md, t.to_act)
    if pick == 1:
        who = rng.choice([None, ADMIN, rng.randrange(n)])
        md = () if who is None else bearer(ADMIN_TOKEN) if who == ADMIN else bearer(t.tokens[who])
        after = rng.choice([-1, -(2 ** 63), t.seq + 1, t.seq + rng.randint(2, 10 ** 6), 2 ** 63 - 1])
        return _bad("out-of-range number", "WatchMatch", pb.WatchMatchRequest(match_id=t.match_id, after_seq=after),
                    {(INVALID, "BAD_AFTER_SEQ")}, md, SPECTATOR if who is None else who)
    bad_seat = rng.choice([-1, n, n + 1, 2 ** 31 - 1, -(2 ** 31)])
    if pick == 2:
        return _bad("out-of-range number", "JoinMatch", pb.JoinMatchRequest(match_id=t.match_id, seat=bad_seat),
                    {(INVALID, "BAD_SEAT")})
    if pick == 3:
        return _bad("out-of-range number", "ReissueSeatToken",
                    admin_pb2.ReissueSeatTokenRequest(match_id=t.match_id, seat=bad_seat),
                    {(INVALID, "BAD_SEAT")}, bearer(ADMIN_TOKEN), ADMIN)
    if pick == 4:
        which = rng.random()
        if which < 0.2:  # a page token that is none of the server's: not an offset it would follow
            token = rng.choice(["x", "e30", "!!!", _printable(rng, rng.randint(1, 40)), "A" * rng.randint(1025, 4000)])
            if rng.random() < 0.5:
                return _bad("bad page token", "ListOpenMatches", pb.ListOpenMatchesRequest(page_token=token),
                            {(INVALID, "BAD_PAGE_TOKEN")})
            return _bad("bad page token", "ListMatches", admin_pb2.ListMatchesRequest(page_token=token),
                        {(INVALID, "BAD_PAGE_TOKEN")}, bearer(ADMIN_TOKEN), ADMIN)
        if which < 0.6:
            req = admin_pb2.ListMatchesRequest(status=rng.choice([5, 6, 99, -1, 2 ** 31 - 1]))
            return _bad("unknown enum value", "ListMatches", req, {(INVALID, "BAD_STATUS")}, bearer(ADMIN_TOKEN), ADMIN)
        req = admin_pb2.ListMatchesRequest(limit=rng.choice([-1, -(2 ** 31)]))
        return _bad("out-of-range number", "ListMatches", req, {(INVALID, "BAD_LIMIT")}, bearer(ADMIN_TOKEN), ADMIN)
    if pick == 5:
        if rng.random() < 0.5:
            return _bad("out-of-range number", "ListOpenMatches",
                        pb.ListOpenMatchesRequest(limit=rng.choice([-1, -(2 ** 31)])), {(INVALID, "BAD_LIMIT")})
        game = rng.choice([t.game.id.upper(), " " + t.game.id, "poker", _unicode(rng, rng.randint(1, 20)),
                           _printable(rng, rng.randint(129, 300))])
        expected = {(INVALID, "FIELD_TOO_LONG" if len(game) > 128 else "UNKNOWN_GAME")}
        which = rng.random()
        if which < 1 / 3:
            return _bad("unknown name", "ListOpenMatches", pb.ListOpenMatchesRequest(game=game), expected)
        if which < 2 / 3:
            return _bad("unknown name", "ListBots", pb.ListBotsRequest(game=game), expected)
        return _bad("unknown name", "ListMatches", admin_pb2.ListMatchesRequest(game=game), expected,
                    bearer(ADMIN_TOKEN), ADMIN)
    req = pb.CreateMatchRequest(game=t.game.id)
    metadata: tuple = ()
    if pick == 6:
        seconds, nanos = rng.choice([(-1, 0), (-(2 ** 40), 0), (0, -1), (5, 10 ** 9), (0, 2 ** 31 - 1), (30, -5)])
        req.turn_time.seconds, req.turn_time.nanos = seconds, nanos
        # a negative Duration is a Duration: BAD_TURN_TIME in every game (docs/api.md); one
        # beyond duration.proto's range, or with nanos out of range or of the other sign, is none
        negative = (seconds, nanos) in ((-1, 0), (0, -1))
        expected = {(INVALID, "BAD_TURN_TIME" if negative else "BAD_DURATION")}
    elif pick == 7:
        req.turn_time.seconds, req.turn_time.nanos = rng.choice([(0, 1), (5, 0), (9, 999_999_999), (121, 0),
                                                                 (120, 999_999_999), (10 ** 9, 0)])
        # a game with a turn_time_s option validates the time as that option (10-120 s)
        expected = {(INVALID, "BAD_TURN_TIME"), (INVALID, "INVALID_OPTIONS")}
    elif pick == 8:
        req.spectator_delay_actions = rng.choice([201, 1000, 2 ** 32 - 1])
        expected = {(INVALID, "BAD_SPECTATOR_DELAY")}
    elif pick == 9:
        req.first_dealer = rng.choice([-1, n, 2 ** 31 - 1, -(2 ** 31)])
        metadata = bearer(ADMIN_TOKEN)
        expected = {(INVALID, "BAD_FIRST_DEALER")}
    else:
        if rng.random() < 0.5:
            name, value = _bad_option(t)
            req.options[name].CopyFrom(value)
            expected = {(INVALID, "INVALID_OPTIONS")}
        else:
            for _ in range(rng.choice([1, n + 1, n + 5])):
                req.seats.add().open.SetInParent()
            expected = {(INVALID, "BAD_SEATS")}
    return _bad("out-of-range number", "CreateMatch", req, expected, metadata, ADMIN if metadata else SPECTATOR)


def _unprintable_text(rng: random.Random, limit: int) -> str:
    text = _printable(rng, rng.randint(0, limit - 2)).strip()
    i = rng.randint(0, len(text))
    return text[:i] + rng.choice(UNPRINTABLE) + text[i:]


def bad_field(t: Table) -> Bad | None:
    """Missing, overlong or unprintable text fields, unknown names, a reused client_action_id,
    a broken deck: INVALID_ARGUMENT with the field's reason. Some ride on a legal move of the
    seat on turn or on the admin's termination of the match: refused, they must not happen."""
    rng = t.rng
    pick = rng.randrange(12)
    if pick == 0:
        name = rng.choice(MATCH_METHODS)
        request = _match_request(t, name, "")
        md = bearer(ADMIN_TOKEN) if METHODS[name].admin else ()
        return _bad("missing or overlong field", name, request, {(INVALID, "MISSING_FIELD")}, md,
                    ADMIN if md else SPECTATOR)
    if pick == 1:
        name = rng.choice(MATCH_METHODS)
        request = _match_request(t, name, t.match_id + _token_like(rng, rng.randint(113, 2000)))
        admin = METHODS[name].admin
        md = bearer(ADMIN_TOKEN) if admin else bearer(rng.choice(t.tokens))
        return _bad("missing or overlong field", name, request, {(INVALID, "FIELD_TOO_LONG")}, md,
                    ADMIN if admin else SPECTATOR)
    if pick == 2:
        cid = rng.choice([_token_like(rng, rng.randint(129, 3000)), _unprintable_text(rng, 128)])
        req, md = _submit(t, t.to_act, rng.choice(t.legal()), expected_seq=t.seq, client_action_id=cid)
        return _bad("bad client_action_id", "SubmitAction", req, {(INVALID, "BAD_CLIENT_ACTION_ID")}, md, t.to_act)
    if pick == 3:
        (seat, cid), action = rng.choice(sorted(t.used_ids.items()))
        other = rng.choice([a for a in [*t.notations, *t.foreign] if a != action])
        req, md = _submit(t, seat, other, client_action_id=cid)
        return _bad("bad client_action_id", "SubmitAction", req, {(INVALID, "CLIENT_ACTION_ID_REUSED")}, md, seat)
    if pick == 4:
        if rng.random() < 0.25:
            # a client_create_id that is not 16 to 128 printable characters (docs/api.md, "Creating")
            cid = rng.choice([_printable(rng, rng.randint(1, 15)), _token_like(rng, rng.randint(129, 3000)),
                              _unprintable_text(rng, 128), _token_like(rng, 32) + rng.choice(UNPRINTABLE)])
            req = pb.CreateMatchRequest(game=t.game.id, client_create_id=cid)
            return _bad("bad client_create_id", "CreateMatch", req, {(INVALID, "BAD_CLIENT_CREATE_ID")})
        which = rng.random()
        if which < 1 / 3:
            req = pb.JoinMatchRequest(match_id=t.match_id, player_name=_unicode(rng, rng.randint(65, 500)))
            return _bad("missing or overlong field", "JoinMatch", req, {(INVALID, "FIELD_TOO_LONG")})
        if which < 2 / 3:
            req = pb.JoinMatchRequest(match_id=t.match_id, player_name=_unprintable_text(rng, 64))
            return _bad("unprintable name", "JoinMatch", req, {(INVALID, "BAD_NAME")})
        # a client_join_id that is not 16 to 128 printable characters, even a real one's near miss
        cid = rng.choice([_printable(rng, rng.randint(1, 15)), _token_like(rng, rng.randint(129, 3000)),
                          _unprintable_text(rng, 128), rng.choice(t.join_ids)[:rng.randint(1, 15)],
                          rng.choice(t.join_ids) + rng.choice(UNPRINTABLE)])
        req = pb.JoinMatchRequest(match_id=t.match_id, player_name="fuzz", client_join_id=cid)
        if rng.random() < 0.5:
            req.seat = rng.randrange(t.n)
        return _bad("bad client_join_id", "JoinMatch", req, {(INVALID, "BAD_CLIENT_JOIN_ID")})
    if pick == 5:
        long = rng.random() < 0.5
        reason = _printable(rng, rng.randint(201, 3000)) if long else _unprintable_text(rng, 200)
        req = admin_pb2.TerminateMatchRequest(match_id=t.match_id, reason=reason)
        expected = (INVALID, "FIELD_TOO_LONG") if long else (INVALID, "BAD_TERMINATE_REASON")
        return _bad("missing or overlong field" if long else "unprintable reason", "TerminateMatch", req,
                    {expected}, bearer(ADMIN_TOKEN), ADMIN)
    req = pb.CreateMatchRequest(game=t.game.id)
    metadata: tuple = ()
    kind = "missing or overlong field"
    if pick == 6:
        req.name = _printable(rng, rng.randint(65, 1000)) if rng.random() < 0.5 else _unprintable_text(rng, 64)
        expected = (INVALID, "FIELD_TOO_LONG") if len(req.name) > 64 else (INVALID, "BAD_NAME")
        kind = kind if len(req.name) > 64 else "unprintable name"
    elif pick == 7:
        req.game = rng.choice(["", _token_like(rng, rng.randint(1, 20)), t.game.id.upper(), t.game.id + " ",
                               _printable(rng, rng.randint(129, 400))])
        too_long = "FIELD_TOO_LONG" if len(req.game) > 128 else "UNKNOWN_GAME"
        expected = (INVALID, "MISSING_FIELD" if not req.game else too_long)
        kind = kind if expected[1] != "UNKNOWN_GAME" else "unknown name"
    elif pick == 8:
        for _ in range(t.n):
            req.seats.add().open.SetInParent()
        bot = rng.choice(["", "nobody", _unicode(rng, 10), "random" + "x" * 130])
        req.seats[rng.randrange(t.n)].bot.name = bot
        expected = (INVALID, "MISSING_FIELD" if not bot else "FIELD_TOO_LONG" if len(bot) > 128 else "UNKNOWN_BOT")
        kind = kind if expected[1] != "UNKNOWN_BOT" else "unknown name"
    elif pick == 9:
        spec = rng.choice(t.game.option_specs)
        choice = rng.randrange(3)
        if choice == 0:
            req.options[spec.name].SetInParent()  # no value set
            expected = (INVALID, "BAD_OPTION_VALUE")
        elif choice == 1:
            req.options[rng.choice(["no_such_option", spec.name.upper(), spec.name + " "])].bool_value = True
            expected = (INVALID, "INVALID_OPTIONS")
            kind = "unknown name"
        else:
            req.options[spec.name].string_value = _printable(rng, rng.randint(129, 1000))
            expected = (INVALID, "FIELD_TOO_LONG")
    else:  # the admin's decks, garbage
        metadata = bearer(ADMIN_TOKEN)
        pack = [CODES[c] for c in t.game.pack]
        deck = rng.choice([pack[:-1], pack + pack[:1], pack[:-1] + pack[:1], ["ZZ"] + pack[1:], [],
                           [_printable(rng, 3) for _ in pack], pack[::-1][:-1] + ["X9"]])
        req.decks.add(cards=deck)
        if rng.random() < 0.3:
            req.decks.add(cards=pack)
            req.decks[0].CopyFrom(req.decks[1])
            req.decks[1].cards[:] = deck
        expected = (INVALID, "INVALID_DECK")
        kind = "garbage deck"
    return _bad(kind, "CreateMatch", req, {expected}, metadata, ADMIN if metadata else SPECTATOR)


def _near_miss(rng: random.Random, join_id: str) -> str:
    """Another valid client_join_id one edit away from ``join_id`` (16 to 128 printable)."""
    while True:
        i = rng.randrange(len(join_id))
        other = rng.choice([join_id[:i] + rng.choice("aZ0-_~") + join_id[i + 1:], join_id[:i] + join_id[i + 1:],
                            join_id + rng.choice("a0 "), " " + join_id, join_id.swapcase(), join_id[::-1]])
        if other != join_id:
            return other


def not_now(t: Table) -> Bad:
    """Calls the match's state forbids: RevealDeals before the end (FAILED_PRECONDITION /
    MATCH_NOT_OVER: the decks are secret until then), JoinMatch at a full table
    (ALREADY_EXISTS / SEAT_TAKEN; also with a client_join_id that is no seat's: a fresh one, a
    near miss of a seat's, the id of the seat whose token the operator reissued, which no longer
    gets it back), a spectator of the other match, created without spectators
    (PERMISSION_DENIED / SPECTATORS_NOT_ALLOWED)."""
    rng = t.rng
    if rng.random() < 0.2:
        name = rng.choice(VIEWERS)
        return _bad("not allowed now", name, METHODS[name].request(match_id=t.other_id),
                    {(DENIED, "SPECTATORS_NOT_ALLOWED")})
    if rng.random() < 0.5:
        who = rng.choice([None, ADMIN, rng.randrange(t.n)])
        md = () if who is None else bearer(ADMIN_TOKEN) if who == ADMIN else bearer(t.tokens[who])
        return _bad("not allowed now", "RevealDeals", pb.RevealDealsRequest(match_id=t.match_id),
                    {(PRECONDITION, "MATCH_NOT_OVER")}, md, SPECTATOR if who is None else who)
    req = pb.JoinMatchRequest(match_id=t.match_id, player_name=rng.choice(["", "late", "Ada  Lovelace", "Jos\u00e9"]))
    if rng.random() < 0.6:
        req.seat = rng.randrange(t.n)
    if rng.random() < 0.5:  # not a retry of any seat's join: a retry would take its seat back
        holders = [i for i in t.join_ids if i != t.join_ids[t.revoked_seat]]
        req.client_join_id = rng.choice([_token_like(rng, rng.randint(16, 128)), t.join_ids[t.revoked_seat],
                                         _near_miss(rng, rng.choice(holders))])
    return _bad("not allowed now", "JoinMatch", req, {("ALREADY_EXISTS", "SEAT_TAKEN")})


def oversize(t: Table) -> Bad:
    """A request over the server's limit (64 KiB, docs/api.md "Connecting"), or metadata over
    gRPC's 16 KiB: refused by gRPC itself, RESOURCE_EXHAUSTED without an ErrorInfo."""
    rng = t.rng
    size = MAX_REQUEST_BYTES + rng.randint(1, 200_000)
    pick = rng.randrange(4)
    if pick == 3:
        req, md = _submit(t, t.to_act, rng.choice(t.legal()), expected_seq=t.seq)
        header = rng.choice([("authorization", f"Bearer {t.tokens[t.to_act]}" + "a" * 17_000),
                             ("x-padding", "a" * rng.randint(17_000, 60_000))])
        return _bad("request over the size limits", "SubmitAction", req, {OVERSIZE}, (*md, header), t.to_act)
    if pick == 0:
        req, md = _submit(t, t.to_act, rng.choice(t.legal()), expected_seq=t.seq, client_action_id="x" * size)
        return _bad("request over the size limits", "SubmitAction", req, {OVERSIZE}, md, t.to_act)
    if pick == 1:
        return _bad("request over the size limits", "TerminateMatch",
                    admin_pb2.TerminateMatchRequest(match_id=t.match_id, reason="x" * size), {OVERSIZE},
                    bearer(ADMIN_TOKEN), ADMIN)
    return _bad("request over the size limits", "JoinMatch",
                pb.JoinMatchRequest(match_id=t.match_id, player_name="\u00e9" * size),
                {OVERSIZE})


def unknown_method(t: Table) -> Bad:
    """A method the server does not have (a typo, another version): gRPC's own UNIMPLEMENTED,
    without an ErrorInfo."""
    name = t.rng.choice(["cardgames.v1.CardGamesService/SubmitActions", "cardgames.v1.CardGamesService/submitAction",
                         "cardgames.v2.CardGamesService/SubmitAction", "cardgames.v1.AdminService/DeleteMatch",
                         "cardgames.v1.CardGamesService/", "x/" + _token_like(t.rng, 10)])
    method = Method(name, "/" + name, pb.SubmitActionRequest, False, False)
    req, md = _submit(t, t.to_act, t.rng.choice(t.legal()), expected_seq=t.seq)
    return Bad("unknown method", method, req.SerializeToString(), md, frozenset({UNIMPLEMENTED}), t.to_act, req)


KINDS = [(junk_action, 4), (illegal_action, 4), (other_game_action, 1), (not_your_turn, 2), (stale_sequence, 2),
         (bad_token, 5), (unknown_match, 3), (garbage_body, 4), (out_of_range, 3), (bad_field, 3),
         (not_now, 1), (oversize, 0.3), (unknown_method, 0.2)]


def _next_bad(t: Table) -> Bad:
    makers, weights = zip(*KINDS)
    while True:
        bad = t.queue.pop(0) if t.queue else t.rng.choices(makers, weights)[0](t)
        if bad is not None:
            assert len(bad.body) <= MAX_REQUEST_BYTES or bad.expected == {OVERSIZE}
            assert bad.method.name in METHODS or bad.method in OTHER_SERVICES or bad.expected == {UNIMPLEMENTED}
            return bad


# ---- the test ------------------------------------------------------------------------------------

@run
async def test_garbage_sent_to_server_reflection_is_a_malformed_request(caplog):
    """Regression: server reflection (docs/api.md "Connecting") is a bidirectional stream, which
    the interceptor passed through untouched: bytes that are no ServerReflectionRequest got
    grpc's own UNKNOWN, naming the parser's exception ("Unexpected <class
    'google.protobuf.message.DecodeError'>: ..."), and a traceback logged at ERROR level for
    each call (anyone could fill the log). Now INVALID_ARGUMENT / MALFORMED_REQUEST with its
    ErrorInfo and RequestInfo, as for the API's methods, after the answers to the valid
    messages before it; reflection still answers."""
    valid = reflection_pb2.ServerReflectionRequest(list_services="").SerializeToString()
    caplog.set_level(logging.WARNING)
    async with served(SessionConfig(db_path="memory:")) as (_, srv):
        cases = [(path, messages) for path in (REFLECTION.path, REFLECTION.path.replace(".v1alpha.", ".v1."))
                 for messages in ([b"\xff\xff\xff"], [b"\x0a\x02\xff\xfe"], [valid, b"\x12\x05ab"])]
        for i, (path, messages) in enumerate(cases):  # both versions of the protocol (server.py)
            call = srv.channel.stream_stream(path, request_serializer=None, response_deserializer=None)(
                metadata=(("x-request-id", f"reflection-{i}"),))
            for message in messages:
                await call.write(message)
            await call.done_writing()
            answers = []
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                async for answer in call:
                    answers.append(answer)
            err = error_of(raised.value)
            assert (err.code, err.reason, err.domain, err.request_id) == \
                (grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_REQUEST", DOMAIN, f"reflection-{i}")
            assert len(answers) == len(messages) - 1
        stub = reflection_pb2_grpc.ServerReflectionStub(srv.channel)
        answers = [a async for a in stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(
            list_services="")]))]
        assert "cardgames.v1.CardGamesService" in [s.name for s in answers[0].list_services_response.service]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "a traceback was logged"


def _check_refusals_read_alike(t: Table) -> int:
    """Refusing play:<card> of cards the sender may not know reads the same for every such card:
    another hand or a down card is never sent (GJ-11.3, JJK-9.4), and "a refused card names only
    your own card" (docs/api.md "Errors"). Returns how many refusals were compared."""
    for (seq, seat, kind), answers in t.refusals.items():
        assert len(answers) == 1, \
            f"{t.game.id} seq {seq}: refusing hidden cards to seat {seat} ({kind}) differs: {answers}"
    return sum(n - 1 for n in t.hidden_refusals.values())


async def _after_the_end(t: Table) -> None:
    """Once the match is over, acting, leaving, terminating and new tokens are refused
    (FAILED_PRECONDITION / MATCH_NOT_ACTIVE; docs/api.md "Deciding on fresh information": even
    with a stale expected_seq)."""
    rng = t.rng
    before = await _snapshot(t)
    for _ in range(12):
        seat = rng.randrange(t.n)
        pick = rng.randrange(4)
        expected = {(PRECONDITION, "MATCH_NOT_ACTIVE")}
        if pick == 0:
            req, md = _submit(t, seat, rng.choice(t.notations), expected_seq=rng.choice([0, t.seq, t.seq + 1]))
            bad = _bad("after the end", "SubmitAction", req, expected, md, seat)
        elif pick == 1:
            bad = _bad("after the end", "LeaveMatch", pb.LeaveMatchRequest(match_id=t.match_id, resign=True),
                       expected, bearer(t.tokens[seat]), seat)
        elif pick == 2:
            bad = _bad("after the end", "TerminateMatch", admin_pb2.TerminateMatchRequest(match_id=t.match_id),
                       expected, bearer(ADMIN_TOKEN), ADMIN)
        else:
            bad = _bad("after the end", "ReissueSeatToken",
                       admin_pb2.ReissueSeatTokenRequest(match_id=t.match_id, seat=seat), expected,
                       bearer(ADMIN_TOKEN), ADMIN)
        await _attempt(t, bad, before)


async def _table(srv: Any, mgr: Any, game: str, rng: random.Random) -> Table:
    """The match under test (its decks the admin's, drawn from ``rng``: the test is deterministic),
    every seat joined, one seat's token replaced; and another match, its tokens another match's,
    created without spectators."""
    pack = [CODES[c] for c in get_game(game).pack]
    req = pb.CreateMatchRequest(game=game, first_dealer=rng.randrange(get_game(game).num_seats))
    for _ in range(DECKS):
        req.decks.add(cards=rng.sample(pack, len(pack)))
    match_id = (await srv.games.CreateMatch(req, metadata=bearer(ADMIN_TOKEN))).match.match_id
    tokens = []
    ids = random.Random(f"join ids {game}")  # apart from ``rng``: the bad requests stay as they were
    join_ids = [_token_like(ids, 32) for _ in range(get_game(game).num_seats)]
    for s in range(get_game(game).num_seats):
        joined = await srv.games.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=s, player_name=f"player {s}",
                                                               client_join_id=join_ids[s]))
        tokens.append(joined.seat_token)
    other_id, other_tokens = await create_open_match(srv.games, game, spectators_allowed=False)
    seat = rng.randrange(len(tokens))  # the operator gives this seat a new token: the old one is revoked
    reissued = await srv.admin.ReissueSeatToken(admin_pb2.ReissueSeatTokenRequest(match_id=match_id, seat=seat),
                                                metadata=bearer(ADMIN_TOKEN))
    revoked, tokens[seat] = tokens[seat], reissued.seat_token
    t = Table(srv, mgr, get_game(game), rng, match_id, tokens, other_id, other_tokens, revoked, seat, join_ids)
    await _refresh(t)
    return t


@pytest.mark.parametrize("game", GAMES)
@run
async def test_bad_input_gets_its_documented_error_and_changes_nothing(game):
    rng = random.Random(f"bad input {game}")
    # no timer fires while the test runs (turn deadlines and absence grace stretched 1000-fold):
    # only the requests change the match
    async with served(SessionConfig(db_path="memory:", bot_pace_s=0.0, time_scale=1000.0)) as (mgr, srv):
        t = await _table(srv, mgr, game, rng)
        for _ in range(rng.randint(2, 6)):  # a match in progress
            await _legal_move(t)
        await _watch(t)
        await _legal_move(t)
        t.queue.extend(garbage_to_every_method(t))
        while t.sent < ATTEMPTS and not t.views[0].over:
            transcript = await export_transcript(srv.admin, t.match_id)
            before = await _snapshot(t)
            for _ in range(BLOCK):
                await _attempt(t, _next_bad(t), before)
            while t.queue:  # a twin is sent at the seq of its pair
                await _attempt(t, _next_bad(t), before)
            assert await export_transcript(srv.admin, t.match_id) == transcript
            await _legal_move(t)
        compared = _check_refusals_read_alike(t)
        assert t.sent >= ATTEMPTS, "the match ended before the bad input was all sent"
        for w in t.watchers:  # the watchers leave (the rest of the match would cost them the most time)
            w.task.cancel()
        await asyncio.gather(*(w.task for w in t.watchers), return_exceptions=True)
        moves = await _play_to_the_end(t)
        deals = len((await export_transcript(srv.admin, t.match_id))["deals"])
        assert deals <= DECKS, f"{deals} deals: raise DECKS to keep the test deterministic"
        summary = (await srv.games.GetMatch(pb.GetMatchRequest(match_id=t.match_id))).match
        assert summary.status == match_pb2.MATCH_STATUS_FINISHED and summary.result["over"] and moves > 0
        transcript = await export_transcript(srv.admin, t.match_id)
        # the match's log is the legal moves, every one of them, and nothing else
        assert [(s["seat"], s["action"]) for d in transcript["deals"] for s in d["steps"]] == t.moves
        assert len(t.moves) == summary.seq
        await _after_the_end(t)
        await _serving(t)
    assert all(t.counts[kind] for kind in ("junk action string", "illegal action", "not your turn",
                                           "stale or future expected_seq", "garbage request body",
                                           "unknown match id", "out-of-range number")), t.counts
    assert compared >= 10, "too few refusals of hidden cards were compared"
    print(f"\n{game}: {t.sent} bad requests ({compared} hidden-card refusals compared): "
          + json.dumps(dict(sorted(t.counts.items()))))
