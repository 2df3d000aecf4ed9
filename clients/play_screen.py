"""The player's screen of ``python -m clients.play`` (textual): one seat's table, its legal
actions and the match's event log. A module of its own so that a run that shows no screen (a
usage error, ``--autoplay``, ``--lobby``, ``--list``) does not import textual."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import grpc
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.containers import Horizontal
from textual.widgets import Footer, OptionList, RichLog, Static
from textual.widgets.option_list import Option

from . import render
from .cardgames_client import CardGamesError, SeatSession, ServerClock, StaleSequence, StreamState, is_my_turn
from .connection_sign import ConnectionSign
from .play import (EXIT_CONNECTION_LOST, FROM_THE_START, NOT_SENT, RECONNECT_TRIES, SENDING_LOST, board_rows,
                   fitted_board, fitted_deals, log_scored_deals, summary_now)
from engine_service.transport.generated import match_pb2


class PlayApp(ConnectionSign, App):
    """One seat's table. The view shown is always the last one the server sent (events carry
    the view after each action), so the screen never disagrees with the server."""

    TITLE = "cardgames"
    CSS = """
    #connection { display: none; height: 1; padding: 0 1; background: $error; color: $text; text-style: bold; }
    #board { height: auto; padding: 0 1; overflow: hidden; }
    #lower { height: 1fr; min-height: 5; }
    #actions { width: 40%; border: round $accent; }
    #log { width: 60%; border: round $panel; }
    #deals { height: auto; padding: 0 1; }
    #status { height: 1; padding: 0 1; color: $warning; }
    """
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        # a player's Ctrl-C ends the program, as in any terminal program (textual's own
        # binding only showed "press ctrl+q to quit")
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("R", "resign", "Resign"),
        *[Binding(str(n), f"choose({n})", show=False) for n in range(1, 10)],
    ]

    #: Rows the legal actions keep on a short terminal (their box, three options; the rest
    #: scroll): the deal results below the board give way to them (see :meth:`fit_deals`).
    MIN_ACTION_ROWS = 5

    def __init__(self, session: SeatSession, summary: Any | None = None, *,
                 reconnect_tries: int | None = RECONNECT_TRIES) -> None:
        super().__init__()
        self.session = session
        self.summary = summary
        self._resign_armed_until = 0.0  # action_resign: a first R arms, a second confirms
        self.view_msg: Any = None  # the seat's view on screen (on_mount asks for the first)
        self.reconnect_tries = reconnect_tries
        self.submitting = False
        self.result: Any | None = None
        #: The event stream's last connection change while it is down or given up (None: up).
        self.connection: StreamState | None = None
        self.board: Any = None  # the renderables on screen (for tests and screenshots)
        self.deals: Any = None
        self._shown_actions: list[str] = []
        self._shown_labels: list[str] = []  # their labels as shown (_redraw)
        self._fitted_size: Any = None
        self._status_text = ""
        #: the server's clock, which the countdown's deadline is on (HEARTBEAT server_time)
        self.server_clock = ServerClock()
        #: Scored deals already written to the event log (None: none seen yet, so the deals
        #: scored before the screen opened are left to the deal results table).
        self._deals_logged: int | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="connection")
        yield Static(id="board")
        yield Static(id="deals")
        with Horizontal(id="lower"):
            yield OptionList(id="actions")
            yield RichLog(id="log", wrap=True, markup=False)
        yield Static(id="status")
        yield Footer()

    async def on_mount(self) -> None:
        self.query_one("#actions", OptionList).border_title = "your actions"
        log = self.query_one("#log", RichLog)
        log.border_title = "events"
        # The match id, for a spectator (README): the line printed before the screen opened is
        # hidden behind it until the player quits.
        log.border_subtitle = f"match {self.session.match_id}"
        log.write(Text(f"spectators: python -m clients.watch {self.session.match_id} --target "
                       f"{self.session.client.target}", style="dim"))
        self.view_msg = await self.session.view()
        if self.view_msg.status == match_pb2.MATCH_STATUS_WAITING:
            # the other player's way in, which the host has to pass on (README, two people)
            log.write(Text(f"waiting for a player; they join with: python -m clients.play --target "
                           f"{self.session.client.target} --match {self.session.match_id} (or find it with "
                           "--lobby if the table is --listed)", style="bold yellow"))
        self.redraw()
        self.set_interval(0.5, self.tick)
        self.run_worker(self.follow(), exclusive=True, group="watch")

    # -- the event stream -------------------------------------------------------------------

    async def follow(self) -> None:
        log = self.query_one("#log", RichLog)
        snapshots = 0
        try:
            async for event in self.session.watch(after_seq=FROM_THE_START, max_failures=self.reconnect_tries,
                                                  on_connection=self.on_connection):
                snapshots += event.kind == match_pb2.EVENT_KIND_SNAPSHOT
                if event.kind == match_pb2.EVENT_KIND_HEARTBEAT:
                    self.server_clock.heard(event.details, time.time())
                if event.kind == match_pb2.EVENT_KIND_PRESENCE:
                    self.summary = await summary_now(self.session, self.summary)
                line = render.event_text(event, self.summary, self.session.seat)
                if line is not None:
                    log.write(line)
                if event.HasField("view"):
                    self._deals_logged = log_scored_deals(log, event.view, self.summary, self._deals_logged)
                # a later SNAPSHOT is the match as it stands, also behind the view shown (a
                # backup restored: the library's watch starts again from one); the stream's
                # first may arrive after a newer view (the answer to this seat's own action)
                if event.HasField("view") and (event.view.seq >= self.view_msg.seq or (
                        event.kind == match_pb2.EVENT_KIND_SNAPSHOT and snapshots > 1)):
                    self.view_msg = event.view
                    self.redraw()
                if event.kind == match_pb2.EVENT_KIND_MATCH_ENDED:
                    self.summary = await self.session.summary()
                    self.result = self.summary
                    self.redraw()
                    self.status("match over — press q to quit")
        except CardGamesError as exc:
            if self.lost:
                self.exit(return_code=EXIT_CONNECTION_LOST)  # run() says how to come back
            else:  # an error that reconnecting cannot fix (a revoked token): no longer "reconnecting"
                self.connection = None
                self.show_connection()
                self.status(f"the stream failed: {exc}")

    def show_connection(self) -> None:
        """The red line, and the actions greyed out while no move can be sent."""
        super().show_connection()
        with contextlib.suppress(NoMatches):
            actions = self.query_one("#actions", OptionList)
            actions.disabled = self.connection is not None
            actions.border_title = "your actions" if self.connection is None else "your actions: wait for the connection"
            if self.connection is None and self._shown_actions:
                actions.focus()
            if self.connection is None and self._status_text.startswith((NOT_SENT, SENDING_LOST)):
                self.status("")  # said while the connection was lost: the move can be made now
            if self.view_msg is not None:  # the connection line takes a row, or gives it back
                self.draw_board()
            self.fit_deals()

    # -- drawing ------------------------------------------------------------------------------

    def status(self, text: str) -> None:
        self._status_text = text
        with contextlib.suppress(NoMatches):
            self.query_one("#status", Static).update(text)

    def tick(self) -> None:
        if self.view_msg is not None and self.view_msg.HasField("deadline"):
            with contextlib.suppress(NoMatches):
                self.draw_board()
        if self.size != self._fitted_size:  # the terminal was resized (the app gets no Resize)
            with contextlib.suppress(NoMatches):
                if self.view_msg is not None:
                    self.draw_board()
                self.fit_deals()

    def draw_board(self) -> None:
        """The board, without its blank lines where the full one leaves the legal actions
        fewer than :attr:`MIN_ACTION_ROWS`, and cut to leave them those rows at least (late
        in a Jo-Jotte match on 80x24, a long auction and contract pushed the actions' box
        below the bottom edge, three options or none on screen)."""
        room = self.size.height - 2 - (self.connection is not None) - self.MIN_ACTION_ROWS
        self.board = fitted_board(self.view_msg, self.summary, self.server_clock.now(), self._rows, room)
        widget = self.query_one("#board", Static)
        widget.styles.max_height = max(1, room)
        widget.update(self.board)

    def _rows(self, renderable: Any) -> int:
        return board_rows(self, renderable)

    def redraw(self) -> None:
        try:
            self._redraw()
        except NoMatches:  # the screen is being torn down (quit) while an event arrives
            pass

    def _redraw(self) -> None:
        view = self.view_msg
        self.draw_board()
        self.fit_deals()
        actions = self.query_one("#actions", OptionList)
        notations = [a.notation for a in view.legal_actions] if is_my_turn(view) else []
        # the labels too: the same actions read otherwise in another view ("exchange 7♥ for the
        # turn-up J♥" in one deal, "... K♠" in the next)
        labels = [render.action_text(a, view, self.summary) for a in view.legal_actions] if notations else []
        shown = [label.plain for label in labels]
        if notations != self._shown_actions or shown != self._shown_labels:
            actions.clear_options()
            actions.add_options([Option(Text(f"{i}. " if i < 10 else "   ").append_text(label), id=a.notation)
                                 for i, (a, label) in enumerate(zip(view.legal_actions, labels), start=1)])
            self._shown_actions = notations
            self._shown_labels = shown
            if notations:
                actions.highlighted = 0
                actions.focus()

    def fit_deals(self) -> None:
        """Show the deal results only where the legal actions keep :attr:`MIN_ACTION_ROWS`
        below them: on an 80x24 terminal, late in a Georgian Joker match, board and deals
        filled the screen and pushed the actions below its bottom edge."""
        if self.board is None:
            return
        self._fitted_size = self.size
        # less the status line and the footer, and the connection line while it shows
        spare = self.size.height - 2 - (self.connection is not None) - self._rows(self.board)
        self.deals = fitted_deals(self.view_msg, self.summary, self._rows, spare - self.MIN_ACTION_ROWS)
        widget = self.query_one("#deals", Static)
        widget.update(self.deals if self.deals is not None else "")
        widget.display = self.deals is not None

    # -- choosing -----------------------------------------------------------------------------

    async def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        await self.submit(message.option.id)

    async def action_choose(self, number: int) -> None:
        if 0 < number <= len(self._shown_actions):
            await self.submit(self._shown_actions[number - 1])

    async def submit(self, notation: str | None) -> None:
        view = self.view_msg
        if notation is None or self.submitting or not is_my_turn(view):
            return
        if self.connection is not None:
            # the view may be out of date, and the move would only wait in the library's retries
            self.status(NOT_SENT)
            return
        self.submitting = True
        try:
            reply = await self.session.submit(notation, expected_seq=view.seq)
            if reply.view.seq >= self.view_msg.seq:
                self.view_msg = reply.view
            self.status("")
        except StaleSequence as exc:
            if exc.view is not None and exc.view.match_id:
                self.view_msg = exc.view
            self.status("the table moved on before your action arrived: choose again")
        except CardGamesError as exc:
            if exc.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and not exc.reason:
                # no answer: the move may have been played; the events say so once they come
                self.status(SENDING_LOST)
            else:
                self.status(f"refused: {exc.reason or exc.code.name}: {exc.message}")
        finally:
            self.submitting = False
            self.redraw()

    #: The status after a resignation the engine did not answer: it may have been taken.
    RESIGN_LOST = ("the connection was lost while sending your resignation: once it is back the table shows "
                   "whether it was taken")

    #: Seconds within which a second R confirms the resignation.
    RESIGN_CONFIRM_S = 5.0

    async def action_resign(self) -> None:
        """R asks, R again within RESIGN_CONFIRM_S resigns: one stray key press next to the
        arrow keys must not lose a match (two players: the opponent wins, JJK-10.1; Georgian
        Joker: a bot plays the seat to the end and there is no way back, GJ-12.4)."""
        if self.result is not None:
            return
        now = time.monotonic()
        if now > self._resign_armed_until:
            self._resign_armed_until = now + self.RESIGN_CONFIRM_S
            gone = ("leave the match for good (a bot plays your seat to the end)"
                    if self.summary is not None and self.summary.game == "georgian_joker"
                    else "resign (your opponent wins the match)")
            self.status(f"press R again within {self.RESIGN_CONFIRM_S:.0f} s to {gone}")
            return
        self._resign_armed_until = 0.0
        try:
            await self.session.leave(resign=True)
            said = "you resigned"
        except CardGamesError as exc:  # after the library's retries: said, not "you resigned"
            if exc.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and not exc.reason:
                said = self.RESIGN_LOST
            else:
                said = f"resignation refused: {exc.reason or exc.code.name}: {exc.message}"
        if self.result is None:  # the MATCH_ENDED event may already have said "match over"
            self.status(said)
