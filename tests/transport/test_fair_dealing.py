"""Fair dealing over a real channel (docs/api.md "Fair dealing"): a whole match in which every
MatchSummary (CreateMatch, ListOpenMatches, GetMatch for every audience) carries the commitment
of every deal dealt so far, growing deal by deal and the same for everybody; RevealDeals is
FAILED_PRECONDITION / MATCH_NOT_OVER for every audience until the end, then the reveals open
the commitments, their shown cards are the admin's export's at their places and the unused
cards stay hidden (KL-2.10); nothing before the end (no message to any audience, no log line)
holds a card salt, a card hash or a deck, and no log line ever holds one; a spectator of a
match without spectators is refused."""

from __future__ import annotations

import asyncio
import hashlib
import random
import re

import grpc
import structlog
from google.protobuf import json_format

from clients.cardgames_client import verify_deal
from engine_service.transport.generated import admin_pb2, card_games_pb2 as pb, match_pb2

from .harness import ADMIN_TOKEN, bearer, error_of, expect_error, run
from .players import (SPECTATOR, Inbox, check_no_leaks, export_transcript, message_cards, truth_by_seq,
                      watch)
from .test_service import served

HEX64 = re.compile(r"[0-9a-f]{64}")
OVER = (match_pb2.MATCH_STATUS_FINISHED, match_pb2.MATCH_STATUS_TERMINATED)


def opened(reveal) -> str:
    """The commitment a reveal opens to, by docs/api.md's formula written out independently of
    the engine and of the client library: shown cards hashed with their salts, hidden hashes
    as given, the SHA-256 of the list."""
    hashes = [hashlib.sha256(f"{salt}:{card}".encode()).hexdigest() if card else digest
              for card, salt, digest in zip(reveal.cards, reveal.card_salts, reveal.card_hashes)]
    return hashlib.sha256(",".join(hashes).encode()).hexdigest()


def deals_dealt_at(transcript: dict) -> list[int]:
    """For each deal of an exported match, the seq after which it was dealt (deal 0: 0)."""
    out, seq = [], 0
    for deal in transcript["deals"]:
        out.append(seq)
        seq += len(deal["steps"])
    return out


