"""The whole API over a real channel against the real session layer (MatchManager on a memory
store): whole matches of every registered game played by per-seat clients and by bots, watch
streams cut and resumed with after_seq (no event missing or duplicated), a late spectator's
snapshot, idempotent retries, stale expected_seq, and no leaks: every message each seat and a
spectator receive names only cards that audience may know at that sequence number."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any, AsyncIterator

import grpc
import pytest

from engine_service.observability.metrics import Metrics
from engine_service.rules.cards import card_code
from engine_service.rules.registry import all_game_ids, get_game
from engine_service.sessions.config import SessionConfig
from engine_service.sessions.manager import MatchManager
from engine_service.store import MemoryStore
from engine_service.transport.generated import admin_pb2, card_games_pb2 as pb, match_pb2
from tests.rules.playout import cards_in

from .harness import ADMIN_TOKEN, bearer, expect_error, run, running
from .players import (SPECTATOR, Inbox, RandomPlayer, check_no_leaks, create_open_match,
                      export_transcript, truth_by_seq, watch)

GAMES = all_game_ids()


def test_every_game_is_registered():
    assert set(GAMES) >= {"klaberjass", "jojotte", "georgian_joker", "japanese_joker"}


@contextlib.asynccontextmanager
async def served(config: SessionConfig | None = None, *, bot_host: Any = None,
                 admin_token: str | None = ADMIN_TOKEN) -> AsyncIterator[Any]:
    metrics = Metrics()
    mgr = MatchManager(config or SessionConfig(db_path="memory:", bot_pace_s=0.0), store=MemoryStore(),
                       bot_host=bot_host, metrics=metrics, create_bot_host=False)
    await mgr.start()
    async with running(mgr, admin_token=admin_token, metrics=metrics) as srv:
        yield mgr, srv


async def _play_whole_match(srv, game: str, seed: int, *, cut_probability: float,
                            retry_probability: float) -> dict:
    rng = random.Random(seed)
    stub = srv.games
    match_id, tokens = await create_open_match(stub, game)
    n = len(tokens)
    inboxes = {s: Inbox(s) for s in range(n)}
    inboxes[SPECTATOR] = Inbox(SPECTATOR)
    players = [RandomPlayer(stub, match_id, s, tokens[s], random.Random(rng.random()), inboxes[s],
                            retry_probability) for s in range(n)]
    tasks = [asyncio.ensure_future(watch(stub, match_id, inboxes[s], tokens[s], seat=s,
                                         rng=random.Random(rng.random()),
                                         cut_probability=cut_probability, act=players[s].act))
             for s in range(n)]

    async def late_spectator() -> None:  # joins once play is under way: starts from a snapshot
        while (await stub.GetMatch(pb.GetMatchRequest(match_id=match_id))).match.seq < 5:
            await asyncio.sleep(0.01)
        await watch(stub, match_id, inboxes[SPECTATOR], None, rng=random.Random(rng.random()),
                    cut_probability=cut_probability, start_after=None)

    tasks.append(asyncio.ensure_future(late_spectator()))
    await asyncio.gather(*tasks)
    summary = (await stub.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
    transcript = await export_transcript(srv.admin, match_id)
    return dict(match_id=match_id, tokens=tokens, inboxes=inboxes, players=players,
                summary=summary, transcript=transcript)


@pytest.mark.parametrize("game", GAMES)
@run
async def test_whole_match_by_clients_one_per_seat(game):
    async with served() as (mgr, srv):
        out = await _play_whole_match(srv, game, seed=11, cut_probability=0.04, retry_probability=0.05)
        summary, inboxes, players = out["summary"], out["inboxes"], out["players"]
        final = summary.seq
        assert summary.status == match_pb2.MATCH_STATUS_FINISHED and final > 0
        assert summary.result["over"] is True and list(summary.result["winners"])
        # every acknowledged action is in the log, in order, once
        steps = [(s["seat"], s["action"]) for d in out["transcript"]["deals"] for s in d["steps"]]
        assert len(steps) == final
        acked = sorted((seq, p.seat, a) for p in players for seq, a in p.acknowledged)
        assert [(seq, seat, a) for seq, seat, a in acked] == [(i + 1, *steps[i]) for i in range(final)]
        # every audience saw every action exactly once across its reconnects, in order
        for aud in range(len(players)):
            assert inboxes[aud].action_seqs == list(range(1, final + 1)), aud
        spectator = inboxes[SPECTATOR]
        first_seq, first, _ = spectator.items[0]
        assert first.kind == match_pb2.EVENT_KIND_SNAPSHOT and first_seq >= 5
        assert spectator.action_seqs == list(range(first_seq + 1, final + 1))
        assert sum(i.reconnects for i in inboxes.values()) > 0, "the test should cut some streams"
        # the final views agree with the rules: the match is over, everyone sees the same result
        last_views = [i.items[-1][1].view for i in inboxes.values()]
        assert all(v.over and list(v.winners) == list(summary.result["winners"]) for v in last_views)
        truth = truth_by_seq(out["transcript"], list(inboxes))
        assert check_no_leaks(inboxes, truth) > final
        game_obj = get_game(game)
        assert len(out["tokens"]) == game_obj.num_seats


@pytest.mark.parametrize("game", GAMES)
@run
async def test_the_action_completing_a_deal_carries_its_final_trick_with_the_winner(game):
    """The server deals the next deck at once, so the ACTION event of a deal's final card
    carries the next deal's view: its View.last_trick is the finished deal's final trick (the
    previous view's trick plus the event's card) with its winner, and its trick_history is
    empty (no trick of the new deal yet), for each seat and a spectator; after a thrown-in
    deal (KL-3.5, JJ-3.6) it is unset. The final event carries the match's final trick. The
    winner is the rules' (GJ-11.5, JJK-9.1: a trick's winner is public)."""
    async with served() as (mgr, srv):
        out = await _play_whole_match(srv, game, seed=21, cut_probability=0.0, retry_probability=0.0)
        inboxes = out["inboxes"]
        truth = truth_by_seq(out["transcript"], list(inboxes))
        results = out["summary"].result
        checked = 0
        for aud, inbox in inboxes.items():
            events = [ev for _, ev, kind in inbox.items if kind == "event" and ev.HasField("view")]
            for before, ev in zip(events, events[1:]):
                if ev.kind != match_pb2.EVENT_KIND_ACTION or "deal_scored" not in ev.details:
                    continue
                scored = int(ev.details["deal_scored"])
                view = ev.view
                assert not view.trick.plays and not view.trick_history and not any(view.scores.tricks_taken)
                assert view.over or view.deal_number == scored + 1, "the next deal's view"
                expected = truth[ev.seq][aud][0]["last_trick"]
                if expected is None:  # a thrown-in deal: no trick, none of an earlier deal
                    assert view.scores.deal_results[scored]["thrown_in"] is True
                    assert not view.HasField("last_trick")
                    continue
                plays = [(p.seat, p.card.code) for p in view.last_trick.plays]
                assert plays[:-1] == [(p.seat, p.card.code) for p in before.view.trick.plays]
                assert plays[-1] == (ev.seat, ev.action.notation.split(":")[1])
                assert view.last_trick.HasField("winner") and view.last_trick.winner == expected["winner"]
                assert plays == [(p["seat"], p["card"]) for p in expected["plays"]]
                checked += 1
            final = events[-1].view
            assert final.over and final.last_trick.HasField("winner") and not final.trick_history, aud
        assert checked >= len(inboxes) and results["over"]


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("seed", [3])
@run
async def test_no_audience_receives_a_hidden_card(game, seed):
    """Random matches with stale submissions and out-of-turn attempts: every view, event and
    error each seat and a spectator get holds only what that audience may know."""
    # nothing moves but this loop's actions, however slow the machine: the seats watch no
    # stream (absent: a takeover bot plays them after the grace, GJ-12.4) and take their time
    patient = SessionConfig(db_path="memory:", snapshot_threshold=10, reconnect_grace_s=3600.0,
                            default_turn_time_s=0)
    async with served(patient) as (mgr, srv):
        stub = srv.games
        rng = random.Random(seed)
        request = pb.CreateMatchRequest(game=game)
        if game in ("georgian_joker", "japanese_joker"):  # their timers are table options
            request.options["turn_time_s"].int_value = 120  # GJ-12.1 / JJK-10.3: the longest
            request.options["reconnect_grace_s"].int_value = 600  # GJ-12.4 / JJK-10.2: the longest
        match_id, tokens = await create_open_match(stub, game, options=request.options)
        n = len(tokens)
        inboxes = {a: Inbox(a) for a in [*range(n), SPECTATOR]}
        errors: list[tuple[Any, int, str]] = []
        spectator = asyncio.ensure_future(watch(stub, match_id, inboxes[SPECTATOR], None,
                                                rng=random.Random(seed), cut_probability=0.05))
        while True:  # every seat's view and the spectator's, asked at once (no action meanwhile)
            answers = await asyncio.gather(*(stub.GetView(pb.GetViewRequest(match_id=match_id),
                                                          metadata=bearer(tokens[s])) for s in range(n)),
                                           stub.GetView(pb.GetViewRequest(match_id=match_id)))
            views = {}
            for aud, answer in zip([*range(n), SPECTATOR], answers):
                inboxes[aud].add(answer.view.seq, answer.view, "view")
                views[aud] = answer.view
            assert len({v.seq for v in views.values()}) == 1
            if views[0].over or views[0].status != match_pb2.MATCH_STATUS_ACTIVE:
                break
            seat = views[0].to_act
            v = views[seat]
            if rng.random() < 0.1:  # out of turn, naming a card of the sender's own hand
                other = (seat + 1) % n
                own = [c.code for c in views[other].hand]
                err = await expect_error(stub.SubmitAction(pb.SubmitActionRequest(
                    match_id=match_id, action=f"play:{own[0]}" if own else "pass"), metadata=bearer(tokens[other])))
                assert (err.code, err.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN")
                errors.append((other, v.seq, {"message": err.message, **err.metadata}))
            if rng.random() < 0.1 and v.seq > 0:  # a stale decision
                err = await expect_error(stub.SubmitAction(pb.SubmitActionRequest(
                    match_id=match_id, action=v.legal_actions[0].notation, expected_seq=v.seq - 1),
                    metadata=bearer(tokens[seat])))
                assert (err.code, err.reason) == (grpc.StatusCode.ABORTED, "STALE_SEQUENCE")
                assert err.view.seq == v.seq and [c.code for c in err.view.hand] == [c.code for c in v.hand]
                inboxes[seat].add(err.view.seq, err.view, "stale_view")
            res = await stub.SubmitAction(pb.SubmitActionRequest(
                match_id=match_id, action=rng.choice(list(v.legal_actions)).notation,
                expected_seq=v.seq, client_action_id=f"{seat}-{v.seq}"), metadata=bearer(tokens[seat]))
            inboxes[seat].add(res.seq, res.view, "submit_view")
        await asyncio.wait_for(spectator, 30)
        truth = truth_by_seq(await export_transcript(srv.admin, match_id), list(inboxes))
        assert check_no_leaks(inboxes, truth) > 100
        for aud, seq, error in errors:
            assert not cards_in(error) & truth[seq][aud][1], error


@run
async def test_idempotent_retry_and_stale_sequence():
    async with served() as (mgr, srv):
        stub = srv.games
        match_id, tokens = await create_open_match(stub, "japanese_joker")
        views = [(await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(t))).view for t in tokens]
        seat = views[0].to_act
        v = views[seat]
        action = v.legal_actions[0].notation
        req = pb.SubmitActionRequest(match_id=match_id, action=action, expected_seq=v.seq, client_action_id="once")
        first = await stub.SubmitAction(req, metadata=bearer(tokens[seat]))
        again = await stub.SubmitAction(req, metadata=bearer(tokens[seat]))
        assert (first.seq, first.duplicate) == (v.seq + 1, False)
        assert (again.seq, again.duplicate, again.action.notation) == (first.seq, True, action)
        assert (await stub.GetMatch(pb.GetMatchRequest(match_id=match_id))).match.seq == first.seq
        # the same id for another action is a client bug, not a retry
        other = pb.SubmitActionRequest(match_id=match_id, action="trump:S" if action != "trump:S" else "trump:H",
                                       client_action_id="once")
        err = await expect_error(stub.SubmitAction(other, metadata=bearer(tokens[seat])))
        assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "CLIENT_ACTION_ID_REUSED")
        # a decision taken on an old view: ABORTED with the current view attached
        now = (await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(tokens[first.view.to_act]))).view
        err = await expect_error(stub.SubmitAction(pb.SubmitActionRequest(
            match_id=match_id, action=now.legal_actions[0].notation, expected_seq=v.seq),
            metadata=bearer(tokens[now.seat])))
        assert (err.code, err.reason) == (grpc.StatusCode.ABORTED, "STALE_SEQUENCE")
        assert err.view.seq == now.seq and err.view.seat == now.seat
        assert [a.notation for a in err.view.legal_actions] == [a.notation for a in now.legal_actions]
        # a seq ahead of the match (a database restored from a backup) is ABORTED too: the view
        # re-synchronises the client; a negative one is no seq at all
        ahead = await expect_error(stub.SubmitAction(pb.SubmitActionRequest(
            match_id=match_id, action=now.legal_actions[0].notation, expected_seq=now.seq + 5),
            metadata=bearer(tokens[now.seat])))
        assert (ahead.code, ahead.reason, ahead.view.seq) == (grpc.StatusCode.ABORTED, "STALE_SEQUENCE", now.seq)
        assert ahead.metadata == {"expected_seq": str(now.seq + 5), "seq": str(now.seq)}
        assert "stale" not in ahead.message
        negative = await expect_error(stub.SubmitAction(pb.SubmitActionRequest(
            match_id=match_id, action=now.legal_actions[0].notation, expected_seq=-1),
            metadata=bearer(tokens[now.seat])))
        assert (negative.code, negative.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_EXPECTED_SEQ")
        for after in (-1, -(2 ** 63)):
            err = await expect_error(stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id, after_seq=after)))
            assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_AFTER_SEQ")
        assert (await stub.GetMatch(pb.GetMatchRequest(match_id=match_id))).match.seq == now.seq


@run
async def test_error_paths_with_the_session_layer():
    async with served(SessionConfig(db_path="memory:", max_matches=3)) as (mgr, srv):
        stub = srv.games
        match_id, tokens = await create_open_match(stub, "klaberjass")
        other_id, other_tokens = await create_open_match(stub, "japanese_joker")
        views = [(await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(t))).view for t in tokens]
        seat = views[0].to_act
        waiting = (1 - seat)

        async def err_of(call):
            return await expect_error(call)

        def submit(token, action, mid=match_id, **kw):
            return stub.SubmitAction(pb.SubmitActionRequest(match_id=mid, action=action, **kw), metadata=bearer(token))

        cases = [
            (submit(tokens[seat], "play:ZZ"), grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_ACTION"),
            (submit(tokens[seat], "bid:3"), grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_ACTION"),
            (submit(tokens[seat], "name:" + "SHDC"[0]), grpc.StatusCode.FAILED_PRECONDITION, "ILLEGAL_ACTION"),
            (submit(tokens[waiting], views[waiting].hand and f"play:{views[waiting].hand[0].code}"),
             grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN"),
            # a seat token on an id that names no match: the match is unknown, not the token
            (submit(tokens[seat], "pass", mid="no-such-match"), grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND"),
            (submit(other_tokens[0], "pass"), grpc.StatusCode.PERMISSION_DENIED, "WRONG_MATCH"),
            (submit("not-a-token", "pass"), grpc.StatusCode.UNAUTHENTICATED, "MISSING_OR_BAD_TOKEN"),
            (stub.GetView(pb.GetViewRequest(match_id="no-such-match")), grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND"),
            (stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=0)), grpc.StatusCode.ALREADY_EXISTS, "SEAT_TAKEN"),
            (stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id)), grpc.StatusCode.ALREADY_EXISTS, "SEAT_TAKEN"),
            (stub.CreateMatch(pb.CreateMatchRequest(game="chess")), grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_GAME"),
        ]
        for call, code, reason in cases:
            err = await err_of(call)
            assert (err.code, err.reason, err.domain) == (code, reason, "cardgames.v1"), (code, reason, err)
        bad_option = pb.CreateMatchRequest(game="klaberjass")
        bad_option.options["kl_target_score"].string_value = "lots"
        err = await err_of(stub.CreateMatch(bad_option))
        assert (err.code, err.reason, err.metadata.get("option")) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_OPTIONS", "kl_target_score")
        unknown_option = pb.CreateMatchRequest(game="klaberjass")
        unknown_option.options["no_such_option"].bool_value = True
        err = await err_of(stub.CreateMatch(unknown_option))
        assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_OPTIONS")
        # limits: a third match fills the server
        await stub.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))
        err = await err_of(stub.CreateMatch(pb.CreateMatchRequest(game="klaberjass")))
        assert err.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        # a terminated match refuses actions
        await srv.admin.TerminateMatch(admin_pb2.TerminateMatchRequest(match_id=match_id, reason="test"),
                                       metadata=bearer(ADMIN_TOKEN))
        err = await err_of(submit(tokens[seat], views[seat].legal_actions[0].notation))
        assert (err.code, err.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "MATCH_NOT_ACTIVE")
        # spectators are refused where the match forbids them
        closed = await stub.CreateMatch(pb.CreateMatchRequest(game="japanese_joker", spectators_allowed=False))
        err = await err_of(stub.GetView(pb.GetViewRequest(match_id=closed.match.match_id)))
        assert err.code == grpc.StatusCode.PERMISSION_DENIED


@run
async def test_admin_decks_make_the_deal_and_inspect_is_omniscient():
    async with served() as (mgr, srv):
        game = get_game("japanese_joker")
        deck = [card_code(i) for i in game.pack]  # unshuffled: a deal the test can predict
        req = pb.CreateMatchRequest(game="japanese_joker", first_dealer=1)
        req.decks.add(cards=deck)
        created = await srv.games.CreateMatch(req, metadata=bearer(ADMIN_TOKEN))
        match_id = created.match.match_id
        for seat in range(2):
            await srv.games.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=seat))
        inspected = await srv.admin.InspectMatch(admin_pb2.InspectMatchRequest(match_id=match_id), metadata=bearer(ADMIN_TOKEN))
        assert inspected.first_dealer == 1 and list(inspected.decks[0].cards) == deck
        assert inspected.view.dealer == 1
        assert inspected.match.seq == inspected.view.seq and inspected.match.match_id == match_id
        assert list(inspected.match.deal_commitments) == [inspected.view.deal_commitment]
        zones = {z.name: {c.code for c in z.cards} for z in inspected.zones}
        assert set().union(*zones.values()) == set(deck), "the zones cover the pack"
        for hand in inspected.hands:
            assert {c.code for c in hand.cards} == zones[f"hand{hand.seat}"]
        listed = await srv.admin.ListMatches(admin_pb2.ListMatchesRequest(game="japanese_joker"), metadata=bearer(ADMIN_TOKEN))
        assert match_id in [m.match_id for m in listed.matches]


@run
async def test_an_unset_or_zero_turn_time_is_the_table_default():
    """CreateMatchRequest.turn_time unset or zero is the table default (docs/operations.md,
    --default-turn-time-s: "decision deadline of Klaberjass / Jo-Jotte matches created without
    one"; the Joker games' turn_time_s option), not "no deadline"."""
    async with served(SessionConfig(db_path="memory:", default_turn_time_s=45.0)) as (mgr, srv):
        for game, default in (("klaberjass", 45), ("jojotte", 45), ("japanese_joker", 30), ("georgian_joker", 30)):
            for req in (pb.CreateMatchRequest(game=game), pb.CreateMatchRequest(game=game, turn_time={"seconds": 0})):
                created = (await srv.games.CreateMatch(req)).match
                assert created.turn_time.seconds == default, game


def _bot_host():
    from engine_service.plugins.host import BotHost

    return BotHost(workers=1)


@pytest.mark.parametrize("game", GAMES)
@run
async def test_whole_match_against_bots_with_a_spectator(game):
    """One client seat, every other seat a bot plugin (random and heuristic where available);
    a spectator watches to the end."""
    host = _bot_host()
    try:
        # a generous bot deadline: on a loaded machine a decision that times out is played by
        # the auto-move policy (ACTOR_AUTO), and this test is about bots playing through the API
        async with served(SessionConfig(db_path="memory:", bot_deadline_s=20.0, bot_pace_s=0.0),
                          bot_host=host) as (mgr, srv):
            stub = srv.games
            bots = (await stub.ListBots(pb.ListBotsRequest(game=game))).bots
            names = [b.name for b in bots]
            assert "random" in names
            others = [n for n in ("heuristic", "random") if n in names]
            n = get_game(game).num_seats
            req = pb.CreateMatchRequest(game=game)
            req.seats.add().open.SetInParent()
            for i in range(1, n):
                req.seats.add().bot.name = others[i % len(others)]
            match_id = (await stub.CreateMatch(req)).match.match_id
            token = (await stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id))).seat_token
            inboxes = {0: Inbox(0), SPECTATOR: Inbox(SPECTATOR)}
            player = RandomPlayer(stub, match_id, 0, token, random.Random(5), inboxes[0])
            await asyncio.gather(
                watch(stub, match_id, inboxes[0], token, seat=0, act=player.act),
                watch(stub, match_id, inboxes[SPECTATOR], None, start_after=None))
            summary = (await stub.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
            assert summary.status == match_pb2.MATCH_STATUS_FINISHED
            assert [s.kind for s in summary.seats] == [match_pb2.SEAT_KIND_OPEN] + [match_pb2.SEAT_KIND_BOT] * (n - 1)
            by = {ev.by for _, ev, kind in inboxes[SPECTATOR].items if kind == "event" and ev.kind == match_pb2.EVENT_KIND_ACTION}
            assert match_pb2.ACTOR_BOT in by and match_pb2.ACTOR_PLAYER in by
            truth = truth_by_seq(await export_transcript(srv.admin, match_id), list(inboxes))
            assert check_no_leaks(inboxes, truth) > 10
    finally:
        await host.close()


@run
async def test_resign_ends_a_two_player_match_for_the_opponent():
    async with served() as (mgr, srv):
        stub = srv.games
        match_id, tokens = await create_open_match(stub, "klaberjass")
        opponent = stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(tokens[1]))
        assert (await opponent.read()).kind == match_pb2.EVENT_KIND_SNAPSHOT
        left = await stub.LeaveMatch(pb.LeaveMatchRequest(match_id=match_id, resign=True), metadata=bearer(tokens[0]))
        assert left.match.status == match_pb2.MATCH_STATUS_FINISHED
        assert list(left.match.result["winners"]) == [1]
        while True:
            ev = await opponent.read()
            if ev.kind == match_pb2.EVENT_KIND_MATCH_ENDED:
                break
        assert ev.view.status == match_pb2.MATCH_STATUS_FINISHED
        err = await expect_error(stub.LeaveMatch(pb.LeaveMatchRequest(match_id=match_id, resign=True),
                                                 metadata=bearer(tokens[1])))
        assert (err.code, err.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "MATCH_NOT_ACTIVE")
        # the resigner's retry (its answer lost) is a repeat: OK, the match as it ended
        again = await stub.LeaveMatch(pb.LeaveMatchRequest(match_id=match_id, resign=True),
                                      metadata=bearer(tokens[0]))
        assert (again.match.seq, again.match.status, again.match.result) == (
            left.match.seq, left.match.status, left.match.result)  # presence may have changed


