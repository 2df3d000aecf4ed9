"""Japanese Joker over the API against the rulebook oracle: whole matches written by
:mod:`tests.rules.japanese_joker_oracle` alone (decks, every step's seat and legal set, deal and
match results; NOTATION 3) are played over a real channel by one client per seat and must check
out step by step (see :mod:`.test_transcripts_over_the_api`)."""

from __future__ import annotations

import json

import pytest

from tests.rules.test_japanese_joker_oracle import model_transcript

from .test_transcripts_over_the_api import _check


@pytest.mark.parametrize("options, seed", [({}, 900), ({"target_score": 11, "turn_time_s": 10}, 902)])
def test_a_match_written_by_the_rulebook_oracle_plays_the_same_over_the_api(options, seed):
    data = json.loads(json.dumps(model_transcript(options, seed)))
    assert data["result"]["over"]  # JJK-8.2
    assert _check(data) == sum(len(deal["steps"]) for deal in data["deals"])
