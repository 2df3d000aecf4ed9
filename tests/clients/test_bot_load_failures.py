"""A bot plugin that fails to load is said by ``ListBots`` (``load_failures``) and by
``python -m clients.play --list``, over a real channel to a real engine that found the plugins
through their entry points, as pip would have installed them; and the message of an exception
raised by the plugin's own code, which may hold a secret of the engine's environment, stays in
the engine's log."""

from __future__ import annotations

import os
import secrets

from clients import cardgames_client as cg
from clients.local_service import LocalService

from .conftest import run
from .test_terminal_clients import ROOT, cli

SECRET = "s3cr3t-" + secrets.token_hex(8)
NOT_INSTALLED = ("not installed: no cardgames.bots entry point or plugin module has this name "
                 "(CARDGAMES_BOT_PLUGINS names plugins, not bots)")

PLUGINS = {
    # its hook raises with the engine's secret in the message (int(os.environ[...]) does that)
    "leaky_hook": ("import os\n"
                   "from engine_service.plugins import hookimpl\n\n\n"
                   "@hookimpl\n"
                   "def cardgames_bots():\n"
                   "    raise ValueError('bad setting ' + os.environ['LEAKY_SECRET'])\n"),
    # its import does the same
    "leaky_import": "import os\n\nraise RuntimeError('cannot log in with ' + os.environ['LEAKY_SECRET'])\n",
    # its import never ends (a network call without a timeout): the engine and its workers'
    # zygote must start without it
    "hangs": "import time\n\ntime.sleep(3600)\n",
    # needs a package that is not installed
    "needs_numpyx": "import numpyx  # noqa: F401\n",
    # a good one beside them
    "fine_bot": ("from engine_service.plugins import BotSpec, hookimpl\n\n\n"
                 "class First:\n"
                 "    def decide(self, request):\n"
                 "        return request.legal[0]\n\n\n"
                 "@hookimpl\n"
                 "def cardgames_bots():\n"
                 "    return [BotSpec('fine', lambda g: First(), description='plays [bold]the first[/x] move'),\n"
                 "            BotSpec('random', lambda g: First())]\n"),
}


def install(folder) -> None:
    """The plugins' modules and a ``.dist-info`` declaring them under the bot entry-point group
    (what ``pip install --target`` writes), in ``folder``."""
    for module, source in PLUGINS.items():
        (folder / f"{module}.py").write_text(source)
    dist = folder / "broken_bots-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-bots\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[cardgames.bots]\n" + "".join(f"{m.replace('_', '-')} = {m}\n" for m in PLUGINS))