@run
async def test_the_lobby_lists_listed_waiting_matches_over_the_api():
    """ListOpenMatches needs no token and shows only listed matches waiting for players with
    a free seat; CreateMatch's ``listed`` comes back in every summary; bad arguments are
    INVALID_ARGUMENT."""
    async with served() as (_, srv):
        s = srv.games
        listed = (await s.CreateMatch(pb.CreateMatchRequest(game="japanese_joker", listed=True, name="lobby"))).match
        hidden = (await s.CreateMatch(pb.CreateMatchRequest(game="japanese_joker"))).match
        other = (await s.CreateMatch(pb.CreateMatchRequest(game="klaberjass", listed=True))).match
        lobby = (await s.ListOpenMatches(pb.ListOpenMatchesRequest())).matches
        assert [m.match_id for m in lobby] == [listed.match_id, other.match_id]
        assert lobby[0].listed and lobby[0].name == "lobby" and lobby[0].status == match_pb2.MATCH_STATUS_WAITING
        assert not hidden.listed
        only = (await s.ListOpenMatches(pb.ListOpenMatchesRequest(game="klaberjass"))).matches
        assert [m.match_id for m in only] == [other.match_id]
        assert (await s.GetMatch(pb.GetMatchRequest(match_id=listed.match_id))).match.listed

        for seat in (0, 1):  # full: it starts and leaves the lobby
            await s.JoinMatch(pb.JoinMatchRequest(match_id=listed.match_id, seat=seat, player_name=f"p{seat}"))
        lobby = (await s.ListOpenMatches(pb.ListOpenMatchesRequest(limit=10))).matches
        assert [m.match_id for m in lobby] == [other.match_id]

        bad_limit = await expect_error(s.ListOpenMatches(pb.ListOpenMatchesRequest(limit=-1)))
        assert (bad_limit.code, bad_limit.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_LIMIT")
        bad_game = await expect_error(s.ListOpenMatches(pb.ListOpenMatchesRequest(game="poker")))
        assert bad_game.code == grpc.StatusCode.INVALID_ARGUMENT
        # ListBots refuses it as ListOpenMatches does, its message listing the known games alike
        bad_bots = await expect_error(s.ListBots(pb.ListBotsRequest(game="poker")))
        assert (bad_bots.code, bad_bots.reason, bad_bots.message) == (bad_game.code, "UNKNOWN_GAME", bad_game.message)


@run
async def test_the_error_metadata_docs_api_md_promises():
    """docs/api.md's table of ErrorInfo.metadata keys, reason by reason, over a real channel."""
    async with served(SessionConfig(db_path="memory:")) as (mgr, srv):
        stub = srv.games
        match_id, tokens = await create_open_match(stub, "klaberjass")
        mover = (await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(tokens[0]))).view.to_act
        waiter = 1 - mover
        view = (await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(tokens[mover]))).view
        legal = [a.notation for a in view.legal_actions]
        assert legal  # the mover's own view lists them
        illegal = next(a for a in ("take", "pass", "keep", "exchange") if a not in legal)
        bad_option = pb.CreateMatchRequest(game="klaberjass")
        bad_option.options["kl_target_score"].int_value = 0
        bot = pb.CreateMatchRequest(game="klaberjass")
        bot.seats.add().open.SetInParent()
        bot.seats.add().bot.name = "nobody"
        errors = {
            "INVALID_OPTIONS": await expect_error(stub.CreateMatch(bad_option)),
            "UNKNOWN_BOT": await expect_error(stub.CreateMatch(bot)),
            "ILLEGAL_ACTION": await expect_error(stub.SubmitAction(pb.SubmitActionRequest(
                match_id=match_id, action=illegal), metadata=bearer(tokens[mover]))),
            "NOT_YOUR_TURN": await expect_error(stub.SubmitAction(pb.SubmitActionRequest(
                match_id=match_id, action=legal[0]), metadata=bearer(tokens[waiter]))),
            "BAD_EXPECTED_SEQ": await expect_error(stub.SubmitAction(pb.SubmitActionRequest(
                match_id=match_id, action=legal[0], expected_seq=-2), metadata=bearer(tokens[mover]))),
            # each names its field too (they used to carry no metadata: a form could not tell
            # which of its fields to mark)
            "BAD_SEAT": await expect_error(stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=2))),
            "BAD_SEATS": await expect_error(stub.CreateMatch(pb.CreateMatchRequest(
                game="klaberjass", seats=[match_pb2.SeatSpec()] * 3))),
            "BAD_FIRST_DEALER": await expect_error(stub.CreateMatch(pb.CreateMatchRequest(
                game="klaberjass", first_dealer=2), metadata=bearer(ADMIN_TOKEN))),
            "BAD_SPECTATOR_DELAY": await expect_error(stub.CreateMatch(pb.CreateMatchRequest(
                game="klaberjass", spectator_delay_actions=201))),
            "BAD_TURN_TIME": await expect_error(stub.CreateMatch(pb.CreateMatchRequest(
                game="klaberjass", turn_time={"seconds": 5}))),
            "BAD_AFTER_SEQ": await expect_error(stub.WatchMatch(pb.WatchMatchRequest(
                match_id=match_id, after_seq=99), metadata=bearer(tokens[mover]))),
        }
    assert {reason: err.reason for reason, err in errors.items()} == {r: r for r in errors}
    assert errors["INVALID_OPTIONS"].metadata["option"] == "kl_target_score" and errors["INVALID_OPTIONS"].metadata["allowed"]
    assert errors["UNKNOWN_BOT"].metadata["bot"] == "nobody"
    assert errors["ILLEGAL_ACTION"].metadata["action"] == illegal
    assert errors["NOT_YOUR_TURN"].metadata["to_act"] == str(mover)
    assert errors["BAD_EXPECTED_SEQ"].metadata["field"] == "expected_seq"
    assert {r: errors[r].metadata.get("field") for r in ("BAD_SEAT", "BAD_SEATS", "BAD_FIRST_DEALER",
                                                         "BAD_SPECTATOR_DELAY", "BAD_TURN_TIME", "BAD_AFTER_SEQ")} == {
        "BAD_SEAT": "seat", "BAD_SEATS": "seats", "BAD_FIRST_DEALER": "first_dealer",
        "BAD_SPECTATOR_DELAY": "spectator_delay_actions", "BAD_TURN_TIME": "turn_time", "BAD_AFTER_SEQ": "after_seq"}


