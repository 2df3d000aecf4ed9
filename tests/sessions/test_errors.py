"""Every error path of the session layer: tokens, sequence numbers, idempotency, seats,
unknown matches, finished matches, permissions, bad requests, limits and draining."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import random
import tracemalloc

import pytest

from engine_service.observability.metrics import Metrics
from engine_service.rules import get_game
from engine_service.rules.errors import (IllegalAction, InvalidDeck, InvalidOptions, MalformedAction,
                                         NotYourTurn, UnknownGame)
from engine_service.sessions.api import (BadRequest, CreateMatchRequest, LimitExceeded, MatchNotActive,
                                         MatchNotFound, PermissionDenied, Principal, SeatConfig, SeatTaken,
                                         StaleSequence, Unauthenticated, Unavailable)
from engine_service.sessions.access import authenticate
from engine_service.sessions.manager import MatchManager
from engine_service.sessions.tokens import new_token, token_hash
from engine_service.sessions import validation
from engine_service.sessions.validation import clean_name
from engine_service.store import MemoryStore

from .helpers import ADMIN, GAMES, Stream, collect, config, manager, open_match, play_random, run, to_act, until
from .virtual_clock import advance_to, run_virtual

GAME = "klaberjass"


# ---- tokens ---------------------------------------------------------------------------------

def test_unknown_token_is_unauthenticated():
    async def go():
        async with manager() as mgr:
            match_id, _ = await open_match(mgr, GAME)
            with pytest.raises(Unauthenticated):
                mgr.authenticate(match_id, "not-a-token")
    run(go())


def test_no_token_is_a_spectator_unless_the_transport_vouched_for_the_admin():
    """access.authenticate grants the admin principal only when told the admin token was
    verified (``admin=True``): by default a call without a token is a spectator's."""
    assert authenticate({}, "m", None).kind == "spectator"
    assert authenticate({}, "m", "").kind == "spectator"
    assert authenticate({}, "m", None, admin=True).kind == "admin"


def test_a_seat_token_without_a_match_id_is_its_own_matchs_seat():
    """access.authenticate checks the token's match against the one the request names, and
    only when it names one: the rate limiter asks whose token a call carries before the
    request is checked (docs/api.md, Errors: RATE_LIMITED is counted per seat token, or per
    address without one), so a seat token sent with an empty match id still counts against
    its seat, not against the address its player shares with others."""
    token = new_token()
    tokens = {token_hash(token): ("m1", 2)}
    p = authenticate(tokens, "", token)
    assert (p.kind, p.match_id, p.seat, p.token_hash) == ("seat", "m1", 2, token_hash(token))
    with pytest.raises(PermissionDenied) as info:
        authenticate(tokens, "m2", token)
    assert info.value.reason == "WRONG_MATCH"


def test_seat_tokens_are_256_random_bits_and_stored_only_as_their_hash():
    """tokens.py: a seat token is 32 random bytes (URL-safe base64, no padding), never two
    alike; what is kept of it is its SHA-256, which is not the token."""
    tokens = {new_token() for _ in range(64)}
    assert len(tokens) == 64
    for token in tokens:
        assert len(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))) == 32
        # 43 characters of the URL-safe alphabet, sent as they are (no "=": a header, a file)
        assert len(token) == 43 and token.isascii() and (token.replace("-", "").replace("_", "")).isalnum()
        assert token_hash(token) == hashlib.sha256(token.encode()).hexdigest() != token


def test_seat_tokens_and_match_ids_owe_nothing_to_the_global_random_generator():
    """tokens.py: a seat token is a secret and a match id unguessable (knowing one is what lets
    a spectator watch): both come from the ``secrets`` module, never from Python's global
    ``random``, which a bot or a test may seed. The same seed twice still gives two tokens and
    two match ids that differ."""
    from engine_service.sessions.tokens import new_match_id

    state = random.getstate()
    try:
        draws = []
        for _ in range(2):
            random.seed(20240607)
            draws.append((new_token(), new_match_id()))
    finally:
        random.setstate(state)
    (token_1, id_1), (token_2, id_2) = draws
    assert token_1 != token_2
    assert id_1 != id_2


def test_client_ids_are_kept_as_salted_prefixed_hashes_pinned_across_releases():
    """tokens.py: a seat keeps its ``client_join_id`` as the SHA-256 of
    ``cardgames-join-id:<match id>:<id>`` (salted with the match id: a weak id guessed is good
    for one match only), a match its ``client_create_id`` as that of ``cardgames-create-id:<id>``;
    the prefixes keep the three kinds of hash apart. The hashes are stored (SeatRecord.join_hash,
    MatchRecord.create_hash), so a release that computed them otherwise would no longer know a
    retried join or creation made before it."""
    from engine_service.sessions.tokens import create_id_hash, join_id_hash

    key = "0f8fad5b-d9cb-469f-a165-70867728950e"
    assert join_id_hash("m1", key) == hashlib.sha256(f"cardgames-join-id:m1:{key}".encode()).hexdigest()
    assert create_id_hash(key) == hashlib.sha256(f"cardgames-create-id:{key}".encode()).hexdigest()
    assert join_id_hash("m1", key) != join_id_hash("m2", key)
    assert len({join_id_hash("m1", key), create_id_hash(key), token_hash(key)}) == 3


def test_token_of_another_match_is_denied():
    async def go():
        async with manager() as mgr:
            a, _ = await open_match(mgr, GAME)
            b, _ = await open_match(mgr, GAME)
            summary = await mgr.create_match(CreateMatchRequest(game=GAME))
            joined = await mgr.join_match(summary.match_id, 0, "eve")
            with pytest.raises(PermissionDenied) as info:
                mgr.authenticate(a, joined.token)
            assert info.value.reason == "WRONG_MATCH"
            p = mgr.authenticate(summary.match_id, joined.token)
            assert (p.kind, p.match_id, p.seat) == ("seat", summary.match_id, 0)
            # a principal of one match used on another: refused everywhere
            with pytest.raises(PermissionDenied):
                await mgr.submit_action(b, p, "pass", None)
            with pytest.raises(PermissionDenied):
                await mgr.get_view(b, p)
            with pytest.raises(PermissionDenied):
                await mgr.leave_match(b, p, True)
            with pytest.raises(PermissionDenied):
                await collect(mgr.watch(b, p, -1))
    run(go())


def test_a_seat_token_sees_only_its_seat_and_acts_only_for_it():
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, GAME)
            seat, p, env = await to_act(mgr, match_id, ps)
            other = ps[1 - seat]
            other_env = await mgr.get_view(match_id, other)
            assert other_env.seat == 1 - seat and other_env.view["seat"] == 1 - seat
            assert other_env.view["legal"] == []
            with pytest.raises(NotYourTurn):
                await mgr.submit_action(match_id, other, env.view["legal"][0], env.seq)
            assert (await mgr.get_match(match_id)).seq == 0
            state = mgr.state_of(match_id)
            assert env.view["hand"] == state.view(seat)["hand"]
            assert set(other_env.view["hand"]).isdisjoint(env.view["hand"])
    run(go())


def test_spectator_and_admin_cannot_act():
    async def go():
        async with manager() as mgr:
            match_id, _ = await open_match(mgr, GAME)
            with pytest.raises(Unauthenticated):
                await mgr.submit_action(match_id, mgr.authenticate(match_id, None), "pass", None)
            with pytest.raises(PermissionDenied):
                await mgr.submit_action(match_id, mgr.authenticate(match_id, None, admin=True), "pass", None)
            with pytest.raises(Unauthenticated):
                await mgr.leave_match(match_id, Principal("spectator", match_id), True)
    run(go())


# ---- sequence numbers and idempotency -----------------------------------------------------------

def test_stale_expected_seq_is_aborted_with_the_current_view():
    """(And counted: docs/operations.md, ``cardgames_actions_total{result="stale"}``, which
    CardgamesActionsRejected counts among the rejected actions, under the match's game.)"""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, GAME)
            seat, p, env = await to_act(mgr, match_id, ps)
            await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq)
            seat2, p2, env2 = await to_act(mgr, match_id, ps)
            with pytest.raises(StaleSequence) as info:
                await mgr.submit_action(match_id, p2, env2.view["legal"][0], env2.seq - 1)
            assert info.value.code == "ABORTED" and info.value.current.seq == env2.seq == 1
            assert info.value.current.seat == seat2
            assert info.value.current.view == env2.view
            assert (await mgr.get_match(match_id)).seq == 1
            assert mgr.metrics.value("cardgames_actions_total",
                                     {"game": GAME, "by": "player", "result": "stale"}) == 1
            # ahead of the match too (card_games.proto: a backup restored behind the client's
            # view), with both seqs in the metadata (docs/api.md, Errors)
            with pytest.raises(StaleSequence) as ahead:
                await mgr.submit_action(match_id, p2, env2.view["legal"][0], env2.seq + 1)
            assert ahead.value.metadata == {"expected_seq": "2", "seq": "1"}
            assert ahead.value.current.seq == 1 and ahead.value.current.seat == seat2
            # each seat's refusal carries its own view, never another seat's hand
            for other in (0, 1):
                with pytest.raises(StaleSequence) as mine:
                    await mgr.submit_action(match_id, ps[other], "pass", 0)
                own = await mgr.get_view(match_id, ps[other])
                assert (mine.value.current.seat, mine.value.current.view) == (other, own.view)
            # expected_seq None skips the check
            res = await mgr.submit_action(match_id, p2, env2.view["legal"][0], None)
            assert res.seq == 2
    run(go())


def test_a_retried_client_action_id_returns_the_first_result_and_never_applies_twice():
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, GAME)
            seat, p, env = await to_act(mgr, match_id, ps)
            action = env.view["legal"][0]
            first = await mgr.submit_action(match_id, p, action, env.seq, "retry-me")
            again = await mgr.submit_action(match_id, p, action, env.seq, "retry-me")
            assert not first.duplicate and again.duplicate
            assert (again.seq, again.action, again.view) == (first.seq, first.action, first.view)
            # the match moved on: the retry still answers with the first result (its view)
            await play_random(mgr, match_id, ps, random.Random(1), max_actions=3)
            later = await mgr.submit_action(match_id, p, action, env.seq, "retry-me")
            assert later.duplicate and later.seq == first.seq and later.view == first.view
            summary = await mgr.get_match(match_id)
            assert summary.seq == 4
            # the same id for another action is a client bug, not a retry
            with pytest.raises(BadRequest) as info:
                await mgr.submit_action(match_id, p, "play:AS", None, "retry-me")
            assert info.value.reason == "CLIENT_ACTION_ID_REUSED"
            # another action that was legal at the first one's position is another action too
            assert env.view["legal"][1] != action
            with pytest.raises(BadRequest) as info:
                await mgr.submit_action(match_id, p, env.view["legal"][1], None, "retry-me")
            assert info.value.reason == "CLIENT_ACTION_ID_REUSED"
            # also with a string that is no action at all (docs/api.md, Acting: the id's reuse
            # is what is wrong, not the notation)
            with pytest.raises(BadRequest) as info:
                await mgr.submit_action(match_id, p, "no-such-verb:ZZ", None, "retry-me")
            assert info.value.reason == "CLIENT_ACTION_ID_REUSED"
            # ids are per seat: the other seat may use the same id
            seat2, p2, env2 = await to_act(mgr, match_id, ps)
            if seat2 != seat:
                res = await mgr.submit_action(match_id, p2, env2.view["legal"][0], env2.seq, "retry-me")
                assert not res.duplicate
            return mgr.metrics.value("cardgames_actions_total",
                                     {"game": GAME, "by": "player", "result": "duplicate"})
    assert run(go()) == 2


