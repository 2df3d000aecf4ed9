"""An independent model of the session-level operational rules, for differential tests of the
engine's session layer (``tests/sessions/test_operational_oracle.py``).

Written from the rulebooks and NOTATION.md alone -- JJK-10.1 .. 10.5 (Japanese Joker),
GJ-12.1 .. 12.5 (Georgian Joker), NOTATION.md section 5 (Klaberjass and Jo-Jotte follow JJK-10
with the auto-move policy listed there) -- and the documented choices of docs/api.md and
docs/games/*.md where the rulebooks leave a question open; none of the session layer's code
was read to write it. The rules core (``engine_service.rules``) is used only for what the
rules say -- the seat to act, the legal actions, applying an action, dealing the decks, the
rules' own result -- never for its auto-move (``Game.auto_move``): the policies below are
transcribed from the rulebooks.

What the model decides, with the rule each line comes from:

* who decides when, and by which hand: the player, the turn timer's auto-move
  (``by="auto"``, ``reason="timeout"``), or in Georgian Joker the takeover of an absent
  (``"takeover"``) or departed (``"abandoned"``) player's seat;
* the current decision's deadline (``None``: no timer runs);
* each seat's presence, grace window, takeover and departure;
* when the match ends and how: ``completed`` (the rules' winners), ``resigned``, ``forfeit``,
  ``abandoned`` (JJK-10.2's equal windows).

Time is a plain number of seconds (the harness drives a virtual clock); events due at the
same instant are processed together, before any event the caller sends at that instant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from engine_service.rules import CHANCE, TERMINAL, get_game

TWO_PLAYER_GAMES = ("klaberjass", "jojotte", "japanese_joker")
SUITS = "SHDC"  # JJK-10.4, GJ-12.2, NOTATION 5: ties are broken in this order
JOKERS = ("X1", "X2")  # JJK-10.4, GJ-12.2: X1 before X2
JOKER_RANKS_LOW_FIRST = "6789TJQKA"  # GJ-1.2, JJK-1.2 (high to low A K Q J T 9 8 7 6)
TRUMP_TRICK_LOW_FIRST = "78QKTA9J"  # KL-1.2, JJ-1.2 (high to low J 9 A T K Q 8 7)
PLAIN_TRICK_LOW_FIRST = "789JQKTA"  # KL-1.3, JJ-1.3 (high to low A T K Q J 9 8 7)


# ---- the auto-move policies, from a seat's view (its hand, its legal actions, the table) ------

def _split(action: str) -> list[str]:
    return action.split(":")


def _leading(view: dict[str, Any], seats: int) -> bool:
    """The seat to act leads the trick: no card of the trick in progress is on the table."""
    trick = view.get("trick") or []
    return len(trick) == 0 or len(trick) == seats


def joker_trump_choice(hand: Iterable[str]) -> str:
    """JJK-10.4 / GJ-12.2 trump choice: the suit with the most normal cards among the chooser's
    three cards; if tied, the tied suit holding the highest-ranked card; if still tied, the
    first of S, H, D, C. Never NT."""
    normal = [c for c in hand if c not in JOKERS]
    count = {s: sum(1 for c in normal if c[1] == s) for s in SUITS}
    most = max(count.values())
    tied = [s for s in SUITS if count[s] == most]
    if len(tied) > 1:
        def best(s: str) -> int:
            return max((JOKER_RANKS_LOW_FIRST.index(c[0]) for c in normal if c[1] == s), default=-1)
        top = max(best(s) for s in tied)
        tied = [s for s in tied if best(s) == top]
    return tied[0]


def _lowest_normal_joker_game(plays: list[str]) -> str:
    """'the legal normal card of lowest rank, ties broken by suit order S, H, D, C'."""
    return min(plays, key=lambda a: (JOKER_RANKS_LOW_FIRST.index(_split(a)[1][0]), SUITS.index(_split(a)[1][1])))


def auto_move_japanese_joker(view: dict[str, Any]) -> str:
    """JJK-10.4."""
    legal = list(view["legal"])
    if any(a.startswith("trump:") for a in legal):
        return "trump:" + joker_trump_choice(view["hand"])
    normal = [a for a in legal if _split(a)[1] not in JOKERS]
    if normal:
        return _lowest_normal_joker_game(normal)
    joker = min({_split(a)[1] for a in legal})  # X1 before X2
    return f"play:{joker}:S" if _leading(view, 2) else f"play:{joker}"  # leading: named suit S


def auto_move_georgian_joker(view: dict[str, Any]) -> str:
    """GJ-12.2."""
    legal = list(view["legal"])
    if any(a.startswith("trump:") for a in legal):
        return "trump:" + joker_trump_choice(view["hand"])
    bids = [int(a.split(":")[1]) for a in legal if a.startswith("bid:")]
    if bids:
        return f"bid:{min(bids)}"  # the smallest legal bid (0, or 1 when 0 is forbidden)
    normal = [a for a in legal if _split(a)[1] not in JOKERS]
    if normal:
        return _lowest_normal_joker_game(normal)
    joker = min({_split(a)[1] for a in legal})  # hand of jokers only: X1 before X2, mode low
    return f"play:{joker}:low:S" if _leading(view, 4) else f"play:{joker}:low"


def _trick_rank_key(card: str, trump: str | None) -> tuple[int, int, int]:
    """NOTATION 5: the lowest trick rank -- the game's order for the trump suit or a plain
    suit, a trump higher than every plain card -- then suit order S H D C."""
    rank, suit = card[0], card[1]
    if trump is not None and suit == trump:
        return (1, TRUMP_TRICK_LOW_FIRST.index(rank), SUITS.index(suit))
    return (0, PLAIN_TRICK_LOW_FIRST.index(rank), SUITS.index(suit))


def auto_move_32_card(view: dict[str, Any], trump: str | None) -> str:
    """NOTATION 5 for Klaberjass and Jo-Jotte: auction ``pass``; exchange windows ``keep`` /
    ``no_exchange``; nullo window and answer to nullo ``pass``; play: the legal card of lowest
    trick rank, never an announcement (``play:KS:jo``, ``play:KS:bella``) and never an in-play
    ``exchange``. Decisions NOTATION 5 does not name (options off by default) follow the
    engine's documented choices (docs/games/klaberjass.md, jojotte.md): ``declare`` at an
    optional meld step, ``accept`` of a schmeiss, the first legal ``name:`` when no pass is
    allowed."""
    legal = list(view["legal"])
    plays = [a for a in legal if a.startswith("play:") and len(_split(a)) == 2]
    if plays:
        return min(plays, key=lambda a: _trick_rank_key(_split(a)[1], trump))
    for fixed in ("pass", "keep", "no_exchange", "declare", "accept"):
        if fixed in legal:
            return fixed
    names = [a for a in legal if a.startswith("name:")]
    if names:
        return names[0]
    raise AssertionError(f"NOTATION 5 names no auto-move for {legal}")


def play_trump(game_id: str, view: dict[str, Any]) -> str | None:
    """The trump suit of the trick play (None: no trump), read from the public table."""
    table = view.get("table") or {}
    if game_id == "klaberjass":
        trump = table.get("trump")
    else:  # jojotte: the strain played (a nullo is played at no trump, JJ-4.5)
        contract = table.get("contract") or {}
        trump = contract.get("play_strain") or contract.get("strain")
    return trump if trump in tuple(SUITS) else None


def auto_move(game_id: str, view: dict[str, Any]) -> str:
    if game_id == "japanese_joker":
        return auto_move_japanese_joker(view)
    if game_id == "georgian_joker":
        return auto_move_georgian_joker(view)
    return auto_move_32_card(view, play_trump(game_id, view))


# ---- the operational model ----------------------------------------------------------------

@dataclass
class Move:
    """One recorded action: who made it and why (JJK-10.5, GJ-12.5: a move made by the
    auto-move policy or a bot is recorded as the ordinary action it made). ``reasons``: the
    reasons the rules allow for it (two when the rulebook leaves the order of two events of one
    instant open)."""

    seat: int
    action: str
    by: str  # "player" | "auto"
    reasons: frozenset[str] = frozenset({""})
    at: float = 0.0


@dataclass
class SeatModel:
    connected: bool = True
    grace_end: float | None = None  # the end of the running reconnect grace window
    taken_over: bool = False  # GJ-12.4: a bot plays the seat of a player absent past the grace
    left: bool = False  # GJ-12.4: the player left the match for good


@dataclass
class OperationalOracle:
    """One match under the operational rules. Construct with the match's rules setup (options,
    first dealer, the decks in the order they are dealt) and its two times, at the instant
    the match starts with every seat connected; then feed it the events the harness applies
    to the engine: :meth:`act`, :meth:`disconnect`, :meth:`reconnect`, :meth:`leave` and
    :meth:`advance` (the clock)."""

    game_id: str
    options: dict[str, Any]
    first_dealer: int
    decks: Sequence[Sequence[str]]
    turn_time_s: float
    reconnect_grace_s: float
    now: float = 0.0
    #: whether the players are connected when the match starts (a seat without a watch stream
    #: counts as disconnected: docs/api.md; its grace window starts with the match)
    connected: bool = True
    moves: list[Move] = field(default_factory=list)

    def __post_init__(self) -> None:
        game = get_game(self.game_id)
        self.num_seats = game.num_seats
        self.two_player = self.game_id in TWO_PLAYER_GAMES
        self.state = game.new_state(self.options or None, self.first_dealer)
        self._deck_iter = iter(self.decks)
        self.seats = [SeatModel(connected=self.connected,
                                grace_end=None if self.connected else self.now + self.reconnect_grace_s)
                      for _ in range(self.num_seats)]
        self.over = False
        self.result: dict[str, Any] | None = None
        self.deadline: float | None = None
        self._deal_if_due()
        self._decision_came_up()

    # ---- what the harness compares ------------------------------------------------------

    def to_act(self) -> int | None:
        if self.over:
            return None
        who = self.state.to_act()
        return who if who >= 0 else None

    def bot_driven(self, seat: int) -> bool:
        """GJ-12.4: the seat's decisions are the bot's (taken over, or left)."""
        s = self.seats[seat]
        return not self.two_player and (s.taken_over or s.left)

    def legal(self) -> list[str]:
        return list(self.state.legal_actions()) if not self.over else []

    def totals(self) -> Any:
        return self.state.result()["totals"]

    def snapshot(self) -> dict[str, Any]:
        return {
            "over": self.over,
            "to_act": self.to_act(),
            "deadline": self.deadline,
            "present": [s.connected for s in self.seats],
            "replaced_by_bot": [self.bot_driven(i) for i in range(self.num_seats)],
            "left": [s.left for s in self.seats],
            "result": dict(self.result) if self.result is not None else None,
        }

    # ---- events --------------------------------------------------------------------------

    def act(self, seat: int, action: str) -> None:
        """The player of ``seat`` makes a decision that is theirs (JJK-10.2: the connected
        player may still make a decision that is theirs while the other is away)."""
        assert not self.over and self.to_act() == seat and not self.bot_driven(seat)
        assert self.seats[seat].connected, "the model only lets a connected player act"
        self._apply(seat, action, "player", frozenset({""}))

    def disconnect(self, seat: int) -> None:
        s = self.seats[seat]
        assert s.connected and not s.left
        s.connected = False
        if self.over:
            return
        s.grace_end = self.now + self.reconnect_grace_s  # JJK-10.2, GJ-12.4: the seat's own window
        if self.two_player:
            # JJK-10.2 (D): during the wait no turn timer runs (docs/api.md: for either player)
            self.deadline = None
        # GJ-12.3: the absent player's turns are handled by the timer (GJ-12.1): it runs on

    def reconnect(self, seat: int) -> None:
        s = self.seats[seat]
        assert not s.connected and not s.left
        s.connected = True
        if self.over:
            return
        s.grace_end = None
        if self.two_player:
            # JJK-10.2 (D): "on reconnection that decision gets a fresh turn_time_s"; with the
            # other player still away no timer runs (docs/api.md: "every decision gets a fresh
            # one once both are back")
            self.deadline = self.now + self.turn_time_s if self._all_connected() else None
        elif s.taken_over:
            s.taken_over = False  # GJ-12.4: the player takes the seat back from the bot at once
        # GJ: the running decision keeps its deadline (GJ-12.3: the player resumes control)

    def leave(self, seat: int, resign: bool) -> None:
        """LeaveMatch. Two players: leaving counts as resigning (JJK-10.1), whatever ``resign``
        says. Georgian Joker: the bot keeps the seat for the rest of the match (GJ-12.4)."""
        assert not self.over
        s = self.seats[seat]
        if self.two_player:
            # JJK-10.1: the match ends immediately, the opponent wins; the unfinished deal
            # scores nothing (the totals are those of the scored deals)
            self._end({"outcome": "resigned", "resigned": seat, "winners": [1 - seat]})
            return
        s.left, s.connected, s.grace_end, s.taken_over = True, False, None, False
        if self.to_act() == seat:
            self._bot_moves()

    def restart(self, downtime: float) -> None:
        """The server stops (a drain) now and serves again ``downtime`` seconds later. The
        rulebooks have no restarts; this is the engine's documented reading (docs/api.md,
        "Restarts"; docs/operations.md): every player counts as disconnected from the restart
        on; a player connected at the stop gets a whole grace window from the restart, one
        already away only the rest of theirs (the downtime does not count); a Georgian Joker
        seat the bot played stays the bot's, and a departed player's too; every decision's
        deadline starts over at the full turn time (none in a two-player game until both are
        back, JJK-10.2)."""
        assert not self.over
        served = self.now + downtime
        for s in self.seats:
            if s.left or s.taken_over:
                s.connected = False
                continue
            if s.connected:
                s.grace_end = served + self.reconnect_grace_s
            elif s.grace_end is not None:
                s.grace_end = served + (s.grace_end - self.now)
            s.connected = False
        self.now = served
        self.deadline = None
        self._decision_came_up()

    def advance(self, to: float) -> None:
        """Let the clock run to ``to``: every timer due meanwhile fires in time order; several
        due at one instant are handled together."""
        assert to >= self.now
        while not self.over:
            due = self._next_due()
            if due is None or due > to:
                break
            self.now = due
            self._fire(due)
        self.now = to

    # ---- internals -----------------------------------------------------------------------

    def _all_connected(self) -> bool:
        return all(s.connected for s in self.seats)

    def _next_due(self) -> float | None:
        times = [s.grace_end for s in self.seats if s.grace_end is not None]
        if self.deadline is not None:
            times.append(self.deadline)
        return min(times) if times else None

    def _fire(self, t: float) -> None:
        expired = [i for i, s in enumerate(self.seats) if s.grace_end is not None and s.grace_end == t]
        if self.two_player:
            if expired:
                assert self.deadline is None, "no turn timer runs while a player is away (JJK-10.2)"
                for i in expired:
                    self.seats[i].grace_end = None
                if len(expired) == 2:
                    # JJK-10.2 (D): both windows expire at the same server instant
                    self._end({"outcome": "abandoned", "winners": [], "absent": [0, 1]})
                else:
                    # JJK-10.2: not back in time: the match is lost for that player
                    (lost,) = expired
                    self._end({"outcome": "forfeit", "forfeited": lost, "winners": [1 - lost]})
                return
            if self.deadline == t:
                self._timeout()
            return
        # Georgian Joker
        timed_out = self.deadline == t
        for i in expired:  # GJ-12.4: past the grace, a bot takes the seat
            self.seats[i].grace_end = None
            self.seats[i].taken_over = True
        who = self.to_act()
        if who is not None and self.bot_driven(who):
            # the bot moves at once; when the seat's own timer ran out at this same instant the
            # rulebook does not order the two events: the move is the timer's or the bot's
            self._bot_moves(also_timeout=timed_out)
        elif timed_out:
            self._timeout()

    def _timeout(self) -> None:
        """JJK-10.3, GJ-12.1: exactly one move for the player by the auto-move policy; the
        next decision gets a fresh timer; timeouts never end the match by themselves."""
        seat = self.to_act()
        assert seat is not None
        action = auto_move(self.game_id, self.state.view(seat))
        self._apply(seat, action, "auto", frozenset({"timeout"}))

    def _bot_moves(self, also_timeout: bool = False) -> None:
        """GJ-12.4: the seat's decisions are made at once by the table's bot (default: the
        auto-move policy GJ-12.2), for an absent player (``takeover``) or one who left
        (``abandoned``), as long as the decision is such a seat's."""
        first = True
        while not self.over:
            seat = self.to_act()
            if seat is None or not self.bot_driven(seat):
                return
            reason = "abandoned" if self.seats[seat].left else "takeover"
            reasons = {reason} | ({"timeout"} if first and also_timeout else set())
            action = auto_move(self.game_id, self.state.view(seat))
            self._apply(seat, action, "auto", frozenset(reasons), run_bots=False)
            first = False

    def _apply(self, seat: int, action: str, by: str, reasons: frozenset[str], run_bots: bool = True) -> None:
        self.state.apply(action, seat)
        self.moves.append(Move(seat, action, by, reasons, self.now))
        self._deal_if_due()
        if self.state.to_act() == TERMINAL:
            # the match ends by the rules (JJK-8.2, GJ-9.1 ...): the rules' winners; Georgian
            # Joker lists the seats whose players left (GJ-12.4: the result records them)
            result: dict[str, Any] = {"outcome": "completed", "winners": list(self.state.result()["winners"])}
            if not self.two_player:
                result["abandoned"] = [i for i, s in enumerate(self.seats) if s.left]
            self._end(result)
            return
        self._decision_came_up(run_bots=run_bots)

    def _deal_if_due(self) -> None:
        while self.state.to_act() == CHANCE:
            self.state.deal(list(next(self._deck_iter)))

    def _decision_came_up(self, run_bots: bool = True) -> None:
        """A new decision: its fresh timer (JJK-10.3, GJ-12.1), none while a two-player
        table waits for an absent player (JJK-10.2) or while a bot plays the seat (GJ-12.4:
        at once, docs/api.md: no deadline)."""
        seat = self.to_act()
        if seat is None:
            self.deadline = None
            return
        if self.two_player:
            self.deadline = self.now + self.turn_time_s if self._all_connected() else None
            return
        if self.bot_driven(seat):
            self.deadline = None
            if run_bots:
                self._bot_moves()
            return
        self.deadline = self.now + self.turn_time_s

    def _end(self, result: dict[str, Any]) -> None:
        self.over = True
        self.deadline = None
        for s in self.seats:
            s.grace_end = None
        self.result = {**result, "totals": self.totals()}
