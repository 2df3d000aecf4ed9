"""The sample transcripts (shared/rules/transcripts/georgian_joker_*.json) check out through
the engine and through the replay command; exported matches of both schedules check out too."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from engine_service.rules import transcript
from tests.shared_paths import ROOT, transcripts

from .checks_georgian_joker import GAME, check_scores
from .playout import random_match

FILES = transcripts("georgian_joker")


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_sample_transcript_checks_out(path):
    data = transcript.load(path)
    diff, state = transcript.check(data)
    assert diff is None, str(diff)
    check_scores(state)
    assert state.result() == data["result"]


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_sample_transcript_detects_a_changed_result(path):
    data = transcript.load(path)
    bad = copy.deepcopy(data)
    bad["deals"][-1]["result"]["scores"][0] += 10
    diff, _ = transcript.check(bad)
    assert diff is not None and diff.what == "result.scores"


def test_replay_command_checks_the_samples():
    proc = subprocess.run([sys.executable, "-m", "engine_service", "replay", "--check", *map(str, FILES)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": ok") == len(FILES)


@pytest.mark.parametrize("options", [{}, {"deal_schedule": "nines", "khishti_penalty": "500"}])
def test_exported_whole_match_checks_out(options):
    state = random_match(GAME, 17, options)
    data = json.loads(transcript.dumps(transcript.export(state)))
    assert data["options"] == options
    assert len(data["deals"]) == (24 if not options else 16)
    ends = [i for i, d in enumerate(data["deals"]) if "premium" in d["result"]]
    assert ends == ([7, 11, 19, 23] if not options else [3, 7, 11, 15])
    diff, replayed = transcript.check(data)
    assert diff is None, str(diff)
    assert replayed.result() == state.result()


def test_tied_winners_check_out_in_any_order():
    """NOTATION.md section 3: `winners` names the seats sharing first place (GJ-9.3), a set:
    a transcript listing them in another order than the engine's seat order checks out; a
    missing, extra or repeated seat does not."""
    state = random_match(GAME, 186, {"deal_schedule": "nines"})  # a seeded match ending in a tie
    assert state.result()["winners"] == [0, 2]
    data = transcript.export(state)
    for winners, differs in (([2, 0], False), ([0, 2], False), ([0], True), ([0, 2, 1], True),
                             ([0, 0, 2], True), ([2, 2], True)):
        told = copy.deepcopy(data)
        told["result"]["winners"] = winners
        diff, _ = transcript.check(told)
        assert (diff is not None) == differs, (winners, diff)
        assert diff is None or (diff.where, diff.what) == ("match result", "result.winners")


def test_a_clone_exports_the_same_transcript():
    """NOTATION.md section 3: a session checkpoints and writes matches from ``clone()``s, so a
    clone's transcript (its options, GJ-13, among them) is the original's, mid-deal and at
    the match's end."""
    options = {"deal_schedule": "nines", "moshla": "off"}
    state = random_match(GAME, 23, options)
    assert transcript.export(state.clone()) == transcript.export(state)
    partial = GAME.new_state(options, first_dealer=1)
    partial.deal(list(GAME.pack))
    partial.apply("trump:H")
    clone = partial.clone()
    assert transcript.export(clone) == transcript.export(partial)
    assert transcript.export(clone)["options"] == options