def test_a_retry_after_its_seat_left_is_answered_with_its_first_result():
    """docs/api.md, "Acting": a repeat of an action applied before its seat left a running
    Georgian Joker match (GJ-12.4: a bot plays the seat on) is answered ``duplicate`` with the
    seq and action of its one application, the seat's view of that moment; only new actions
    are refused SEAT_LEFT. A client that lost the answer learns its move counted."""
    from engine_service.sessions.api import PermissionDenied

    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker")
            seat, p, env = await to_act(mgr, match_id, ps)
            action = env.view["legal"][0]
            first = await mgr.submit_action(match_id, p, action, env.seq, "before-leaving")
            await mgr.leave_match(match_id, p, resign=True)
            again = await mgr.submit_action(match_id, p, action, env.seq, "before-leaving")
            with pytest.raises(PermissionDenied) as new_id:
                await mgr.submit_action(match_id, p, action, None, "after-leaving")
            return seat, first, again, new_id.value

    seat, first, again, refused = run(go())
    assert again.duplicate and (again.seq, again.action) == (first.seq, first.action)
    assert again.view.seq == first.seq and again.view.view["seat"] == seat
    assert refused.reason == "SEAT_LEFT"


def test_a_retry_after_the_match_ended_is_answered_with_its_first_result():
    """docs/api.md, "Acting": a repeat is answered with ``duplicate`` and the seq and action of
    the one application also once the match has ended (a termination at that very seq: its
    view shows the end), not MATCH_NOT_ACTIVE; a new id is refused then."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, GAME)
            seat, p, env = await to_act(mgr, match_id, ps)
            action = env.view["legal"][0]
            first = await mgr.submit_action(match_id, p, action, env.seq, "last-one")
            await mgr.terminate_match(match_id, "test")
            again = await mgr.submit_action(match_id, p, action, env.seq, "last-one")
            with pytest.raises(MatchNotActive) as new_id:
                await mgr.submit_action(match_id, p, action, None, "a-new-one")
            return first, again, new_id.value

    first, again, refused = run(go())
    assert again.duplicate and (again.seq, again.action) == (first.seq, first.action) and first.seq == 1
    assert again.view.seq == 1 and again.view.status == "terminated"
    assert refused.reason == "MATCH_NOT_ACTIVE"


def test_a_client_action_id_with_control_characters_is_refused_and_changes_nothing():
    """Every store must be able to keep the id (PostgreSQL text holds no NUL): a control
    character is a malformed request, not a store failure that a retry would repeat."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, GAME)
            seat, p, env = await to_act(mgr, match_id, ps)
            for bad in ("a\x00b", "tab\there", "line\n"):
                with pytest.raises(BadRequest) as info:
                    await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, bad)
                assert info.value.reason == "BAD_CLIENT_ACTION_ID" and info.value.code == "INVALID_ARGUMENT"
            assert (await mgr.get_match(match_id)).seq == 0
            res = await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "ok-id é 1")
            assert res.seq == 1
    run(go())


def test_the_session_layer_takes_an_action_of_64_characters_and_a_client_action_id_of_128():
    """The session layer's own bounds are the API's (docs/api.md, "Acting": a
    ``client_action_id`` of up to 128 printable characters; the transport refuses an action
    over 64 characters): a 64-character action reaches the rules (MALFORMED_ACTION, not
    BAD_ACTION), a 65-character one is BAD_ACTION; a 128-character id is taken, a 129-character
    one is BAD_CLIENT_ACTION_ID (field ``client_action_id``) and changes nothing."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, GAME)
            seat, p, env = await to_act(mgr, match_id, ps)
            with pytest.raises(MalformedAction):
                await mgr.submit_action(match_id, p, "p" * 64, env.seq, "")
            with pytest.raises(BadRequest) as too_long:
                await mgr.submit_action(match_id, p, "p" * 65, env.seq, "")
            with pytest.raises(BadRequest) as long_id:
                await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "c" * 129)
            assert (await mgr.get_match(match_id)).seq == 0
            res = await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "c" * 128)
            return too_long.value, long_id.value, res.seq

    too_long, long_id, seq = run(go())
    assert (too_long.code, too_long.reason) == ("INVALID_ARGUMENT", "BAD_ACTION")
    assert (long_id.code, long_id.reason, long_id.metadata) == ("INVALID_ARGUMENT", "BAD_CLIENT_ACTION_ID",
                                                                {"field": "client_action_id"})
    assert seq == 1


def test_a_client_action_id_that_is_no_string_is_bad_client_action_id_and_changes_nothing():
    """sessions/actions.py checks the request itself (docs/api.md, "Acting": a
    ``client_action_id`` is a string of up to 128 printable characters): an id that is no
    string (a caller of the session API, not the wire) is BAD_CLIENT_ACTION_ID, not a
    TypeError, and nothing is applied."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, GAME)
            seat, p, env = await to_act(mgr, match_id, ps)
            for bad in (None, 7, b"id"):
                with pytest.raises(BadRequest) as info:
                    await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, bad)
                assert (info.value.code, info.value.reason) == ("INVALID_ARGUMENT", "BAD_CLIENT_ACTION_ID")
            assert (await mgr.get_match(match_id)).seq == 0
    run(go())


def test_bad_names_and_termination_reasons_say_which_field_and_change_nothing():
    """A name or a termination reason with a control character is refused with the reason of
    its own field (BAD_NAME for the match and player names, BAD_TERMINATE_REASON for
    TerminateMatch's reason) and the field named in the metadata; nothing changes."""
    async def go():
        async with manager() as mgr:
            with pytest.raises(BadRequest) as info:
                await mgr.create_match(CreateMatchRequest(game=GAME, name="bell\x07"))
            assert (info.value.reason, info.value.metadata) == ("BAD_NAME", {"field": "name"})
            match_id, ps = await open_match(mgr, GAME)
            with pytest.raises(BadRequest) as info:
                await mgr.join_match(match_id, None, "nul\x00")
            assert (info.value.reason, info.value.metadata) == ("BAD_NAME", {"field": "player_name"})
            for bad in ("line\nbreak\x1b[31m", "\u200bzero width", "del\x7f"):
                with pytest.raises(BadRequest) as info:
                    await mgr.terminate_match(match_id, bad)
                assert info.value.code == "INVALID_ARGUMENT"
                assert (info.value.reason, info.value.metadata) == ("BAD_TERMINATE_REASON", {"field": "reason"})
                assert (await mgr.get_match(match_id)).status == "active"
            # not a string (the session API is called in-process too): refused the same way,
            # not an AttributeError the transport would turn into INTERNAL
            with pytest.raises(BadRequest) as info:
                await mgr.create_match(CreateMatchRequest(game=GAME, name=7))
            assert (info.value.reason, info.value.metadata) == ("BAD_NAME", {"field": "name"})
            with pytest.raises(BadRequest) as info:
                await mgr.join_match(match_id, None, ["ann"])
            assert (info.value.reason, info.value.metadata) == ("BAD_NAME", {"field": "player_name"})
            with pytest.raises(BadRequest) as info:
                await mgr.terminate_match(match_id, b"why")
            assert (info.value.reason, info.value.metadata) == ("BAD_TERMINATE_REASON", {"field": "reason"})
            assert (await mgr.get_match(match_id)).status == "active"
            summary = await mgr.terminate_match(match_id, "  server \t maintenance ")
            assert summary.status == "terminated" and summary.result["reason"] == "server maintenance"
            match_id, _ = await open_match(mgr, GAME)
            summary = await mgr.terminate_match(match_id, " \t ")  # blank: the default reason
            assert summary.result["reason"] == "terminated by the admin"
    run(go())


#: Names as phones and keyboards type them that hold a format character (category Cf) or an
#: emoji newer than Python 3.11's Unicode 14: ZWJ sequences, a Persian word with its
#: zero-width non-joiner, a subdivision flag (tag characters), 🩷 (U+1FA77, Unicode 15).
TYPED_NAMES = ["👨\u200d👩\u200d👧 table", "👩\u200d💻", "🏳\ufe0f\u200d🌈 fan", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
               "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F scot", "\U0001FA77 ada",
               "\U0001FACE\u200d\U0001FA77",
               # the first and last code points of the blocks kept for pictographs (unassigned
               # in Unicode 14): each is an emoji to come, not an unknown character
               "\U0001FAFF", "\U0001FC00 x", "x \U0001FFFD"]
#: What stays refused: a joiner that joins nothing visible, tags outside a flag sequence, and
#: the format characters that hide or reorder text (bidi override, zero-width space, BOM...).
HIDDEN_NAMES = ["\u200d", "a\u200d", "\u200da", "a \u200d b", "a\u200d\u200db", "a\U000E0067",
                "\U000E0067\U000E007F", "\U0001F3F4\U000E007F", "a\u202eb", "a\u200bb", "\u00ad",
                "x\ufeff", "\ue000", "x\u0378", "a\u2066b",
                # a joiner with one visible side only, either side; a zero-width space just
                # before a flag's tag sequence (only the flag's own tags are let through)
                "x \u200db", "a\u200d b", "x\u200b\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F",
                # just outside those blocks: unassigned, or a noncharacter (never assigned)
                "x\U0001EFFF", "\U0001FFFE",
                # unassigned between them (Symbols for Legacy Computing): no pictograph block
                "x\U0001FBFF"]


def test_names_typed_with_emoji_sequences_and_joiners_are_accepted():
    """Regression: every format character counted as a control character, so a player name
    with a ZWJ emoji (👩‍💻), a flag of England or a Persian word (its ZWNJ), or an emoji of
    Unicode 15 or later (the server's Python 3.11 knows 14), was BAD_NAME "contains control
    characters". They are kept as typed; the characters that hide or reorder text stay
    refused, and so does a joiner or a tag that joins nothing."""
    for name in TYPED_NAMES:
        assert clean_name(name, 64, "n") == name
    for name in HIDDEN_NAMES:
        with pytest.raises(BadRequest) as info:
            clean_name(name, 64, "n")
        assert info.value.reason == "BAD_NAME", name

    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME, name=TYPED_NAMES[0]))
            a = await mgr.join_match(s.match_id, None, TYPED_NAMES[3])
            with pytest.raises(BadRequest) as info:
                await mgr.join_match(s.match_id, None, "a\u202eb")
            return s.name, (await mgr.get_match(s.match_id)).seats[a.seat].player_name, info.value.reason

    assert run(go()) == (TYPED_NAMES[0], TYPED_NAMES[3], "BAD_NAME")


@pytest.mark.parametrize("name, named", [
    ("bell\x07", "U+0007, a control character"), ("a\u202eb", "U+202E, an invisible format character"),
    ("\ue000", "U+E000, a private-use character"), ("x\u0378", "U+0378, a noncharacter or a character unassigned"),
    ("x\ud800", "U+D800, a surrogate"),  # a lone surrogate (in-process callers: a str may hold one)
])
def test_a_refused_name_says_which_character_and_why(name, named):
    """The message names the refused character and its kind: it said "contains control
    characters" of a private-use character or of a letter newer than the server's Unicode
    database too, which a client had not sent as controls and could not find."""
    with pytest.raises(BadRequest) as info:
        clean_name(name, 64, "the player name", field="player_name")
    assert info.value.message.startswith(f"the player name contains {named}")
    assert (info.value.reason, info.value.metadata) == ("BAD_NAME", {"field": "player_name"})


@pytest.mark.parametrize("game_id", GAMES)
def test_rejected_actions_change_nothing(game_id):
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, game_id)
            seat, p, env = await to_act(mgr, match_id, ps)
            state = mgr.state_of(match_id)
            before = (state.legal_actions(), state.zones(), env.view)
            with pytest.raises(MalformedAction):
                await mgr.submit_action(match_id, p, "dance:now", env.seq)
            illegal = next(a for a in ("play:AS", "play:7C", "bid:9", "pass", "take", "trump:S")
                           if a not in env.view["legal"] and _parses(state, a))
            with pytest.raises(IllegalAction):
                await mgr.submit_action(match_id, p, illegal, env.seq)
            for bad in ("", "x" * 65, None, 7):
                with pytest.raises(BadRequest):
                    await mgr.submit_action(match_id, p, bad, env.seq)
            state = mgr.state_of(match_id)
            after = (state.legal_actions(), state.zones(), (await mgr.get_view(match_id, p)).view)
            assert after == before and (await mgr.get_match(match_id)).seq == 0
    run(go())