@run
async def test_a_whole_match_commits_to_every_deck_and_reveals_them_after_the_end():
    sent: list[object] = []  # every message any audience received before the end
    with structlog.testing.capture_logs() as logs:
        async with served() as (mgr, srv):
            stub = srv.games
            created = (await stub.CreateMatch(pb.CreateMatchRequest(
                game="klaberjass", listed=True, name="fair table"))).match
            match_id = created.match_id
            sent.append(created)
            # a table with open seats is dealt when its last seat is taken: no deck, no
            # commitment, no card on show to a player choosing a seat
            assert list(created.deal_commitments) == []
            lobby = [m for m in (await stub.ListOpenMatches(pb.ListOpenMatchesRequest())).matches
                     if m.match_id == match_id]
            assert [list(m.deal_commitments) for m in lobby] == [[]]
            sent.extend(lobby)
            tokens = []
            for seat in range(2):
                joined = await stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=seat))
                tokens.append(joined.seat_token)
            started = (await stub.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
            assert len(started.deal_commitments) == 1 and HEX64.fullmatch(started.deal_commitments[0])
            audiences = {0: bearer(tokens[0]), 1: bearer(tokens[1]), SPECTATOR: None,
                         "admin": bearer(ADMIN_TOKEN)}
            inboxes = {a: Inbox(a) for a in (0, 1, SPECTATOR)}
            spectating = asyncio.ensure_future(watch(stub, match_id, inboxes[SPECTATOR], None))

            rng = random.Random(7)
            history: list[tuple[int, list[str]]] = []
            refusals = 0
            while True:
                summaries = {a: (await stub.GetMatch(pb.GetMatchRequest(match_id=match_id), metadata=md)).match
                             for a, md in audiences.items()}
                summary = summaries[SPECTATOR]
                assert all(s == summary for s in summaries.values())  # the same for every audience
                history.append((summary.seq, list(summary.deal_commitments)))
                if summary.status in OVER:
                    break
                sent.extend(summaries.values())
                if len(history) == 1 or len(history[-1][1]) != len(history[-2][1]):  # each new deal
                    for md in audiences.values():
                        err = await expect_error(stub.RevealDeals(pb.RevealDealsRequest(match_id=match_id),
                                                                  metadata=md))
                        assert (err.code, err.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "MATCH_NOT_OVER")
                        sent.append(err.message)
                        refusals += 1
                views = {s: (await stub.GetView(pb.GetViewRequest(match_id=match_id),
                                                metadata=bearer(tokens[s]))).view for s in (0, 1)}
                for s, v in views.items():
                    inboxes[s].add(v.seq, v, "view")
                    # each view names the commitment of its deal, the one the summary published
                    assert v.deal_commitment == summary.deal_commitments[v.deal_number]
                seat = next(s for s, v in views.items() if v.HasField("to_act") and v.to_act == s)
                action = rng.choice(list(views[seat].legal_actions)).notation
                try:
                    res = await stub.SubmitAction(pb.SubmitActionRequest(
                        match_id=match_id, action=action, expected_seq=views[seat].seq,
                        client_action_id=f"{seat}-{views[seat].seq}"), metadata=bearer(tokens[seat]))
                except grpc.aio.AioRpcError as exc:  # the match ended meanwhile (cannot: no timer ran out)
                    raise AssertionError(error_of(exc)) from exc
                inboxes[seat].add(res.seq, res.view, "submit_view")
            await asyncio.wait_for(spectating, 30)
            sent.extend(msg for _, msg, _ in inboxes[SPECTATOR].items)
            before_end = list(logs)

            reveals = {a: (await stub.RevealDeals(pb.RevealDealsRequest(match_id=match_id), metadata=md)).deals
                       for a, md in audiences.items()}
            transcript = await export_transcript(srv.admin, match_id)
            terminated = (await stub.CreateMatch(pb.CreateMatchRequest(
                game="klaberjass", spectators_allowed=False))).match.match_id
            for seat in range(2):  # started: its first deck is dealt
                await stub.JoinMatch(pb.JoinMatchRequest(match_id=terminated, seat=seat))
            await srv.admin.TerminateMatch(admin_pb2.TerminateMatchRequest(match_id=terminated, reason="test"),
                                           metadata=bearer(ADMIN_TOKEN))
            no_spectators = await expect_error(stub.RevealDeals(pb.RevealDealsRequest(match_id=terminated)))
            by_admin = (await stub.RevealDeals(pb.RevealDealsRequest(match_id=terminated),
                                               metadata=bearer(ADMIN_TOKEN))).deals

    # the commitments grew deal by deal and never changed
    final = history[-1][1]
    assert len(final) == len(transcript["deals"]) >= 3 and refusals >= 4 * 3
    dealt_at = deals_dealt_at(transcript)
    for (seq, commitments), (_, later) in zip(history, history[1:]):
        assert later[:len(commitments)] == commitments
        assert len(commitments) == sum(1 for at in dealt_at if at <= seq), seq
    # after the end: the same reveal for everybody, each verifies, the decks are the export's
    deals = reveals[SPECTATOR]
    assert all(list(r) == list(deals) for r in reveals.values())
    assert [d.deal for d in deals] == list(range(len(final)))
    assert [d.commitment for d in deals] == final
    for d, exported in zip(deals, transcript["deals"]):
        assert opened(d) == d.commitment and verify_deal(d) and not d.salt
        assert all(c in ("", e) for c, e in zip(d.cards, exported["deck"])) and len(d.cards) == 32
        assert not any(d.cards[19:31]), "KL-2.10: the unused cards are never revealed"
    salts = [s for d in deals for s in d.card_salts if s]
    hashes = [h for d in deals for h in d.card_hashes if h]
    assert len(set(salts)) == len(salts) and len(hashes) >= 12 * len(deals)  # D[19..30] at least
    # nothing received or logged before the end holds a salt, a hash or a deck
    secrets = salts + hashes + [",".join(d["deck"]) for d in transcript["deals"]]
    for msg in sent:
        text = msg if isinstance(msg, str) else json_format.MessageToJson(msg) + repr(msg.SerializeToString())
        assert not any(s in text for s in secrets), text[:200]
        if isinstance(msg, match_pb2.MatchSummary):
            assert not message_cards(msg)
    logged = repr(before_end)
    assert logged and not any(s in logged for s in secrets)
    assert not any(s in repr(logs) for s in salts + hashes)  # nor after it
    truth = truth_by_seq(transcript, [0, 1, SPECTATOR])
    assert check_no_leaks(inboxes, truth) > len(history)
    # the spectator's stream carried every deal's commitment in its views, as published
    streamed = {(m.view.deal_number, m.view.deal_commitment) for _, m, _ in inboxes[SPECTATOR].items
                if isinstance(m, pb.WatchMatchResponse) and m.HasField("view") and m.view.deal_commitment}
    assert streamed == set(enumerate(final))
    # spectators of a match without spectators are refused, its seats and the admin are not
    assert (no_spectators.code, no_spectators.reason) == (grpc.StatusCode.PERMISSION_DENIED,
                                                          "SPECTATORS_NOT_ALLOWED")
    assert len(by_admin) == 1 and verify_deal(by_admin[0])


@run
async def test_reveal_deals_of_an_unknown_match_and_without_match_id():
    async with served() as (mgr, srv):
        missing = await expect_error(srv.games.RevealDeals(pb.RevealDealsRequest(match_id="nope")))
        empty = await expect_error(srv.games.RevealDeals(pb.RevealDealsRequest()))
    assert (missing.code, missing.reason) == (grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND")
    assert (empty.code, empty.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "MISSING_FIELD")


@run
async def test_a_seat_token_still_reveals_the_deals_after_the_match_left_memory():
    """An ended match leaves memory after finished_retention_s; its seat tokens keep working
    (the match is recalled from the store for a token the service does not know), so a player
    can verify the deals long after the end. An unknown token stays UNAUTHENTICATED, a token
    of another match PERMISSION_DENIED."""
    async with served() as (mgr, srv):
        stub = srv.games
        match_id = (await stub.CreateMatch(pb.CreateMatchRequest(game="klaberjass",
                                                                 spectators_allowed=False))).match.match_id
        tokens = [(await stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id))).seat_token for _ in range(2)]
        other = (await stub.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match.match_id
        other_token = (await stub.JoinMatch(pb.JoinMatchRequest(match_id=other))).seat_token
        await stub.LeaveMatch(pb.LeaveMatchRequest(match_id=match_id, resign=True), metadata=bearer(tokens[0]))
        before = (await stub.RevealDeals(pb.RevealDealsRequest(match_id=match_id), metadata=bearer(tokens[1]))).deals
        assert mgr.evict_finished() == 1 and match_id not in mgr.match_ids()
        after = (await stub.RevealDeals(pb.RevealDealsRequest(match_id=match_id), metadata=bearer(tokens[1]))).deals
        view = (await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(tokens[0]))).view
        mgr.evict_finished()
        unknown = await expect_error(stub.RevealDeals(pb.RevealDealsRequest(match_id=match_id),
                                                      metadata=bearer("x" * 43)))
        foreign = await expect_error(stub.RevealDeals(pb.RevealDealsRequest(match_id=match_id),
                                                      metadata=bearer(other_token)))
    assert list(after) == list(before) and all(verify_deal(d) for d in after)
    assert view.seat == 0 and not view.HasField("to_act")
    assert (unknown.code, foreign.code) == (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
