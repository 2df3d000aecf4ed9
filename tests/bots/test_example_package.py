"""An external bot package (tests/example_bot_package) is discovered through its entry point
exactly as if pip had installed it, and plays: in the catalog, in the service's bot host (whose
worker processes must find it too) and in the arena.

The package is "installed" by writing the ``.dist-info`` that pip would write (METADATA and
entry_points.txt, from the package's own pyproject.toml) into a temporary directory on
``sys.path``, next to its source directory: ``importlib.metadata`` reads exactly that.
"""

from __future__ import annotations

import asyncio
import sys
import tomllib
from pathlib import Path

import pytest

from bot_plugins.arena import ArenaConfig, run_arena
from engine_service.plugins.host import BotHost
from engine_service.plugins.manager import PluginSettings, load_catalog

PACKAGE = Path(__file__).resolve().parents[1] / "example_bot_package"


@pytest.fixture
def installed(tmp_path, monkeypatch):
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]
    name, version = project["name"], project["version"]
    dist = tmp_path / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                   f"Summary: {project['description']}\n")
    eps = project["entry-points"]
    lines = []
    for group, entries in eps.items():
        lines.append(f"[{group}]")
        lines += [f"{k} = {v}" for k, v in entries.items()]
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(sys, "path", [str(PACKAGE / "src"), str(tmp_path)] + sys.path)
    yield name
    sys.modules.pop("cardgames_first_legal", None)


def test_discovered_through_its_entry_point(installed):
    catalog = load_catalog(PluginSettings.resolve(environ={}))
    entry = catalog.get("first-legal")
    assert entry is not None, catalog.failures
    assert entry.plugin == "first-legal"
    assert entry.distribution == "cardgames-first-legal 0.1.0"
    assert entry.spec.description == "Plays the first legal action."


def test_allowlist_and_autoload_switch_apply_to_it(installed):
    assert load_catalog(PluginSettings.resolve(environ={"CARDGAMES_BOT_PLUGINS": "random"})).get("first-legal") is None
    assert load_catalog(PluginSettings.resolve(environ={"CARDGAMES_DISABLE_PLUGIN_AUTOLOAD": "1"})).get("first-legal") is None
    assert load_catalog(PluginSettings.resolve(environ={"CARDGAMES_BOT_PLUGINS": "first-legal"})).get("first-legal")


def test_plays_in_the_bot_host(installed):
    async def body():
        host = BotHost(workers=1)
        try:
            assert "first-legal" in [b.name for b in host.bots()]
            assert host.plays("first-legal", "georgian_joker")
            d = await host.decide("first-legal", "klaberjass", 0, {}, ["pass", "take"], 1, 30.0)  # a hang guard
            assert d.action == "pass" and d.failure is None
        finally:
            await host.close()
    asyncio.run(body())


def test_plays_in_the_arena(installed):
    report = run_arena(ArenaConfig(game="klaberjass", bots=("first-legal", "heuristic"), deals=4, seed=1,
                                   progress=False))
    first = next(b for b in report.bots if b.name == "first-legal")
    assert first.decisions > 0 and first.failures == {}


def _unit_test_recipe() -> str:
    """The Python block of docs/bots.md that plays whole matches in a bot author's own tests."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "bots.md").read_text()
    blocks = [b.split("```", 1)[0] for b in doc.split("```python\n")[1:]]
    (recipe,) = [b for b in blocks if "def play_a_match" in b]
    return recipe


def test_the_pages_unit_test_recipe_runs_and_catches_an_illegal_answer(monkeypatch):
    """docs/bots.md had no way to check a bot in a test suite: the arena reports failures and
    exits 0. The page's recipe runs as written (the example bot, every game) and fails on a
    bot that answers an illegal action, and on one that answers a legal action of the wrong
    type."""
    monkeypatch.setattr(sys, "path", [str(PACKAGE / "src")] + sys.path)
    namespace: dict = {"__name__": "bots_md_recipe"}
    exec(compile(_unit_test_recipe(), "docs/bots.md", "exec"), namespace)
    tests = [name for name in namespace if name.startswith("test_")]
    assert tests
    for name in tests:
        namespace[name]()

    class Illegal:
        def decide(self, request):
            return "play:ZZ"

    class NotAString:
        def decide(self, request):
            return list(request.legal[:1])

    for bot in (Illegal, NotAString):
        with pytest.raises(AssertionError):
            namespace["play_a_match"]("japanese_joker", lambda game_id: bot())
    # and the README's pointer to the page says it is there
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("## For bot authors"):readme.index("## For operators")]
    assert "matches in your own test suite" in section


def test_the_pages_route_to_a_seat_names_the_extra_clients_play_needs():
    """docs/bots.md told a bot author to put the bot in a seat with ``CreateMatch`` only; the
    terminal client, the way to do it by hand, fails with ``No module named 'rich'`` in an
    environment where the engine and the plugin were installed without the ``clients`` extra.
    The page names the extra, and the extra holds every package clients/play.py imports beyond
    the engine's own dependencies."""
    import ast
    import importlib.metadata
    import re

    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "bots.md").read_text()
    section = doc[doc.index("## Packaging"):doc.index("## Testing it with the arena")]
    assert "python -m clients.play" in section and "--bots first-legal" in section
    extra = re.search(r"pip install '\.\[([a-z]+)\]'", section).group(1)
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]

    def names(requirements):
        return {re.split(r"[<>=~!;\[ ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}

    available = names(project["dependencies"]) | names(project["optional-dependencies"][extra])
    tree = ast.parse((root / "clients" / "play.py").read_text())
    modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module.split(".")[0] for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    dists = importlib.metadata.packages_distributions()
    third_party = {m for m in modules if m in dists and m not in sys.stdlib_module_names
                   and m not in ("engine_service", "clients", "bot_plugins")}
    assert {"rich", "textual"} <= third_party
    for module in third_party:
        assert {d.lower().replace("_", "-") for d in dists[module]} & available, module