def _parses(state, action):
    try:
        state.parse_action(action)
        return True
    except MalformedAction:
        return False


# ---- seats ------------------------------------------------------------------------------------

def test_seat_taken_bot_seat_no_open_seat_and_bad_seat():
    async def go():
        async with manager(host=_OneBotHost()) as mgr:
            s = await mgr.create_match(CreateMatchRequest(
                game=GAME, seats=[SeatConfig(), SeatConfig("bot", "dummy")]))
            await mgr.join_match(s.match_id, 0, "ann")
            with pytest.raises(SeatTaken):
                await mgr.join_match(s.match_id, 0, "bob")
            with pytest.raises(SeatTaken):
                await mgr.join_match(s.match_id, 1, "bob")
            with pytest.raises(SeatTaken):
                await mgr.join_match(s.match_id, None, "bob")
            for bad in (2, -1, True, "0"):
                with pytest.raises(BadRequest) as info:
                    await mgr.join_match(s.match_id, bad, "bob")
                assert (info.value.reason, info.value.message) == ("BAD_SEAT", "seat must be 0..1")
                assert info.value.metadata == {"field": "seat"}
                # the admin's ReissueSeatToken names a seat the same way (a bool is no seat)
                with pytest.raises(BadRequest) as info:
                    await mgr.reissue_seat_token(s.match_id, bad)
                assert (info.value.reason, info.value.metadata) == ("BAD_SEAT", {"field": "seat"}), bad
            with pytest.raises(BadRequest):
                await mgr.join_match(s.match_id, None, "bad\x00name")
            with pytest.raises(BadRequest):
                await mgr.join_match(s.match_id, None, "n" * 65)
    run(go())


def test_an_enormous_name_is_refused_without_splitting_it_all(monkeypatch):
    """Names are collapsed (runs of whitespace to one space) and then held to
    ``max_name_length``: the whole input used to be split into words first, so a 4 MB name
    passed in-process (the gRPC edge caps the raw field) cost ~0.2 s of event-loop CPU and
    ~90 MB before its refusal. The split now stops after ``limit`` words; names collapse
    and are refused exactly as before. A join with such a name is refused there too, before
    any per-character check, holding no more than one copy of the name at any moment (the
    work, counted, where a CPU-time bound failed loaded machines for no fault)."""
    enormous = "ab " * 1_400_000
    tracemalloc.start()
    try:
        with pytest.raises(BadRequest) as info:
            clean_name(enormous, 64, "the player name")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.reason == "BAD_NAME"
    assert peak < 1.5 * len(enormous)  # at most one copy of it (it was 20 times its size)
    # the limit still counts the collapsed name: surplus whitespace anywhere is fine
    assert clean_name(" \t ada  \n lovelace " + " " * 100_000, 12, "n") == "ada lovelace"
    assert clean_name("x" * 64, 64, "n") == "x" * 64
    # the word count refuses only what the length would: a limit of 1 (max_name_length's
    # least) keeps a one-letter name, its whitespace collapsed
    assert clean_name("x", 1, "n") == "x" and clean_name(" \tx\n", 1, "n") == "x"
    assert clean_name("  " + "x y " * 16, 64, "n") == ("x y " * 16).strip()
    assert clean_name("", 64, "n") == "" and clean_name(" \u3000\x1c ", 64, "n") == ""
    for too_long in ("x" * 65, "x " * 32 + "y", " ".join(["x" * 30] * 3), "x " * 65):
        with pytest.raises(BadRequest) as info:
            clean_name(too_long, 64, "n", field="player_name")
        # refused by its length or by its word count alike: the field named (docs/api.md "Errors")
        assert (info.value.reason, info.value.metadata) == ("BAD_NAME", {"field": "player_name"}), too_long
    for too_long in ("xy", "x y"):
        with pytest.raises(BadRequest):
            clean_name(too_long, 1, "n")

    checked: list[str] = []  # names given the per-character check (validation._refused_character)
    monkeypatch.setattr(validation, "_refused_character",
                        lambda text, real=validation._refused_character: checked.append(text) or real(text))

    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME))
            assert mgr.config.max_name_length == 64
            checked.clear()  # the match's name, checked as it was created
            tracemalloc.start()
            try:
                with pytest.raises(BadRequest) as info:
                    await mgr.join_match(s.match_id, None, enormous)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            return info.value, peak, (await mgr.get_match(s.match_id)).seats

    refusal, peak, seats = run(go())
    assert refusal.reason == "BAD_NAME" and "longer than 64 characters" in str(refusal), refusal
    assert not any(seat.taken for seat in seats)
    assert checked == []  # refused by its length, before any character of it was looked at
    assert peak < 1.5 * len(enormous)  # one copy of it at most, as clean_name's own


def test_first_open_seat_and_leaving_before_the_start_frees_the_seat():
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME))
            a = await mgr.join_match(s.match_id, None, "ann")
            assert a.seat == 0
            pa = mgr.authenticate(s.match_id, a.token)
            summary = await mgr.leave_match(s.match_id, pa, resign=False)
            assert summary.status == "waiting" and not summary.seats[0].taken
            with pytest.raises(Unauthenticated):
                mgr.authenticate(s.match_id, a.token)
            # a call authenticated before the leave: the token was voided, not replaced
            # (docs/api.md: MISSING_OR_BAD_TOKEN, never TOKEN_REVOKED's "replaced")
            with pytest.raises(Unauthenticated) as voided:
                await mgr.get_view(s.match_id, pa)
            assert voided.value.reason == "MISSING_OR_BAD_TOKEN"
            b = await mgr.join_match(s.match_id, None, "bob")
            assert b.seat == 0 and b.token != a.token
    run(go())


def test_waiting_match_refuses_actions():
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME))
            j = await mgr.join_match(s.match_id, 0, "ann")
            p = mgr.authenticate(s.match_id, j.token)
            with pytest.raises(MatchNotActive) as info:
                await mgr.submit_action(s.match_id, p, "pass", None)
            assert info.value.reason == "MATCH_WAITING"
            env = await mgr.get_view(s.match_id, p)
            assert env.status == "waiting" and env.deadline is None
    run(go())


# ---- unknown and finished matches ------------------------------------------------------------

def test_unknown_match_everywhere():
    async def go():
        async with manager() as mgr:
            spectator = Principal("spectator", "nope")
            seat = Principal("seat", "nope", 0)
            for call in (mgr.get_match("nope"), mgr.get_view("nope", spectator),
                         mgr.submit_action("nope", seat, "pass", None), mgr.join_match("nope", None, "x"),
                         mgr.inspect_match("nope"), mgr.export_transcript("nope"),
                         mgr.terminate_match("nope", "x"), mgr.leave_match("nope", seat, True),
                         collect(mgr.watch("nope", spectator, -1)), mgr.get_match("x" * 500)):
                with pytest.raises(MatchNotFound):
                    await call
    run(go())


def test_finished_match_refuses_actions_joins_and_leaving():
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, GAME)
            summary = await mgr.terminate_match(match_id, "maintenance")
            assert summary.status == "terminated" and summary.result["outcome"] == "terminated"
            assert summary.result["reason"] == "maintenance"
            with pytest.raises(MatchNotActive):
                await mgr.submit_action(match_id, ps[0], "pass", None)
            with pytest.raises(MatchNotActive):
                await mgr.join_match(match_id, None, "late")
            with pytest.raises(MatchNotActive):
                await mgr.leave_match(match_id, ps[0], True)
            with pytest.raises(MatchNotActive):
                await mgr.terminate_match(match_id, "again")
            # views of a finished match are still available
            assert (await mgr.get_view(match_id, ps[0])).status == "terminated"
    run(go())


# ---- creation ------------------------------------------------------------------------------------

class _OneBotHost:
    """A stand-in bot host that offers one bot, ``dummy``, which always plays the first legal
    action (for tests that need a bot seat without worker processes)."""

    def bots(self):
        from engine_service.sessions.api import BotInfo
        return [BotInfo("dummy", tuple(GAMES), "first legal action")]

    def plays(self, bot, game_id):
        return bot == "dummy"

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        from types import SimpleNamespace
        return SimpleNamespace(action=legal[0], failure=None, elapsed_s=0.0)

    async def close(self):
        pass


def test_bad_create_requests():
    async def go():
        async with manager(host=_OneBotHost()) as mgr:
            with pytest.raises(UnknownGame):
                await mgr.create_match(CreateMatchRequest(game="chess"))
            with pytest.raises(InvalidOptions):
                await mgr.create_match(CreateMatchRequest(game=GAME, options={"no_such_option": 1}))
            # one seat per seat of the game, neither fewer nor more (docs/api.md "Errors":
            # field ``seats`` for their number)
            for seats in ([SeatConfig()], [SeatConfig()] * 3):
                with pytest.raises(BadRequest) as info:
                    await mgr.create_match(CreateMatchRequest(game=GAME, seats=seats))
                assert (info.value.reason, info.value.metadata) == ("BAD_SEATS", {"field": "seats"}), seats
            for seats in ([SeatConfig(), SeatConfig("bot", "nobody")], [SeatConfig("bot", "nobody"), SeatConfig()]):
                with pytest.raises(BadRequest) as info:  # whichever seat is the bot's
                    await mgr.create_match(CreateMatchRequest(game=GAME, seats=seats))
                assert (info.value.reason, info.value.metadata) == ("UNKNOWN_BOT", {"bot": "nobody"})
                assert info.value.message == f"no bot 'nobody' plays {GAME}; available: dummy"
            with pytest.raises(BadRequest) as info:
                await mgr.create_match(CreateMatchRequest(game=GAME, seats=[SeatConfig(), SeatConfig("bot")]))
            # the session layer refuses it as the API's codec does (docs/api.md "Errors")
            assert (info.value.reason, info.value.metadata) == ("MISSING_FIELD", {"field": "seats[1].bot.name"})
            assert info.value.message == "seat 1: a bot seat needs the bot's name"
            for kind in ("robot", ""):  # each seat open or a bot: no kind is neither
                with pytest.raises(BadRequest) as info:
                    await mgr.create_match(CreateMatchRequest(game=GAME, seats=[SeatConfig(), SeatConfig(kind)]))
                assert (info.value.reason, info.value.metadata) == ("BAD_SEATS", {"field": "seats[1]"}), kind
            # the 32-card games follow JJK-11's values too (NOTATION.md section 5)
            for turn in (-1, 0.001, 9.9, 120.5, float("nan"), float("inf")):
                with pytest.raises(BadRequest) as info:
                    await mgr.create_match(CreateMatchRequest(game=GAME, turn_time_s=turn))
                assert info.value.reason == "BAD_TURN_TIME", turn
            with pytest.raises(BadRequest):
                await mgr.create_match(CreateMatchRequest(game=GAME, name="n" * 65))
            # explicit decks and first dealer are for the admin only
            with pytest.raises(PermissionDenied):
                await mgr.create_match(CreateMatchRequest(game=GAME, first_dealer=0))
            with pytest.raises(PermissionDenied):
                await mgr.create_match(CreateMatchRequest(game=GAME, decks=[list(_codes(GAME))]))
            with pytest.raises(InvalidDeck):
                await mgr.create_match(CreateMatchRequest(game=GAME, decks=[["AS", "AS"]]), admin=True)
            with pytest.raises(BadRequest):
                await mgr.create_match(CreateMatchRequest(game=GAME, first_dealer=2), admin=True)
            # the Joker games validate the turn time through their table option (10-120 s)
            with pytest.raises(InvalidOptions):
                await mgr.create_match(CreateMatchRequest(game="georgian_joker", turn_time_s=5))
            with pytest.raises(BadRequest):
                await mgr.create_match(CreateMatchRequest(game="georgian_joker", turn_time_s=40,
                                                          options={"turn_time_s": 50}))
            assert mgr.match_ids() == []
    run(go())


