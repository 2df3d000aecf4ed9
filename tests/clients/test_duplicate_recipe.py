"""docs/operations.md "Duplicate tournaments", executed: the script it shows runs as written
against a real engine (its port and admin token through the environment, as the text says),
plays both tables to the end, and writes two transcripts that check out, dealt from the same
decks with the same first dealer; the pack it builds for the Joker games is theirs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from clients.local_service import LocalService
from engine_service.rules import get_game
from engine_service.rules.cards import card_code

from .conftest import ADMIN_TOKEN

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()


def recipe() -> str:
    section = OPERATIONS[OPERATIONS.index("### Duplicate tournaments"):]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_packs_it_builds_are_the_games_packs():
    script = recipe()
    namespace: dict = {}
    exec(script.split("async def main", 1)[0], namespace)  # the constants, without running it
    assert sorted(namespace["PACK"]) == sorted(card_code(c) for c in get_game("klaberjass").pack)
    assert sorted(namespace["PACK"]) == sorted(card_code(c) for c in get_game("jojotte").pack)
    joker_line = next(line for line in script.splitlines() if line.startswith("# PACK = "))
    exec(joker_line[2:], namespace)
    for game in ("georgian_joker", "japanese_joker"):
        assert sorted(namespace["PACK"]) == sorted(card_code(c) for c in get_game(game).pack)


def test_the_recipe_plays_two_tables_with_the_same_decks(tmp_path):
    script = tmp_path / "duplicate.py"
    script.write_text(recipe())
    service = LocalService(admin_token=ADMIN_TOKEN, log_path=tmp_path / "engine.log",
                           args=["--bot-pace-s", "0", "--bot-deadline-s", "5"])
    service.start()
    try:
        env = dict(os.environ, CARDGAMES_PORT=str(service.port), CARDGAMES_ADMIN_TOKEN=ADMIN_TOKEN,
                   PYTHONPATH=str(ROOT))
        run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
    finally:
        assert service.stop() == 0, service.log_tail()
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["table 0", "table 1"], run.stdout
    assert lines[0].endswith("seats ['heuristic', 'random']") and lines[1].endswith("seats ['random', 'heuristic']")
    files = [tmp_path / f"{line.split()[2]}.json" for line in lines]
    assert all(f.stat().st_mode & 0o077 == 0 for f in files), "the transcripts are the owner's only"

    check = subprocess.run([sys.executable, "-m", "engine_service", "replay", "--check", *map(str, files)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    a, b = (json.loads(f.read_text()) for f in files)
    assert a["first_dealer"] == b["first_dealer"] == 0
    assert a["result"]["over"] and b["result"]["over"]
    boards = min(len(a["deals"]), len(b["deals"]))
    assert [d["deck"] for d in a["deals"][:boards]] == [d["deck"] for d in b["deals"][:boards]]
    assert a["deals"][0]["expect"] == b["deals"][0]["expect"] == {"dealer": 0}
