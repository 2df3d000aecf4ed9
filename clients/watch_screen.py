"""The spectator's screen of ``python -m clients.watch`` (textual): the public board and the
event log. A module of its own so that a run that shows no screen (a usage error, ``--plain``)
does not import textual."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.widgets import Footer, RichLog, Static

from . import render
from .connection_sign import ConnectionSign
from .cardgames_client import CardGamesError, ServerClock, Spectator, StreamState
from .play import board_rows, fitted_board, fitted_deals, log_scored_deals, summary_now
from .watch import EXIT_CONNECTION_LOST, RECONNECT_TRIES
from engine_service.transport.generated import match_pb2


class WatchApp(ConnectionSign, App):
    """The spectator's screen: the public board and the event log."""

    TITLE = "cardgames spectator"
    CSS = """
    #connection { display: none; height: 1; padding: 0 1; background: $error; color: $text; text-style: bold; }
    #board { height: auto; padding: 0 1; }
    #deals { height: auto; padding: 0 1; }
    #log { height: 1fr; border: round $panel; }
    """
    BINDINGS = [Binding("q", "quit", "Quit"),
                # Ctrl-C ends the program (textual's own binding only showed "press ctrl+q")
                Binding("ctrl+c", "quit", "Quit", show=False, priority=True)]

    #: Rows the event log keeps (its box and three events): the deal results give way to it.
    #: On 80x24, six scored Georgian Joker deals took every row below the board, the log got
    #: its border only and the screen scrolled.
    MIN_LOG_ROWS = 5

    def __init__(self, spectator: Spectator, after_seq: int | None = None, *, summary: Any | None = None,
                 reconnect_tries: int | None = RECONNECT_TRIES) -> None:
        super().__init__()
        self.spectator = spectator
        self.after_seq = after_seq
        self.reconnect_tries = reconnect_tries
        #: The event stream's last connection change while it is down or given up (None: up).
        self.connection: StreamState | None = None
        self.view_msg: Any | None = None
        #: the server's clock, which the countdown's deadline is on (HEARTBEAT server_time)
        self.server_clock = ServerClock()
        self.summary = summary
        self.board: Any = None  # the renderables on screen (for tests and screenshots)
        self.deals: Any = None
        self._deals_logged: int | None = None  # scored deals written to the log (log_scored_deals)

    def compose(self) -> ComposeResult:
        yield Static(id="connection")
        yield Static(id="board")
        yield Static(id="deals")
        yield RichLog(id="log", wrap=True, markup=False)
        yield Footer()

    async def on_mount(self) -> None:
        self.query_one("#log", RichLog).border_title = "events"
        if self.summary is None:
            self.summary = await self.spectator.summary()
        self.set_interval(0.5, self.redraw)
        self.run_worker(self.follow(), exclusive=True)

    async def follow(self) -> None:
        log = self.query_one("#log", RichLog)
        try:
            async for event in self.spectator.watch(after_seq=self.after_seq, max_failures=self.reconnect_tries,
                                                    on_connection=self.on_connection):
                if event.kind == match_pb2.EVENT_KIND_HEARTBEAT:
                    self.server_clock.heard(event.details, time.time())
                if event.kind == match_pb2.EVENT_KIND_PRESENCE:
                    self.summary = await summary_now(self.spectator, self.summary)
                line = render.event_text(event, self.summary, None)
                if line is not None:
                    log.write(line)
                if event.HasField("view"):
                    self.view_msg = event.view
                    self._deals_logged = log_scored_deals(log, event.view, self.summary, self._deals_logged)
                if event.kind == match_pb2.EVENT_KIND_MATCH_ENDED:
                    self.summary = await self.spectator.summary()
                self.redraw()
        except CardGamesError as exc:
            if self.lost:
                self.exit(return_code=EXIT_CONNECTION_LOST)  # run() says how to watch again
            else:  # an error that reconnecting cannot fix: no longer "reconnecting"
                self.connection = None
                self.show_connection()
                log.write(f"the stream failed: {exc}")

    def redraw(self) -> None:
        if self.view_msg is None:
            return
        # less the footer and the red line: the board, then as many recent deals as leave the
        # log its rows (a full Jo-Jotte board alone took them on 80x24)
        spare = self.size.height - 1 - (self.connection is not None) - self.MIN_LOG_ROWS
        self.board = fitted_board(self.view_msg, self.summary, self.server_clock.now(), lambda r: board_rows(self, r), spare)
        room = spare - board_rows(self, self.board)
        self.deals = fitted_deals(self.view_msg, self.summary, lambda r: board_rows(self, r), room)
        with contextlib.suppress(NoMatches):  # the screen may be closing
            self.query_one("#board", Static).update(self.board)
            deals = self.query_one("#deals", Static)
            deals.update(self.deals if self.deals is not None else "")
            deals.display = self.deals is not None