def test_a_bot_seat_without_a_bot_host_is_an_unknown_bot():
    """A server without bots (no bot host) refuses a bot seat or a takeover bot as
    UNKNOWN_BOT with none available, as one whose host lacks the bot, and creates nothing."""
    async def go():
        async with manager() as mgr:
            errors = []
            for request in (CreateMatchRequest(game=GAME, seats=[SeatConfig(), SeatConfig("bot", "dummy")]),
                            CreateMatchRequest(game="georgian_joker", takeover_bot="dummy")):
                with pytest.raises(BadRequest) as info:
                    await mgr.create_match(request)
                errors.append((info.value.reason, info.value.message))
            return errors, mgr.match_ids()

    errors, ids = run(go())
    assert errors == [("UNKNOWN_BOT", f"no bot 'dummy' plays {g}; available: none")
                      for g in (GAME, "georgian_joker")]
    assert ids == []


def _codes(game_id):
    from engine_service.rules.cards import card_code
    return [card_code(c) for c in get_game(game_id).pack]


def test_without_an_admin_first_dealer_the_rulebooks_draw_deals_first(monkeypatch):
    """A match created without ``first_dealer`` is dealt first by the seat the rulebook's
    draw names (api.CreateMatchRequest: None is the rulebook's draw, from the CSPRNG), not
    always by seat 0."""
    from engine_service.sessions import terms
    monkeypatch.setattr(terms, "draw_first_dealer", lambda game, options: 1)

    async def go():
        async with manager() as mgr:
            match_id, _ = await open_match(mgr, GAME)
            state = mgr.state_of(match_id)
            return state.first_dealer, state.dealer()

    assert run(go()) == (1, 1)


def test_a_match_name_is_held_to_the_servers_max_name_length():
    """SessionConfig.max_name_length (not a fixed 64) bounds the match name: one character
    more is BAD_NAME naming the field and creates nothing."""
    async def go():
        async with manager(config(max_name_length=8)) as mgr:
            with pytest.raises(BadRequest) as info:
                await mgr.create_match(CreateMatchRequest(game=GAME, name="n" * 9))
            held = mgr.match_ids()
            s = await mgr.create_match(CreateMatchRequest(game=GAME, name="n" * 8))
            return info.value, held, s.name

    refused, held, name = run(go())
    assert (refused.reason, refused.metadata, held, name) == ("BAD_NAME", {"field": "name"}, [], "n" * 8)


def test_a_takeover_bot_must_play_the_matchs_game():
    """A table's ``takeover_bot`` is a bot that plays the match's game (validation.check_bot:
    "a bot seat, a match's takeover bot"): one installed for Georgian Joker only is
    UNKNOWN_BOT for a Klaberjass table, which is not created."""
    class JokerOnly(_OneBotHost):
        def bots(self):
            from engine_service.sessions.api import BotInfo
            return [BotInfo("dummy", ("georgian_joker",), "test double")]

        def plays(self, bot, game_id):
            return bot == "dummy" and game_id == "georgian_joker"

    async def go():
        async with manager(host=JokerOnly()) as mgr:
            with pytest.raises(BadRequest) as info:
                await mgr.create_match(CreateMatchRequest(game=GAME, takeover_bot="dummy"))
            return info.value, mgr.match_ids()

    refused, held = run(go())
    assert (refused.reason, refused.metadata, held) == ("UNKNOWN_BOT", {"bot": "dummy"}, [])


def test_admin_decks_and_first_dealer_are_used_and_stay_secret():
    async def go():
        async with manager() as mgr:
            deck = _codes(GAME)
            random.Random(5).shuffle(deck)
            s = await mgr.create_match(CreateMatchRequest(game=GAME, decks=[deck], first_dealer=1), admin=True)
            state = mgr.state_of(s.match_id)
            inspected = (await mgr.inspect_match(s.match_id)).envelope
            spectator = await mgr.get_view(s.match_id, Principal("spectator", s.match_id))
            return s, state, inspected, spectator, deck

    s, state, inspected, spectator, deck = run(go())
    assert state.dealer() == 1 and state.first_dealer == 1
    assert inspected.view["decks"][0] == deck and inspected.view["first_dealer"] == 1
    assert sorted(inspected.view["hands"][0] + inspected.view["hands"][1]) == sorted(
        state.hand_codes(state.zones()["hand0"] | state.zones()["hand1"]))
    assert "decks" not in spectator.view and "hands" not in spectator.view
    assert inspected.view["to_act"] == state.to_act() and inspected.view["legal"] == state.legal_actions()
    assert inspected.view["legal"] and spectator.view["legal"] == []  # the seat to act's, for the admin only
    # every card's location (admin.proto's zones): each zone of the state, the deck in all
    zones = inspected.view["zones"]
    assert set(zones) == set(state.zones()) and zones["hand0"] == inspected.view["hands"][0]
    assert sorted(code for cards in zones.values() for code in cards) == sorted(deck)
    assert "zones" not in spectator.view


def test_every_deck_the_admin_gives_is_kept_in_order():
    """api.CreateMatchRequest.decks: explicit decks are used in order, then CSPRNG decks;
    all of them are kept, not the first alone (the admin's inspection lists them)."""
    async def go():
        async with manager() as mgr:
            decks = [_codes(GAME), _codes(GAME)]
            random.Random(5).shuffle(decks[0])
            random.Random(6).shuffle(decks[1])
            s = await mgr.create_match(CreateMatchRequest(game=GAME, decks=decks, first_dealer=1), admin=True)
            return decks, (await mgr.inspect_match(s.match_id)).envelope.view["decks"]

    given, kept = run(go())
    assert kept == given


def test_the_admins_inspection_names_every_seats_presence_as_its_summary_does():
    """InspectMatch's omniscient view carries the seats' public facts (``seats``: names,
    taken, present, left: GJ-11.1) as of the same seq as its summary, so that the admin sees
    who holds which seat next to the hands, without another call."""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME))
            await mgr.join_match(s.match_id, 1, "bob")
            return await mgr.inspect_match(s.match_id)

    inspection = run(go())
    seats = inspection.envelope.view["seats"]
    assert [(x["seat"], x["taken"], x["player_name"], x["present"], x["left"]) for x in seats] == [
        (0, False, "", False, False), (1, True, "bob", False, False)]
    assert [(x.seat, x.taken, x.player_name) for x in inspection.summary.seats] == [
        (x["seat"], x["taken"], x["player_name"]) for x in seats]


def test_a_termination_reason_may_have_200_characters_and_no_more():
    """TerminateMatch's reason is at most 200 characters (docs/api.md) in the session layer
    too, not only at the gRPC edge: 201 are refused (BAD_TERMINATE_REASON, the field named)
    and change nothing; exactly 200 end the match with that reason in its result."""
    async def go():
        async with manager() as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME))
            with pytest.raises(BadRequest) as info:
                await mgr.terminate_match(s.match_id, "r" * 201)
            with pytest.raises(BadRequest) as words:  # more words than 200 characters hold
                await mgr.terminate_match(s.match_id, "r " * 201)
            still = await mgr.get_match(s.match_id)
            ended = await mgr.terminate_match(s.match_id, "r" * 200)
            return info.value, words.value, still, ended

    refused, words, still, ended = run(go())
    assert (refused.reason, refused.metadata) == ("BAD_TERMINATE_REASON", {"field": "reason"})
    assert (words.reason, words.metadata) == ("BAD_TERMINATE_REASON", {"field": "reason"})
    assert still.status == "waiting"
    assert ended.status == "terminated" and ended.result["reason"] == "r" * 200


def test_turn_time_is_the_tables():
    async def go():
        async with manager(config(default_turn_time_s=30)) as mgr:
            kl = await mgr.create_match(CreateMatchRequest(game=GAME))
            kl2 = await mgr.create_match(CreateMatchRequest(game=GAME, turn_time_s=12.5))
            gj = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            gj2 = await mgr.create_match(CreateMatchRequest(game="georgian_joker", turn_time_s=45))
            return kl, kl2, gj, gj2
    kl, kl2, gj, gj2 = run(go())
    assert (kl.turn_time_s, kl2.turn_time_s) == (30, 12.5)
    assert gj.turn_time_s == 30 and gj.options == {}  # GJ-13 default
    assert gj2.turn_time_s == 45 and gj2.options == {"turn_time_s": 45}


def test_the_joker_games_take_their_times_from_their_options_not_the_sessions_defaults():
    """A Joker game's turn time and reconnect grace are its turn_time_s and reconnect_grace_s
    options (JJK-11, GJ-13), their defaults included (30 s, 60 s), whatever the session's
    defaults for the other games say: the 32-card games take those, the session's
    ``reconnect_grace_s`` as it is (policy.reconnect_grace)."""
    async def go():
        async with manager(config(default_turn_time_s=45, reconnect_grace_s=99)) as mgr:
            given = await mgr.create_match(CreateMatchRequest(
                game="japanese_joker", options={"turn_time_s": 20, "reconnect_grace_s": 15}))
            default = await mgr.create_match(CreateMatchRequest(game="georgian_joker"))
            other = await mgr.create_match(CreateMatchRequest(game=GAME))
            return [(m.turn_time_s, mgr._matches[m.match_id].reconnect_grace_s) for m in (given, default, other)]
    assert run(go()) == [(20, 15), (30, 60), (45, 99)]

def test_a_turn_time_and_a_turn_time_s_option_must_agree():
    """docs/api.md, CreateMatch: in the Joker games a request's turn_time is their turn_time_s
    option, so giving both with different values is BAD_TURN_TIME (not INVALID_OPTIONS: each
    value is valid alone); the same value twice is one turn time."""
    async def go():
        async with manager(config()) as mgr:
            with pytest.raises(BadRequest) as info:
                await mgr.create_match(CreateMatchRequest(game="japanese_joker", turn_time_s=20,
                                                          options={"turn_time_s": 40}))
            same = await mgr.create_match(CreateMatchRequest(game="japanese_joker", turn_time_s=40,
                                                             options={"turn_time_s": 40}))
            return info.value, same
    refused, same = run(go())
    assert (refused.reason, refused.metadata) == ("BAD_TURN_TIME", {"field": "turn_time"})  # docs/api.md
    assert same.turn_time_s == 40 and same.options == {"turn_time_s": 40}


def test_a_turn_time_is_folded_into_a_copy_of_the_requests_options():
    """policy.merge_turn_time folds a Joker game's turn_time into the ``turn_time_s`` option of
    a copy: the caller's options stay as sent (request_digest reads them after the check, "as
    sent"), so one options mapping serves two tables of different turn times."""
    async def go():
        async with manager(config()) as mgr:
            options = {"target_score": 21}
            made = [await mgr.create_match(CreateMatchRequest(game="japanese_joker", turn_time_s=turn,
                                                              options=options)) for turn in (20, 40)]
            return options, made
    options, made = run(go())
    assert options == {"target_score": 21}
    assert [(m.turn_time_s, m.options["turn_time_s"]) for m in made] == [(20, 20), (40, 40)]



def test_a_fractional_turn_time_is_invalid_in_the_joker_games():
    """docs/api.md, CreateMatch: in the Joker games a turn_time is their integer turn_time_s
    option (JJK-11, GJ-13), so 10.5 s is INVALID_OPTIONS, not rounded to a whole second."""
    async def go():
        async with manager(config()) as mgr:
            for game in ("japanese_joker", "georgian_joker"):
                with pytest.raises(InvalidOptions):
                    await mgr.create_match(CreateMatchRequest(game=game, turn_time_s=10.5))
            assert mgr.match_ids() == []
    run(go())

