"""Bot seats: the session asks the bot host for one decision with only that seat's view and
legal actions; any failure (timeout, exception, illegal answer, crash, unknown bot, even a
host that raises) falls back to the rulebook's auto-move, is logged as ``bot_failed`` and
counted. Bots never block the server or another match."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace

import pytest
from structlog.testing import capture_logs

from engine_service.plugins.host import BotHost
from engine_service.rules import get_game
from engine_service.sessions.api import BotInfo, CreateMatchRequest, SeatConfig

from .helpers import GAMES, Stream, capture_logs_with_context, config, manager, open_match, run, until
from .virtual_clock import START, advance_to, run_virtual

FAILURES = ["timeout", "exception", "illegal", "crash", "unknown_bot"]


class ScriptedHost:
    """A bot host whose bot ``scripted`` answers as told: a failure category, an action
    outside the legal list, a raise, or the first legal action."""

    def __init__(self, answer):
        self.answer = answer
        self.requests = []

    def bots(self):
        return [BotInfo("scripted", tuple(GAMES), "test double")]

    def plays(self, bot, game_id):
        return bot == "scripted"

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        self.requests.append(dict(bot=bot, game=game_id, seat=seat, view=view, legal=legal, seed=seed,
                                  deadline_s=deadline_s))
        await asyncio.sleep(0)
        if self.answer == "raise":
            raise RuntimeError("host bug")
        if self.answer in FAILURES:
            return SimpleNamespace(action=None, failure=self.answer, elapsed_s=0.004)
        if self.answer == "outside":
            return SimpleNamespace(action="play:X9", failure=None, elapsed_s=0.002)
        return SimpleNamespace(action=legal[-1], failure=None, elapsed_s=0.003)

    async def close(self):
        pass


async def one_bot_move(mgr, game_id):
    """A match whose first seat to act is the scripted bot; returns the first action record
    and the state before it."""
    game = get_game(game_id)
    # find who acts first by creating the match with explicit first dealer and deck
    from engine_service.rules.cards import card_code
    deck = [card_code(c) for c in game.pack]
    random.Random(1).shuffle(deck)
    probe = game.new_state({}, first_dealer=0)
    probe.deal(deck)
    first = probe.to_act()
    seats = [SeatConfig("bot", "scripted") if s == first else SeatConfig() for s in range(game.num_seats)]
    summary = await mgr.create_match(CreateMatchRequest(game=game_id, seats=seats, decks=[deck], first_dealer=0),
                                     admin=True)
    for s in range(game.num_seats):
        if s != first:
            await mgr.join_match(summary.match_id, s, "p")
    m = mgr._matches[summary.match_id]
    await until(lambda: m.seq >= 1)
    return m.actions[0], probe, first


@pytest.mark.parametrize("failure", FAILURES + ["outside", "raise"])
def test_a_failing_bot_falls_back_to_the_auto_move(failure):
    host = ScriptedHost(failure)

    async def go():
        with capture_logs() as logs:
            async with manager(host=host) as mgr:
                rec, probe, seat = await one_bot_move(mgr, "georgian_joker")
                return rec, probe, seat, logs, mgr.metrics

    rec, probe, seat, logs, metrics = run(go())
    expected_reason = {"outside": "illegal", "raise": "crash"}.get(failure, failure)
    assert (rec.seat, rec.by, rec.reason) == (seat, "auto", "bot_failed")
    assert rec.action == get_game("georgian_joker").auto_move(probe.view(seat))
    assert metrics.value("cardgames_bot_failures_total", {"bot": "scripted", "reason": expected_reason}) == 1
    failed = [e for e in logs if e["event"] == "bot_failed"]
    assert len(failed) == 1
    entry = failed[0]
    assert (entry["seat"], entry["seq"], entry["bot"], entry["reason"]) == (seat, 0, "scripted", expected_reason)
    assert entry["match_id"] and entry["game"] == "georgian_joker"
    # never the bot's answer (the match id is random letters and digits: it may hold "X9")
    assert "X9" not in str({k: v for k, v in entry.items() if k != "match_id"}) and "action" not in entry
    if failure != "raise":
        assert metrics.value("cardgames_bot_decision_seconds_count", {"bot": "scripted"}) == 1


def test_a_bot_seat_is_named_by_its_bot_to_everyone():
    """GetMatch (and the lobby, the events' ``seats``) names the bot that plays a bot seat
    (GJ-11.1: the table knows who sits where); a player's seat names none. A seat's info
    read its bot through the takeover case: with the two conditions joined the other way it
    named no bot anywhere, and no test looked."""

    async def go():
        async with manager(host=ScriptedHost("ok")) as mgr:
            s = await mgr.create_match(CreateMatchRequest(
                game="klaberjass", seats=(SeatConfig("open"), SeatConfig("bot", "scripted"))))
            return s, await mgr.get_match(s.match_id)

    created, summary = run(go())
    for seats in (created.seats, summary.seats):
        assert [(x.kind, x.bot, x.replaced_by_bot) for x in seats] == [("open", "", False), ("bot", "scripted", False)]


@pytest.mark.parametrize("game_id", GAMES)
def test_a_bot_gets_only_its_seat_view_and_legal_actions(game_id):
    host = ScriptedHost("ok")

    async def go():
        async with manager(host=host) as mgr:
            rec, probe, seat = await one_bot_move(mgr, game_id)
            return rec, probe, seat

    rec, probe, seat = run(go())
    req = host.requests[0]
    assert req["seat"] == seat and req["game"] == game_id and req["bot"] == "scripted"
    assert req["view"] == probe.view(seat)
    assert req["legal"] == probe.legal_actions() == probe.view(seat)["legal"]
    assert isinstance(req["seed"], int) and req["deadline_s"] == 2.0
    assert (rec.action, rec.by, rec.reason) == (probe.legal_actions()[-1], "bot", "")


def test_bots_never_block_the_server_or_another_match(tmp_path, monkeypatch):
    """A bot thinks in a worker process while a match next to it is played by clients: the
    bot (tests/plugins/holds.py) computes until the test releases it, and 40 actions of the
    other match are made and answered meanwhile, each while its decision is still outstanding.
    A host running the decision on the event loop would hold the first action until the bot
    gave up (its 60 s budget): the bot's move would be in before that action returned."""
    monkeypatch.setenv("HOLDS_DIR", str(tmp_path))  # before the host's workers start

    async def go():
        host = BotHost(workers=1, autoload=False, plugins=("tests.plugins.holds",))
        try:
            async with manager(config(bot_deadline_s=60.0), host=host) as mgr:
                await mgr.create_match(CreateMatchRequest(
                    game="klaberjass", seats=[SeatConfig("bot", "holds")] * 2))
                bot_match = next(iter(mgr._matches.values()))
                await until((tmp_path / "thinking").exists, timeout=60)  # the decision is under way
                match_id, ps = await open_match(mgr, "klaberjass")
                rng = random.Random(3)
                played = 0
                while played < 40:
                    for seat, p in enumerate(ps):
                        env = await mgr.get_view(match_id, p)
                        if env.view["to_act"] == seat:
                            await mgr.submit_action(match_id, p, rng.choice(env.view["legal"]), env.seq)
                            played += 1
                            assert bot_match.seq == 0, f"the bot moved before action {played} returned"
                    await asyncio.sleep(0.01)
                (tmp_path / "release").touch()
                await until(lambda: bot_match.seq >= 2, timeout=60)
                return mgr.metrics
        finally:
            await host.close()

    metrics = run(go(), timeout=300)
    # the bot's own moves, not the auto-move standing in for a bot that timed out
    assert metrics.value("cardgames_bot_decision_seconds_count", {"bot": "holds"}) >= 2
    for reason in FAILURES:
        assert metrics.value("cardgames_bot_failures_total", {"bot": "holds", "reason": reason}) == 0


class ThinkingHost:
    """A bot host whose bot answers at once when it has a single legal action and thinks
    ``think_s`` otherwise: the timing of the bundled search bot, which a forced move would give
    away (GJ-11.8)."""

    def __init__(self, think_s: float) -> None:
        self.think_s = think_s

    def bots(self):
        return [BotInfo("thinker", tuple(GAMES), "test double")]

    def plays(self, bot, game_id):
        return bot == "thinker"

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        if len(legal) > 1:
            await asyncio.sleep(self.think_s)
        return SimpleNamespace(action=legal[0], failure=None, elapsed_s=0.0)

    async def close(self):
        pass


def test_a_forced_bot_move_takes_as_long_as_any_other(monkeypatch):
    """GJ-11.8: "the server must not play a player's forced move automatically or with a timing
    that differs observably from a normal move" (JJK-9.7 likewise): every bot move is played
    bot_pace_s after its decision came up, whether the bot had one legal action or thought.
    On a virtual clock (no wall clock read, so a loaded machine changes nothing) every delay
    is exactly the pace: a move paced from the bot's answer instead of its decision would
    take ``think`` longer when free, one played at the answer would take no time when forced."""
    pace, think = 0.15, 0.08

    async def go():
        async with manager(config(bot_pace_s=pace), host=ThinkingHost(think)) as mgr:
            seats = [SeatConfig("bot", "thinker")] * 4
            summary = await mgr.create_match(CreateMatchRequest(game="georgian_joker", seats=seats))
            m = mgr._matches[summary.match_id]
            await advance_to(START + 30 * pace + pace / 2)
            # the server's own times: decision i comes up when action i - 1 is applied
            return [(m.actions[i].at - m.actions[i - 1].at, len(m.fold(i)[0].legal_actions()) == 1)
                    for i in range(1, min(m.seq, 30))]

    delays = run_virtual(go, monkeypatch)
    forced = [d for d, f in delays if f]
    free = [d for d, f in delays if not f]
    assert forced and free, "the first deals of Georgian Joker have forced and free decisions"
    assert forced == pytest.approx([pace] * len(forced), abs=1e-6), forced
    assert free == pytest.approx([pace] * len(free), abs=1e-6), free
    assert len(delays) == 29, "a move every pace, none held up"


def test_the_bot_pace_is_scaled_by_the_time_scale(monkeypatch):
    """docs/operations.md: ``--time-scale`` multiplies every deadline and grace period, and the
    bot pace (a demo at ``--time-scale 0.1`` plays its bots ten times faster). On a virtual
    clock every bot move comes exactly ``bot_pace_s * time_scale`` after its decision; an
    unscaled pace would take twice as long here."""
    pace, scale = 0.3, 0.5

    async def go():
        async with manager(config(bot_pace_s=pace, time_scale=scale), host=ThinkingHost(0.0)) as mgr:
            summary = await mgr.create_match(CreateMatchRequest(
                game="georgian_joker", seats=[SeatConfig("bot", "thinker")] * 4))
            m = mgr._matches[summary.match_id]
            await advance_to(START + 10 * pace * scale + pace * scale / 2)
            return [m.actions[i].at - (m.actions[i - 1].at if i else START) for i in range(m.seq)]

    delays = run_virtual(go, monkeypatch)
    assert delays == pytest.approx([pace * scale] * 10, abs=1e-6), delays


def test_without_pacing_a_forced_bot_move_is_immediate(monkeypatch):
    """bot_pace_s = 0 (tests, bot-only tables): a move is played when the bot answers, so the
    pacing above is what hides a forced move. On a virtual clock: a forced move is played at
    the instant its decision comes up, a free one exactly the bot's thinking later; a pace
    wrongly applied (the default 2 s) would delay both."""
    think = 0.5

    async def go():
        async with manager(config(bot_pace_s=0.0), host=ThinkingHost(think)) as mgr:
            summary = await mgr.create_match(CreateMatchRequest(
                game="georgian_joker", seats=[SeatConfig("bot", "thinker")] * 4))
            m = mgr._matches[summary.match_id]
            await advance_to(START + 20 * think)
            moves = list(m.actions)
            return [(moves[i].at - (moves[i - 1].at if i else START), len(m.fold(i)[0].legal_actions()) == 1)
                    for i in range(len(moves))], {a.by for a in moves}

    delays, by = run_virtual(go, monkeypatch)
    forced = [d for d, f in delays if f]
    free = [d for d, f in delays if not f]
    assert by == {"bot"}  # the bot's answers, not auto-moves standing in for them
    assert forced and free, "the first deals of Georgian Joker have forced and free decisions"
    assert forced == pytest.approx([0.0] * len(forced), abs=1e-6), forced
    assert free == pytest.approx([think] * len(free), abs=1e-6), free
    assert len(free) == 20, "a free move every think, none held up"


def test_background_moves_do_not_log_the_fields_of_the_request_that_armed_them():
    """A bot move and a timeout move run in tasks of their own: their log lines carry the
    match's fields, never the rpc / seat of whichever call happened to schedule them (a
    CreateMatch's fields used to tag every line of a bot match)."""
    import structlog

    with capture_logs_with_context() as entries:
        async def go():
            async with manager(config(time_scale=0.01), host=ScriptedHost("legal")) as mgr:
                structlog.contextvars.bind_contextvars(rpc="/test/CreateMatch", seat=7)
                try:
                    summary = await mgr.create_match(CreateMatchRequest(
                        game="klaberjass", seats=[SeatConfig(), SeatConfig("bot", "scripted")], turn_time_s=10))
                    p = await mgr.join_match(summary.match_id, 0, "p")
                    principal = mgr.authenticate(summary.match_id, p.token)
                    stream = mgr.watch(summary.match_id, principal, -1)  # present: the timer runs
                    m = mgr._matches[summary.match_id]
                    await stream.__anext__()
                    await until(lambda: {"bot", "auto"} <= {a.by for a in m.actions}, timeout=30)
                    await stream.aclose()
                finally:
                    structlog.contextvars.clear_contextvars()
        run(go())
    moves = [e for e in entries if e["event"] in ("action_applied", "auto_move", "bot_move")]
    assert {e.get("by") for e in moves if e["event"] == "action_applied"} >= {"bot", "auto"}
    assert all("rpc" not in e and e.get("seat") != 7 for e in moves), moves
    assert all(e.get("match_id") for e in moves)


class CatalogHost(ScriptedHost):
    """Installed bots and the games each plays, nothing more."""

    def __init__(self, plays: dict[str, tuple[str, ...]]):
        super().__init__("first")
        self.catalog = plays

    def bots(self):
        return [BotInfo(name, games, "test double") for name, games in sorted(self.catalog.items())]

    def plays(self, bot, game_id):
        return game_id in self.catalog.get(bot, ())


def test_a_takeover_bot_that_is_not_installed_refuses_the_start():
    """The session's takeover bot (GJ-12.4) used to be accepted whatever its name, and only
    showed as unknown_bot bot failures once a Georgian Joker player went away. The start now
    refuses a bot that is not installed, or that plays no game where a bot takes a seat
    over, listing the installed bots; an installed one that does starts as before."""
    from engine_service.sessions.manager import MatchManager, TakeoverBotUnavailable
    from engine_service.observability.metrics import Metrics
    from engine_service.store import MemoryStore

    host = CatalogHost({"random": tuple(GAMES), "duel": ("klaberjass", "jojotte")})

    async def start(bot):
        store = MemoryStore()
        mgr = MatchManager(config(takeover_bot=bot), store=store, bot_host=host, metrics=Metrics())
        try:
            await mgr.start()
        except TakeoverBotUnavailable as exc:
            return exc, store._open
        await mgr.close()
        return None, store._open

    missing, left_open = run(start("nosuch"))
    assert str(missing) == ("'nosuch' is not an installed bot; installed bots: duel, random; able to "
                            "take a seat over: random")
    assert (missing.bot, missing.installed, left_open) == ("nosuch", ["duel", "random"], False)
    wrong_game, _ = run(start("duel"))
    assert str(wrong_game).startswith("'duel' plays none of the games where a bot takes an absent seat "
                                      "(georgian_joker)")
    assert run(start("random")) == (None, False)
    assert run(start("")) == (None, False)  # the rulebook's auto-move policy (GJ-12.2)
    # a session without a bot host has no bots to check the name against (its bot seats are
    # refused): nothing to refuse at its start
    from engine_service.sessions.validation import check_takeover_bot
    assert check_takeover_bot("random", None) is None


def test_a_tables_takeover_bot_comes_before_the_sessions_which_is_the_default():
    """GJ-12.4 "the bot the table names": CreateMatch's ``takeover_bot`` plays a departed
    Georgian Joker player's seat; a table that names none gets the session's
    (``--takeover-bot``), shown as the seat's bot once it plays the seat."""
    host = CatalogHost({"random": tuple(GAMES), "first": tuple(GAMES)})

    async def go():
        seats = []
        async with manager(config(takeover_bot="random"), host=host) as mgr:
            for named in ("", "first"):
                match_id, ps = await open_match(mgr, "georgian_joker", takeover_bot=named)
                await mgr.leave_match(match_id, ps[0], resign=False)
                seat = (await mgr.get_match(match_id)).seats[0]
                seats.append((seat.replaced_by_bot, seat.bot))
        return seats

    assert run(go()) == [(True, "random"), (True, "first")]


def test_an_unknown_bot_is_refused_naming_the_bots_that_play_the_game_in_order():
    """UNKNOWN_BOT (docs/api.md "Errors", ErrorInfo ``bot``) for a bot seat whose bot is not
    installed, or installed but not playing the match's game: the message lists the bots
    that do play it, by name, whatever order the host lists them in; a takeover bot refused
    at start on a server with no bot installed says so ("none"), not an empty list."""
    from engine_service.sessions.api import BadRequest
    from engine_service.sessions.validation import TakeoverBotUnavailable, check_bot, check_takeover_bot

    class Unsorted(CatalogHost):
        def bots(self):
            return super().bots()[::-1]

    host = Unsorted({"alpha": ("klaberjass", "jojotte"), "joker": ("georgian_joker",),
                     "zeta": ("klaberjass",)})
    for bot in ("nosuch", "joker"):
        with pytest.raises(BadRequest) as info:
            check_bot(bot, "klaberjass", host)
        assert (info.value.reason, info.value.metadata) == ("UNKNOWN_BOT", {"bot": bot})
        assert info.value.message == f"no bot {bot!r} plays klaberjass; available: alpha, zeta"
    assert check_bot("zeta", "klaberjass", host) is None
    with pytest.raises(BadRequest) as info:  # installed, but not for this game
        check_bot("zeta", "jojotte", host)
    assert info.value.message == "no bot 'zeta' plays jojotte; available: alpha"
    with pytest.raises(BadRequest) as info:  # no name: still the documented ``bot`` key
        check_bot("", "klaberjass", host)
    assert (info.value.reason, info.value.metadata) == ("UNKNOWN_BOT", {"bot": ""})
    with pytest.raises(TakeoverBotUnavailable) as none:
        check_takeover_bot("random", CatalogHost({}))
    assert str(none.value) == ("'random' is not an installed bot; installed bots: none; able to take "
                               "a seat over: none")


class GatedHost(ScriptedHost):
    """The ``scripted`` bot, which answers only once the test opens its gate."""

    def __init__(self):
        super().__init__("legal")
        self.asked = asyncio.Event()
        self.gate = asyncio.Event()

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        self.asked.set()
        await self.gate.wait()
        return await super().decide(bot, game_id, seat, view, legal, seed, deadline_s)


def test_no_turn_deadline_while_a_bot_decides():
    """docs/api.md's view table and match.proto's View.deadline: a bot's decision has the
    bot deadline, not the turn time, so the view names no deadline while a bot is to act (a
    frontend found no countdown for the bot's turn, and nothing said why), and the player's
    decision after it has one."""
    async def go():
        host = GatedHost()
        async with manager(config(), host=host) as mgr:
            summary = await mgr.create_match(CreateMatchRequest(
                game="japanese_joker", seats=[SeatConfig(), SeatConfig("bot", "scripted")], turn_time_s=30))
            p = await mgr.join_match(summary.match_id, 0, "p")
            principal = mgr.authenticate(summary.match_id, p.token)
            stream = mgr.watch(summary.match_id, principal, -1)  # present: the timer runs
            await stream.__anext__()
            m = mgr._matches[summary.match_id]
            seen = []
            for _ in range(3):  # a decision of each seat at least
                if m.state.to_act() == 1:
                    await asyncio.wait_for(host.asked.wait(), 30)  # a hang guard
                    seen.append((1, (await mgr.get_view(summary.match_id, principal)).deadline))
                    host.asked.clear()
                    before = m.seq
                    host.gate.set()
                    await until(lambda: m.seq > before, timeout=30)
                    host.gate.clear()
                else:
                    view = await mgr.get_view(summary.match_id, principal)
                    seen.append((0, view.deadline))
                    await mgr.submit_action(summary.match_id, principal, view.view["legal"][0], view.seq)
            await stream.aclose()
            return seen

    seen = run(go())
    assert {seat for seat, _ in seen} == {0, 1}, seen
    assert all((deadline is None) == (seat == 1) for seat, deadline in seen), seen


class _BotWritesGated:
    """A MemoryStore whose appends of bot moves wait for ``gate`` (``waiting``: one does)."""

    def __init__(self) -> None:
        from engine_service.store import MemoryStore

        self.inner = MemoryStore()
        self.gate = asyncio.Event()
        self.waiting = False

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def append_action(self, match_id, action, decks=(), end=None):
        if action.by == "bot" and not self.gate.is_set():
            self.waiting = True
            await self.gate.wait()
        return await self.inner.append_action(match_id, action, decks, end)


async def _player_and_three_bots(mgr):
    """A Georgian Joker match of a watched player (seat 0) and three ``scripted`` bots, past
    the player's decision if the deal starts with it: (match id, principal, match, stream)."""
    seats = [SeatConfig()] + [SeatConfig("bot", "scripted")] * 3
    summary = await mgr.create_match(CreateMatchRequest(game="georgian_joker", seats=seats), admin=True)
    match_id = summary.match_id
    player = mgr.authenticate(match_id, (await mgr.join_match(match_id, 0, "p")).token)
    m = mgr._matches[match_id]
    stream = Stream(mgr, match_id, player)
    await until(lambda: m.seats[0].present)
    if m.state.to_act() == 0:
        env = await mgr.get_view(match_id, player)
        await mgr.submit_action(match_id, player, env.view["legal"][0], env.seq)
    return match_id, player, m, stream


async def _reconnected(mgr, match_id, player, m, stream):
    """Seat 0's player disconnects and connects again (the clock re-arms the decision at hand
    twice); then the loop has run long enough for a bot asked again to have been asked."""
    await stream.close()
    stream = Stream(mgr, match_id, player, after_seq=0)
    await until(lambda: m.seats[0].present)
    for _ in range(20):
        await asyncio.sleep(0)
    return stream


def test_a_presence_change_while_a_bot_move_is_written_asks_the_bot_nothing_more():
    """A bot decision is made once: a seat connecting or going away while the bot's move is
    being written keeps that decision armed. It used to be disarmed for the write, so the
    presence change (the clock re-arming the decision at hand) asked the bot host for the same
    decision again, a worker's time spent (and a failure logged) for a move never played."""
    async def go():
        host, store = ScriptedHost("first"), _BotWritesGated()
        async with manager(config(time_scale=1000.0), store=store, host=host) as mgr:
            match_id, player, m, stream = await _player_and_three_bots(mgr)
            await until(lambda: store.waiting)  # a bot's move is being written
            asked, seq = len(host.requests), m.seq
            stream = await _reconnected(mgr, match_id, player, m, stream)
            during = len(host.requests)
            store.gate.set()
            await until(lambda: m.seq > seq)
            await stream.close()
            return asked, during, m.actions[seq]

    asked, during, move = run(go())
    assert asked == during == 1  # one decision, one question
    assert move.by == "bot"


def test_a_presence_change_while_a_bot_decides_asks_the_bot_nothing_more():
    """A bot decision is asked once: a seat connecting or going away while a bot thinks (the
    clock re-arming the decision at hand) keeps the decision already under way, as during
    its write (above). Asked again, the bot host would spend a second worker's time on the
    same decision, whose move the first answer has already made."""
    class Counted(GatedHost):
        entered = 0

        async def decide(self, *args):
            self.entered += 1
            return await super().decide(*args)

    async def go():
        host = Counted()
        async with manager(config(), host=host) as mgr:
            match_id, player, m, stream = await _player_and_three_bots(mgr)
            await asyncio.wait_for(host.asked.wait(), 30)  # a bot thinks (a hang guard)
            seq = m.seq
            stream = await _reconnected(mgr, match_id, player, m, stream)
            during = host.entered
            host.gate.set()
            await until(lambda: m.seq > seq)
            await stream.close()
            return during, m.actions[seq]

    during, move = run(go())
    assert during == 1  # one decision, one question
    assert move.by == "bot"


def test_a_bot_host_the_caller_gave_is_not_closed_by_the_manager():
    """The manager closes only a bot host it created (MatchManager's docstring: "owned and
    closed by the manager"): one it was given belongs to its caller, who may share it with
    another manager (a restart in the same process), and is left open by close()."""
    class Recorded(ScriptedHost):
        closed = 0

        async def close(self):
            self.closed += 1

    host = Recorded("legal")

    async def go():
        async with manager(host=host) as mgr:
            await mgr.create_match(CreateMatchRequest(game="klaberjass", seats=[SeatConfig("bot", "scripted")] * 2))
        return host.closed

    assert run(go()) == 0


class LoggingHost(ScriptedHost):
    """As ScriptedHost, and saying a line of its own for each decision, as the real host says
    ``bot_decision_failed`` (without the match: the decision's task binds it)."""

    async def decide(self, bot, game_id, seat, view, legal, seed, deadline_s):
        import structlog

        structlog.get_logger("engine_service.plugins").warning("bot_decision_failed", bot=bot)
        return await super().decide(bot, game_id, seat, view, legal, seed, deadline_s)


def test_the_bot_hosts_lines_name_the_match_and_seat_of_the_decision():
    """A bot decision runs in a task of its own whose log context names its match and seat
    (MatchClock._bot_move: "the bot host's lines name the decision"): the bot host's own lines
    carry no match (``bot_decision_failed``: bot, game, failure, detail, elapsed_s,
    docs/operations.md), and without that context nobody could tell which table's bot failed."""
    with capture_logs_with_context() as entries:
        async def go():
            async with manager(config(), host=LoggingHost("legal")) as mgr:
                summary = await mgr.create_match(CreateMatchRequest(
                    game="klaberjass", seats=[SeatConfig("bot", "scripted")] * 2))
                m = mgr._matches[summary.match_id]
                await until(lambda: m.seq >= 2, timeout=30)
                return summary.match_id, [(a.seat, a.by) for a in m.actions[:2]]
        match_id, moves = run(go())
    lines = [e for e in entries if e["event"] == "bot_decision_failed"][:2]
    assert [by for _, by in moves] == ["bot", "bot"]
    assert [(e.get("match_id"), e.get("seat")) for e in lines] == [(match_id, seat) for seat, _ in moves]


def test_a_refused_bot_move_is_logged_without_what_the_rules_said_of_the_hand(monkeypatch):
    """As a timed-out move's (test_time): a bot's move that the rules refuse when it is written
    (an inconsistency, tried again later: MatchClock._retry_later) is logged
    ``bot_move_failed`` with the error's type and reason only, never the rules' message,
    which is written for the seat ("KC is not in your hand": a card of its hand in the
    operator's log, docs/operations.md, Logs)."""
    from engine_service.rules.errors import IllegalAction
    from engine_service.sessions.writer import MatchWriter

    async def refuse(self, m, seat, action, **kwargs):
        raise IllegalAction("play:KC: KC is not in your hand", action="play:KC")

    monkeypatch.setattr(MatchWriter, "apply", refuse)
    with capture_logs_with_context() as logs:
        async def go():
            async with manager(config(), host=ScriptedHost("legal")) as mgr:
                await mgr.create_match(CreateMatchRequest(game="klaberjass", seats=[SeatConfig("bot", "scripted")] * 2))
                await until(lambda: any(e["event"] == "bot_move_failed" for e in logs), timeout=30)
        run(go())
    failed = [e for e in logs if e["event"] == "bot_move_failed"]
    assert failed[0]["error_type"] == "IllegalAction" and "ILLEGAL_ACTION" in failed[0]["error"]
    assert "KC" not in repr(failed), failed


def test_every_bot_decision_gets_a_fresh_seed():
    """docs/bots.md (Writing a bot: ``rng``): the service draws a fresh seed per decision; one
    seed for every decision (a constant) made a seeded bot repeat its choices in every
    position alike, and no test looked past the seed's type."""
    host = ScriptedHost("ok")

    async def go():
        async with manager(host=host) as mgr:
            s = await mgr.create_match(CreateMatchRequest(game="klaberjass", seats=[SeatConfig("bot", "scripted")] * 2))
            m = mgr._matches[s.match_id]
            await until(lambda: m.seq >= 4)

    run(go())
    seeds = [r["seed"] for r in host.requests]
    assert len(seeds) >= 4 and len(set(seeds)) == len(seeds), seeds
    assert all(0 <= seed < 2 ** 63 for seed in seeds)


def test_a_bot_seat_resumed_by_an_engine_without_bots_falls_back_as_an_unknown_bot():
    """docs/bots.md (Failures): a seat whose bot this engine does not have (a match resumed
    after its plugin was removed) fails as ``unknown_bot``, counted under that reason; so does
    every decision of a match resumed by an engine with no bot host at all, each replaced by
    the auto-move (by ``auto``, reason ``bot_failed``)."""
    from engine_service.observability.metrics import Metrics
    from engine_service.sessions.manager import MatchManager
    from engine_service.store import MemoryStore

    store = MemoryStore()

    async def go():
        # the first engine's bot decides, then waits out a pace that outlasts the engine
        first = MatchManager(config(bot_pace_s=3600.0), store=store, bot_host=ScriptedHost("ok"),
                             metrics=Metrics(), create_bot_host=False)
        await first.start()
        s = await first.create_match(CreateMatchRequest(game="klaberjass", seats=[SeatConfig("bot", "scripted")] * 2))
        await first.close()
        async with manager(store=store) as mgr:  # no bot host
            m = mgr._matches[s.match_id]
            await until(lambda: m.seq >= 2)
            return list(m.actions[:2]), mgr.metrics

    moves, metrics = run(go())
    assert [(a.by, a.reason) for a in moves] == [("auto", "bot_failed")] * 2
    assert metrics.value("cardgames_bot_failures_total", {"bot": "scripted", "reason": "unknown_bot"}) >= 2