@pytest.mark.parametrize("game", GAMES)
@run
async def test_a_malformed_action_names_what_was_sent_in_every_game(game):
    """docs/api.md: MALFORMED_ACTION carries `action` (what you sent), as ILLEGAL_ACTION does,
    in every game (only Klaberjass's parser named it)."""
    async with served() as (_, srv):
        match_id, tokens = await create_open_match(srv.games, game)
        mover = (await srv.games.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(tokens[0]))).view.to_act
        err = await expect_error(srv.games.SubmitAction(pb.SubmitActionRequest(
            match_id=match_id, action="fold:everything"), metadata=bearer(tokens[mover])))
    assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_ACTION")
    assert err.metadata == {"action": "fold:everything"}


@run
async def test_an_overlong_option_names_its_request_field():
    """docs/api.md: FIELD_TOO_LONG's `field` is the request field: `options` for an option's
    name, `options[NAME]` for its value (not a phrase)."""
    long_name = pb.CreateMatchRequest(game="georgian_joker")
    long_name.options["x" * 200].string_value = "nines"
    long_value = pb.CreateMatchRequest(game="georgian_joker")
    long_value.options["deal_schedule"].string_value = "n" * 200
    async with served() as (_, srv):
        errors = [await expect_error(srv.games.CreateMatch(req)) for req in (long_name, long_value)]
    assert [(e.reason, e.metadata["field"]) for e in errors] == [("FIELD_TOO_LONG", "options"),
                                                                 ("FIELD_TOO_LONG", "options[deal_schedule]")]
    assert errors[0].message.startswith("an option name is longer than")
    assert errors[1].message.startswith("option 'deal_schedule' is longer than")