def test_the_turn_time_range_includes_both_bounds():
    """JJK-11's turn_time_s is 10 to 120 s, bounds included, and the 32-card games follow it
    (NOTATION.md section 5, docs/api.md CreateMatch); a value out of it is BAD_TURN_TIME on
    the turn_time field."""
    async def go():
        async with manager(config()) as mgr:
            with pytest.raises(BadRequest) as info:
                await mgr.create_match(CreateMatchRequest(game=GAME, turn_time_s=120.5))
            return info.value, [(await mgr.create_match(CreateMatchRequest(game=game, turn_time_s=turn))).turn_time_s
                                for game in ("klaberjass", "jojotte") for turn in (10, 120)]
    refused, turn_times = run(go())
    assert (refused.reason, refused.metadata) == ("BAD_TURN_TIME", {"field": "turn_time"})
    # the message a client shows says what would do (docs/api.md, Errors: show the message)
    assert refused.message.startswith("the turn time must be 10 to 120 seconds (JJK-11")
    assert turn_times == [10, 120, 10, 120]


@pytest.mark.parametrize("game", ["klaberjass", "jojotte", "georgian_joker", "japanese_joker"])
def test_a_negative_turn_time_is_refused_as_negative(game):
    """A negative turn time is refused as such (BAD_TURN_TIME on the turn_time field), not as
    a value out of JJK-11's range, in every game (docs/api.md): in the Joker games too, where a
    positive value out of range is the ``turn_time_s`` option's INVALID_OPTIONS."""
    async def go():
        async with manager(config()) as mgr:
            with pytest.raises(BadRequest) as info:
                await mgr.create_match(CreateMatchRequest(game=game, turn_time_s=-1))
            assert mgr.match_ids() == []
            return info.value
    refused = run(go())
    assert (refused.reason, refused.metadata) == ("BAD_TURN_TIME", {"field": "turn_time"})
    assert refused.message == "the turn time must not be negative"


@pytest.mark.parametrize("game", ["klaberjass", "georgian_joker", "japanese_joker"])
def test_a_turn_time_that_is_not_a_number_is_refused_as_a_bad_turn_time(game):
    """A NaN turn time fails policy.merge_turn_time's first check ("NaN too"): BAD_TURN_TIME
    on the turn_time field in every game (docs/api.md, Errors), not folded into the Joker
    games' ``turn_time_s`` option to come back as that option's INVALID_OPTIONS."""
    async def go():
        async with manager(config()) as mgr:
            with pytest.raises(BadRequest) as info:
                await mgr.create_match(CreateMatchRequest(game=game, turn_time_s=float("nan")))
            assert mgr.match_ids() == []
            return info.value
    refused = run(go())
    assert (refused.reason, refused.metadata) == ("BAD_TURN_TIME", {"field": "turn_time"})

# ---- spectators ------------------------------------------------------------------------------------

def test_spectators_only_when_allowed():
    async def go():
        async with manager() as mgr:
            closed, players = await open_match(mgr, GAME, spectators_allowed=False)
            opened, _ = await open_match(mgr, GAME)
            # a table closed to spectators is closed to them only: each seat sees its own view
            for seat, player in enumerate(players):
                assert (await mgr.get_view(closed, player)).seat == seat
            spectator = Principal("spectator", closed)
            with pytest.raises(PermissionDenied) as info:
                await mgr.get_view(closed, spectator)
            assert info.value.reason == "SPECTATORS_NOT_ALLOWED"
            with pytest.raises(PermissionDenied):
                await collect(mgr.watch(closed, spectator, -1))
            env = await mgr.get_view(opened, Principal("spectator", opened))
            assert env.seat is None and env.view["hand"] == [] and env.view["legal"] == []
            # the admin may always look
            assert (await mgr.get_view(closed, Principal("admin", closed))).view["hands"]
    run(go())


def test_a_seat_that_left_sees_a_match_terminated_mid_deal_as_a_spectator_does():
    """docs/api.md ("Spectators", leaving): after the end a token whose seat left sees the
    match as a spectator does, not the seat's last hand, which the takeover bot was dealt
    (GJ-12.4; access.audience_of). A match the operator terminates mid-deal still holds that
    hand, hidden from everyone (GJ-11.3): the leaver's view, and the snapshot its watch opens
    with, are the spectator's."""
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, "georgian_joker")
            leaver = mgr._matches[match_id].state.to_act()
            await mgr.leave_match(match_id, ps[leaver], resign=False)
            await mgr.terminate_match(match_id, "test")
            assert mgr.state_of(match_id).view(leaver)["hand"], "the bot's hand is unplayed"
            spectator = await mgr.get_view(match_id, Principal("spectator", match_id))
            seen = await mgr.get_view(match_id, ps[leaver])
            events = await collect(mgr.watch(match_id, ps[leaver], -1))
            return spectator, seen, events

    spectator, seen, events = run(go())
    assert spectator.seat is None and spectator.view["hand"] == []
    assert (seen.seat, seen.view) == (None, spectator.view)
    assert events[0].kind == "snapshot" and (events[0].view.seat, events[0].view.view) == (None, spectator.view)


# ---- limits and draining --------------------------------------------------------------------------

def test_match_limits():
    async def go():
        async with manager(config(max_matches=3, max_waiting_matches=2), host=_OneBotHost()) as mgr:
            await mgr.create_match(CreateMatchRequest(game=GAME))
            await mgr.create_match(CreateMatchRequest(game=GAME))
            with pytest.raises(LimitExceeded) as info:
                await mgr.create_match(CreateMatchRequest(game=GAME))
            assert info.value.reason == "MAX_WAITING_MATCHES"
            # a match without open seats does not wait: only the total applies
            bots = [SeatConfig("bot", "dummy")] * 2
            await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots))
            with pytest.raises(LimitExceeded) as info:
                await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots))
            assert info.value.reason == "MAX_MATCHES"
    run(go())


def test_matches_of_bots_only_have_a_limit_of_their_own_the_admin_is_not_held_to():
    """Anyone may create a match whose every seat is a bot's; it plays itself on the server's
    CPU with nobody at the table, so at most ``max_bot_matches`` of them (RESOURCE_EXHAUSTED /
    MAX_BOT_MATCHES), well below ``max_matches``. A match with a player's seat is not one; the
    admin is never refused one (they count all the same); a finished one frees its place."""
    async def go():
        async with manager(config(max_matches=10, max_bot_matches=2), host=_OneBotHost()) as mgr:
            bots = [SeatConfig("bot", "dummy")] * 2
            first = await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots))
            second = await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots))
            with pytest.raises(LimitExceeded) as info:
                await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots))
            assert info.value.reason == "MAX_BOT_MATCHES"
            await mgr.create_match(CreateMatchRequest(game=GAME, seats=[SeatConfig("open"), SeatConfig("bot", "dummy")]))
            await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots), admin=True)
            await mgr.terminate_match(first.match_id, "test")
            with pytest.raises(LimitExceeded):  # the admin's counts: still 2
                await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots))
            await mgr.terminate_match(second.match_id, "test")
            await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots))
            with pytest.raises(LimitExceeded):
                await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots))
    run(go())


