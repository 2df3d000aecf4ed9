"""The README's quickstart, executed: every command it shows runs and does what the text says.

The commands are read from the README's first ``sh`` block under "Quickstart" and run as
written, with three substitutions that keep the test isolated: the engine gets free ports and
a temporary database through its environment variables (``CARDGAMES_PORT``...), the clients'
``127.0.0.1:50051`` becomes that port, and ``MATCH_ID`` becomes the id the player's client
printed. The full-screen clients run in a pseudo-terminal, are looked at, and quit with ``q``.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shlex
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

from clients.local_service import free_port

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]")


def quickstart_commands() -> list[str]:
    section = README[README.index("## Quickstart"):]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


class Terminal:
    """A command in a pseudo-terminal of 160x50, with its screen output collected as text."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child
            os.chdir(ROOT)
            os.execvpe(argv[0], argv, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        self.raw = b""

    def read(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                self.raw += chunk

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", errors="replace"))

    def wait_for(self, needle: str, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if needle in self.text:
                return True
            self.read(0.3)
        return needle in self.text

    def send(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def finish(self, seconds: float = 30) -> int:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.read(0.2)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)
        raise AssertionError(f"the command did not exit; its screen:\n{self.text[-2000:]}")


def test_quickstart_commands_work(tmp_path):
    commands = quickstart_commands()
    assert commands[0] == "make run", "the quickstart starts the engine with make run"
    assert any("clients.play" in c and "--game" in c for c in commands)
    assert any("clients.watch" in c for c in commands)

    port, metrics = free_port(), free_port()
    env = dict(os.environ, CARDGAMES_PORT=str(port), CARDGAMES_METRICS_PORT=str(metrics),
               CARDGAMES_DB=str(tmp_path / "quickstart.sqlite3"), CARDGAMES_LOG_FORMAT="json",
               TERM="xterm-256color", COLUMNS="160", LINES="50")
    env.pop("CARDGAMES_ADMIN_TOKEN", None)

    def localize(command: str, match_id: str = "") -> list[str]:
        command = command.replace("127.0.0.1:50051", f"127.0.0.1:{port}").replace("MATCH_ID", match_id)
        return shlex.split(command)

    engine = subprocess.Popen(["make", "run"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=open(tmp_path / "engine.log", "wb"), start_new_session=True)
    match_id = ""
    try:
        for command in commands[1:]:
            argv = localize(command, match_id)
            if "clients.health" in command:
                # exits 0 once the engine answers SERVING (retried while make run starts it)
                deadline = time.monotonic() + 90
                while True:
                    health = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=30)
                    if health.returncode == 0 or time.monotonic() > deadline:
                        break
                    time.sleep(0.5)
                assert health.returncode == 0, health.stderr + (tmp_path / "engine.log").read_text()[-2000:]
            elif "--list" in argv:
                listing = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
                assert listing.returncode == 0, listing.stderr
                for game in ("klaberjass", "jojotte", "georgian_joker", "japanese_joker"):
                    assert f"{game}:" in listing.stdout
                flat = " ".join(listing.stdout.split())  # rich wraps long lines
                assert 'kl_schmeiss (true, false; default false)' in flat  # the rulebook's defaults
                assert 'khishti_penalty ("200", "500", "100_per_card"; default "200")' in flat
                for bot in re.findall(r"--bots (\S+)", " ".join(commands))[0].split(","):
                    assert f"bot {bot}:" in listing.stdout, f"the quickstart's bot {bot} is not installed"
            elif "clients.play" in command:
                player = Terminal(argv, env)
                assert player.wait_for("your hand", 60), player.text[-3000:]
                found = re.search(r"match (\S+): ", player.text)
                assert found, player.text[-2000:]
                match_id = found.group(1)
                assert player.wait_for("your actions", 30), player.text[-2000:]
            elif "clients.watch" in command:
                assert match_id, "the spectator needs the match id printed by the player's client"
                spectator = Terminal(argv, env)
                assert spectator.wait_for("events", 30), spectator.text[-2000:]
                assert spectator.wait_for("Georgian Joker", 20) or "Joker" in spectator.text
                spectator.send("q")
                assert spectator.finish() == 0
            else:
                raise AssertionError(f"the test does not know how to run {command!r}")
        player.send("q")
        assert player.finish() == 0
        assert f"match {match_id}" in player.text.splitlines()[-1] or f"match {match_id}" in player.text
    finally:
        os.killpg(engine.pid, signal.SIGTERM)
        try:
            engine.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(engine.pid, signal.SIGKILL)
