"""The arena's machinery: duplicate rotations, statistics, repeatability, transcripts that replay,
positional boards, failure fallback and the command line."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest

from bot_plugins import arena
from bot_plugins.arena import ArenaConfig, mean_interval, percentile, rotations, run_arena, summarize
from engine_service.rules import transcript


def test_rotations_put_every_bot_in_every_seat():
    assert rotations(("a", "b"), 2) == [("a", "b"), ("b", "a")]
    assert rotations(("a", "b"), 4) == [("a", "b", "a", "b"), ("b", "a", "b", "a")]
    assert rotations(("a", "b", "b", "b"), 4) == [("a", "b", "b", "b"), ("b", "b", "b", "a"),
                                                  ("b", "b", "a", "b"), ("b", "a", "b", "b")]
    with pytest.raises(ValueError):
        rotations(("a", "b", "c"), 2)


def test_statistics_by_hand():
    i = mean_interval([1.0, 2.0, 3.0, 4.0])
    assert i.mean == 2.5
    half = 1.959964 * math.sqrt((2.25 + 0.25 + 0.25 + 2.25) / 3 / 4)
    assert i.low == pytest.approx(2.5 - half) and i.high == pytest.approx(2.5 + half)
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.5) == 3.0
    assert percentile([0.0, 10.0], 0.9) == pytest.approx(9.0)


def test_summary_of_duplicate_boards():
    cfg = ArenaConfig(game="klaberjass", bots=("a", "b"), deals=2)
    boards = [
        {"board": 0, "rotations": [
            {"seats": ["a", "b"], "scores": [100.0, 20.0], "times": {"a": [0.01], "b": [0.02]}, "failures": {}},
            {"seats": ["b", "a"], "scores": [90.0, 40.0], "times": {"a": [0.03], "b": [0.04]},
             "failures": {"b": {"illegal": 1}}}]},
        {"board": 1, "rotations": [
            {"seats": ["a", "b"], "scores": [0.0, 50.0], "times": {}, "failures": {}},
            {"seats": ["b", "a"], "scores": [50.0, 0.0], "times": {}, "failures": {}}]},
    ]
    report = summarize(cfg, boards, 1.0)
    a = next(b for b in report.bots if b.name == "a")
    bb = next(b for b in report.bots if b.name == "b")
    # board 0: S(a) = (100 + 40) / 2 = 70, S(b) = (20 + 90) / 2 = 55 -> +15; board 1: -50
    assert a.score_diff.mean == pytest.approx((15 - 50) / 2)
    assert bb.score_diff.mean == pytest.approx(-(15 - 50) / 2)
    assert a.win_rate.mean == pytest.approx(0.5)
    assert a.decisions == 2 and a.time_ms["max"] == pytest.approx(30.0)
    assert bb.failures == {"illegal": 1}


def test_a_tie_at_the_top_splits_the_win_and_a_win_rate_stays_within_0_and_1():
    """The module's docstring: a bot wins a board when its S is the highest, a tie at the top
    splits the win; a win rate is a share of boards, so its interval is cut at 0 and 1."""
    cfg = ArenaConfig(game="japanese_joker", bots=("a", "b"), deals=4)

    def board(i: int, a: float, b: float) -> dict:
        return {"board": i, "rotations": [{"seats": ["a", "b"], "scores": [a, b], "times": {}, "failures": {}}]}

    report = summarize(cfg, [board(0, 9, 1), board(1, 8, 2), board(2, 7, 3), board(3, 5, 5)], 1.0)
    a, b = report.bots
    assert a.win_rate.mean == pytest.approx(0.875) and b.win_rate.mean == pytest.approx(0.125)
    assert a.win_rate.high == 1.0 and b.win_rate.low == 0.0  # unclamped: 1.12 and -0.12
    assert 0.0 < a.win_rate.low < a.win_rate.mean and b.win_rate.mean < b.win_rate.high < 1.0


def test_a_score_difference_is_against_the_mean_of_the_other_bots():
    """The module's docstring: a bot's score difference on a board is its S minus the mean S
    of the other bots (three bots around Georgian Joker's four seats)."""
    cfg = ArenaConfig(game="georgian_joker", bots=("a", "b", "c"), deals=1)
    board = {"board": 0, "rotations": [{"seats": ["a", "b", "c", "a"], "scores": [10.0, 4.0, 1.0, 10.0],
                                        "times": {}, "failures": {}}]}
    diffs = {s.name: s.score_diff.mean for s in summarize(cfg, [board], 1.0).bots}
    assert diffs == {"a": 10.0 - 2.5, "b": 4.0 - 5.5, "c": 1.0 - 7.0}


def test_a_run_is_repeatable_and_writes_transcripts_that_replay(tmp_path):
    cfg = ArenaConfig(game="klaberjass", bots=("heuristic", "random"), deals=6, seed=4,
                      out=str(tmp_path / "a"), progress=False)
    first = run_arena(cfg)
    second = run_arena(ArenaConfig(**{**cfg.__dict__, "out": str(tmp_path / "b")}))
    assert [vars(b.score_diff) for b in first.bots] == [vars(b.score_diff) for b in second.bots]
    files = sorted((tmp_path / "a").glob("*.json"))
    assert len(files) == 12  # 6 boards x 2 rotations
    for f in files:
        data = transcript.loads(f.read_text())
        diff, _ = transcript.check(data)
        assert diff is None, (f.name, str(diff))
        assert (tmp_path / "b" / f.name).read_text() == f.read_text()
    # the same deck is replayed with the seats swapped
    r0 = json.loads((tmp_path / "a" / "klaberjass-board000003-r0.json").read_text())
    r1 = json.loads((tmp_path / "a" / "klaberjass-board000003-r1.json").read_text())
    assert r0["deals"][0]["deck"] == r1["deals"][0]["deck"]
    assert r0["first_dealer"] == r1["first_dealer"]


def test_parallel_workers_give_the_same_result_as_one():
    base = dict(game="japanese_joker", bots=("heuristic", "random"), deals=8, seed=2, progress=False)
    one = run_arena(ArenaConfig(**base, workers=1))
    two = run_arena(ArenaConfig(**base, workers=2))
    assert [vars(b.score_diff) for b in one.bots] == [vars(b.score_diff) for b in two.bots]


def test_georgian_joker_boards_walk_through_the_schedule(tmp_path):
    run_arena(ArenaConfig(game="georgian_joker", bots=("random", "heuristic"), deals=3, seed=1,
                          out=str(tmp_path), progress=False))
    for board in range(3):
        data = json.loads((tmp_path / f"georgian_joker-board{board:06d}-r0.json").read_text())
        assert len(data["deals"]) == board + 1  # earlier deals by auto-moves, then the board
        assert transcript.check(data)[0] is None


def test_a_board_is_scored_by_its_own_deal_whose_deck_the_seed_draws(tmp_path, monkeypatch):
    """The module's docstring: board i of Georgian Joker is deal i mod L of its match, the
    earlier deals played by auto-moves, and the board's scores are its deal's (the transcript's
    last); in the two-player games every board is the first deal of a match; ``--seed`` fixes
    the decks (another seed, other decks)."""
    from bot_plugins.scoring import deal_scores
    monkeypatch.setattr(arena, "_WORKER", None)
    decks = {}
    for game_id, cycle, seed, options in (("georgian_joker", 24, 1, {}), ("klaberjass", 1, 1, {}),
                                          ("klaberjass", 1, 2, {"kl_target_score": 300})):
        out = tmp_path / f"{game_id}-{seed}"
        out.mkdir()
        arena._init_worker(ArenaConfig(game=game_id, bots=("random", "heuristic"), deals=3, seed=seed,
                                       options=options, out=str(out), progress=False), cycle)
        board = arena.play_board(2)
        assert board["board"] == 2  # what run_arena sorts the workers' boards by
        for r, played in enumerate(board["rotations"]):
            data = json.loads((out / f"{game_id}-board000002-r{r}.json").read_text())
            assert len(data["deals"]) == (3 if cycle > 1 else 1) and data["options"] == options  # --options
            assert played["scores"] == deal_scores(game_id, data["deals"][-1]["result"], len(played["seats"]))
        decks[game_id, seed] = data["deals"][-1]["deck"]
    assert decks["klaberjass", 1] != decks["klaberjass", 2]


def test_failures_fall_back_to_the_auto_move_and_are_counted():
    report = run_arena(ArenaConfig(game="klaberjass", bots=("raises", "garbage"), deals=3, seed=1,
                                   progress=False, plugins=("tests.plugins.bad_bots",)))
    by = {b.name: b for b in report.bots}
    assert by["raises"].failures.get("exception") == by["raises"].decisions > 0
    assert by["garbage"].failures.get("illegal") == by["garbage"].decisions > 0


@pytest.mark.parametrize("game_id, deals, between", [
    ("klaberjass", 2, "dealing"), ("jojotte", 2, "deal"), ("japanese_joker", 2, "dealing"),
    ("georgian_joker", 24, "deal_setup"),
])
def test_the_deal_end_callbacks_get_the_documented_views(game_id, deals, between):
    """docs/bots.md: in the arena ``on_match_end`` follows ``on_deal_end`` at once, with the
    same view: the game's between-deals phase, ``over`` false, unless the board's deal ended
    the match (Georgian Joker's last deal, board 23: ``match_over``, ``deal_number`` 23)."""
    from tests.bots import recorder
    recorder.CALLBACKS.clear()
    run_arena(ArenaConfig(game=game_id, bots=("recorder", "random"), deals=deals, seed=1,
                          progress=False, plugins=("tests.bots.recorder",)))
    calls = recorder.CALLBACKS
    assert calls and [c[0] for c in calls] == ["deal_end", "match_end"] * (len(calls) // 2)
    assert all(d[1:] == m[1:] for d, m in zip(calls[::2], calls[1::2]))
    ends = {c[1:] for c in calls}
    if game_id == "georgian_joker":
        assert ("match_over", 23, True, 24) in ends
        ends = {e for e in ends if e[0] != "match_over"}
    assert ends and all(phase == between and not over and number == results
                        for phase, number, over, results in ends), ends


def test_each_seat_has_a_bot_object_of_its_own_told_its_seat_at_the_board_s_deal():
    """The module's docstring: each seat has its own bot object (so the match callbacks work);
    docs/bots.md: ``on_match_start(game_id, seat, view)`` gets the deal's first view, in
    Georgian Joker at the board's deal, mid-match (board i: deal i). Every view a bot gets, in
    a decision or a callback, is its own seat's (another seat's view holds that seat's hand), and
    a decision's legal actions are its view's."""
    from tests.bots import recorder
    recorder.STARTS.clear()
    recorder.VIEWS.clear()
    recorder.LEGAL.clear()
    run_arena(ArenaConfig(game="georgian_joker", bots=("recorder", "random"), deals=2, seed=1,
                          progress=False, plugins=("tests.bots.recorder",)))
    starts = recorder.STARTS
    # the recorder holds seats 0 and 2 in the first rotation, 1 and 3 in the second
    assert [s[:5] for s in starts] == [("georgian_joker", seat, seat, "bidding", board)
                                       for board in (0, 1) for seat in (0, 2, 1, 3)]
    assert all(one[5] != other[5] for one, other in zip(starts[::2], starts[1::2]))  # one match, two objects
    kinds = [kind for kind, _, _ in recorder.VIEWS]
    assert kinds.count("deal_end") == kinds.count("match_end") == 8 and kinds.count("decide") > 8
    assert all(own == seen for _, own, seen in recorder.VIEWS), recorder.VIEWS
    assert recorder.LEGAL and all(recorder.LEGAL)


def test_every_decision_gets_an_rng_of_its_own_that_the_seed_replays():
    """The module's docstring: ``--seed`` fixes every bot's RNG, so a seeded bot repeats
    exactly; each decision is seeded apart (one seed for every step of a board gave a bot the
    same draws at each of its turns), the boards' decisions too (two boards)."""
    from tests.bots import recorder

    def draws(seed: int) -> list[int]:
        recorder.DRAWS.clear()
        recorder.BUDGETS.clear()
        run_arena(ArenaConfig(game="japanese_joker", bots=("recorder", "random"), deals=2, seed=seed,
                              progress=False, plugins=("tests.bots.recorder",), budget_s=0.3))
        assert set(recorder.BUDGETS) == {0.3}  # --time-ms, told to the bot as its budget
        return list(recorder.DRAWS)

    first = draws(1)
    assert len(first) > 10 and len(set(first)) == len(first)
    assert draws(1) == first and set(draws(2)).isdisjoint(first)


def test_a_bot_whose_callbacks_or_factory_raise_does_not_stop_the_arena():
    """docs/bots.md: a callback's failure never stops the match (the Bot protocol), and a bot
    its factory cannot make plays every decision as a counted failure, by the auto-move."""
    report = run_arena(ArenaConfig(game="klaberjass", bots=("raising_callbacks", "bad-factory"), deals=2,
                                   seed=1, progress=False,
                                   plugins=("tests.bots.recorder", "tests.plugins.bad_bots")))
    by = {b.name: b for b in report.bots}
    assert by["raising_callbacks"].failures == {} and by["raising_callbacks"].decisions > 0
    assert sum(by["bad-factory"].failures.values()) == by["bad-factory"].decisions > 0


def test_each_board_draws_its_first_dealer_from_the_seed(tmp_path):
    """The module's docstring: a board is a deck and a first dealer drawn from the seed, the
    same in every rotation (seat 0 dealing every board gave one seat every first lead)."""
    run_arena(ArenaConfig(game="japanese_joker", bots=("random", "heuristic"), deals=6, seed=1,
                          out=str(tmp_path), progress=False))
    dealers = [[json.loads((tmp_path / f"japanese_joker-board{b:06d}-r{r}.json").read_text())["first_dealer"]
                for r in (0, 1)] for b in range(6)]
    assert all(r0 == r1 for r0, r1 in dealers) and {r0 for r0, _ in dealers} == {0, 1}


@pytest.mark.parametrize("schedule, deals", [("standard", 24), ("nines", 16)])
def test_georgian_joker_boards_cycle_through_the_deals_of_one_match(schedule, deals):
    """The module's docstring: board i is deal i mod L of the match, L its deals (GJ-2.4: 24,
    GJ-2.5: 16 with ``nines``)."""
    assert arena.match_length("georgian_joker", {"deal_schedule": schedule}) == deals


@pytest.mark.parametrize("game_id, options, cycle", [
    ("georgian_joker", {}, 24), ("georgian_joker", {"deal_schedule": "nines"}, 16), ("klaberjass", {}, 1),
])
def test_the_boards_cycle_through_the_match_the_options_make(monkeypatch, game_id, options, cycle):
    """The module's docstring: board i of Georgian Joker is deal i mod L, L the deals of a match
    under the run's options (GJ-2.5: 16 with ``nines``); a two-player game's board is the first
    deal of a match (L = 1)."""
    cycles = []

    def play(board):
        cycles.append(arena._WORKER.cycle)
        seats = rotations(("random", "heuristic"), arena.get_game(game_id).num_seats)[0]
        return {"board": board, "rotations": [{"seats": list(seats), "scores": [0.0] * len(seats), "times": {},
                                                "failures": {}}]}

    monkeypatch.setattr(arena, "_WORKER", None)
    monkeypatch.setattr(arena, "play_board", play)
    run_arena(ArenaConfig(game=game_id, bots=("random", "heuristic"), deals=2, options=options, progress=False))
    assert cycles == [cycle, cycle]


def test_the_lines_recorded_while_loading_are_those_logged_meanwhile_only():
    """What the parent said while it loaded the plugins (each worker drops those lines): the
    recording ends with the loading, the log set-up as it was."""
    import structlog
    before = structlog.get_config()["processors"]
    with arena._recording_logs() as said:
        structlog.get_logger("arena-test").error("while loading")
    structlog.get_logger("arena-test").error("afterwards")
    assert structlog.get_config()["processors"] == before
    assert [json.loads(key)[1]["event"] for key in said] == ["while loading"]


def test_a_bot_that_raises_a_base_exception_does_not_stop_the_arena():
    """A BaseException subclass of the bot's own (as asyncio.CancelledError) is an
    ``exception`` failure; it used to end the arena with a traceback naming the bot's hand."""
    report = run_arena(ArenaConfig(game="klaberjass", bots=("raises-base", "random"), deals=2, seed=1,
                                   progress=False, plugins=("tests.plugins.bad_bots",)))
    by = {b.name: b for b in report.bots}
    assert by["raises-base"].failures.get("exception") == by["raises-base"].decisions > 0


def test_a_bot_that_wrecks_its_view_and_fails_still_gets_the_auto_move():
    """The view is the bot's own copy (docs/bots.md): the auto-move that replaces a failed
    decision is made from a fresh view, not from the one the bot emptied."""
    report = run_arena(ArenaConfig(game="klaberjass", bots=("wrecks", "random"), deals=2, seed=1,
                                   progress=False, plugins=("tests.plugins.bad_bots",)))
    by = {b.name: b for b in report.bots}
    assert by["wrecks"].failures.get("exception") == by["wrecks"].decisions > 0


def test_a_bot_that_exits_or_hangs_does_not_stop_the_arena(monkeypatch):
    """In-process bots: sys.exit is a crash answer, and under --strict-time a bot running past
    its budget is interrupted (a timeout); the arena used to end silently, or hang."""
    from engine_service.plugins import runner
    monkeypatch.setattr(runner, "INTERRUPT_AFTER", 0.05)
    report = run_arena(ArenaConfig(game="klaberjass", bots=("sys-exits", "sleeps"), deals=1, seed=1,
                                   progress=False, plugins=("tests.plugins.bad_bots",),
                                   budget_s=0.05, strict_time=True))
    by = {b.name: b for b in report.bots}
    assert by["sys-exits"].failures.get("crash") == by["sys-exits"].decisions > 0
    assert by["sleeps"].failures.get("timeout") == by["sleeps"].decisions > 0
    assert by["sleeps"].time_ms["max"] < 1000
    # the wall columns are the time it took, the cpu columns what it cost (BotStats): asleep, nothing
    assert by["sleeps"].time_ms["p50"] >= 50 > 25 > by["sleeps"].cpu_ms["max"]


def test_command_line(tmp_path, capsys):
    out = tmp_path / "report.json"
    boards = tmp_path / "missing" / "boards"  # --out makes its missing parents too
    assert arena.main(["--game", "japanese_joker", "--bots", "heuristic,random", "--deals", "4",
                       "--workers", "1", "--seed", "3", "--no-progress", "--json", str(out), "--out", str(boards)]) == 0
    text = capsys.readouterr().out
    assert "heuristic" in text and "score diff" in text and "win rate" in text
    data = json.loads(out.read_text())
    assert data["boards"] == 4 and {r["bot"] for r in data["results"]} == {"heuristic", "random"}
    assert data["seconds"] > 0 and len(list(boards.glob("japanese_joker-board*.json"))) == 8
    with pytest.raises(SystemExit) as refused:  # before any board, naming the bots there are
        arena.main(["--game", "klaberjass", "--bots", "nobody,random", "--deals", "1", "--no-progress"])
    assert str(refused.value.code).startswith("arena: no installed bot 'nobody' plays 'klaberjass' (installed: ")
    installed = str(refused.value.code).split("(installed: ")[1]
    assert "heuristic" in installed and "nobody" not in installed  # the catalog's bots, not the ones asked for


def test_the_progress_bar_is_on_stderr_unless_no_progress(capsys):
    """Without ``--no-progress`` a bar counts the boards on stderr (stdout is the report's)."""
    argv = ["--game", "japanese_joker", "--bots", "random,heuristic", "--deals", "2", "--workers", "1"]
    assert arena.main(argv) == 0
    shown = capsys.readouterr()
    assert "japanese_joker random,heuristic" in shown.err and "2/2" in shown.err
    assert "2/2" not in shown.out
    assert arena.main([*argv, "--no-progress"]) == 0
    assert "2/2" not in capsys.readouterr().err


def test_the_json_report_holds_what_the_printed_one_says():
    """``--json FILE`` writes the report (docs/bots.md): the run's game, bots, boards, seed,
    options and budget, and per bot its mean score, intervals (``low`` below ``high``), decision
    count, times and failures as printed, the bots in the order given."""
    cfg = ArenaConfig(game="klaberjass", bots=("b", "a"), deals=2, seed=7, options={"kl_target_score": 300},
                      budget_s=0.15)
    boards = [{"board": i, "rotations": [
        {"seats": ["b", "a"], "scores": [b, a], "times": {"a": [0.001 * (i + 1)], "b": [0.004]},
         "cpu": {"a": [0.0005], "b": [0.002 * (i + 1)]}, "failures": {"a": {"timeout": 1}} if i else {}}]}
        for i, (b, a) in enumerate([(10.0, 40.5), (30.0, 20.0)])]
    data = json.loads(json.dumps(summarize(cfg, boards, 3.14159).as_json()))
    assert {k: v for k, v in data.items() if k != "results"} == {
        "game": "klaberjass", "bots": ["b", "a"], "boards": 2, "seed": 7, "options": {"kl_target_score": 300},
        "budget_s": 0.15, "seconds": 3.14}
    b, a = data["results"]
    assert (a["bot"], a["mean_score"], a["decisions"], a["failures"]) == ("a", 30.25, 2, {"timeout": 1})
    assert (b["bot"], b["mean_score"], b["decisions"], b["failures"]) == ("b", 20.0, 2, {})
    assert a["score_diff"]["mean"] == 10.25 and a["score_diff"]["low"] < 10.25 < a["score_diff"]["high"]
    assert a["win_rate"]["mean"] == 0.5 and 0.0 == a["win_rate"]["low"] < 0.5 < a["win_rate"]["high"] == 1.0
    assert a["time_ms"] == {"p50": 1.5, "p90": 1.9, "p99": 1.99, "max": 2.0}
    assert a["cpu_ms"] == {"p50": 0.5, "p90": 0.5, "p99": 0.5, "max": 0.5}
    assert b["cpu_ms"] == {"p50": 3.0, "p90": 3.8, "p99": 3.98, "max": 4.0} and b["time_ms"]["max"] == 4.0


def test_the_decision_times_are_the_percentiles_their_columns_name():
    """The report's ``p50/p90/p99/max`` of the decisions' wall and CPU times, in ms."""
    cfg = ArenaConfig(game="japanese_joker", bots=("a", "b"), deals=1)
    spent = [i / 1000 for i in range(101)]  # 0 to 100 ms
    board = {"board": 0, "rotations": [{"seats": ["a", "b"], "scores": [1.0, 0.0], "times": {"a": spent},
                                        "cpu": {"a": spent[::-1]}, "failures": {}}]}
    a = summarize(cfg, [board], 1.0).bots[0]
    assert a.time_ms == a.cpu_ms == {"p50": 50.0, "p90": 90.0, "p99": 99.0, "max": 100.0}


def test_fail_on_failures_exits_1_naming_the_failing_bots_and_0_without_failures(capsys):
    """docs/bots.md: the arena exits 0 whatever the failures, unless ``--fail-on-failures`` (a
    bot author's CI check) asks for 1 when any bot failed a decision; the report is printed."""
    flags = ["--game", "klaberjass", "--deals", "1", "--workers", "1", "--no-progress",
             "--plugin", "tests.plugins.bad_bots"]
    assert arena.main([*flags, "--bots", "raises,random"]) == 0
    capsys.readouterr()
    assert arena.main([*flags, "--bots", "raises,random", "--fail-on-failures"]) == 1
    captured = capsys.readouterr()
    assert "score diff" in captured.out
    assert captured.err.strip() == "failed: bots with failed decisions: raises"
    assert arena.main([*flags, "--bots", "random,random", "--fail-on-failures"]) == 0


def test_one_bot_in_every_seat_has_no_score_difference_or_win_rate(tmp_path, capsys):
    """``--bots random,random`` (a bot author's check that a bot plays every deal) compared the
    bot with nobody: its score difference was its mean score, +47.25 [+45.78, +48.72], and its win
    rate 1.000, read as results. Now neither is given (docs/bots.md); the mean score is."""
    out = tmp_path / "report.json"
    assert arena.main(["--game", "klaberjass", "--bots", "random,random", "--deals", "3", "--workers", "1",
                       "--no-progress", "--json", str(out)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("random"))
    assert row.count("n/a (no other bot)") == 2 and "nan" not in row, row
    (result,) = json.loads(out.read_text())["results"]
    assert result["score_diff"] == result["win_rate"] == {"mean": None, "low": None, "high": None}
    assert result["mean_score"] > 0 and result["decisions"] > 0
    # two bots are compared as before
    report = summarize(ArenaConfig(game="klaberjass", bots=("a", "b"), deals=1),
                       [{"board": 0, "rotations": [{"seats": ["a", "b"], "scores": [10.0, 4.0], "times": {},
                                                     "failures": {}}]}], 1.0)
    assert [b.score_diff.mean for b in report.bots] == [6.0, -6.0]


def test_a_warning_while_loading_the_plugins_is_said_once_not_by_every_worker(monkeypatch, capfd):
    """Each ``--workers`` process loads the plugins again: a plugin the allowlist names but no
    package installs was warned about by the arena and again by each worker (three lines with
    two workers). The workers now leave out what the arena said (docs/bots.md)."""
    monkeypatch.setenv("CARDGAMES_BOT_PLUGINS", "random,heuristic,no_such_plugin")
    assert arena.main(["--game", "klaberjass", "--bots", "random,heuristic", "--deals", "2", "--workers", "2",
                       "--no-progress"]) == 0
    err = capfd.readouterr().err
    assert err.count("bot_plugins_not_installed") == 1 and "no_such_plugin" in err, err


def test_one_board_prints_no_interval_rather_than_minus_to_plus_infinity(tmp_path, capsys):
    """One board has no spread: its interval was printed "[-inf, +inf]" (the win rate's
    "[0.000, 1.000]", clamped) and written to --json as -Infinity, which is not JSON."""
    out = tmp_path / "report.json"
    assert arena.main(["--game", "japanese_joker", "--bots", "heuristic,random", "--deals", "1",
                       "--workers", "1", "--no-progress", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "inf" not in text and text.count("[n/a (one board)]") == 4, text
    row = next(line for line in text.splitlines() if line.startswith("heuristic"))
    assert re.search(r"[+-]\d+\.\d\d \[n/a \(one board\)\]", row) and re.search(r"\d\.\d{3} \[n/a", row), row

    def strict(constant):
        raise AssertionError(f"{constant} is not JSON")

    data = json.loads(out.read_text(), parse_constant=strict)
    for result in data["results"]:
        for key in ("score_diff", "win_rate"):
            assert result[key]["low"] is None and result[key]["high"] is None
            assert math.isfinite(result[key]["mean"])
    # two boards have an interval again, printed as before
    assert str(mean_interval([1.0, 3.0])).startswith("+2.00 [") and "n/a" not in str(mean_interval([1.0, 3.0]))
    assert mean_interval([]).format(".3f") == "nan [n/a (no boards)]"


@pytest.mark.parametrize("flags, says", [
    (["--deals", "0"], "--deals: must be at least 1"),
    (["--deals", "-3"], "--deals: must be at least 1"),
    (["--deals", "2.5"], "--deals: not a whole number: '2.5'"),
    (["--time-ms", "soon"], "--time-ms: not a number: 'soon'"),
    (["--time-ms", "nan"], "--time-ms: must be a number of milliseconds above 0"),
    (["--time-ms", "-1"], "--time-ms: must be a number of milliseconds above 0"),
    (["--time-ms", "0"], "--time-ms: must be a number of milliseconds above 0"),
    (["--bots", "random,heuristic,random"], "error: 3 bots for 2 seats"),
    (["--bots", " , "], "error: at least one bot is needed"),  # no name left once spaces are dropped
    (["--bots", " "], "error: at least one bot is needed"),
    # a blank name between names was dropped, the others seated in other rotations than written
    (["--bots", "random,,heuristic"], "--bots: a blank bot name in 'random,,heuristic': give names separated"),
    (["--bots", "random, "], "--bots: a blank bot name in 'random, ': give names separated by single commas"),
    (["--options", "{bad"], "--options: not JSON"),
    (["--options", "[1]"], "--options: must be a JSON object"),
    (["--options", '{"kl_target_score": 300, "kl_target_score": 5}'],
     'the name "kl_target_score" appears twice in one object'),
    (["--options", '{"kl_target_score": -5}'], "option 'kl_target_score': invalid value -5"),
    (["--game", "nope"], "unknown game 'nope'"),
    # an abbreviation was taken for the flag it began (--time for --time-ms), as the clients'
    # and the engine's commands no longer do
    (["--time", "5"], "error: unrecognized arguments: --time (1 value not shown: it may hold a secret)"),
    (["--fail-on"], "error: unrecognized arguments: --fail-on\n"),
    (["--plugin", "tests.plugins.import_fails"],
     "error: --plugin tests.plugins.import_fails did not load (import): ImportError at import_fails.py:3"),
    (["--plugin", "tests.plugins.no_such_module"], "error: --plugin tests.plugins.no_such_module did not "
     "load (import): ModuleNotFoundError: no module named 'tests.plugins.no_such_module'\n"),
])
def test_bad_arguments_are_usage_errors_not_tracebacks_or_empty_reports(flags, says, capsys):
    """--deals 0 printed a report of nan means (exit 0); a typo in --options, an invalid option
    or an unknown game was a traceback (exit 1); a --plugin module that did not load was a
    bot_plugin_failed line, and the run went on without it (exit 0); an abbreviated flag was
    taken for the flag it began."""
    with pytest.raises(SystemExit) as exit_:
        arena.main(["--game", "klaberjass", "--bots", "random,random", "--deals", "1", "--no-progress", *flags])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err


def test_an_output_that_cannot_be_written_is_a_usage_error_before_any_board(tmp_path, capsys):
    """--out naming a file was a FileExistsError traceback; --json in a missing folder, or
    naming a folder, a traceback after every board had been played (the JSON report lost);
    --workers 0 or -3 ran as one worker. Now usage errors (exit 2) before the first board,
    and nothing is made."""
    a_file = tmp_path / "a_file"
    a_file.write_text("kept")
    cases = [(["--out", str(a_file)], f"--out {a_file}: exists and is not a directory"),
             (["--out", str(a_file / "sub")], f"--out {a_file / 'sub'}: cannot be made: {a_file} is not a directory"),
             (["--out", str(a_file / "sub" / "deeper")], f"cannot be made: {a_file} is not a directory"),
             (["--json", str(tmp_path / "missing" / "r.json")],
              f"--json {tmp_path / 'missing' / 'r.json'}: cannot be made: {tmp_path / 'missing'} does not exist"),
             (["--json", str(a_file / "r.json")], f"cannot be made: {a_file} is not a directory"),
             (["--json", str(tmp_path)], f"--json {tmp_path}: is a directory"),
             (["--workers", "0"], "--workers: must be at least 1"),
             (["--workers", "-3"], "--workers: must be at least 1")]
    for flags, says in cases:
        with pytest.raises(SystemExit) as exit_:
            arena.main(["--game", "klaberjass", "--bots", "random,random", "--deals", "1", "--no-progress",
                        "--out", str(tmp_path / "boards"), *flags])
        assert exit_.value.code == 2, flags
        captured = capsys.readouterr()
        assert says in captured.err and "Traceback" not in captured.err and not captured.out, (flags, captured)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"] and a_file.read_text() == "kept"


def test_a_json_report_may_go_into_the_folder_out_makes(tmp_path, capsys):
    """``--out runs/a --json runs/a/report.json`` (or ``runs/report.json``) with ``runs`` not
    made yet: --out makes the folder before the first board, so the report fits there; it was
    refused as "cannot be made: runs is not a directory". A folder --out does not make is
    still refused, saying it does not exist."""
    out = tmp_path / "runs" / "a"
    for report in (out / "report.json", out.parent / "report.json"):
        assert arena.main(["--game", "japanese_joker", "--bots", "random", "--deals", "1", "--workers", "1",
                           "--no-progress", "--out", str(out), "--json", str(report)]) == 0
        assert json.loads(report.read_text())["game"] == "japanese_joker"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        arena.main(["--game", "japanese_joker", "--bots", "random", "--deals", "1", "--no-progress",
                    "--out", str(out), "--json", str(tmp_path / "elsewhere" / "r.json")])
    assert exit_.value.code == 2
    assert f"cannot be made: {tmp_path / 'elsewhere'} does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("changes, error", [
    ({"options": {"kl_target_score": -5}}, "option 'kl_target_score': invalid value -5"),
    ({"bots": ("random", "heuristic", "random")}, "3 bots for 2 seats"),
    ({"deals": 0}, "at least one board is needed, not deals=0"),
])
def test_run_arena_refuses_bad_options_or_bots_before_it_makes_anything(tmp_path, changes, error):
    """run_arena checks the table options, the bots and the number of boards first, in the
    parent (its comment): the error comes before the --out folder is made and any board played
    (no board at all made a report of NaN means and percentiles, its JSON no JSON)."""
    from engine_service.rules.errors import RulesError
    cfg = ArenaConfig(**{**vars(ArenaConfig("klaberjass", ("random", "heuristic"), 1, out=str(tmp_path / "boards"),
                                            progress=False)), **changes})
    with pytest.raises((RulesError, ValueError), match=re.escape(error)):
        run_arena(cfg)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_out_directory_is_checked_itself_not_its_parent(tmp_path, monkeypatch):
    """``--out .`` (or any existing folder) in a parent the user may not write (``/home``) was
    refused as "cannot be made: /home is not writable": the boards go into the folder itself,
    so it is the one checked. The permissions are simulated (the tests may run as root)."""
    parent, out = tmp_path / "parent", tmp_path / "parent" / "boards"
    out.mkdir(parents=True)
    writable = {out: True, parent: False}
    # a folder not writable may still be entered (X_OK alone): a folder to make a new one in must be writable
    monkeypatch.setattr(arena.os, "access", lambda path, mode: writable.get(Path(path), True) or mode == os.X_OK)
    assert arena._output_problem(str(out), directory=True) is None
    writable[out] = False
    assert arena._output_problem(str(out), directory=True) == "is not writable (permission denied)"
    assert arena._output_problem(str(parent / "new"), directory=True) == (
        f"cannot be made: {parent} is not writable (permission denied)")


def test_an_existing_json_report_the_user_may_not_write_is_refused(tmp_path, monkeypatch):
    """``--json`` naming a file that exists is overwritten, unless it cannot be written: said
    before the first board, not after the run (permissions simulated: the tests may run as root)."""
    report = tmp_path / "report.json"
    report.write_text("{}")
    writable = {report: True}
    monkeypatch.setattr(arena.os, "access", lambda path, mode: writable.get(Path(path), True))
    assert arena._output_problem(str(report), directory=False) is None
    writable[report] = False
    assert arena._output_problem(str(report), directory=False) == "cannot be written (permission denied)"


def test_the_flags_defaults_and_the_bots_list(monkeypatch, tmp_path):
    """docs/bots.md: ``--time-ms`` is 200 by default; ``--bots`` is comma-separated, spaces
    around the names dropped (a blank name is a usage error, above); ``--deals`` 200 and ``--seed`` 1 by default; ``--workers`` one per
    core (its help); late answers count only with ``--strict-time``."""
    got = []

    def run(config):
        got.append(config)
        return summarize(config, [], 0.0)

    monkeypatch.setattr(arena, "run_arena", run)
    assert arena.main(["--game", "klaberjass", "--bots", " random , heuristic ", "--no-progress"]) == 0
    (config,) = got
    assert config.bots == ("random", "heuristic")
    assert (config.budget_s, config.deals, config.seed) == (0.2, 200, 1)
    assert (config.workers, config.strict_time, config.options, config.out, config.progress) == (
        os.cpu_count() or 1, False, {}, None, False)
    # every flag reaches the run
    got.clear()
    assert arena.main(["--game", "klaberjass", "--bots", "random,heuristic", "--deals", "3", "--workers", "5",
                       "--seed", "-4", "--options", '{"kl_target_score": 300}', "--time-ms", "50", "--strict-time",
                       "--out", str(tmp_path / "boards"), "--plugin", "tests.plugins.bad_bots",
                       "--plugin", "tests.bots.recorder"]) == 0
    (config,) = got
    assert vars(config) == {"game": "klaberjass", "bots": ("random", "heuristic"), "deals": 3, "seed": -4,
                            "workers": 5, "options": {"kl_target_score": 300}, "budget_s": 0.05,
                            "strict_time": True, "out": str(tmp_path / "boards"),
                            "plugins": ("tests.plugins.bad_bots", "tests.bots.recorder"), "progress": True}


def test_the_report_table_keeps_its_columns_apart_whatever_their_width():
    """A slow bot's wall times (seconds) or a long name used to run into the next column; the
    numeric columns are right-aligned (format_report)."""
    slow = {"p50": 2500.0, "p90": 12345.6, "p99": 123456.7, "max": 1234567.8}
    fast = {"p50": 0.1, "p90": 0.2, "p99": 0.3, "max": 0.4}
    cpu = {"p50": 25.0, "p90": 50.0, "p99": 75.0, "max": 99.5}  # the wall times, then the cpu times
    bots = [arena.BotStats("a-bot-with-a-rather-long-name", arena.Interval(1.5, -2.25, 5.25),
                           arena.Interval(0.5, 0.25, 0.75), 81.25, 1234567, slow, cpu, {"timeout": 7}),
            arena.BotStats("random", arena.Interval(-1.5, -5.25, 2.25), arena.Interval(0.5, 0.25, 0.75),
                           79.75, 12, fast, fast, {})]
    report = arena.ArenaReport(ArenaConfig("klaberjass", ("a-bot-with-a-rather-long-name", "random"), 10,
                                           seed=3, budget_s=0.15), 10, 61.34, bots)
    title, header, *rows = arena.format_report(report).splitlines()
    assert title == ("klaberjass: 10 boards (duplicate), bots a-bot-with-a-rather-long-name,random, seed 3, "
                     "budget 150 ms, 61.3 s")
    cells = [re.split(r" {2,}", line) for line in [header, *rows]]
    assert cells[0] == ["bot", "mean score", "score diff [95% CI]", "win rate [95% CI]", "decisions",
                        "wall ms p50/p90/p99/max", "cpu ms p50/p90/p99/max", "failures"]
    assert cells[1] == ["a-bot-with-a-rather-long-name", "81.25", "+1.50 [-2.25, +5.25]", "0.500 [0.250, 0.750]",
                        "1234567", "2500.0/12345.6/123456.7/1234567.8", "25.0/50.0/75.0/99.5",
                        '{"timeout": 7}']
    assert cells[2][0] == "random" and cells[2][-1] == "-" and len(cells[2]) == 8
    assert rows[0].index("2500.0/") == rows[1].index("0.1/") == header.index("wall ms")  # aligned
    # the numbers of the mean score and decisions columns end where their headings end
    assert header.index("mean score") + 10 == rows[0].index("81.25") + 5 == rows[1].index("79.75") + 5
    assert header.index("decisions") + 9 == rows[0].index("1234567") + 7 == rows[1].index(" 12 ") + 3


def test_a_bot_that_did_not_load_in_an_arena_worker_ends_the_arena_instead_of_failing_every_decision(monkeypatch):
    """Each arena process loads the plugins under the load time limit on its own: a bot whose
    plugin timed out in a worker only played every decision there as unknown_bot, and the
    report ranked it as if it had played. One process loads once, and uses that catalog."""
    from engine_service.plugins.manager import BotCatalog, load_catalog

    calls: list = []

    def load(settings):
        calls.append(settings)
        return load_catalog(settings) if len(calls) == 1 else BotCatalog()  # the worker's: no bot

    monkeypatch.setattr(arena, "load_catalog", load)
    cfg = ArenaConfig(game="klaberjass", bots=("random", "heuristic"), deals=1, progress=False)
    report = run_arena(cfg)
    assert len(calls) == 1 and report is not None  # the in-process worker did not load again
    monkeypatch.setattr(arena, "_WORKER", None)
    with pytest.raises(SystemExit, match=r"'random', 'heuristic' did not load in an arena worker"):
        arena._init_worker(cfg, 1)  # a worker process's load, whose catalog lacks the bots
        arena.play_board(0)