@run
async def test_the_admins_view_is_the_public_one_with_the_legal_actions_of_the_seat_to_act():
    """docs/api.md: GetView with the admin token is the public view plus the legal actions of
    the seat to act; no hand (the hands are InspectMatch's)."""
    async with served() as (_, srv):
        match_id, tokens = await create_open_match(srv.games, "japanese_joker")
        admin = (await srv.games.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(ADMIN_TOKEN))).view
        mover = (await srv.games.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(tokens[admin.to_act]))).view
        public = (await srv.games.GetView(pb.GetViewRequest(match_id=match_id))).view
    assert [a.notation for a in admin.legal_actions] == [a.notation for a in mover.legal_actions] != []
    assert not admin.hand and not admin.HasField("seat") and len(mover.hand) > 0
    del admin.legal_actions[:]
    assert admin == public


@run
async def test_the_start_reaches_a_waiting_watcher_as_the_last_joined_presence_events_view():
    """docs/api.md (WatchMatch): no action starts a match, so a seat that watches while it
    waits gets its hand, ``to_act`` and the first deal's commitment in the view of the
    PRESENCE event (``joined``) of the last seat taken, at seq 0; a spectator gets the public
    view of the start the same way. Every event but a heartbeat carries a view."""
    async with served() as (_, srv):
        stub = srv.games
        created = (await stub.CreateMatch(pb.CreateMatchRequest(game="georgian_joker"))).match
        match_id = created.match_id
        first = await stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=0))
        seat_stream = stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(first.seat_token))
        spectator = stub.WatchMatch(pb.WatchMatchRequest(match_id=match_id))
        for stream in (seat_stream, spectator):
            snapshot = await stream.read()
            assert snapshot.kind == match_pb2.EVENT_KIND_SNAPSHOT
            assert snapshot.view.status == match_pb2.MATCH_STATUS_WAITING and not snapshot.view.hand
        for seat in (1, 2, 3):
            await stub.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=seat))

        async def until_active(stream) -> list:
            events = []
            while not events or events[-1].view.status != match_pb2.MATCH_STATUS_ACTIVE:
                events.append(await asyncio.wait_for(stream.read(), 30))
            return events

        for stream, audience in ((seat_stream, 0), (spectator, None)):
            events = await until_active(stream)
            assert all(e.kind == match_pb2.EVENT_KIND_PRESENCE and e.HasField("view") for e in events)
            start = events[-1]
            assert (start.reason, start.seat, start.seq) == ("joined", 3, 0)
            assert start.details["change"] == "joined"
            view = start.view
            assert view.HasField("to_act") and view.deal_commitment
            if audience is None:
                assert not view.HasField("seat") and not view.hand
            else:
                assert view.seat == 0 and view.hand
        seat_stream.cancel()
        spectator.cancel()