class _HeldCreates(MemoryStore):
    """A store whose match creations wait for ``release`` (their writes in flight)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.writing = 0

    async def create_match(self, record, decks):
        self.writing += 1
        await self.release.wait()
        await super().create_match(record, decks)


@pytest.mark.parametrize("limits, seats, reason", [
    (dict(max_matches=1), (), "MAX_MATCHES"),
    (dict(max_waiting_matches=1), (), "MAX_WAITING_MATCHES"),
    (dict(max_bot_matches=1), [SeatConfig("bot", "dummy")] * 2, "MAX_BOT_MATCHES"),
])
def test_a_creation_whose_write_is_in_flight_counts_against_the_limits(limits, seats, reason):
    """Each limit counts the matches whose creation is being written (MatchManager._create:
    no await between the check and the count): two creations sent at once against a limit
    of one make one match, the other is RESOURCE_EXHAUSTED with the limit's reason
    (docs/operations.md, --max-matches, --max-waiting-matches, --max-bot-matches), not two
    matches past it. (Mutants: each check without the creations in flight.)"""
    store = _HeldCreates()

    async def go():
        async with manager(config(**limits), store=store, host=_OneBotHost()) as mgr:
            request = CreateMatchRequest(game=GAME, seats=seats)
            first = asyncio.create_task(mgr.create_match(request))
            await until(lambda: store.writing == 1)
            second = asyncio.create_task(mgr.create_match(request))
            await until(lambda: second.done() or store.writing == 2)  # refused, or written too
            store.release.set()
            await first
            [refused] = await asyncio.gather(second, return_exceptions=True)
            return refused, store.writing, len(mgr.match_ids())

    refused, writes, held = run(go())
    assert isinstance(refused, LimitExceeded) and refused.reason == reason, refused
    assert (writes, held) == (1, 1)


def test_the_admins_match_of_bots_with_a_client_create_id_is_not_held_to_the_bots_limit():
    """docs/operations.md (--max-bot-matches): "the admin is never refused one", with a
    client_create_id too (the keyed path creates as the plain one does). (Mutant: the keyed
    create without the admin flag.)"""
    async def go():
        async with manager(config(max_matches=10, max_bot_matches=1), host=_OneBotHost()) as mgr:
            bots = [SeatConfig("bot", "dummy")] * 2
            await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots))
            with pytest.raises(LimitExceeded):
                await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots, client_create_id="k" * 32))
            keyed = await mgr.create_match(CreateMatchRequest(game=GAME, seats=bots, client_create_id="k" * 32),
                                           admin=True)
            return keyed.status, len(mgr.match_ids())

    assert run(go()) == ("active", 2)


def test_a_bot_name_sent_with_an_open_seat_names_no_bot():
    """A bot name belongs to a bot seat only: sent with an open seat (a player's) it is
    ignored, so the seat does not claim a bot that nobody asked to play it."""
    async def go():
        async with manager(host=_OneBotHost()) as mgr:
            s = await mgr.create_match(CreateMatchRequest(
                game=GAME, seats=[SeatConfig("open", "dummy"), SeatConfig("bot", "dummy")]))
            return (await mgr.get_match(s.match_id)).seats

    assert [(s.kind, s.bot) for s in run(go())] == [("open", ""), ("bot", "dummy")]


def test_decks_or_a_first_dealer_without_the_admin_token_are_admin_only():
    """docs/api.md: explicit decks or ``first_dealer`` from a caller without the admin token
    are PERMISSION_DENIED / ADMIN_ONLY (seat 0 is a first dealer given too), and create
    nothing."""
    async def go():
        async with manager() as mgr:
            errors = []
            for request in (CreateMatchRequest(game=GAME, first_dealer=0),
                            CreateMatchRequest(game=GAME, decks=[list(_codes(GAME))])):
                with pytest.raises(PermissionDenied) as info:
                    await mgr.create_match(request)
                errors.append((info.value.code, info.value.reason, "admin token" in info.value.message))
            return errors, mgr.match_ids()

    errors, held = run(go())
    assert errors == [("PERMISSION_DENIED", "ADMIN_ONLY", True)] * 2 and held == []


def test_a_first_dealer_that_is_no_seat_is_refused():
    """The admin's ``first_dealer`` is a seat number of the game (0..1 at Klaberjass): any
    other value, a flag or a number of another type, is INVALID_ARGUMENT / BAD_FIRST_DEALER
    naming the field, and creates nothing."""
    async def go():
        async with manager() as mgr:
            errors = []
            for first_dealer in (-1, 2, True, 1.0, "1"):
                with pytest.raises(BadRequest) as info:
                    await mgr.create_match(CreateMatchRequest(game=GAME, first_dealer=first_dealer), admin=True)
                errors.append((info.value.reason, info.value.metadata, info.value.message))
            return errors, mgr.match_ids()

    errors, held = run(go())
    assert errors == [("BAD_FIRST_DEALER", {"field": "first_dealer"}, "first_dealer must be a seat number 0..1")] * 5
    assert held == []


def test_a_new_match_with_an_option_beyond_json_safe_integers_is_refused():
    """A new match's integer options are JSON-safe (rules/options.py check_new_options): a
    target score above 2**53 - 1 is INVALID_OPTIONS and creates nothing."""
    async def go():
        async with manager() as mgr:
            with pytest.raises(InvalidOptions):
                await mgr.create_match(CreateMatchRequest(game=GAME, options={"kl_target_score": 2**53}))
            return mgr.match_ids()

    assert run(go()) == []


class _ThinkingBotHost(_OneBotHost):
    """``dummy`` never makes up its mind: the matches it plays stay unfinished."""

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        await asyncio.Event().wait()


def test_a_match_every_player_has_left_counts_as_one_of_bots_only():
    """GJ-12.4: a player who leaves a Georgian Joker match leaves the seat to the takeover bot for
    the rest of the match, so a table of bots and one player who joins and leaves plays on with
    nobody at it. Such matches count against ``max_bot_matches`` (or joining and leaving would get
    round it); while the player is seated, or merely away, the match is not one."""
    async def go():
        async with manager(config(max_matches=10, max_bot_matches=1, takeover_bot="dummy"),
                           host=_ThinkingBotHost()) as mgr:
            gj = "georgian_joker"
            seats = [SeatConfig("open")] + [SeatConfig("bot", "dummy")] * 3
            summary = await mgr.create_match(CreateMatchRequest(game=gj, seats=seats, turn_time_s=120))
            joined = await mgr.join_match(summary.match_id, 0, "eve")
            player = mgr.authenticate(summary.match_id, joined.token)
            only_bots = [SeatConfig("bot", "dummy")] * 4
            assert (await mgr.get_match(summary.match_id)).status == "active"
            late = await mgr.create_match(CreateMatchRequest(game=gj, seats=only_bots))  # not yet
            await mgr.terminate_match(late.match_id, "test")
            await mgr.leave_match(summary.match_id, player, False)
            assert (await mgr.get_match(summary.match_id)).status == "active"
            with pytest.raises(LimitExceeded) as info:
                await mgr.create_match(CreateMatchRequest(game=gj, seats=only_bots))
            assert info.value.reason == "MAX_BOT_MATCHES"
            await mgr.terminate_match(summary.match_id, "test")
            await mgr.create_match(CreateMatchRequest(game=gj, seats=only_bots))  # its place is free
    run(go())


def test_watcher_limit():
    async def go():
        async with manager(config(max_watchers_per_match=2)) as mgr:
            match_id, ps = await open_match(mgr, GAME)
            spectator = Principal("spectator", match_id)
            streams = [mgr.watch(match_id, spectator, -1), mgr.watch(match_id, ADMIN, -1)]
            firsts = [await s.__anext__() for s in streams]
            assert all(e.kind == "snapshot" for e in firsts)
            with pytest.raises(LimitExceeded) as info:
                await mgr.watch(match_id, spectator, -1).__anext__()
            assert info.value.reason == "MAX_WATCHERS"
            await streams[0].aclose()
            third = mgr.watch(match_id, spectator, -1)
            assert (await third.__anext__()).kind == "snapshot"
            await third.aclose()
            await streams[1].aclose()
    run(go())


def test_strangers_filling_the_watch_slots_do_not_keep_a_player_out():
    """A seat's presence stream (JJK-10.2, GJ-12.3) never competes with spectators for the
    match's slots: with every spectator slot taken, and the opponent holding every stream its
    own token may open, the player still connects (and so does not forfeit)."""
    async def go():
        async with manager(config(max_watchers_per_match=3, max_streams_per_seat=2)) as mgr:
            match_id, ps = await open_match(mgr, GAME)
            spectator = Principal("spectator", match_id)
            held = [mgr.watch(match_id, spectator, -1) for _ in range(3)]
            held += [mgr.watch(match_id, ps[0], -1) for _ in range(2)]
            for s in held:
                await s.__anext__()
            with pytest.raises(LimitExceeded) as info:
                await mgr.watch(match_id, spectator, -1).__anext__()
            player = mgr.watch(match_id, ps[1], -1)
            first = await player.__anext__()
            summary = await mgr.get_match(match_id)
            for s in held + [player]:
                await s.aclose()
            return info.value.reason, first, summary

    refused, first, summary = run(go())
    assert refused == "MAX_WATCHERS"
    assert first.kind == "snapshot" and [s.present for s in summary.seats] == [True, True]


def test_a_seat_past_its_stream_limit_keeps_its_newest_streams():
    """One token's streams are bounded (--max-streams-per-seat), and the newest wins: a client
    reconnecting while the server has not yet seen its dead connections go (keepalive) gets
    through, and the seat's oldest stream ends with MAX_SEAT_STREAMS."""
    async def go():
        async with manager(config(max_streams_per_seat=2)) as mgr:
            match_id, ps = await open_match(mgr, GAME)
            streams = [Stream(mgr, match_id, ps[0]) for _ in range(2)]
            await until(lambda: all(s.events for s in streams))
            newest = Stream(mgr, match_id, ps[0])
            await until(lambda: newest.events and streams[0].task.done())
            m = mgr._matches[match_id]
            open_now = m.seats[0].streams
            for s in streams + [newest]:
                await s.close()
            return streams, newest, open_now

    streams, newest, open_now = run(go())
    assert isinstance(streams[0].error, LimitExceeded) and streams[0].error.reason == "MAX_SEAT_STREAMS"
    assert streams[1].error is None and newest.error is None and newest.events[0].kind == "snapshot"
    assert open_now == 2


def test_a_stream_that_gave_way_stops_counting_at_once():
    """A stream evicted for a newer one of its seat (MAX_SEAT_STREAMS) stops counting against
    the seat's limit, and for its presence, when it is evicted, not when its generator is
    closed: that may be much later (the transport's last write stuck on the dead connection
    the client reconnected over). It used to count until then, so that with a live stream
    closed meanwhile the seat's next stream evicted another live one (RESOURCE_EXHAUSTED)
    with fewer than the limit open, and the seat stayed present with no stream left."""
    async def go():
        async with manager(config(max_streams_per_seat=2)) as mgr:
            match_id, ps = await open_match(mgr, GAME)
            m = mgr._matches[match_id]
            stuck, closing = mgr.watch(match_id, ps[0], -1), mgr.watch(match_id, ps[0], -1)
            for g in (stuck, closing):
                assert (await g.__anext__()).kind == "snapshot"
            live = Stream(mgr, match_id, ps[0])  # the third: ``stuck`` gives way, unread
            await until(lambda: live.events)
            counted_after_eviction = m.seats[0].streams
            await closing.aclose()  # a live stream closes normally: one stream open
            reconnect = Stream(mgr, match_id, ps[0])
            await until(lambda: reconnect.events)
            await asyncio.sleep(0.01)
            counted_with_two = m.seats[0].streams
            live_error = live.error
            await live.close()
            await reconnect.close()
            summary = await mgr.get_match(match_id)  # ``stuck`` is still not closed
            try:
                await stuck.__anext__()
            except LimitExceeded as exc:
                stuck_error = exc
            else:
                stuck_error = None
            await stuck.aclose()
            return counted_after_eviction, counted_with_two, live_error, reconnect, summary, stuck_error

    counted_after_eviction, counted_with_two, live_error, reconnect, summary, stuck_error = run(go())
    assert counted_after_eviction == 2
    assert live_error is None and reconnect.error is None  # nobody gave way to the reconnect
    assert counted_with_two == 2
    assert [s.present for s in summary.seats] == [False, False]
    assert stuck_error is not None and stuck_error.reason == "MAX_SEAT_STREAMS"


@pytest.mark.parametrize("how", ["reissued", "left_waiting"])
def test_streams_the_server_ends_for_a_seat_stop_counting_at_once(how):
    """The streams of a seat's old player that the server ends (ReissueSeatToken: TOKEN_REVOKED;
    leaving a match that waits: SEAT_LEFT) stop counting for the seat when they are ended, as an
    evicted one does, not when their generators close: those of a dead connection close only
    when keepalive notices (tens of seconds). They used to count until then: the seat stayed
    present, so docs/api.md's "the seat counts as absent until the player connects with the new
    token" was false (no grace period ran), and the new player's second stream evicted its first
    (RESOURCE_EXHAUSTED / MAX_SEAT_STREAMS) with the seat's limit of 2 not reached."""
    async def go():
        async with manager(config(max_streams_per_seat=2)) as mgr:
            if how == "reissued":
                match_id, ps = await open_match(mgr, GAME)
            else:
                summary = await mgr.create_match(CreateMatchRequest(game=GAME))
                match_id = summary.match_id
                ps = [mgr.authenticate(match_id, (await mgr.join_match(match_id, 0, "ada")).token)]
            m = mgr._matches[match_id]
            stuck = [mgr.watch(match_id, ps[0], -1) for _ in range(2)]  # never read again
            for g in stuck:
                await g.__anext__()
            if how == "reissued":
                joined, _ = await mgr.reissue_seat_token(match_id, 0)
            else:
                await mgr.leave_match(match_id, ps[0], resign=False)
                joined = await mgr.join_match(match_id, 0, "bea")
                await mgr.join_match(match_id, 1, "cy")  # the match starts
            counted, present = m.seats[0].streams, (await mgr.get_match(match_id)).seats[0].present
            grace = m.seats[0].grace_deadline is not None
            new = mgr.authenticate(match_id, joined.token)
            first = Stream(mgr, match_id, new)
            await until(lambda: first.events)
            second = Stream(mgr, match_id, new)
            await until(lambda: second.events)
            await asyncio.sleep(0.01)
            result = counted, present, grace, first.error, second.error, m.seats[0].streams
            for s in (first, second):
                await s.close()
            for g in stuck:
                await g.aclose()
            return result

    counted, present, grace, first_error, second_error, streams = run(go())
    assert (counted, present, grace) == (0, False, True)  # absent: the grace period runs
    assert first_error is None and second_error is None
    assert streams == 2


def test_the_server_wide_spectator_limit():
    async def go():
        async with manager(config(max_watchers=2)) as mgr:
            a, pa = await open_match(mgr, GAME)
            b, pb = await open_match(mgr, GAME)
            held = [mgr.watch(a, Principal("spectator", a), -1), mgr.watch(b, ADMIN, -1)]
            for s in held:
                await s.__anext__()
            with pytest.raises(LimitExceeded) as info:
                await mgr.watch(b, Principal("spectator", b), -1).__anext__()
            seat = mgr.watch(b, pb[0], -1)  # seats are not counted
            assert (await seat.__anext__()).kind == "snapshot"
            await held[0].aclose()
            again = mgr.watch(b, Principal("spectator", b), -1)  # a slot came free
            assert (await again.__anext__()).kind == "snapshot"
            for s in (held[1], seat, again):
                await s.aclose()
            return info.value.reason

    assert run(go()) == "MAX_WATCHERS"


def test_drain_refuses_new_work_finishes_in_flight_and_closes_streams():
    async def go():
        async with manager() as mgr:
            match_id, ps = await open_match(mgr, GAME)
            stream = mgr.watch(match_id, Principal("spectator", match_id), 0)
            reader = asyncio.ensure_future(collect(stream))
            await asyncio.sleep(0)
            seat, p, env = await to_act(mgr, match_id, ps)
            in_flight = asyncio.ensure_future(mgr.submit_action(match_id, p, env.view["legal"][0], env.seq))
            await asyncio.sleep(0)  # the submit has started
            await mgr.drain()
            result = await in_flight
            assert result.seq == 1
            with pytest.raises(Unavailable) as info:
                await reader
            assert info.value.reason == "DRAINING"
            for call in (mgr.create_match(CreateMatchRequest(game=GAME)),
                         mgr.join_match(match_id, None, "x"),
                         mgr.submit_action(match_id, ps[1 - seat], "pass", None),
                         collect(mgr.watch(match_id, ps[0], -1))):
                with pytest.raises(Unavailable):
                    await call
            # reading still works while draining
            assert (await mgr.get_match(match_id)).seq == 1
    run(go())


def test_concurrent_creations_respect_the_limit(tmp_path):
    from engine_service.store import SqliteStore

    async def go():  # SQLite: each creation really waits for its commit
        async with manager(config(max_matches=5, max_waiting_matches=5),
                           store=SqliteStore(tmp_path / "m.db")) as mgr:
            results = await asyncio.gather(*(mgr.create_match(CreateMatchRequest(game=GAME)) for _ in range(12)),
                                           return_exceptions=True)
            return results, len(mgr.match_ids())

    results, held = run(go())
    assert held == 5
    assert sum(isinstance(r, LimitExceeded) for r in results) == 7


def test_a_match_nobody_joins_expires():
    async def go():
        async with manager(config(waiting_timeout_s=0.2)) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME))
            await mgr.join_match(s.match_id, 0, "lonely")
            from .helpers import until
            await until(lambda: mgr._matches[s.match_id].over, timeout=30)
            return await mgr.get_match(s.match_id)

    summary = run(go())
    assert summary.status == "finished" and summary.result["outcome"] == "abandoned"
    assert summary.result["reason"] == "waiting_timeout" and summary.result["winners"] == []


