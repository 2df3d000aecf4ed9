"""The sample Jo-Jotte transcripts (shared/rules/transcripts/jojotte_*.json) check out, through
the library and through ``python -m engine_service replay --check``; an engine-exported match
checks out too, and a tampered one is reported at the right place."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from engine_service.rules import get_game, transcript
from tests.rules.playout import random_match
from tests.shared_paths import ROOT, transcripts

FILES = transcripts("jojotte")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_sample_transcript_checks_out(path):
    data = transcript.load(path)
    diff, state = transcript.check(data)
    assert diff is None, str(diff)
    assert state.result() == data["result"]
    # every deal's result is reported exactly (NOTATION section 4)
    played = [d for d in data["deals"] if "result" in d]
    assert [d["result"] for d in played] == state.deal_results()[:len(played)]


def test_replay_cli_checks_the_samples():
    proc = subprocess.run([sys.executable, "-m", "engine_service", "replay", "--check", *map(str, FILES)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for f in FILES:
        assert f"{f}: ok" in proc.stdout


def test_replay_cli_reports_a_changed_legal_set(tmp_path):
    data = transcript.load(FILES[0])
    bad = copy.deepcopy(data)
    bad["deals"][0]["steps"][0]["legal"].remove("pass")
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    proc = subprocess.run([sys.executable, "-m", "engine_service", "replay", "--check", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "deal 0 step 0: legal differs" in proc.stdout


@pytest.mark.parametrize("options", [{}, {"jj_meld_declaration": "optional", "jj_exchange_window": "until_first_lead"}])
def test_exported_match_checks_out(options):
    game = get_game("jojotte")
    state = random_match(game, 77, options)
    data = json.loads(transcript.dumps(transcript.export(state)))
    assert data["options"] == options
    diff, replayed = transcript.check(data)
    assert diff is None, str(diff)
    assert replayed.result() == state.result() and replayed.result()["over"]


def test_sample_single_deal_entries():
    """The single-deal sample: a redoubled accepted diamond contract; seat 0 enters
    (45 + 50) x 4 = 380 plus his melds, and wins the first game (JJ-9.4, JJ-10.1)."""
    data = transcript.load(next(f for f in FILES if "single" in f.name))
    state = transcript.replay(data)
    r = state.deal_results()[0]
    assert r["contract"] == {"kind": "normal", "strain": "D", "holder": 0, "multiplier": 4}
    detail = state.public_view()["table"]["last_deal"]
    assert r["below"][0] == (45 + 50) * 4 + detail["melds"][0] + detail["jo_jotte"][0]
    assert state.result()["totals"]["games_won"] == [1, 0]
