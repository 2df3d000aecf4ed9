"""docs/api.md and docs/rules.md stay true: every error reason the engine can send is
documented, every RPC is described, the Python example runs against a real engine, and the
rules index names every game, rulebook section and documented choice."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from engine_service.rules import registry
from tests.shared_paths import shared_dir

ROOT = Path(__file__).resolve().parents[2]
API = (ROOT / "docs" / "api.md").read_text()
RULES = (ROOT / "docs" / "rules.md").read_text()

#: Reasons that never reach a client: the abstract base class, and the determinization error
#: that only bots see.
NOT_SENT = {"RULES_ERROR", "INCONSISTENT_VIEW"}


def engine_reasons() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "engine_service").rglob("*.py"):
        if "generated" in path.parts:
            continue
        text = path.read_text()
        found |= set(re.findall(r'\breason\s*=\s*"([A-Z][A-Z_]+)"', text))
        found |= {m[1] for m in re.findall(r'code, reason = "([A-Z_]+)", "([A-Z_]+)"', text)}
    return found - NOT_SENT


def test_every_error_reason_is_documented():
    reasons = engine_reasons()
    assert len(reasons) > 30
    missing = sorted(r for r in reasons if f"`{r}`" not in API)
    assert not missing, f"reasons missing from docs/api.md: {missing}"


def test_every_rpc_is_documented():
    for proto in (ROOT / "proto" / "cardgames" / "v1").glob("*.proto"):
        for rpc in re.findall(r"^\s*rpc (\w+)\(", proto.read_text(), re.MULTILINE):
            assert f"`{rpc}" in API, f"{rpc} ({proto.name}) is not described in docs/api.md"


def test_python_example_runs(engine):
    (example,) = [block for block in re.findall(r"```python\n(.*?)```", API, re.DOTALL)]
    code = example.replace("127.0.0.1:50051", engine.target)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_rules_index_covers_every_game_and_section():
    for game in registry.all_games():
        assert f"`{game.id}`" in RULES, game.id
        assert game.rulebook in RULES, game.rulebook
        assert f"games/{game.id}.md" in RULES
        rulebook = (shared_dir() / "rules" / game.rulebook).read_text()
        for number, title in re.findall(r"^## (\d+)\. (.+)$", rulebook, re.MULTILINE):
            assert title.strip() in RULES, f"{game.rulebook} section {number} {title!r} is not indexed"
        for spec in game.option_specs:
            assert f"`{spec.name}`" in RULES, f"{game.id} option {spec.name}"


def test_rules_index_links_exist():
    for link in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", RULES):
        if link.startswith("http"):
            continue
        assert (ROOT / "docs" / link).exists(), link


def test_the_client_librarys_example_plays_a_match(engine):
    """The example in clients/cardgames_client.py's docstring plays a whole match against a
    bot (the bot may move first, PRESENCE events repeat a view: act() copes with both)."""
    import clients.cardgames_client as cg

    (example,) = re.findall(r"Everything is asynchronous \(grpc\.aio\)::\n\n(.*?)\n\n(?=\S)", cg.__doc__, re.DOTALL)
    code = "\n".join(line[4:] for line in example.splitlines()).replace("127.0.0.1:50051", engine.target)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
