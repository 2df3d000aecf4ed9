"""The hookspecs module is the bot author's manual: every hook is documented (purpose, what a
bot may not do, the return value), and docs/bots.md names every hook."""

from __future__ import annotations

import inspect
from pathlib import Path

from engine_service.plugins import hookspecs
from engine_service.plugins.manager import BotPluginManager

DOCS = Path(__file__).resolve().parents[2] / "docs" / "bots.md"


def hook_names() -> list[str]:
    pm = BotPluginManager()
    return sorted(name for name in vars(pm.hook) if not name.startswith("_"))


def test_there_are_hooks_and_each_is_a_spec_of_this_project():
    names = hook_names()
    assert names == sorted(n for n, f in vars(hookspecs).items()
                           if callable(f) and hasattr(f, "cardgames_spec"))
    assert "cardgames_bots" in names


def test_every_hookspec_is_documented():
    for name in hook_names():
        fn = getattr(hookspecs, name)
        doc = inspect.getdoc(fn) or ""
        assert len(doc) > 200, f"{name}: the docstring is the manual, it is too short"
        assert ":return:" in doc, f"{name}: say what the hook returns"
        assert "must not" in doc, f"{name}: say what a plugin must not do"
        assert inspect.signature(fn).return_annotation is not inspect.Signature.empty, name


def test_the_bot_guide_names_every_hook():
    text = DOCS.read_text()
    for name in hook_names():
        assert f"`{name}`" in text, f"docs/bots.md does not mention {name}"
