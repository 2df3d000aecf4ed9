"""Settings of the session layer (the transport builds one from CLI flags and CARDGAMES_*
environment variables; every field has an embedded default that runs a sane service)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .delay import MAX_SPECTATOR_DELAY


@dataclass(frozen=True)
class SessionConfig:
    """How the session layer runs. Times are in seconds."""

    #: Where matches are stored: a SQLite file path (created if missing), or ``"memory:"`` for
    #: an in-process store that a restart loses (or a PostgreSQL URL, whose password a
    #: printed config must not show: no repr).
    db_path: str = field(default="cardgames.sqlite3", repr=False)
    #: One engine process per database: how long :meth:`MatchManager.start` waits for another
    #: engine holding the database (a previous process still draining) before it refuses to
    #: start (engine_service.store.ownership). Longer than a whole drain (the serve command's
    #: 10 s grace, then the store's flush and close), so that a successor started while its
    #: predecessor drains for the whole grace does not give up just before the lock goes.
    db_lock_wait_s: float = 30.0

    #: Per-decision deadline for games without a ``turn_time_s`` table option (Klaberjass,
    #: Jo-Jotte) when a CreateMatch request gives 0. NOTATION.md section 5 puts those games
    #: under JJK-10, whose ``turn_time_s`` default is 30 (JJK-11). 0 disables the deadline.
    #: Games with the option (Georgian Joker, Japanese Joker) always use the option's value.
    default_turn_time_s: float = 30.0
    #: Disconnection grace for games without a ``reconnect_grace_s`` option (JJK-11 default).
    reconnect_grace_s: float = 60.0
    #: Multiplies every turn deadline and grace period when timers are armed (the values
    #: reported to clients stay the table's). 1.0 in production; tests and demos shrink time.
    time_scale: float = 1.0
    #: While a player's reconnect grace window runs, the engine records this often that it is
    #: still serving (Store.touch_absences): after a crash, a restart counts the window's time
    #: up to the last record and not the downtime, so the player gets back at most this much
    #: more than the remainder (docs/operations.md, Restarts). Real seconds (not scaled).
    absence_heartbeat_s: float = 5.0

    #: Heartbeat period of an idle watch stream.
    heartbeat_interval_s: float = 5.0
    #: A watcher more than this many actions behind starts from a snapshot instead of a replay.
    snapshot_threshold: int = 100
    #: Events buffered per watcher; a watcher that falls further behind has its stream closed
    #: (UNAVAILABLE, reason WATCH_OVERFLOW) and resumes with ``after_seq``.
    watcher_queue_size: int = 256

    #: Unfinished matches (waiting + active) this process holds; more: RESOURCE_EXHAUSTED.
    max_matches: int = 10_000
    #: Matches still waiting for players (open seats not all taken): protects the lobby.
    max_waiting_matches: int = 1_000
    #: Unfinished matches whose every seat is a bot's: they play themselves on the server's
    #: CPU with nobody at the table, so that an anonymous caller cannot fill the server with
    #: them up to ``max_matches``. The admin is never refused one (tournaments, tests); its
    #: matches count all the same.
    max_bot_matches: int = 100
    #: Deals one match may play (thrown-in deals included): a match is ended (outcome
    #: ``terminated``, reason ``deal_limit``) by the action that scores the last of them, the next
    #: deal not dealt (MatchWriter.past_deal_limit), the end written with that action (a restart
    #: with a higher limit does not let it go on). The rules let a match
    #: run for ever (Klaberjass and Jo-Jotte deals thrown in again and again, open-ended
    #: target scores), and a match's memory, summary and ``RevealDeals`` answer grow with
    #: every deal; at 1,000 deals a ``RevealDeals`` answer is ~2.3 MB, within the 4 MiB send
    #: limit. A match of default options needs a few dozen.
    max_match_deals: int = 1_000
    #: Open spectator and admin watch streams per match. A seat's own streams do not count
    #: (they are its presence, JJK-10.2, GJ-12.3): strangers filling the match's slots must
    #: not keep its players out and make them forfeit.
    max_watchers_per_match: int = 64
    #: Open watch streams per seat (a player's devices and tabs): bounds what one token holds;
    #: a stream past it closes the seat's oldest (a reconnect always gets through).
    max_streams_per_seat: int = 8
    #: Open spectator and admin watch streams in the whole process (seats excluded, as above).
    max_watchers: int = 10_000

    #: Wall-clock budget of one bot decision (the bot host kills a decision past it).
    bot_deadline_s: float = 2.0
    #: Every bot move is played this long after its decision came up (or when the bot answers,
    #: if later), forced or not: a move's timing must not show that it was the only legal one
    #: (GJ-11.8, JJK-9.7). At or above ``bot_deadline_s`` every bot move takes the same time;
    #: below it, a bot that thinks longer than the pace may still be told apart. 0: no pacing.
    bot_pace_s: float = 2.0
    #: Worker processes of the bot host when the manager creates it.
    bot_workers: int = 2
    #: How long one bot plugin's import, and then its ``cardgames_bots`` hook, may take in
    #: the service and in its bot workers (each process applies it to its own load) before
    #: the plugin is left out (``bot_plugin_failed``, "timed out"): a plugin whose import
    #: hangs must not keep the service from starting. Raise it for a plugin that loads a large
    #: model at import. ``engine_service.plugins.manager.LOAD_TIMEOUT_S`` is the same default.
    bot_plugin_load_timeout_s: float = 30.0
    #: The bot that plays an absent or departed seat of a four-player game (GJ-12.4):
    #: ``""`` is the rulebook's default, the auto-move policy GJ-12.2; a bot name (e.g.
    #: ``"random"``) uses that bot plugin. A CreateMatch request may name another.
    takeover_bot: str = ""
    #: Spectators of every match are kept at least this many actions behind while it is
    #: played (a tournament's floor, :mod:`.delay`); a CreateMatch request may ask for more.
    min_spectator_delay_actions: int = 0

    #: A match still waiting for players this long after its creation is ended (outcome
    #: ``abandoned``, reason ``waiting_timeout``) so that the lobby does not fill up with
    #: tables that will never start. 0: never.
    waiting_timeout_s: float = 3600.0
    #: How long a finished match stays in memory; afterwards it is read back from the store
    #: on demand (a GetMatch, a watcher, or one of its seat tokens: they keep working).
    finished_retention_s: float = 3600.0
    #: Longest accepted player name / match name (characters).
    max_name_length: int = 64

    #: Retention: a match that ended more than this many days ago is deleted from the store
    #: with everything stored for it (actions, decks, seats); afterwards every call about it
    #: answers MatchNotFound (docs/operations.md, Retention). 0: ended matches are kept forever.
    keep_finished_days: float = 0.0
    #: How often the engine deletes the matches past ``keep_finished_days`` (the first pass
    #: runs at start-up).
    prune_interval_s: float = 600.0
    #: Matches deleted per store transaction: short transactions, so that an action never
    #: waits long behind one (the SQLite store has one writer; at most the store's
    #: MAX_PRUNE_BATCH, 500, are deleted at once). 10 matches of ~35 KB take ~10 ms on SQLite
    #: (bench/prune_batches.py).
    prune_batch: int = 10

    def __post_init__(self) -> None:
        problems = []
        for name in ("default_turn_time_s", "reconnect_grace_s", "finished_retention_s", "waiting_timeout_s",
                     "bot_pace_s"):
            if not getattr(self, name) >= 0:  # NaN too, which no comparison holds
                problems.append(f"{name} must be >= 0")
        for name in ("time_scale", "heartbeat_interval_s", "bot_deadline_s", "absence_heartbeat_s",
                     "bot_plugin_load_timeout_s"):
            if not getattr(self, name) > 0:
                problems.append(f"{name} must be > 0")
        for name in ("snapshot_threshold", "watcher_queue_size", "max_matches",
                     "max_waiting_matches", "max_bot_matches", "max_match_deals", "max_watchers_per_match", "max_streams_per_seat",
                     "max_watchers", "bot_workers", "max_name_length", "prune_batch"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1")
        if not 0 <= self.min_spectator_delay_actions <= MAX_SPECTATOR_DELAY:
            problems.append(f"min_spectator_delay_actions must be 0..{MAX_SPECTATOR_DELAY}")
        if not (math.isfinite(self.keep_finished_days) and self.keep_finished_days >= 0):
            problems.append("keep_finished_days must be a finite number >= 0 (0: keep forever)")
        if not (math.isfinite(self.prune_interval_s) and self.prune_interval_s > 0):
            problems.append("prune_interval_s must be > 0")
        if problems:
            raise ValueError("invalid session settings: " + "; ".join(problems))