def test_a_waiting_timeout_of_zero_never_expires_a_table():
    """``waiting_timeout_s`` 0 means never: the sweeper's pass leaves a table that has waited
    for days as it is (a pass that took 0 for a timeout abandoned every waiting table at once)."""
    async def go():
        async with manager(config(waiting_timeout_s=0)) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME))
            await mgr.join_match(s.match_id, 0, "patient")
            mgr._matches[s.match_id].created_at -= 3 * 86400  # created three days ago
            await mgr._housekeeping.sweep_once()
            return await mgr.get_match(s.match_id)

    summary = run(go())
    assert summary.status == "waiting" and summary.result is None


def test_a_table_is_abandoned_exactly_waiting_timeout_s_after_its_creation(monkeypatch):
    """A table waits for players ``waiting_timeout_s`` (an hour by default: docs/operations.md)
    and no longer: on a virtual clock (the Unix time the pass reads included), the pass
    3599.5 s after its creation leaves it waiting and the one exactly 3600 s after ends it,
    abandoned for ``waiting_timeout`` (a ``>`` let it wait a pass longer)."""
    async def go():
        async with manager(config(waiting_timeout_s=3600.0)) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME))
            await mgr.join_match(s.match_id, 0, "punctual")
            created, statuses = mgr._matches[s.match_id].created_at, []
            for after in (3599.5, 3600.0):
                await advance_to(created + after)
                await mgr._housekeeping.sweep_once()
                statuses.append((await mgr.get_match(s.match_id)).status)
            return statuses, (await mgr.get_match(s.match_id)).result

    statuses, result = run_virtual(go, monkeypatch)
    assert statuses == ["waiting", "finished"] and result["reason"] == "waiting_timeout"


def test_a_waiting_expiry_the_store_refuses_is_logged_and_the_next_pass_ends_the_table():
    """The end of a table past ``waiting_timeout_s`` fails in the store: the pass logs
    ``waiting_expiry_failed`` (error level, the match and the error), the table still waits
    (nothing was written), the pass goes on with the other matches, and the next pass ends
    it as abandoned."""
    from structlog.testing import capture_logs

    from engine_service.store import MemoryStore, StoreError

    class RefusesOneEnd(MemoryStore):
        refusals = 0

        async def set_status(self, match_id, *args, **kwargs):
            if not self.refusals:
                self.refusals += 1
                raise StoreError("the database is unreachable")
            return await super().set_status(match_id, *args, **kwargs)

    async def go():
        async with manager(config(waiting_timeout_s=3600.0), store=RefusesOneEnd()) as mgr:
            ids = [(await mgr.create_match(CreateMatchRequest(game=GAME))).match_id for _ in range(2)]
            for match_id in ids:
                mgr._matches[match_id].created_at -= 7200  # both waited two hours
            with capture_logs() as logs:
                await mgr._housekeeping.sweep_once()
            after_one = [(await mgr.get_match(i)).status for i in ids]
            await mgr._housekeeping.sweep_once()
            return ids, logs, after_one, [await mgr.get_match(i) for i in ids]

    ids, logs, after_one, summaries = run(go())
    failed = [e for e in logs if e["event"] == "waiting_expiry_failed"]
    assert len(failed) == 1 and failed[0]["log_level"] == "error" and failed[0]["match_id"] == ids[0]
    assert failed[0]["error"] == "the match could not be saved; try again"  # the UNAVAILABLE's
    assert after_one == ["waiting", "finished"]  # the second table's end was not held up
    assert [(s.status, s.result["reason"]) for s in summaries] == [("finished", "waiting_timeout")] * 2


def test_a_table_ended_while_the_sweeper_waited_for_it_is_not_abandoned_over_its_end():
    """The sweeper's pass finds a table that waited past ``waiting_timeout_s`` while the
    admin's TerminateMatch holds it (its end being written), and waits for it. Once it has
    it, the table is over: the pass leaves it. Without that check it wrote its own end
    (abandoned, waiting_timeout) over the admin's: the store, GetMatch and a second
    ``match_ended`` event said the table was abandoned, not terminated for its reason."""
    from engine_service.store import MemoryStore

    class SlowStatus(MemoryStore):
        """Status writes wait for ``release`` (once it is set, at once)."""

        def __init__(self):
            super().__init__()
            self.writing, self.release = asyncio.Event(), asyncio.Event()

        async def set_status(self, *args, **kwargs):
            self.writing.set()
            await self.release.wait()
            return await super().set_status(*args, **kwargs)

    store = SlowStatus()

    async def go():
        async with manager(config(waiting_timeout_s=0.2), store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME))
            await mgr.join_match(s.match_id, 0, "lonely")
            watcher = Stream(mgr, s.match_id, Principal("spectator", s.match_id))
            ending = asyncio.ensure_future(mgr.terminate_match(s.match_id, "closing the room"))
            await asyncio.wait_for(store.writing.wait(), 30)
            await until(lambda: len(mgr._writes) == 2, timeout=30)  # the sweeper's pass waits for it
            store.release.set()
            await ending
            await until(lambda: not mgr._writes, timeout=30)
            await asyncio.sleep(0.3)  # more passes: they leave an ended table alone too
            summary, stored = await mgr.get_match(s.match_id), await store.load_match(s.match_id)
            await watcher.close()
            return summary, stored.record, [e.kind for e in watcher.events]

    summary, stored, kinds = run(go())
    assert (summary.status, summary.result["outcome"], summary.result["reason"]) == \
        ("terminated", "terminated", "closing the room")
    assert (stored.status, stored.result["reason"]) == ("terminated", "closing the room")
    assert kinds.count("match_ended") == 1


def test_a_client_that_goes_away_mid_write_leaves_a_consistent_match(tmp_path):
    """The transport cancels a request whose client disconnected. A write already under way
    completes anyway: the match state follows the durable log, watchers see the action, and
    the client's retry gets the result instead of a second application."""
    from engine_service.store import SqliteStore

    from .helpers import Stream, until

    async def go():
        async with manager(store=SqliteStore(tmp_path / "m.db")) as mgr:
            match_id, ps = await open_match(mgr, GAME)
            m = mgr._matches[match_id]
            spectator = Stream(mgr, match_id, Principal("spectator", match_id))
            seat, p, env = await to_act(mgr, match_id, ps)
            call = asyncio.ensure_future(mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "once"))
            await until(lambda: m.lock.locked(), step=0)  # the write is under way
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await until(lambda: spectator.actions())
            retry = await mgr.submit_action(match_id, p, env.view["legal"][0], env.seq, "once")
            stored = await mgr._store.load_match(match_id)
            await spectator.close()
            return m.seq, retry, len(stored.actions), spectator.actions()

    seq, retry, stored, events = run(go())
    assert seq == 1 and stored == 1 and retry.duplicate and retry.seq == 1
    assert [e.seq for e in events] == [1]


def test_match_ids_are_letters_and_digits_never_an_option_to_a_command():
    """``clients.watch MATCH_ID``: an id starting with "-" read as an option (a URL-safe
    base64 id starts so once in 64: the README's quickstart test met one)."""
    import re

    from engine_service.sessions.tokens import new_match_id

    ids = {new_match_id() for _ in range(20_000)}
    assert len(ids) == 20_000
    assert all(re.fullmatch(r"[A-Za-z0-9]{16}", i) for i in ids)
    assert {i[0] for i in ids} >= set("aZ09")  # every kind of first character still occurs


def test_a_match_is_ended_after_max_match_deals_deals():
    """The rules let a match run for ever (KL-3.5: two players who pass both rounds throw the
    deal in and the next is dealt, again and again), and its memory, summary and RevealDeals
    answer grow with every deal. With ``max_match_deals=2`` the action that completes the
    second deal is accepted, the third deal is not dealt, and the match ends at once: outcome
    ``terminated``, reason ``deal_limit``, every watcher told; nothing more is accepted."""
    async def go():
        async with manager(config(max_match_deals=2)) as mgr:
            match_id, ps = await open_match(mgr, GAME)
            stream = mgr.watch(match_id, Principal("spectator", match_id), -1)
            passes = 0
            while (await mgr.get_match(match_id)).status == "active":
                seat, p, env = await to_act(mgr, match_id, ps)
                assert "pass" in env.view["legal"], env.view["legal"]
                await mgr.submit_action(match_id, p, "pass", env.seq, f"p{env.seq}")
                passes += 1
                assert passes <= 8, "the match outlived its deal limit"
            summary = await mgr.get_match(match_id)
            assert passes == 8  # two thrown-in deals of four passes (KL-3.5)
            assert summary.status == "terminated"
            assert summary.result["outcome"] == "terminated" and summary.result["reason"] == "deal_limit"
            events = await collect(stream)
            assert events[-1].kind == "match_ended"
            with pytest.raises(MatchNotActive):
                await mgr.submit_action(match_id, ps[0], "pass", None, "late")
    run(go())


@pytest.mark.parametrize("game_id", GAMES)
def test_the_deal_past_the_limit_is_not_dealt(game_id):
    """``max_match_deals=1``: the action that scores the first deal ends the match, and the
    second deal is not dealt. It used to be dealt with that action (and its deck stored): the
    action's event, the answer to it and every view after the end showed each seat its hand
    of a deal nobody would play, and spectators its public cards (Klaberjass's turn-up,
    KL-2.4), which RevealDeals then opened. Now nobody sees a card of it: no hand, no
    commitment, no deck stored, none revealed (KL-2.10, JJ-2.8, JJK-9.7, GJ-11.3)."""
    async def go():
        async with manager(config(max_match_deals=1, heartbeat_interval_s=60)) as mgr:
            match_id, ps = await open_match(mgr, game_id)
            m = mgr._matches[match_id]
            spectator = Principal("spectator", match_id)
            streams = [Stream(mgr, match_id, p) for p in ps] + [Stream(mgr, match_id, spectator)]
            await play_random(mgr, match_id, ps, random.Random(game_id))
            await until(lambda: all(s.task.done() for s in streams))
            views = [await mgr.get_view(match_id, p) for p in [*ps, spectator]]
            return (m, await mgr.get_match(match_id), streams, views,
                    await mgr.reveal_deals(match_id, ps[0]), await mgr._store.load_match(match_id),
                    await mgr.export_transcript(match_id))

    m, summary, streams, views, reveals, stored, transcript = run(go())
    assert (summary.result["outcome"], summary.result["reason"]) == ("terminated", "deal_limit")
    assert m.deals_dealt == 1 and len(summary.deal_commitments) == 1
    assert [d.deal for d in stored.decks] == [0] and [r.deal for r in reveals] == [0]
    assert len(transcript["deals"]) == 1
    for s in streams:
        assert s.error is None
        last, ended = s.actions()[-1], s.events[-1]
        assert (last.seq, ended.kind) == (m.seq, "match_ended")
        assert last.details == {"deal_scored": 0}
        for env in (last.view, ended.view):
            assert env.deal_commitment == "" and env.deadline is None and env.status == "terminated"
            assert env.view["deal_number"] == 1 and not env.view.get("hand")
            assert (env.view.get("table") or {}).get("turn_up") is None
            assert env.view["to_act"] is None and env.view["over"]
    for env in views:
        assert env.deal_commitment == "" and not env.view.get("hand")
        assert (env.view.get("table") or {}).get("turn_up") is None


