"""The Node.js client (clients/node) against a real engine: it creates a match against a bot,
plays it to the end and prints the result; a watch stream cut while its match waits resumes
on the started view; one that fails with INTERNAL or UNKNOWN is reopened as by the Python
library (a fake engine); its watch hook hears a long outage and the return within ~2 s of the
engine; its own offline unit tests pass too.

Its dependencies come from the npm registry with ``npm ci`` (package-lock.json), run here
once when clients/node/node_modules is missing or older than the lock file (never when it is a
link to another checkout's: npm ci would empty that one).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import grpc
import pytest

from clients import cardgames_client as cg
from clients.local_service import LocalService
from engine_service.transport.generated import match_pb2

from .conftest import ADMIN_TOKEN, CuttableProxy, SubmitOutageProxy, run, two_seats

NODE_DIR = Path(__file__).resolve().parents[2] / "clients" / "node"


def needs_npm_ci(node_dir: Path) -> bool:
    """Whether ``node_dir``'s node_modules must be installed: missing, or older than the lock
    file. Never when node_modules is a symbolic link (a second checkout, a worktree, using the
    modules of the first): ``npm ci`` deletes node_modules' contents through the link, emptying
    the other checkout's folder while its tests may be running, and a fresh checkout's lock
    file is always newer than those modules, so every run there did so. A link to a folder
    without installed modules fails, naming it."""
    modules = node_dir / "node_modules"
    stamp = modules / ".package-lock.json"
    if modules.is_symlink():
        assert stamp.exists(), f"{modules} links to {modules.resolve()}, which has no installed modules: " \
            "run npm ci there, or remove the link"
        return False
    return not stamp.exists() or stamp.stat().st_mtime < (node_dir / "package-lock.json").stat().st_mtime


def npm_ci(node_dir: Path) -> str:
    """Install ``node_dir``'s locked npm packages when :func:`needs_npm_ci`; returns the path
    of ``node``. One installer at a time: ``npm ci`` first deletes node_modules, so a second
    xdist worker installing while the first runs its tests pulled the modules from under them."""
    node, npm = shutil.which("node"), shutil.which("npm")
    assert node and npm, "Node.js and npm are needed for the Node client (Debian/NodeSource package nodejs)"
    with open(node_dir / ".npm-ci.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if needs_npm_ci(node_dir):
            result = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=node_dir, capture_output=True,
                                    text=True, timeout=300)
            assert result.returncode == 0, result.stdout + result.stderr
    return node


@pytest.fixture(scope="module")
def node() -> str:
    return npm_ci(NODE_DIR)


#: Loaded before play_vs_bot.js (``node --require``): the program's Client waits 20 ms before
#: each of a call's ten tries (its ``backoffMs`` option; by default a jittered backoff of about
#: 5 s in all), so an outage longer than those tries can be a second or two.
_QUICK_RETRIES = """
const cardgames = require(LIBRARY);
const { Client } = cardgames;
cardgames.Client = class extends Client {
  constructor(target, options = {}) { super(target, { backoffMs: () => 20, ...options }); }
};
"""


def quick_retries(folder: Path) -> list[str]:
    """The arguments of ``node`` that load :data:`_QUICK_RETRIES` before the program."""
    script = folder / "quick_retries.js"
    script.write_text(_QUICK_RETRIES.replace("LIBRARY", json.dumps(str(NODE_DIR / "cardgames.js"))))
    return ["--require", str(script)]


def test_npm_ci_never_runs_through_a_linked_node_modules(tmp_path):
    """Regression: a checkout whose clients/node/node_modules links to another checkout's
    had its lock file newer than the linked modules (a fresh clone), so the fixture ran
    ``npm ci``, which emptied the other checkout's node_modules. A linked folder is used as
    it is; a real one is still installed when missing or older than the lock file."""
    shared = tmp_path / "main" / "node_modules"
    shared.mkdir(parents=True)
    (shared / ".package-lock.json").write_text("{}")
    os.utime(shared / ".package-lock.json", (1, 1))  # installed long before the lock file
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "package-lock.json").write_text("{}")
    assert needs_npm_ci(clone)  # no node_modules yet
    (clone / "node_modules").symlink_to(shared)
    assert not needs_npm_ci(clone)
    (clone / "node_modules").unlink()
    shutil.copytree(shared, clone / "node_modules")
    os.utime(clone / "node_modules" / ".package-lock.json", (1, 1))
    assert needs_npm_ci(clone)  # a real, stale folder: reinstalled
    (clone / "node_modules").rename(tmp_path / "old")
    (clone / "node_modules").symlink_to(tmp_path / "nowhere")
    with pytest.raises(AssertionError, match="no installed modules"):
        needs_npm_ci(clone)


@pytest.mark.parametrize("game, args", [
    ("klaberjass", ["--policy", "random", "--seed", "3"]),
    ("georgian_joker", ["--option", "deal_schedule=nines", "--policy", "first"]),
    ("japanese_joker", ["--option", "target_score=11"]),
])
def test_node_client_plays_a_match_against_a_bot(engine, node, game, args):
    result = subprocess.run([node, "play_vs_bot.js", "--target", engine.target, "--game", game, "--bot", "random",
                             *args], cwd=NODE_DIR, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    # its log shows every action once, in order, from the first (a bot's opening move made
    # before the stream opened included: it watches from seq 0)
    logged = [int(m.group(1)) for m in re.finditer(r"^\s*(\d+) seat \d", result.stderr, re.M)]
    assert logged == list(range(1, len(logged) + 1)) and logged
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["status"] == "MATCH_STATUS_FINISHED" and summary["game"] == game
    assert summary["seat"] == 0 and summary["actions"] > 0
    assert summary["winners"] and isinstance(summary["totals"], (list, dict))
    assert summary["deals_verified"] >= 1  # every revealed deck matched its commitment


def test_node_client_reports_errors_with_code_and_reason(engine, node):
    result = subprocess.run([node, "play_vs_bot.js", "--target", engine.target, "--game", "japanese_joker",
                             "--option", "target_score=12"], cwd=NODE_DIR, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1
    assert result.stderr.startswith("error: INVALID_ARGUMENT INVALID_OPTIONS: "), result.stderr
    assert result.stderr.count("INVALID_OPTIONS") == 1, result.stderr  # once, not "code reason: code reason: ..."


def test_node_client_plays_over_tls_with_a_private_ca_and_a_server_name(node, tmp_path):
    """play_vs_bot.js had no TLS flags: an engine serving TLS (behind a private CA, with a
    certificate for a name that is not the target's host) was out of its reach. --ca trusts
    the CA (and implies --tls), --server-name verifies the certificate for that name, as
    clients.remote_bot's flags do; without --server-name the name check fails."""
    import shutil as _shutil

    openssl = _shutil.which("openssl")
    assert openssl, "openssl is needed to make a test certificate"
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=engine.test", "-addext", "subjectAltName=DNS:engine.test"],
                   check=True, capture_output=True)
    with LocalService(args=["--tls-cert", str(cert), "--tls-key", str(key)]) as service:
        base = [node, "play_vs_bot.js", "--target", service.target, "--game", "japanese_joker",
                "--option", "target_score=11", "--quiet", "--ca", str(cert)]
        played = subprocess.run([*base, "--server-name", "engine.test"], cwd=NODE_DIR, capture_output=True,
                                text=True, timeout=180)
        assert played.returncode == 0, played.stdout + played.stderr
        assert json.loads(played.stdout.strip().splitlines()[-1])["status"] == "MATCH_STATUS_FINISHED"
        # its ten tries 20 ms apart, not ~5 s: the name check fails every time either way
        refused = subprocess.run([node, *quick_retries(tmp_path), *base[1:]], cwd=NODE_DIR, capture_output=True,
                                 text=True, timeout=120)
        assert refused.returncode == 1 and "error: UNAVAILABLE" in refused.stderr, refused.stderr
    missing = subprocess.run([node, "play_vs_bot.js", "--ca", str(tmp_path / "nope.pem")], cwd=NODE_DIR,
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "cannot read the CA file" in missing.stderr
    # a file without a certificate: grpc-js took its bytes, and the engine was named in a TLS error
    garbage = subprocess.run([node, "play_vs_bot.js", "--ca", str(key)], cwd=NODE_DIR,
                             capture_output=True, text=True, timeout=60)
    assert garbage.returncode == 2 and garbage.stderr.startswith(
        f"error: the CA file {key} holds no usable PEM certificate"), garbage.stderr


@pytest.mark.parametrize("argv", [["--help"], ["--bogus"], ["--seed", "x"], ["--seed", ""], ["--option", "no-equals"],
                                  ["--target"],
                                  ["--option", "kl_target_score=300", "--option", "kl_target_score=5"],
                                  ["--target", ""], ["--target", "127.0.0.1:"], ["--target", "127.0.0.1:http"],
                                  ["--policy", "first", "--seed", "3"]])
def test_node_client_command_line_mistakes_are_usage_errors(node, argv):
    """A typo on play_vs_bot.js's command line (and --help, which it did not know) was an
    uncaught exception: a stack trace and exit status 1, as if the engine had failed."""
    result = subprocess.run([node, "play_vs_bot.js", *argv], cwd=NODE_DIR, capture_output=True, text=True,
                            timeout=60)
    assert "    at " not in result.stderr, result.stderr  # no stack trace
    if argv == ["--help"]:
        assert result.returncode == 0 and result.stdout.startswith("usage: node play_vs_bot.js")
    else:
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("error: ") and "usage: node play_vs_bot.js" in result.stderr


def test_node_unit_tests(node):
    result = subprocess.run([shutil.which("npm"), "test"], cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout


_LOBBY = """
const { Client, verifyDeal } = require('./cardgames');
(async () => {
  const client = new Client(process.argv[1]);
  const listed = await client.createMatch('klaberjass', { listed: true, name: 'node table' });
  const hidden = await client.createMatch('klaberjass', { name: 'private' });
  const open = await client.listOpenMatches('klaberjass', 100);
  let early = '';
  try { await client.revealDeals(listed.match_id); } catch (e) { early = `${e.code} ${e.reason}`; }
  console.log(JSON.stringify({ listed: listed.match_id, flag: listed.listed, hidden: hidden.match_id,
                               ids: open.map((m) => m.match_id), commitments: listed.deal_commitments,
                               early, forged: verifyDeal({ cards: ['JS'], card_salts: ['0'.repeat(32)], card_hashes: [''] }, 'cd') }));
  client.close();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def test_node_client_lobby_and_fair_dealing(engine, node):
    result = subprocess.run([node, "-e", _LOBBY, engine.target], cwd=NODE_DIR, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["flag"] is True
    assert out["listed"] in out["ids"] and out["hidden"] not in out["ids"]
    # fair dealing: a table with open seats is dealt (and committed to) when its last seat is
    # taken; the decks are revealed only after the end
    assert out["commitments"] == []
    assert out["early"] == "FAILED_PRECONDITION MATCH_NOT_OVER" and out["forged"] is False


_LOBBY_PAGES = """
const { Client } = require('./cardgames');
(async () => {
  const client = new Client(process.argv[1]);
  for (let i = 0; i < 5; i += 1) await client.createMatch('jojotte', { listed: true });
  const whole = (await client.listOpenMatches('jojotte', 100)).map((m) => m.match_id);
  const paged = [];
  const sizes = [];
  let token = '';
  do {
    const page = await client.listOpenMatchesPage('jojotte', 2, token);
    paged.push(...page.matches.map((m) => m.match_id));
    sizes.push(page.matches.length);
    token = page.nextPageToken;
  } while (token);
  const first = await client.listOpenMatchesPage('jojotte', 2);
  const second = (await client.listOpenMatches('jojotte', 2, first.nextPageToken)).map((m) => m.match_id);
  let refused = '';
  try { await client.listOpenMatches('klaberjass', 2, first.nextPageToken); } catch (e) { refused = `${e.code} ${e.reason}`; }
  console.log(JSON.stringify({ whole, paged, sizes, second, refused }));
  client.close();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def test_node_client_pages_the_lobby(engine, node):
    """listOpenMatchesPage gives { matches, nextPageToken }; listOpenMatches takes the token:
    the pages of two are the whole lobby, in order; a token with another game is refused."""
    result = subprocess.run([node, "-e", _LOBBY_PAGES, engine.target], cwd=NODE_DIR, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(out["whole"]) >= 5 and out["paged"] == out["whole"]
    assert all(size == 2 for size in out["sizes"][:-1]) and 0 < out["sizes"][-1] <= 2
    assert out["second"] == out["whole"][2:4]
    assert out["refused"] == "INVALID_ARGUMENT BAD_PAGE_TOKEN"


_VERIFY = """
const { verifyDeal } = require('./cardgames');
const reveals = JSON.parse(process.argv[1]);
console.log(JSON.stringify(reveals.map((r) => verifyDeal(r))));
"""


def test_node_verify_deal_agrees_with_the_server_on_partial_reveals(node):
    """The Node client opens the server's card-by-card commitments (docs/api.md, "Fair
    dealing"): a reveal with hidden positions verifies, a moved card or a changed hash does
    not."""
    from engine_service.sessions.fairness import deck_commitment, reveal
    from engine_service.store.base import DeckRecord

    deck = DeckRecord(0, ("JS", "7H", "AD", "X1", "TC"), "00112233445566778899aabbccddeeff")
    shown = reveal(deck, frozenset({"JS", "AD", "TC"}), deck_commitment(deck))
    as_json = {"deal": 0, "cards": list(shown.cards), "commitment": shown.commitment,
               "card_salts": list(shown.card_salts), "card_hashes": list(shown.card_hashes)}
    moved = dict(as_json, cards=["AD", "", "JS", "", "TC"])
    changed = dict(as_json, card_hashes=["", "0" * 64, "", shown.card_hashes[3], ""])
    result = subprocess.run([node, "-e", _VERIFY, json.dumps([as_json, moved, changed])], cwd=NODE_DIR,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert shown.cards == ("JS", "", "AD", "", "TC")
    assert json.loads(result.stdout) == [True, False, False]


_WATCH = """
const { Client, Seat } = require('./cardgames');
const [target, matchId, seat, token] = process.argv.slice(1);
(async () => {
  const client = new Client(target);
  for await (const event of new Seat(client, matchId, Number(seat), token).watch()) {
    const view = event.view || {};
    process.stdout.write(`${JSON.stringify({ kind: event.kind, seq: event.seq, status: view.status || null,
                                             to_act: view.to_act === undefined ? null : view.to_act,
                                             hand: (view.hand || []).length })}\n`);
  }
  client.close();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def test_node_watch_cut_while_the_match_waits_resumes_on_the_started_view(engine, node):
    """docs/api.md, "Reconnecting without losing anything": the start is no action, and a
    resumed stream replays actions only. A seat's second stream in the Node client (the seat
    stays present on its first: no presence event when it reconnects), cut while the match
    waits and reopened only after the last seat's join started it, shows the started view
    (ACTIVE, a seat to act, the hand) before any action is played; then each action once."""

    async def scenario():
        async with cg.connect(engine.target, admin_token=ADMIN_TOKEN) as client, \
                CuttableProxy(engine.target) as proxy:
            match = await client.create_match("klaberjass", seats=[None, None])
            first = await client.join(match.match_id)
            present: list[cg.Event] = []

            async def keep_present():
                async for event in first.watch(after_seq=0):
                    present.append(event)

            task = asyncio.create_task(keep_present())
            while not present:
                await asyncio.sleep(0.02)
            watcher = await asyncio.create_subprocess_exec(
                node, "-e", _WATCH, proxy.target, match.match_id, str(first.seat), first.token, cwd=NODE_DIR,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            events: list[dict] = []

            async def next_event(timeout_s: float = 30.0) -> dict:
                try:
                    line = await asyncio.wait_for(watcher.stdout.readline(), timeout_s)
                except asyncio.TimeoutError:
                    raise AssertionError(f"no event within {timeout_s:g} s; so far {events}") from None
                assert line, (await watcher.stderr.read()).decode()
                events.append(json.loads(line))
                return events[-1]

            try:
                assert (await next_event()) == {"kind": "EVENT_KIND_SNAPSHOT", "seq": 0,
                                                 "status": "MATCH_STATUS_WAITING", "to_act": None, "hand": 0}
                proxy.hold()
                proxy.cut()
                second = await client.join(match.match_id)  # the last seat: the match starts
                seats = [first, second] if first.seat == 0 else [second, first]
                assert (await client.get_match(match.match_id)).status == match_pb2.MATCH_STATUS_ACTIVE
                proxy.release()
                # before the first action (none is played): heartbeats alone would come meanwhile
                deadline = asyncio.get_running_loop().time() + 30.0
                event = await next_event(30.0)
                while event["kind"] == "EVENT_KIND_HEARTBEAT":
                    event = await next_event(max(0.0, deadline - asyncio.get_running_loop().time()))
                assert event["kind"] == "EVENT_KIND_SNAPSHOT" and event["seq"] == 0, events
                assert event["status"] == "MATCH_STATUS_ACTIVE" and event["to_act"] is not None, events
                assert event["hand"] > 0, events
                for _ in range(2):
                    view = await seats[0].view()
                    await seats[view.to_act].act(lambda v: v.legal_actions[0].notation)
                await client.admin.terminate(match.match_id, "test over")
                while events[-1]["kind"] != "EVENT_KIND_MATCH_ENDED":
                    await next_event()
                assert await asyncio.wait_for(watcher.wait(), 30) == 0
            finally:
                if watcher.returncode is None:
                    watcher.kill()
                    await watcher.wait()
            await asyncio.wait_for(task, 30)
            assert [e["seq"] for e in events if e["kind"] == "EVENT_KIND_ACTION"] == [1, 2]

    run(scenario(), timeout_s=90)


_ACT = """
const { Client, Seat } = require('./cardgames');
const [target, matchId, seat, token, seq] = process.argv.slice(1);
(async () => {
  const client = new Client(target);
  const me = new Seat(client, matchId, Number(seat), token);
  const view = { seq: Number(seq), to_act: Number(seat), legal_actions: [{ notation: 'trump:S' }] };
  const reply = await me.act((v) => v.legal_actions[0].notation, view);
  process.stdout.write(`${JSON.stringify({ seq: reply.seq, duplicate: Boolean(reply.duplicate) })}\n`);
  client.close();
})().catch((e) => { console.error(e.message); process.exit(1); });
"""


def test_node_submit_while_the_engine_restarts_goes_through(engine, node):
    """docs/api.md, "Restarts": a decision sent while the engine is away (0.8 s of refused
    connections, less than a restart takes) reaches it once it is back, as with the Python
    library; four tries gave up within 0.7 s."""
    from clients.local_service import free_port

    async def scenario():
        async with cg.connect(engine.target) as client:
            match, sessions, mover = await two_seats(client)
            view = await sessions[0].view()
            assert "trump:S" in cg.legal_notations(await mover.view())
            port = free_port()
            acting = await asyncio.create_subprocess_exec(
                node, "-e", _ACT, f"127.0.0.1:{port}", match.match_id, str(mover.seat), mover.token,
                str(view.seq), cwd=NODE_DIR, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            await asyncio.sleep(0.8)
            async with CuttableProxy(engine.target, port):
                out, err = await asyncio.wait_for(acting.communicate(), 30)
            assert acting.returncode == 0, err.decode()
            assert json.loads(out) == {"seq": 1, "duplicate": False}
            assert (await client.get_match(match.match_id)).seq == 1

    run(scenario(), timeout_s=60)


_WATCH_ERRORS = """
const { Client, Seat } = require('./cardgames');
const [target, matchId] = process.argv.slice(1);
(async () => {
  const client = new Client(target);
  try {
    for await (const event of new Seat(client, matchId, 0, 'token').watch()) {
      process.stdout.write(`${JSON.stringify({ kind: event.kind, seq: event.seq })}\\n`);
    }
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ error: e.code || String(e) })}\\n`);
  }
  client.close();
})().catch((e) => { console.error(e); process.exit(1); });
"""


class _FailingWatches:
    """A fake engine whose WatchMatch streams end with INTERNAL or UNKNOWN, as a broken HTTP/2
    stream (RST_STREAM) can: match "mid" fails twice mid-match, each time after some events
    (a resumed stream replays the actions after ``after_seq``); match "broken" fails at once,
    every time, after the first stream's snapshot. ``opened`` records each stream's
    ``after_seq`` (None without one)."""

    def __init__(self) -> None:
        from engine_service.transport.generated import card_games_pb2, card_games_pb2_grpc

        self.opened: dict[str, list[int | None]] = {"mid": [], "broken": []}
        opened = self.opened
        K = match_pb2

        def event(kind: int, seq: int, status: int = match_pb2.MATCH_STATUS_ACTIVE) -> cg.Event:
            return card_games_pb2.WatchMatchResponse(kind=kind, seq=seq, match_id="m",
                                                      view=match_pb2.View(match_id="m", seq=seq, status=status))

        class Servicer(card_games_pb2_grpc.CardGamesServiceServicer):
            async def WatchMatch(self, request, context):
                after = request.after_seq if request.HasField("after_seq") else None
                calls = opened[request.match_id]
                calls.append(after)
                if request.match_id == "mid":
                    if after is None:
                        yield event(K.EVENT_KIND_SNAPSHOT, 0)
                    for seq in range((after or 0) + 1, min(len(calls) + 1, 4) + 1):
                        yield event(K.EVENT_KIND_ACTION, seq)
                    if len(calls) < 3:
                        await context.abort((grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)[len(calls) - 1],
                                            "Received RST_STREAM with code 2")
                    yield event(K.EVENT_KIND_MATCH_ENDED, 4, match_pb2.MATCH_STATUS_FINISHED)
                    return
                if len(calls) == 1:
                    yield event(K.EVENT_KIND_SNAPSHOT, 5)
                await context.abort(grpc.StatusCode.INTERNAL, "Received RST_STREAM with code 2")

        self.server = grpc.aio.server()
        card_games_pb2_grpc.add_CardGamesServiceServicer_to_server(Servicer(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"


def test_node_watch_reopens_after_internal_and_unknown_as_python_does(node):
    """A WatchMatch stream that fails with INTERNAL or UNKNOWN (what a broken HTTP/2 stream
    can end with) is reopened with after_seq by the Node client as by the Python library:
    mid-match, every event once; a stream that keeps failing without an event, 3 reopenings
    and then the error (a server fault would fail forever)."""

    async def node_watch(target: str, match_id: str) -> list[dict]:
        watcher = await asyncio.create_subprocess_exec(
            node, "-e", _WATCH_ERRORS, target, match_id, cwd=NODE_DIR,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(watcher.communicate(), 30)
        assert watcher.returncode == 0, err.decode()
        return [json.loads(line) for line in out.decode().splitlines()]

    async def python_watch(target: str, match_id: str) -> list[dict]:
        seen: list[dict] = []
        async with cg.connect(target) as client:
            try:
                async for event in cg.SeatSession(client, match_id, 0, "token").watch():
                    seen.append({"kind": match_pb2.EventKind.Name(event.kind), "seq": event.seq})
            except cg.CardGamesError as exc:
                seen.append({"error": exc.code.name})
        return seen

    async def scenario():
        fake = _FailingWatches()
        await fake.server.start()
        try:
            results = {}
            for name, watch in (("node", node_watch), ("python", python_watch)):
                for match_id in ("mid", "broken"):
                    fake.opened[match_id].clear()
                    results[name, match_id] = (await watch(fake.target, match_id), list(fake.opened[match_id]))
        finally:
            await fake.server.stop(None)
        mid = [{"kind": "EVENT_KIND_SNAPSHOT", "seq": 0}] \
            + [{"kind": "EVENT_KIND_ACTION", "seq": seq} for seq in (1, 2, 3, 4)] \
            + [{"kind": "EVENT_KIND_MATCH_ENDED", "seq": 4}]
        for name in ("node", "python"):
            assert results[name, "mid"] == (mid, [None, 2, 3]), name
            assert results[name, "broken"] == ([{"kind": "EVENT_KIND_SNAPSHOT", "seq": 5}, {"error": "INTERNAL"}],
                                               [None, 5, 5, 5]), name

    run(scenario(), timeout_s=60)


_WATCH_WITH_HOOK = """
const { Client, Seat } = require('./cardgames');
const [target, matchId, seat, token, mode] = process.argv.slice(1);
(async () => {
  // 'set-delays': a backoff without jitter, in ms, that the test sets on stdin (a number a line)
  let delayMs = 500;
  const options = {};
  if (mode === 'set-delays') {
    options.backoffMs = () => delayMs;
    require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => { delayMs = Number(line); });
  }
  const client = new Client(target, options);
  const say = (line) => process.stdout.write(`${JSON.stringify(line)}\\n`);
  const onConnection = (c) => say({ state: c.state, attempt: c.attempt, max: c.maxAttempts,
                                    code: c.error ? c.error.code : null, reason: c.error ? c.error.reason : null,
                                    message: c.error ? c.error.message : null, delay: c.delayMs ?? null });
  for await (const event of new Seat(client, matchId, Number(seat), token).watch(0, { onConnection, maxFailures: 40 })) {
    if (event.kind === 'EVENT_KIND_ACTION') say({ seq: event.seq });
    else if (event.kind === 'EVENT_KIND_HEARTBEAT') say({ heartbeat: event.seq });
  }
  client.close();
})().catch((e) => { console.error(e.message); process.exit(1); });
"""


async def _node_watcher(node: str, target: str, match_id: str, seat: cg.SeatSession, set_delays: bool = False):
    """:data:`_WATCH_WITH_HOOK` for ``seat`` through ``target``: the process, the JSON lines it
    printed so far (filled by the reader), and its ``read_until`` (:func:`_json_lines_reader`).
    ``set_delays``: its reopenings wait what the test writes to its stdin (500 ms at first)."""
    watcher = await asyncio.create_subprocess_exec(
        node, "-e", _WATCH_WITH_HOOK, target, match_id, str(seat.seat), seat.token,
        *(["set-delays"] if set_delays else []), cwd=NODE_DIR,
        stdin=asyncio.subprocess.PIPE if set_delays else None,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    lines: list[dict] = []
    return watcher, lines, _json_lines_reader(watcher, lines)


def _json_lines_reader(process: asyncio.subprocess.Process, lines: list[dict]):
    """``read_until(done, timeout_s)``: read ``process``'s JSON lines into ``lines`` until
    ``done()``; an AssertionError (with what came so far) after ``timeout_s``, or with its
    stderr when it ends first."""
    async def read_until(done, timeout_s: float) -> None:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not done():
            left = deadline - asyncio.get_running_loop().time()
            try:
                line = await asyncio.wait_for(process.stdout.readline(), max(0.0, left))
            except asyncio.TimeoutError:
                raise AssertionError(f"not within {timeout_s:g} s; so far {lines}") from None
            assert line, (await process.stderr.read()).decode()
            lines.append(json.loads(line))

    return read_until


def test_node_watch_hook_through_a_long_outage(engine, node):
    """The Node client's watch() tells its onConnection hook that the stream dropped
    (reconnecting, try 1, 2... of maxFailures, UNAVAILABLE) and, after 4 s of refused
    connections (grpc-js's own reconnection backoff at its cap by then: a second, the
    library's channel option), that it is back (resumed) on the reopening that was waiting
    when the engine returned, then the actions played meanwhile, each once. That reopening's
    delay is made 600 s, far beyond the test's time limit: the stream is back only if the
    channel connecting cut the wait short (Client.pause), as the Python library's (the
    jittered delay alone made the stream come back up to 2 s after the engine; a CI run saw
    3 s)."""
    never_ms = 600_000

    async def scenario():
        async with cg.connect(engine.target) as client:
            match, sessions, mover = await two_seats(client)
            proxy = CuttableProxy(engine.target)
            await proxy.__aenter__()
            port = proxy.port
            spectator = sessions[0] if mover is not sessions[0] else sessions[1]
            watcher, lines, read_until = await _node_watcher(node, proxy.target, match.match_id, spectator,
                                                             set_delays=True)

            try:
                await mover.act(lambda v: v.legal_actions[0].notation)
                await read_until(lambda: {"seq": 1} in lines, 30)
                await proxy.__aexit__(None, None, None)  # refused from now on
                await read_until(lambda: any(l.get("state") == "reconnecting" for l in lines), 30)
                await asyncio.sleep(4)
                watcher.stdin.write(f"{never_ms}\n".encode())
                await watcher.stdin.drain()
                await read_until(lambda: any(l.get("delay") == never_ms for l in lines), 30)
                pending = next(l for l in lines if l.get("delay") == never_ms)
                played = []
                for _ in range(2):
                    view = await sessions[0].view()
                    reply = await sessions[view.to_act].act(lambda v: v.legal_actions[0].notation)
                    played.append(reply.seq)
                proxy = CuttableProxy(engine.target, port=port)
                await proxy.__aenter__()
                # hang guards only: the pending reopening would wait 600 s
                await read_until(lambda: any(l.get("state") == "resumed" for l in lines), 30)
                await read_until(lambda: {"seq": played[-1]} in lines, 30)
            finally:
                watcher.kill()
                await watcher.wait()
                await proxy.__aexit__(None, None, None)
            states = [l for l in lines if "state" in l]
            tries = [l["attempt"] for l in states if l["state"] == "reconnecting"]
            assert tries == list(range(1, len(tries) + 1)) and len(tries) >= 5, states
            assert all(l["max"] == 40 and l["code"] == "UNAVAILABLE" for l in states if l["state"] == "reconnecting")
            assert states[-2] == pending, states[-3:]  # no reopening after the pending one...
            assert states[-1] == {"state": "resumed", "attempt": pending["attempt"], "max": 40, "code": None,
                                  "reason": None, "message": None, "delay": None}  # ...which came back
            assert [l["seq"] for l in lines if "seq" in l] == [1, *played]
            after = lines.index(states[-1])
            assert all("seq" in l or "heartbeat" in l for l in lines[after + 1:]), "an event came before 'resumed'"

    run(scenario(), timeout_s=120)


def test_node_watch_through_a_network_that_drops_every_packet(node, tmp_path):
    """Through a proxy that holds every byte and closes nothing, the Node client's watch() of
    an engine sending heartbeats every 0.1 s tells its hook ``reconnecting`` (UNAVAILABLE,
    STREAM_SILENT) for a silence of 3 intervals + 1 s, the limit it learned from the heartbeats
    (keepalive alone: up to 40 s), and once the bytes flow again ``resumed``, then the action
    played meanwhile, once."""
    service = LocalService(log_path=tmp_path / "engine.log", args=["--heartbeat-interval-s", "0.1"])
    service.start()

    async def scenario():
        async with cg.connect(service.target) as client, CuttableProxy(service.target) as proxy:
            match, sessions, mover = await two_seats(client)
            watching = sessions[0] if mover is not sessions[0] else sessions[1]
            watcher, lines, read_until = await _node_watcher(node, proxy.target, match.match_id, watching)

            try:
                await mover.act(lambda v: v.legal_actions[0].notation)
                await read_until(lambda: {"seq": 1} in lines, 30)
                await read_until(lambda: any("heartbeat" in l for l in lines), 30)  # it named the interval
                proxy.freeze()
                # a hang guard only: the limit the stream was cut at is asserted below
                await read_until(lambda: any(l.get("state") == "reconnecting" for l in lines), 30)
                view = await sessions[0].view()
                played = (await sessions[view.to_act].act(lambda v: v.legal_actions[0].notation)).seq
                proxy.thaw()
                await read_until(lambda: {"seq": played} in lines, 30)
            finally:
                watcher.kill()
                await watcher.wait()
            states = [l for l in lines if "state" in l]
            assert all(l["code"] == "UNAVAILABLE" and l["reason"] == "STREAM_SILENT"
                       for l in states if l["state"] == "reconnecting"), states
            # cut at 3 heartbeat intervals + 1 s, not keepalive's 40 s
            assert ": no message for 1.3 s (heartbeats included)" in states[0]["message"], states
            assert states[-1]["state"] == "resumed", states
            assert [l["seq"] for l in lines if "seq" in l] == [1, played]

    try:
        run(scenario(), timeout_s=60)
    finally:
        assert service.stop() == 0, service.log_tail()


def test_play_vs_bot_decides_again_through_an_outage_longer_than_its_submit_retries(engine, node, tmp_path):
    """play_vs_bot.js gave up after ~5 s of outage: a submit that found no engine failed after
    the client's ten tries and ended the program (exit status 1) while its watch would have
    come back. Refused submits hitting its third decision for 1.5 s, longer than those ten
    tries (20 ms apart here: :data:`_QUICK_RETRIES`): it decides again on the current view
    once the engine answers, and plays the match to its end long before the match's turn
    timer (120 s, the longest) would have moved for it."""
    preload = quick_retries(tmp_path)

    async def scenario():
        async with SubmitOutageProxy(engine.target, after=3, outage_s=1.5) as proxy:
            played = await asyncio.create_subprocess_exec(
                node, *preload, "play_vs_bot.js", "--target", proxy.target, "--game", "japanese_joker",
                "--bot", "random", "--option", "target_score=11", "--option", "turn_time_s=120", cwd=NODE_DIR,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            try:
                out, err = await asyncio.wait_for(played.communicate(), 60)  # far within the turn timer
            finally:
                if played.returncode is None:
                    played.kill()
                    await played.wait()
            assert played.returncode == 0, err.decode()[-3000:]
            assert proxy.refused >= 10  # the client's own retries ran out at least once
            assert re.search(r"^submit failed: UNAVAILABLE .*\(1 of 30\)$", err.decode(), re.M), err.decode()[-3000:]
            summary = json.loads(out.decode().strip().splitlines()[-1])
            assert summary["status"] == "MATCH_STATUS_FINISHED" and summary["deals_verified"] >= 1

    run(scenario(), timeout_s=90)


# ---- clients/node/README.md ----------------------------------------------------------------

def _readme() -> str:
    return (NODE_DIR / "README.md").read_text()


def test_node_readme_example_plays_a_match_and_verifies_every_deal(engine, node):
    """clients/node had no README: a frontend developer opening the folder found no word on
    what it holds or how its library is used. Its example runs as written (from clients/node)
    against a real engine: a Japanese Joker match against a bot, played to the end on the
    watch stream, every deal's reveal checked against the commitment its views showed, and
    prints what the README says it prints."""
    README = _readme()
    (example,) = re.findall(r"```js\n(.*?)```", README, re.DOTALL)
    code = example.replace("127.0.0.1:50051", engine.target)
    assert code != example
    result = subprocess.run([node, "-e", code], cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    status, deals, fair = result.stdout.split()
    assert "It prints `MATCH_STATUS_FINISHED`, the number of deals and `true`." in README
    assert (status, fair) == ("MATCH_STATUS_FINISHED", "true") and int(deals) >= 1


def test_node_readme_says_what_the_folder_and_the_library_have(node):
    """The README's usage is play_vs_bot.js's own (--help), each file it lists exists, and each
    call it names is a method of the library's Client or Seat."""
    README = _readme()
    result = subprocess.run([node, "play_vs_bot.js", "--help"], cwd=NODE_DIR, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    (usage,) = re.findall(r"```text\n(.*?)```", README, re.DOTALL)
    assert usage == result.stdout
    for name in re.findall(r"^\| `([\w./]+)` \|", README, re.MULTILINE):
        assert (NODE_DIR / name.rstrip("/")).exists(), name
    calls = README[README.index("* **Calls**"):README.index("* **Errors**")]
    names = set(re.findall(r"`(\w+)\(", calls))
    assert {"createMatch", "join", "watch", "act", "revealDeals"} <= names
    probe = ("const { Client, Seat } = require('./cardgames');"
             f"const names = {json.dumps(sorted(names))};"
             "console.log(JSON.stringify(names.filter((n) => typeof Client.prototype[n] !== 'function'"
             " && typeof Seat.prototype[n] !== 'function')));")
    missing = subprocess.run([node, "-e", probe], cwd=NODE_DIR, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 0, missing.stderr
    assert json.loads(missing.stdout) == []


def test_the_declared_node_versions_include_the_one_the_tests_run_on():
    """package.json's ``engines.node`` and its README's "N or newer" say the same lower bound,
    and the Node.js these tests run the client on meets it: the range never refuses the version
    the suite checked (npm would warn EBADENGINE), and the README never promises another."""
    declared = json.loads((NODE_DIR / "package.json").read_text())["engines"]["node"]
    minimum = re.fullmatch(r">=(\d+)", declared)
    assert minimum, f"engines.node should be a plain lower bound, got {declared!r}"
    running = subprocess.run([shutil.which("node"), "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert int(running.lstrip("v").split(".")[0]) >= int(minimum.group(1)), \
        f"the suite runs Node.js {running}; engines.node says {declared}"
    assert f"A Node.js ({minimum.group(1)} or newer" in (NODE_DIR / "README.md").read_text()


_WATCH_KINDS = """
const { Client, Seat } = require('./cardgames');
const [target, matchId, token, afterSeq] = process.argv.slice(1);
(async () => {
  const client = new Client(target);
  const say = (line) => process.stdout.write(`${JSON.stringify(line)}\\n`);
  try {
    for await (const event of new Seat(client, matchId, 0, token).watch(afterSeq === undefined ? undefined : Number(afterSeq))) say([event.kind, event.seq]);
  } catch (e) { say({ error: e.code, reason: e.reason }); }
  client.close();
})().catch((e) => { console.error(e.message); process.exit(1); });
"""


def test_node_watch_follows_a_match_restored_from_a_backup(node):
    """As the Python library (tests/clients/test_client_edge.py): a resumed stream whose
    after_seq is ahead of the match (the operator restored a backup, docs/operations.md) threw
    INVALID_ARGUMENT / BAD_AFTER_SEQ; it starts again from a snapshot of the restored match."""
    from tests.transport.harness import running
    from tests.transport.test_edge import SEAT_TOKEN

    from .test_client_edge import _RestoredFromABackup

    async def scenario():
        service = _RestoredFromABackup()
        async with running(service) as srv:
            watcher = await asyncio.create_subprocess_exec(
                node, "-e", _WATCH_KINDS, srv.target, "m1", SEAT_TOKEN, cwd=NODE_DIR,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(watcher.communicate(), 30)
        assert watcher.returncode == 0, err.decode()
        return [json.loads(line) for line in out.decode().splitlines()], service.calls

    lines, calls = run(scenario(), timeout_s=60)
    assert lines == [["EVENT_KIND_SNAPSHOT", 6], ["EVENT_KIND_SNAPSHOT", 2], ["EVENT_KIND_ACTION", 3],
                     ["EVENT_KIND_MATCH_ENDED", 3]], lines
    assert [c[2] for c in calls if c[0] == "watch"] == [-1, 6, -1]


def test_node_watch_still_throws_the_callers_after_seq_ahead_of_the_match_after_a_drop(node):
    """As the Python library: BAD_AFTER_SEQ starts again from a snapshot only once the server
    has sent a message; the caller's own afterSeq, refused on the reopening after a first
    stream that failed at once, is thrown, not replaced by a snapshot without a word."""
    from tests.transport.harness import running
    from tests.transport.test_edge import SEAT_TOKEN

    from .test_client_edge import _DownThenAhead

    async def scenario():
        service = _DownThenAhead()
        async with running(service) as srv:
            watcher = await asyncio.create_subprocess_exec(
                node, "-e", _WATCH_KINDS, srv.target, "m1", SEAT_TOKEN, "6", cwd=NODE_DIR,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(watcher.communicate(), 30)
        assert watcher.returncode == 0, err.decode()
        return [json.loads(line) for line in out.decode().splitlines()], service.calls

    lines, calls = run(scenario(), timeout_s=60)
    assert lines == [{"error": "INVALID_ARGUMENT", "reason": "BAD_AFTER_SEQ"}], lines
    assert [c[2] for c in calls if c[0] == "watch"] == [6, 6]
