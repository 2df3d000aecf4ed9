"""The arena: bots play each other in duplicate deals, with confidence intervals.

    python -m bot_plugins.arena --game klaberjass --bots search,heuristic --deals 2000 \\
        --workers 2 --seed 1 --out DIR

**Duplicate format.** A *board* is one deal: a deck (and a first dealer) drawn from the seed.
Every board is played once per *rotation* of the bots around the table (``--bots a,b`` on two
seats: a-b then b-a; on four seats a-b-a-b then b-a-b-a; ``--bots a,b,b,b``: four rotations), so
each bot holds every hand of every board and card luck cancels. Per board and bot, ``S(bot)``
is the mean deal score over the seats the bot held; a bot's *score difference* on the board is
``S(bot)`` minus the mean ``S`` of the other bots, and it *wins* the board when its ``S`` is the
highest (a tie at the top splits the win). The report gives the mean score difference and the
win rate over boards with 95% confidence intervals (normal approximation; boards are
independent), the bots' decision-time percentiles and their failures.

**Where a deal sits in the match matters** in Georgian Joker (the deal's size follows the
schedule): board ``i`` there is deal ``i mod L`` of the match (L = 24 by default), reached by
playing the earlier deals with the rulebook's auto-move policy for every seat (identical in
every rotation). In the two-player games every board is the first deal of a match.

Bots run in-process in each arena worker (``--workers`` processes, one board at a time), each
seat with its own bot object (so the optional match callbacks work). A failure (exception,
illegal answer, ``sys.exit``; with ``--strict-time`` also an answer later than the budget, and a
bot still running a second past it is interrupted) is replaced by the rulebook's auto-move and
counted; a bot that calls ``os._exit`` or hangs without ``--strict-time`` still stops the
arena. Every match is written to ``--out`` as a ``card-transcript/1`` file that ``python -m
engine_service replay`` checks. ``--seed`` fixes the decks, the first dealers and every bot's
RNG, so a run of seeded bots with an iteration budget (``random``, ``heuristic``, ``search``)
repeats exactly.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from engine_service.command_line import parse_args
from engine_service.plugins.manager import PluginNotLoaded, PluginSettings, check_named_plugins, load_catalog
from engine_service.plugins.runner import BotRunner
from engine_service.rules import CHANCE, TERMINAL, get_game, transcript
from engine_service.rules.errors import RulesError

from .scoring import deal_scores

#: Games whose deals differ by their position in the match: boards cycle through the match.
POSITIONAL_GAMES = frozenset({"georgian_joker"})


@dataclass(frozen=True)
class ArenaConfig:
    game: str
    bots: tuple[str, ...]
    deals: int
    seed: int = 1
    workers: int = 1
    options: Mapping[str, Any] = field(default_factory=dict)
    budget_s: float = 0.2
    strict_time: bool = False
    out: str | None = None
    plugins: tuple[str, ...] = ()  # extra plugin modules (besides the installed entry points)
    progress: bool = True


# ---- one board ---------------------------------------------------------------------------

def rotations(bots: Sequence[str], num_seats: int) -> list[tuple[str, ...]]:
    """The distinct cyclic shifts of ``bots`` repeated around ``num_seats`` seats."""
    if not bots:
        raise ValueError("at least one bot is needed")
    if len(bots) > num_seats:
        raise ValueError(f"{len(bots)} bots for {num_seats} seats")
    base = [bots[i % len(bots)] for i in range(num_seats)]
    seen: list[tuple[str, ...]] = []
    for r in range(num_seats):
        rot = tuple(base[(s + r) % num_seats] for s in range(num_seats))
        if rot not in seen:
            seen.append(rot)
    return seen


def _mix(*parts: Any) -> int:
    return zlib.crc32(":".join(map(str, parts)).encode()) | (zlib.adler32(repr(parts).encode()) << 32)


def match_length(game_id: str, options: Mapping[str, Any]) -> int:
    """Deals in one match played by auto-moves (for the positional games' board cycle)."""
    game = get_game(game_id)
    rng = random.Random(0)
    state = game.new_state(options, first_dealer=0)
    deals = 0
    while state.to_act() != TERMINAL:
        if state.to_act() == CHANCE:
            deck = list(game.pack)
            rng.shuffle(deck)
            state.deal(deck)
            deals += 1
        else:
            state.apply(game.auto_move(state.view(state.to_act())))
    return deals


@dataclass
class _Worker:
    config: ArenaConfig
    catalog: Any
    cycle: int


_WORKER: _Worker | None = None


def quiet_logs(already_said: frozenset[str] = frozenset()) -> None:
    """Plugin-loading chatter to stderr, warnings and up only: stdout is the report's.

    ``already_said``: the lines (:func:`_said_key`) the parent logged while it loaded the
    plugins. A worker process loads them again and would repeat each warning (a plugin that
    failed, one not installed) once per worker; it drops those and says only what differs in
    it (a plugin that timed out there alone, which :func:`play_board` refers to)."""
    import logging

    import structlog

    def drop_said(_logger: Any, method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        if _said_key(method, event_dict) in already_said:
            raise structlog.DropEvent
        return event_dict

    drop_said.arena_filter = True  # type: ignore[attr-defined]
    chain = [p for p in structlog.get_config()["processors"] if not getattr(p, "arena_filter", False)]
    structlog.configure(processors=[drop_said, *chain],
                        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
                        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def _said_key(method: str, event_dict: Mapping[str, Any]) -> str:
    return json.dumps([method, dict(event_dict)], sort_keys=True, default=repr)


@contextlib.contextmanager
def _recording_logs() -> Iterator[set[str]]:
    """The lines logged meanwhile (:func:`_said_key`), still logged as configured."""
    import structlog
    said: set[str] = set()
    config = structlog.get_config()

    def record(_logger: Any, method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        said.add(_said_key(method, event_dict))
        return event_dict

    structlog.configure(processors=[record, *config["processors"]])
    try:
        yield said
    finally:
        structlog.configure(processors=config["processors"])


def _init_worker(config: ArenaConfig, cycle: int, catalog: Any = None,
                 already_said: frozenset[str] = frozenset()) -> None:
    """Set up this process to play boards: with ``catalog``, the one run_arena loaded (one
    process: loading again called every hook a second time, under the load time limit a
    second time); otherwise (a worker process) its own load, which must have every bot of the
    match: each process applies the time limit on its own, and a bot whose plugin timed out
    here only played every decision of every board as an ``unknown_bot`` failure, reported as
    a result. That ends the arena instead, at the worker's first board (play_board): a
    SystemExit there reaches the parent through the board's future, where one raised here
    would only break the pool, with a traceback. ``already_said``: see :func:`quiet_logs`."""
    global _WORKER
    quiet_logs(already_said)
    if catalog is None:
        catalog = load_catalog(PluginSettings.resolve(extra=config.plugins))
    _WORKER = _Worker(config, catalog, cycle)


def _call(bot: Any, method: str, *args: Any) -> None:
    fn = getattr(bot, method, None)
    if callable(fn):
        try:
            fn(*args)
        # a callback's failure must not stop the match (Bot protocol), a sys.exit in it neither:
        # docs/bots.md, "one that raises is ignored" (in decide it is a crash, played as such)
        except (Exception, SystemExit):
            pass


def play_board(board: int) -> dict[str, Any]:
    """Play every rotation of one board (in an arena worker); a JSON-ready summary."""
    assert _WORKER is not None, "arena worker not initialised"
    cfg, cycle = _WORKER.config, _WORKER.cycle
    missing = [bot for bot in dict.fromkeys(cfg.bots) if not _WORKER.catalog.plays(bot, cfg.game)]
    if missing:  # see _init_worker
        raise SystemExit(f"arena: {', '.join(map(repr, missing))} did not load in an arena worker "
                         "process (see its bot_plugin_failed line above): no result")
    game = get_game(cfg.game)
    n = game.num_seats
    rng = random.Random(_mix("board", cfg.seed, cfg.game, board))
    first_dealer = rng.randrange(n)
    position = board % cycle
    decks = []
    for _ in range(position + 1):
        deck = list(game.pack)
        rng.shuffle(deck)
        decks.append(deck)
    out = []
    for r, seats in enumerate(rotations(cfg.bots, n)):
        runners = [BotRunner(_WORKER.catalog) for _ in range(n)]
        state = game.new_state(cfg.options, first_dealer=first_dealer)
        times: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        failures: dict[str, dict[str, int]] = {}
        for deck in decks[:-1]:  # earlier deals of the match: auto-moves for every seat
            state.deal(deck)
            while state.to_act() >= 0:
                state.apply(game.auto_move(state.view(state.to_act())))
        done = len(state.deal_results())
        state.deal(decks[-1])
        bots = {}
        for seat in range(n):
            try:
                bots[seat] = runners[seat].bot(seats[seat], cfg.game)
            except Exception:
                bots[seat] = None
            _call(bots[seat], "on_match_start", cfg.game, seat, state.view(seat))
        step = 0
        while state.to_act() >= 0:
            seat = state.to_act()
            view = state.view(seat)
            name = seats[seat]
            reply = runners[seat].decide(name, cfg.game, seat, view, view["legal"],
                                         _mix("decision", cfg.seed, board, r, step),
                                         cfg.budget_s, enforce_budget=cfg.strict_time, in_process=True)
            times.setdefault(name, []).append(reply.elapsed_s)
            cpu.setdefault(name, []).append(reply.cpu_s)
            action = reply.action
            if action is None:
                per = failures.setdefault(name, {})
                per[reply.failure or "unknown"] = per.get(reply.failure or "unknown", 0) + 1
                action = game.auto_move(state.view(seat))  # the bot's view is its own to change
            state.apply(action, seat)
            step += 1
        result = state.deal_results()[done]
        for seat in range(n):
            _call(bots[seat], "on_deal_end", state.view(seat))
            _call(bots[seat], "on_match_end", state.view(seat))
        if cfg.out:
            path = Path(cfg.out) / f"{cfg.game}-board{board:06d}-r{r}.json"
            path.write_text(json.dumps(transcript.export(state), separators=(",", ":")))
        out.append({"seats": list(seats), "scores": deal_scores(cfg.game, result, n),
                    "times": times, "cpu": cpu, "failures": failures})
    return {"board": board, "rotations": out}


# ---- statistics --------------------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """A mean and its confidence interval; ``low`` and ``high`` are NaN when the boards give
    none (one board has no spread to measure: "n/a (one board)"). ``why``: why there is no
    value at all (a mean of NaN), when it is not that no board was played."""

    mean: float
    low: float
    high: float
    why: str = ""

    @property
    def known(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def format(self, spec: str) -> str:
        """``mean [low, high]`` with ``spec`` (``"+.2f"``), or the mean and why there is no
        interval: ``[-inf, +inf]``, which one board used to print, read as a result."""
        if self.known:
            return f"{self.mean:{spec}} [{self.low:{spec}}, {self.high:{spec}}]"
        if self.why:
            return f"n/a ({self.why})"
        why = "one board" if math.isfinite(self.mean) else "no boards"
        return f"{self.mean:{spec}} [n/a ({why})]"

    def as_json(self) -> dict[str, float | None]:
        """JSON has no NaN or infinity (``json.dumps`` writes ``NaN``, which strict readers
        refuse): a missing value is null."""
        return {k: (v if math.isfinite(v) else None) for k, v in
                (("mean", self.mean), ("low", self.low), ("high", self.high))}

    def __str__(self) -> str:
        return self.format("+.2f")


#: A run of one bot against itself (``--bots a,a``: a bot author's check that it plays every
#: deal without failing) has no other bot to compare with: its score difference and win rate
#: are not a result (its mean score, times and failures are).
NO_OTHER_BOT = Interval(math.nan, math.nan, math.nan, why="no other bot")


def mean_interval(values: Sequence[float], z: float = 1.959964) -> Interval:
    """The mean of ``values`` with its normal-approximation confidence interval; no interval
    (NaN bounds) from fewer than two values, whose spread is unknown."""
    n = len(values)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan)
    m = sum(values) / n
    if n == 1:
        return Interval(m, math.nan, math.nan)
    var = sum((v - m) ** 2 for v in values) / (n - 1)
    half = z * math.sqrt(var / n)
    return Interval(m, m - half, m + half)


def _clamp01(i: Interval) -> Interval:
    if not i.known:  # max(0.0, nan) is 0.0: a missing bound would turn into [0, 1]
        return i
    return Interval(i.mean, max(0.0, i.low), min(1.0, i.high))


def percentile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return math.nan
    k = (len(sorted_values) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


@dataclass
class BotStats:
    name: str
    score_diff: Interval
    win_rate: Interval
    mean_score: float
    decisions: int
    time_ms: dict[str, float]  # wall time per decision
    cpu_ms: dict[str, float]  # CPU time per decision (one core; independent of machine load)
    failures: dict[str, int]


@dataclass
class ArenaReport:
    config: ArenaConfig
    boards: int
    seconds: float
    bots: list[BotStats]

    def as_json(self) -> dict[str, Any]:
        return {
            "game": self.config.game, "bots": list(self.config.bots), "boards": self.boards,
            "seed": self.config.seed, "options": dict(self.config.options),
            "budget_s": self.config.budget_s, "seconds": round(self.seconds, 2),
            "results": [{
                "bot": b.name, "mean_score": b.mean_score,
                "score_diff": b.score_diff.as_json(), "win_rate": b.win_rate.as_json(),
                "decisions": b.decisions, "time_ms": b.time_ms, "cpu_ms": b.cpu_ms,
                "failures": b.failures,
            } for b in self.bots],
        }


def summarize(config: ArenaConfig, boards: Iterable[Mapping[str, Any]], seconds: float) -> ArenaReport:
    names = list(dict.fromkeys(config.bots))
    diffs: dict[str, list[float]] = {b: [] for b in names}
    wins: dict[str, list[float]] = {b: [] for b in names}
    means: dict[str, list[float]] = {b: [] for b in names}
    times: dict[str, list[float]] = {b: [] for b in names}
    cpus: dict[str, list[float]] = {b: [] for b in names}
    fails: dict[str, dict[str, int]] = {b: {} for b in names}
    count = 0
    for board in boards:
        count += 1
        held: dict[str, list[float]] = {b: [] for b in names}
        for rot in board["rotations"]:
            for seat, bot in enumerate(rot["seats"]):
                held[bot].append(rot["scores"][seat])
            for bot, ts in rot["times"].items():
                times[bot].extend(ts)
            for bot, ts in rot.get("cpu", {}).items():
                cpus[bot].extend(ts)
            for bot, per in rot["failures"].items():
                for reason, k in per.items():
                    fails[bot][reason] = fails[bot].get(reason, 0) + k
        s = {b: sum(v) / len(v) for b, v in held.items()}
        top = max(s.values())
        leaders = [b for b in names if s[b] == top]
        for b in names:
            others = [s[o] for o in names if o != b]
            if others:  # else NO_OTHER_BOT
                diffs[b].append(s[b] - sum(others) / len(others))
            wins[b].append(1.0 / len(leaders) if b in leaders else 0.0)
            means[b].append(s[b])
    stats = []
    for b in names:
        ts = sorted(times[b])
        cs = sorted(cpus[b])
        alone = len(names) == 1
        stats.append(BotStats(
            name=b, score_diff=NO_OTHER_BOT if alone else mean_interval(diffs[b]),
            win_rate=NO_OTHER_BOT if alone else _clamp01(mean_interval(wins[b])),
            mean_score=sum(means[b]) / len(means[b]) if means[b] else math.nan,
            decisions=len(ts),
            time_ms={k: round(percentile(ts, q) * 1000, 2) for k, q in
                     (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))},
            cpu_ms={k: round(percentile(cs, q) * 1000, 2) for k, q in
                    (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))},
            failures=fails[b]))
    return ArenaReport(config, count, seconds, stats)


def format_report(report: ArenaReport) -> str:
    c = report.config
    header = ["bot", "mean score", "score diff [95% CI]", "win rate [95% CI]", "decisions",
              "wall ms p50/p90/p99/max", "cpu ms p50/p90/p99/max", "failures"]
    numeric = {1, 4}  # right-aligned columns

    def pct(t: dict[str, float]) -> str:
        return f"{t['p50']:.1f}/{t['p90']:.1f}/{t['p99']:.1f}/{t['max']:.1f}"

    rows = [header]
    for b in report.bots:
        wr = b.win_rate
        rows.append([b.name, f"{b.mean_score:.2f}", str(b.score_diff),
                     wr.format(".3f"), str(b.decisions),
                     pct(b.time_ms), pct(b.cpu_ms),
                     json.dumps(b.failures, sort_keys=True) if b.failures else "-"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [f"{c.game}: {report.boards} boards (duplicate), bots {','.join(c.bots)}, seed {c.seed}, "
             f"budget {c.budget_s * 1000:.0f} ms, {report.seconds:.1f} s"]
    for row in rows:  # columns as wide as their widest cell, two spaces apart
        cells = [cell.rjust(w) if i in numeric else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


# ---- running -----------------------------------------------------------------------------

def run_arena(config: ArenaConfig) -> ArenaReport:
    if config.deals < 1:  # no board: the report's means and percentiles would be NaN
        raise ValueError(f"at least one board is needed, not deals={config.deals}")
    game = get_game(config.game)
    game.options(config.options)  # InvalidOptions early, in the parent
    rotations(config.bots, game.num_seats)
    with _recording_logs() as said:
        catalog = load_catalog(PluginSettings.resolve(extra=config.plugins))
    check_named_plugins(config.plugins, catalog)
    for bot in dict.fromkeys(config.bots):
        if not catalog.plays(bot, config.game):
            raise SystemExit(f"arena: no installed bot {bot!r} plays {config.game!r} "
                             f"(installed: {', '.join(catalog.names())})")
    cycle = match_length(config.game, config.options) if config.game in POSITIONAL_GAMES else 1
    if config.out:
        Path(config.out).mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results: list[dict[str, Any]] = []
    bar = _progress(config)
    try:
        if config.workers <= 1:
            _init_worker(config, cycle, catalog)
            for board in range(config.deals):
                results.append(play_board(board))
                bar.update(1)
        else:
            import multiprocessing
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(config.workers, mp_context=ctx, initializer=_init_worker,
                                     initargs=(config, cycle, None, frozenset(said))) as pool:
                futures = [pool.submit(play_board, b) for b in range(config.deals)]
                for fut in as_completed(futures):
                    results.append(fut.result())
                    bar.update(1)
    finally:
        bar.close()
    results.sort(key=lambda r: r["board"])
    return summarize(config, results, time.monotonic() - started)


def _progress(config: ArenaConfig):
    from tqdm import tqdm
    return tqdm(total=config.deals, desc=f"{config.game} {','.join(config.bots)}", unit="board",
                disable=not config.progress, file=sys.stderr, dynamic_ncols=True)


def _positive_int(text: str) -> int:
    """argparse ``type`` of ``--deals``: 0 or a negative count ran no board and printed a report
    of ``nan`` means, exit 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _bot_names(text: str) -> tuple[str, ...]:
    """argparse ``type`` of ``--bots``: the names, spaces around them dropped. A blank name
    among them (``a,,b``, ``a,``) is a usage error, as in ``clients.play --bots``: it was
    dropped without a word, so the names left sat in other rotations than the ones written.
    No name at all (``" , "`` too) is left to :func:`rotations`: at least one bot is needed."""
    names = tuple(name.strip() for name in text.split(","))
    if not any(names):
        return ()
    if not all(names):
        raise argparse.ArgumentTypeError(f"a blank bot name in {text!r}: give names separated by single commas")
    return names


def _milliseconds(text: str) -> float:
    """argparse ``type`` of ``--time-ms``: a finite number above 0 (-1 or nan was told to the
    bots as their budget)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of milliseconds above 0, not {text!r}")
    return value


def _unique_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose names are unique: ``{"kl_target_score": 300, "kl_target_score": 5}``
    played to 5, the first value dropped without a word (as transcripts refuse it)."""
    names = [name for name, _ in pairs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"the name {json.dumps(repeated[0])} appears twice in one object")
    return dict(pairs)


def _json_object(text: str) -> dict[str, Any]:
    """argparse ``type`` of ``--options``: a JSON object (a typo was a JSONDecodeError traceback)."""
    try:
        value = json.loads(text, object_pairs_hook=_unique_names)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f'must be a JSON object such as {{"kl_target_score": 300}}, not {text!r}')
    return value


def _output_problem(path: str, *, directory: bool, made: frozenset[Path] = frozenset()) -> str | None:
    """Why ``--out`` (a directory, made if missing) or ``--json`` (a file) cannot be written, or
    None. Checked before the first board, and without making anything: a file given as --out
    was a FileExistsError traceback, and a --json in a missing or unwritable folder one after
    every board had been played, the JSON report lost. ``made``: the folders --out will make
    (its own and its missing parents), where a --json may go."""
    target = Path(path)
    if directory and target.exists() and not target.is_dir():
        return "exists and is not a directory"
    if not directory and target.is_dir():
        return "is a directory"
    if not directory and target.exists():
        return None if os.access(target, os.W_OK) else "cannot be written (permission denied)"
    if directory and target.is_dir():  # the boards go into it: its parent need not be writable
        return None if os.access(target, os.W_OK | os.X_OK) else "is not writable (permission denied)"
    folder = target.absolute().parent
    while (directory or folder in made) and not folder.exists():  # --out makes its missing parents too
        folder = folder.parent
    if not folder.exists():
        return f"cannot be made: {folder} does not exist"
    if not folder.is_dir():
        return f"cannot be made: {folder} is not a directory"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot be made: {folder} is not writable (permission denied)"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    # flags spelt out, an unknown one named without its value, as every command of the project
    p = argparse.ArgumentParser(prog="python -m bot_plugins.arena", description=__doc__.split("\n\n")[0],
                                allow_abbrev=False)
    p.add_argument("--game", required=True, help="game id")
    p.add_argument("--bots", required=True, type=_bot_names,
                   help="comma-separated bot names, cycled around the table")
    p.add_argument("--deals", type=_positive_int, default=200,
                   help="boards, each played in every rotation (default 200)")
    p.add_argument("--workers", type=_positive_int, default=os.cpu_count() or 1,
                   help="parallel processes (default: one per core)")
    p.add_argument("--seed", type=int, default=1,
                   help="seed of the decks, the first dealers and the bots' RNGs (default 1)")
    p.add_argument("--options", type=_json_object, default={}, help="table options as a JSON object")
    p.add_argument("--time-ms", type=_milliseconds, default=200.0, help="per-decision budget told to bots")
    p.add_argument("--strict-time", action="store_true",
                   help="an answer later than the budget counts as a timeout (auto-move)")
    p.add_argument("--out", help="directory for one card-transcript/1 file per match")
    p.add_argument("--plugin", action="append", default=[], help="extra plugin module (repeatable)")
    p.add_argument("--json", help="also write the report as JSON to this file")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--fail-on-failures", action="store_true",
                   help="exit 1 when any bot failed a decision (a bot author's CI check)")
    args = parse_args(p, argv)
    quiet_logs()
    config = ArenaConfig(
        game=args.game, bots=args.bots,
        deals=args.deals, seed=args.seed, workers=args.workers, options=args.options,
        budget_s=args.time_ms / 1000.0, strict_time=args.strict_time, out=args.out,
        plugins=tuple(args.plugin), progress=not args.no_progress)
    try:  # what run_arena checks first, as a usage error (exit 2), not a traceback
        game = get_game(config.game)
        game.options(config.options)
        rotations(config.bots, game.num_seats)
        PluginSettings.resolve(extra=config.plugins)  # CARDGAMES_DISABLE_PLUGIN_AUTOLOAD=y
    except (RulesError, ValueError) as exc:  # an unknown game or option; no bots, too many
        p.error(str(exc))
    out = Path(args.out).absolute() if args.out else None
    made = frozenset((out, *out.parents)) if out else frozenset()
    for flag, path, directory in (("--out", args.out, True), ("--json", args.json, False)):
        problem = path and _output_problem(path, directory=directory, made=made)
        if problem:
            p.error(f"{flag} {path}: {problem}")
    try:
        report = run_arena(config)
    except PluginNotLoaded as exc:
        p.error(str(exc))
    print(format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report.as_json(), indent=1))
    failed = sorted(b.name for b in report.bots if b.failures)
    if args.fail_on_failures and failed:
        print(f"failed: bots with failed decisions: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