@run
async def test_domain_events_carry_the_request_id_of_the_call_they_belong_to():
    """The request id (x-request-id, else drawn) is bound for the whole call: the match's own
    log lines written on its behalf (action_applied) carry it, those of another call do not."""
    from tests.sessions.helpers import capture_logs_with_context

    with capture_logs_with_context() as logs:  # first: a match binds its logger when created
        async with served() as (mgr, srv):
            stub = srv.games
            match_id, tokens = await create_open_match(stub, "japanese_joker")
            views = [(await stub.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(t))).view
                     for t in tokens]
            seat = next(v.seat for v in views if v.HasField("to_act") and v.to_act == v.seat)
            del logs[:]
            await stub.SubmitAction(pb.SubmitActionRequest(
                match_id=match_id, action=views[seat].legal_actions[0].notation, expected_seq=views[seat].seq),
                metadata=(("x-request-id", "act-1"), *bearer(tokens[seat])))
            await stub.GetMatch(pb.GetMatchRequest(match_id=match_id))
            for _ in range(1000):
                if sum(e["event"] == "rpc" for e in logs) == 2:
                    break
                await asyncio.sleep(0.01)
    applied = [e for e in logs if e["event"] == "action_applied"]
    assert len(applied) == 1 and applied[0]["request_id"] == "act-1" and applied[0]["seq"] == 1
    rpc = [e for e in logs if e["event"] == "rpc"]
    assert [e["request_id"] == "act-1" for e in rpc] == [True, False]