def test_list_bots_and_play_list_say_the_plugins_that_failed(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    install(plugins)
    # an allowlist of the plugins, with a misspelt name (fine_bot for fine-bot, after the
    # module) and a bot's name where a plugin's is meant: each is a load failure as well
    allowed = ",".join([m.replace("_", "-") for m in PLUGINS] + ["fine_bot", "search_random"])
    env = dict(os.environ, LEAKY_SECRET=SECRET, CARDGAMES_BOT_PLUGINS=allowed,
               PYTHONPATH=os.pathsep.join([str(plugins), ROOT, os.environ.get("PYTHONPATH", "")]))
    engine = LocalService(log_path=tmp_path / "engine.log", env=env,
                          args=["--bot-workers", "1", "--bot-plugin-load-timeout-s", "1.5"])
    engine.start()
    try:
        async def listing():
            async with cg.connect(engine.target) as client:
                return await client.list_bots(), await client.list_bot_load_failures()

        bots, failures = run(listing())
        assert "fine" in [b.name for b in bots] and "random" in [b.name for b in bots]
        said = {(f.plugin, f.stage): f.reason for f in failures}
        assert said == {
            ("leaky-hook", "hook"): "ValueError at leaky_hook.py:7 in cardgames_bots",
            ("leaky-import", "import"): "RuntimeError at leaky_import.py:3 in <module>",
            ("needs-numpyx", "import"): "ModuleNotFoundError: no module named 'numpyx'",
            ("fine-bot", "spec"): "bot name 'random' already registered by plugin 'random'",
            ("hangs", "import"): "timed out: not done within 1.5 s, the plugin load time limit "
                                 "(--bot-plugin-load-timeout-s)",
            ("fine_bot", "allowlist"): NOT_INSTALLED,
            ("search_random", "allowlist"): NOT_INSTALLED,
        }, said
        assert "search_random" not in [b.name for b in bots]  # the allowlist left search out
        listed = cli("clients.play", "--target", engine.target, "--list")
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert "bot plugin needs-numpyx failed to load (import): ModuleNotFoundError: no module named " \
               "'numpyx'" in lines, listed.stdout
        assert "bot plugin leaky-hook failed to load (hook): ValueError at leaky_hook.py:7 in cardgames_bots" in lines
        assert f"bot plugin search_random failed to load (allowlist): {NOT_INSTALLED}" in lines
        # a description is printed as the plugin wrote it, not read as rich markup (a MarkupError)
        assert any(line.startswith("bot fine: ") and line.endswith(": plays [bold]the first[/x] move")
                   for line in lines), listed.stdout
        assert SECRET not in listed.stdout + listed.stderr
        # the operator still reads the whole message in the log
        events = engine.logs()
        logged = [e for e in events if e.get("event") == "bot_plugin_failed"]
        assert any(SECRET in e["error"] for e in logged if e["plugin"] == "leaky-hook")
        # the workers' zygote left the hanging plugin out too: its workers, forked once it has
        # loaded the plugins, were up before the engine served (else it warns after 15 s)
        assert not [e for e in events if e.get("event") == "bot_workers_not_ready"]
    finally:
        assert engine.stop() == 0, engine.log_tail()


def test_a_stop_signal_while_a_plugin_import_hangs_ends_the_start_at_once(tmp_path):
    """docs/operations.md: a signal before the engine serves ends it at once. The load time
    limit's SIGALRM handler is set and put back around each plugin's import, under the
    engine's event loop (uvloop by default): SIGTERM in the middle of a hanging import, long
    before the limit, still ends the engine at once, killed by it (status 143)."""
    import signal
    import subprocess
    import time

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "marks_hangs.py").write_text(
        "import os\nimport time\n\n"
        "open(os.path.join(os.environ['HANG_MARKS'], str(os.getpid())), 'w').close()\n"
        "time.sleep(3600)\n")
    dist = plugins / "marks_hangs-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: marks-hangs\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[cardgames.bots]\nmarks-hangs = marks_hangs\n")
    marks = tmp_path / "marks"
    marks.mkdir()
    env = dict(os.environ, HANG_MARKS=str(marks), PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join([str(plugins), ROOT, os.environ.get("PYTHONPATH", "")]))
    engine = LocalService(log_path=tmp_path / "engine.log", env=env,
                          args=["--bot-workers", "1", "--bot-plugin-load-timeout-s", "120"])
    with open(engine.log_path, "ab") as log:
        proc = subprocess.Popen(engine.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
    try:
        give_up = time.monotonic() + 60
        # the engine's own import has begun, and its workers' zygote's
        while not ((marks / str(proc.pid)).exists() and len(list(marks.iterdir())) == 2):
            assert proc.poll() is None, engine.log_tail()
            assert time.monotonic() < give_up, engine.log_tail()
            time.sleep(0.05)
        time.sleep(0.3)  # inside the sleep, with the limit's timer armed
        proc.send_signal(signal.SIGTERM)
        # killed by the signal, not by the limit (120 s, four times the wait's guard) nor after
        # a drain (exit 0)
        status = proc.wait(30)
        assert status == -signal.SIGTERM, engine.log_tail()
        # and its workers' zygote, importing the same plugin, does not wait for the limit
        zygotes = [int(m.name) for m in marks.iterdir() if int(m.name) != proc.pid]
        assert len(zygotes) == 1, zygotes
        gone_by = time.monotonic() + 30
        while time.monotonic() < gone_by and os.path.exists(f"/proc/{zygotes[0]}"):
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{zygotes[0]}"), "the zygote outlived the engine"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for mark in marks.iterdir():  # a zygote left behind (SIGTERM it ignores) by a failure
            try:
                os.kill(int(mark.name), signal.SIGKILL)
            except ProcessLookupError:
                pass