@pytest.mark.parametrize("game_id", GAMES)
def test_the_deal_past_the_limit_is_not_dealt_from_a_deck_the_admin_gave_ahead(game_id):
    """As above, the admin having given the decks of the first two deals: the second is due
    and known when the limit ends the match, and is not dealt either, nor when the match is
    read back after its eviction (or a restart). A replay of the log dealt it: the export
    showed it dealt, and the match read back showed each seat its hand of it, named its
    commitment and revealed its deck (KL-2.10, JJ-2.8, JJK-9.7, GJ-11.3)."""
    from engine_service.rules.cards import card_code

    game, rng = get_game(game_id), random.Random(game_id)
    decks = [[card_code(c) for c in rng.sample(list(game.pack), len(game.pack))] for _ in range(2)]

    async def go():
        async with manager(config(max_match_deals=1, heartbeat_interval_s=60, finished_retention_s=0)) as mgr:
            match_id, ps = await open_match(mgr, game_id, decks=decks)
            await play_random(mgr, match_id, ps, random.Random(game_id))
            live = await mgr.export_transcript(match_id)
            evicted = mgr.evict_finished()
            m = await mgr._get(match_id)  # read back from the store
            views = [await mgr.get_view(match_id, p) for p in [*ps, Principal("spectator", match_id)]]
            return (evicted, live, m, await mgr.get_match(match_id), views,
                    await mgr.reveal_deals(match_id, ps[0]), await mgr.export_transcript(match_id))

    evicted, live, m, summary, views, reveals, read_back = run(go())
    assert (summary.result["outcome"], summary.result["reason"]) == ("terminated", "deal_limit")
    assert evicted == 1 and len(live["deals"]) == 1 and len(read_back["deals"]) == 1
    assert m.deals_dealt == 1 and len(summary.deal_commitments) == 1
    assert [r.deal for r in reveals] == [0]
    for env in views:
        assert env.deal_commitment == "" and not env.view.get("hand")
        assert (env.view.get("table") or {}).get("turn_up") is None


class _PassingHost:
    """A bot host whose bot ``passer`` passes whenever it may (else its first legal action),
    counting the decisions it is asked for."""

    def __init__(self):
        self.asked = 0

    def bots(self):
        from engine_service.sessions.api import BotInfo
        return [BotInfo("passer", tuple(GAMES), "passes")]

    def plays(self, bot, game_id):
        return bot == "passer"

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        from types import SimpleNamespace
        self.asked += 1
        return SimpleNamespace(action="pass" if "pass" in legal else legal[0], failure=None, elapsed_s=0.001)

    async def close(self):
        pass


@pytest.mark.parametrize("first_dealer", [0, 1])
def test_the_action_that_reaches_the_deal_limit_arms_no_decision_after_it(first_dealer):
    """The action that reaches ``max_match_deals`` ends the match: no decision
    follows it. The next decision used to be armed first, then the match ended: its event
    announced a turn deadline for a decision nobody would make, or a bot to act was asked for
    a move that was thrown away (a worker's time, counted as a decision)."""
    from engine_service.sessions.api import SeatConfig

    async def go():
        host = _PassingHost()
        async with manager(config(max_match_deals=1, time_scale=1000.0), host=host) as mgr:
            summary = await mgr.create_match(CreateMatchRequest(
                game=GAME, seats=[SeatConfig(), SeatConfig("bot", "passer")], first_dealer=first_dealer), admin=True)
            match_id = summary.match_id
            player = mgr.authenticate(match_id, (await mgr.join_match(match_id, 0, "p")).token)
            stream = Stream(mgr, match_id, player)
            m = mgr._matches[match_id]
            while m.active:
                if m.state.to_act() == 0:
                    await mgr.submit_action(match_id, player, "pass", m.seq)
                else:
                    await asyncio.sleep(0.001)  # the bot's move
            await until(lambda: stream.task.done())
            await asyncio.sleep(0.01)  # a decision asked after the end would be asked by now
            bot_moves = sum(a.by == "bot" for a in m.actions)
            return m.result, host.asked, bot_moves, stream.actions()[-1]

    result, asked, bot_moves, last = run(go())
    assert (result["outcome"], result["reason"]) == ("terminated", "deal_limit")
    assert asked == bot_moves
    assert last.view.deadline is None


def test_before_its_start_the_manager_refuses_every_request_and_reads_no_match():
    """A manager whose start() has not run (the service is starting) answers every request
    UNAVAILABLE / NOT_STARTED, reads and writes alike, and neither loads the match asked for
    nor changes it: a join used to pass with its own check gone (the match read from the
    store, the seat taken before the timers of the resumed matches were armed)."""
    store = MemoryStore()

    async def first_life():
        async with manager(store=store) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game=GAME))
            joined = await mgr.join_match(s.match_id, 0, "ann")
            return s.match_id, token_hash(joined.token)

    match_id, ann = run(first_life())

    async def not_started():
        mgr = MatchManager(config(), store=store, metrics=Metrics(), create_bot_host=False)
        seat = Principal("seat", match_id, 0, ann)
        spectator = Principal("spectator", match_id)
        calls = {
            "create": mgr.create_match(CreateMatchRequest(game=GAME)),
            "keyed create": mgr.create_match(CreateMatchRequest(game=GAME, client_create_id="c1")),
            "join": mgr.join_match(match_id, 1, "bob"),
            "submit": mgr.submit_action(match_id, seat, "pass", None),
            "leave": mgr.leave_match(match_id, seat, True),
            "terminate": mgr.terminate_match(match_id, "x"),
            "reissue": mgr.reissue_seat_token(match_id, 0),
            "view": mgr.get_view(match_id, spectator),
            "match": mgr.get_match(match_id),
            "recall": mgr.recall(match_id),
            "reveal": mgr.reveal_deals(match_id, spectator),
            "inspect": mgr.inspect_match(match_id),
            "export": mgr.export_transcript(match_id),
            "list": mgr.matches_page(),
            "watch": collect(mgr.watch(match_id, spectator, -1)),
        }
        reasons = {}
        for name, call in calls.items():
            with pytest.raises(Unavailable) as info:
                await call
            reasons[name] = info.value.reason
        with pytest.raises(Unavailable) as info:
            mgr.open_matches_page()
        reasons["lobby"] = info.value.reason
        return reasons, mgr.match_ids()

    reasons, held = run(not_started())
    assert set(reasons.values()) == {"NOT_STARTED"}, reasons
    assert held == []

    async def started():
        async with manager(store=store) as mgr:
            return await mgr.get_match(match_id)

    summary = run(started())
    assert summary.status == "waiting" and [seat.taken for seat in summary.seats] == [True, False]


def test_an_id_no_match_can_have_is_not_found_without_asking_the_store():
    """A match id that no match can have (empty, not text, longer than 64 characters, with a
    control character) is NOT_FOUND without a store read: PostgreSQL refuses a NUL in a text
    parameter, and such an id was UNAVAILABLE / STORE_UNAVAILABLE there (a client retries
    that) where SQLite said NOT_FOUND. An id of 64 printable characters is looked up."""
    class Asked(MemoryStore):
        def __init__(self):
            super().__init__()
            self.asked = []

        async def load_match(self, match_id):
            self.asked.append(match_id)
            return await super().load_match(match_id)

    store = Asked()

    async def go():
        async with manager(store=store) as mgr:
            for match_id in ("", "a\x00b", "a\nb", "x" * 65, 7, None, "y" * 64):
                with pytest.raises(MatchNotFound):
                    await mgr.get_match(match_id)
            return store.asked

    assert run(go()) == ["y" * 64]


def test_a_slow_store_read_of_one_match_does_not_hold_up_the_matches_held():
    """Reading a match that is not held (recalled from the store) holds the loading lock until
    the store answers; a match held in memory is answered without waiting for it (a slow
    database must not stall every GetMatch, GetView and action of the running matches)."""
    class Slow(MemoryStore):
        slow_id = ""
        released = None

        async def load_match(self, match_id):
            if match_id == self.slow_id:
                await self.released.wait()
            return await super().load_match(match_id)

    store = Slow()

    async def go():
        async with manager(store=store) as mgr:
            stored = await mgr.create_match(CreateMatchRequest(game=GAME))
            held = await mgr.create_match(CreateMatchRequest(game=GAME))
            mgr._unregister(mgr._matches[stored.match_id])  # as after its eviction: only in the store
            store.slow_id, store.released = stored.match_id, asyncio.Event()
            reading = asyncio.ensure_future(mgr.get_match(stored.match_id))
            await asyncio.sleep(0)  # the read holds the loading lock, waiting for the store
            answer = asyncio.ensure_future(mgr.get_match(held.match_id))
            for _ in range(10):
                await asyncio.sleep(0)
            answered = answer.done()
            store.released.set()
            return answered, (await answer).match_id == held.match_id, (await reading).match_id == stored.match_id

    assert run(go()) == (True, True, True)


def test_concurrent_reads_of_a_match_not_held_load_it_once():
    """Two requests for an unfinished match that is not held (start() could not read it)
    both wait for the loading lock; the second finds the match the first loaded and does not
    read and register it again: one LiveMatch (a second would replace the first, whose
    watchers and timers then follow a copy nobody writes to), resumed and re-armed once."""
    class Counted(MemoryStore):
        hide = False
        loads = 0
        released: asyncio.Event | None = None

        async def unfinished_match_ids(self):
            return [] if self.hide else await super().unfinished_match_ids()

        async def load_match(self, match_id):
            self.loads += 1
            if self.released is not None:
                await self.released.wait()
            return await super().load_match(match_id)

    store, metrics = Counted(), Metrics()

    async def go():
        async with manager(store=store) as mgr:
            match_id, _ = await open_match(mgr, GAME)
        store.hide = True
        from structlog.testing import capture_logs

        with capture_logs() as logs:
            async with manager(store=store, metrics=metrics) as mgr:
                store.released = asyncio.Event()
                reads = [asyncio.ensure_future(mgr.get_match(match_id)) for _ in range(2)]
                await until(lambda: store.loads == 1)
                for _ in range(10):
                    await asyncio.sleep(0)  # the second read waits for the lock the first holds
                store.released.set()
                answers = await asyncio.gather(*reads)
        resumed = metrics.value("cardgames_matches_resumed_total", {"game": GAME})
        return answers, store.loads, resumed, [e for e in logs if e["event"] == "match_resumed"]

    answers, loads, resumed, logged = run(go())
    assert [a.status for a in answers] == ["active", "active"] and answers[0] == answers[1]
    assert (loads, resumed) == (1, 1)
    assert [(e["match_id"], e["seq"], e["status"]) for e in logged] == [(answers[0].match_id, 0, "active")]


def test_a_log_line_names_a_rules_error_by_type_and_reason_and_any_other_error_by_its_message():
    """match.loggable_error: a rules error's message is written for the acting seat ("KC is not
    in your hand") and stays out of the operator's log, named by its type and reason only; any
    other error (a store's, an OS error) is logged by its message, which says what failed."""
    from engine_service.rules.errors import IllegalAction
    from engine_service.sessions.match import loggable_error

    assert loggable_error(IllegalAction("KC is not in your hand")) == "IllegalAction (ILLEGAL_ACTION)"
    assert loggable_error(OSError("disk full")) == "disk full"