def test_an_answered_error_does_not_keep_its_match_in_memory():
    """grpc keeps an aborted call's AbortError on the call's state, which the servicer's frames
    reference: a reference cycle, freed only by the garbage collector. Through the answered
    error's traceback it used to reach the session layer's frames and so a whole match, which
    then outlived its eviction until a full collection (a soak counted up to 20 such
    matches). With the collector off, an evicted match must be freed at once."""
    import gc

    async def scenario():
        config = SessionConfig(db_path="memory:", bot_pace_s=0.0, finished_retention_s=0.0)
        async with served(config) as (mgr, srv):
            match_id, tokens = await create_open_match(srv.games, "japanese_joker")
            for action in ("play:X9", "bid:1", "trump:Q"):  # refused: INVALID_ARGUMENT / FAILED_PRECONDITION
                await expect_error(srv.games.SubmitAction(pb.SubmitActionRequest(
                    match_id=match_id, action=action), metadata=bearer(tokens[0])))
            await srv.games.LeaveMatch(pb.LeaveMatchRequest(match_id=match_id, resign=True),
                                       metadata=bearer(tokens[1]))
            assert mgr.evict_finished() == 1
            await asyncio.sleep(0.05)
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            return [type(o).__name__ for o in gc.garbage
                    if type(o).__name__ in ("LiveMatch", "JapaneseJokerState", "StateMemo", "SeatSlot")]

    gc.collect()
    gc.disable()
    try:
        pinned = run(scenario)()
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert pinned == []
