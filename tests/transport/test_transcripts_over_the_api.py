"""Transcript conformance through the API a frontend uses (NOTATION.md: the engine's API, its
replays and its conformance tests all speak one notation): every sample transcript of
../shared/rules/transcripts, and a seeded whole match of every game under each of its test
option sets, is played over a real channel by one client per seat. The admin creates the match
with the transcript's options, first dealer and decks; at every step the seat to act is the
view's ``to_act``, its ``legal_actions`` notations are exactly the step's legal set, and the
step's action is accepted; each deal's result appears in ``scores.deal_results`` when the deal
is scored; the match's result is the transcript's."""

from __future__ import annotations

import itertools
import json

import grpc
import pytest
from google.protobuf.json_format import MessageToDict

from clients.cardgames_client import option_value
from engine_service.rules import all_game_ids, get_game, transcript
from engine_service.sessions.config import SessionConfig
from engine_service.transport.generated import card_games_pb2 as pb, match_pb2
from tests.rules.playout import random_match
from tests.rules.test_invariants import option_sets
from tests.shared_paths import transcripts

from .harness import ADMIN_TOKEN, bearer, run
from .test_service import served

GAMES = all_game_ids()
SAMPLES = [path for game in GAMES for path in transcripts(game)]
NO_DEADLINE = SessionConfig(db_path="memory:", bot_pace_s=0.0, time_scale=100_000.0)
OPTION_SETS = [(game, i, options) for game in GAMES for i, options in enumerate(option_sets(game))]


async def _play_over_the_api(srv, data: dict) -> int:
    """Play ``data`` through the API; assert it step by step; return the steps played."""
    games = srv.games
    request = pb.CreateMatchRequest(game=data["game"], first_dealer=data["first_dealer"],
                                    options={k: option_value(v) for k, v in (data.get("options") or {}).items()})
    for deal in data["deals"]:
        request.decks.add(cards=deal["deck"])
    created = await games.CreateMatch(request, metadata=bearer(ADMIN_TOKEN))
    match_id = created.match.match_id
    tokens = []
    for seat in range(len(created.match.seats)):
        joined = await games.JoinMatch(pb.JoinMatchRequest(match_id=match_id, seat=seat))
        tokens.append(joined.seat_token)
    ids = itertools.count()
    played = scored = 0
    view = None
    for d, deal in enumerate(data["deals"]):
        for s, step in enumerate(deal["steps"]):
            where = f"deal {d} step {s}"
            seat = step.get("seat")
            if seat is None:  # the transcript does not say who acts: whoever the server says
                seat = (await games.GetView(pb.GetViewRequest(match_id=match_id),
                                            metadata=bearer(ADMIN_TOKEN))).view.to_act
            view = (await games.GetView(pb.GetViewRequest(match_id=match_id),
                                        metadata=bearer(tokens[seat]))).view
            assert view.HasField("to_act") and view.to_act == seat, where
            if s == 0 and "dealer" in deal.get("expect", {}):
                assert view.dealer == deal["expect"]["dealer"], where
            if "legal" in step:
                assert sorted(a.notation for a in view.legal_actions) == sorted(step["legal"]), where
            answer = await games.SubmitAction(pb.SubmitActionRequest(
                match_id=match_id, action=step["action"], expected_seq=view.seq,
                client_action_id=f"step-{next(ids)}"), metadata=bearer(tokens[seat]))
            played += 1
            assert answer.seq == played, where
            view = answer.view
        if "result" in deal:
            results = MessageToDict(view.scores)["dealResults"]
            assert len(results) == scored + 1 and results[scored] == deal["result"], f"deal {d} result"
            scored += 1
    if data.get("result") is not None:
        summary = (await games.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
        if data["result"]["over"]:
            result = MessageToDict(summary.result)
            assert result["outcome"] == "completed"
            assert result["totals"] == data["result"]["totals"]
            assert sorted(result["winners"]) == sorted(data["result"]["winners"])
        else:
            assert summary.status == match_pb2.MATCH_STATUS_ACTIVE
    return played


def _check(data: dict) -> int:
    async def go():
        async with served(NO_DEADLINE) as (_, srv):
            return await _play_over_the_api(srv, data)
    return run(go)()


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_a_sample_transcript_plays_the_same_over_the_api(path):
    data = transcript.load(path)
    assert _check(data) == sum(len(deal["steps"]) for deal in data["deals"])


@pytest.mark.parametrize("game, i, options", OPTION_SETS, ids=[f"{g}-options{i}" for g, i, _ in OPTION_SETS])
def test_a_whole_match_under_each_option_set_plays_the_same_over_the_api(game, i, options):
    state = random_match(get_game(game), 100 + i, options)  # seeded: the same match every run
    data = json.loads(transcript.dumps(transcript.export(state)))
    assert data["result"]["over"] and data["options"] == options
    assert _check(data) == sum(len(deal["steps"]) for deal in data["deals"])


def test_a_step_the_api_does_not_offer_is_refused():
    """The comparison above is not vacuous: a transcript whose step names an action the
    engine does not offer fails it (the server refuses the action)."""
    data = transcript.load(SAMPLES[0])
    step = data["deals"][0]["steps"][0]
    step["legal"] = step["legal"] + ["pass:extra"]
    with pytest.raises(AssertionError):
        _check(data)
    data = transcript.load(SAMPLES[0])
    data["deals"][0]["steps"][0]["action"] = "nonsense"
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        _check(data)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
