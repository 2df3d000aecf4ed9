"""A match deleted by retention (``keep_finished_days``, docs/operations.md "Retention") over a
real channel: every call about it answers NOT_FOUND / MATCH_NOT_FOUND, whoever asks (a seat
token of it included: the match is gone, the token is not "wrong"), and the admin's listing no
longer shows it. Both ways a match can be when it is pruned are covered: still held in memory
(ended less than finished_retention_s ago) and already evicted (read back on demand until then)."""

from __future__ import annotations

import time

import grpc

from engine_service.transport.generated import admin_pb2, card_games_pb2 as pb, match_pb2

from .harness import ADMIN_TOKEN, bearer, expect_error, run
from .test_service import served


async def ended_match(stub) -> tuple[str, list[str]]:
    match_id = (await stub.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match.match_id
    tokens = [(await stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id))).seat_token for _ in range(2)]
    await stub.LeaveMatch(pb.LeaveMatchRequest(match_id=match_id, resign=True), metadata=bearer(tokens[0]))
    return match_id, tokens


@run
async def test_a_pruned_match_is_not_found_by_anyone():
    async with served() as (mgr, srv):
        games, admin = srv.games, srv.admin
        evicted, evicted_tokens = await ended_match(games)
        assert mgr.evict_finished() == 1  # only in the store now
        held, held_tokens = await ended_match(games)
        live = (await games.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match.match_id
        live_token = (await games.JoinMatch(pb.JoinMatchRequest(match_id=live))).seat_token
        # before: the seat tokens of both ended matches work (the evicted one is recalled)
        for match_id, tokens in ((evicted, evicted_tokens), (held, held_tokens)):
            deals = await games.RevealDeals(pb.RevealDealsRequest(match_id=match_id), metadata=bearer(tokens[1]))
            assert len(deals.deals) == 1
        mgr.evict_finished()

        pruned = await mgr.prune_finished(ended_before=time.time() + 1)
        assert pruned.matches == 2

        admin_md = bearer(ADMIN_TOKEN)
        errors = []
        for match_id, tokens in ((evicted, evicted_tokens), (held, held_tokens)):
            for md in (bearer(tokens[0]), bearer(tokens[1]), (), admin_md):
                errors += [
                    await expect_error(games.GetMatch(pb.GetMatchRequest(match_id=match_id), metadata=md)),
                    await expect_error(games.GetView(pb.GetViewRequest(match_id=match_id), metadata=md)),
                    await expect_error(games.RevealDeals(pb.RevealDealsRequest(match_id=match_id), metadata=md)),
                    await expect_error(games.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=md)),
                ]
            for md in (bearer(tokens[1]),):
                errors += [
                    await expect_error(games.SubmitAction(pb.SubmitActionRequest(
                        match_id=match_id, action="pass"), metadata=md)),
                    await expect_error(games.LeaveMatch(pb.LeaveMatchRequest(match_id=match_id), metadata=md)),
                ]
            errors += [
                await expect_error(games.JoinMatch(pb.JoinMatchRequest(match_id=match_id))),
                await expect_error(admin.InspectMatch(admin_pb2.InspectMatchRequest(match_id=match_id),
                                                      metadata=admin_md)),
                await expect_error(admin.ExportTranscript(admin_pb2.ExportTranscriptRequest(match_id=match_id),
                                                          metadata=admin_md)),
                await expect_error(admin.TerminateMatch(admin_pb2.TerminateMatchRequest(match_id=match_id),
                                                        metadata=admin_md)),
            ]
        listed = await admin.ListMatches(admin_pb2.ListMatchesRequest(), metadata=admin_md)
        ended = await admin.ListMatches(admin_pb2.ListMatchesRequest(status=match_pb2.MATCH_STATUS_FINISHED),
                                        metadata=admin_md)
        # the unfinished match is untouched, and a wrong token for it is still a token error
        view = await games.GetView(pb.GetViewRequest(match_id=live), metadata=bearer(live_token))
        wrong = await expect_error(games.GetView(pb.GetViewRequest(match_id=live), metadata=bearer("x" * 43)))

    assert {(e.code, e.reason) for e in errors} == {(grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND")}
    assert len(errors) == 2 * (16 + 2 + 4)
    assert [m.match_id for m in listed.matches] == [live] and list(ended.matches) == []
    assert view.view.seat == 0
    assert (wrong.code, wrong.reason) == (grpc.StatusCode.UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN")


@run
async def test_another_matchs_seat_token_on_an_id_that_names_no_match_is_not_found():
    """docs/api.md, Errors: NOT_FOUND / MATCH_NOT_FOUND "whatever seat token the call carries
    (one this match issued before it was deleted, or another match's)": another match's token
    on an id never created or pruned is not PERMISSION_DENIED / WRONG_MATCH, which it stays on
    a match that exists."""
    async with served() as (mgr, srv):
        games = srv.games
        pruned, _ = await ended_match(games)
        assert (await mgr.prune_finished(ended_before=time.time() + 1)).matches == 1
        live = (await games.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match.match_id
        token = (await games.JoinMatch(pb.JoinMatchRequest(match_id=live))).seat_token
        other = (await games.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))).match.match_id
        for match_id in ("no-such-match", pruned):
            for call in (games.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(token)),
                         games.SubmitAction(pb.SubmitActionRequest(match_id=match_id, action="pass"),
                                            metadata=bearer(token))):
                err = await expect_error(call)
                assert (err.code, err.reason) == (grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND"), match_id
        err = await expect_error(games.GetView(pb.GetViewRequest(match_id=other), metadata=bearer(token)))
        assert (err.code, err.reason) == (grpc.StatusCode.PERMISSION_DENIED, "WRONG_MATCH")
