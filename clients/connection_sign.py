"""The "connection lost" sign of the terminal screens (:mod:`clients.play`, :mod:`clients.watch`).

While a screen's event stream is down no event comes, exactly as on a table where nobody
moves; the library's ``on_connection`` hook (:class:`~clients.cardgames_client.StreamState`)
says when it drops, comes back or is given up, and this mixin shows it: a line in the event
log at each change, and a red line at the top (the screen's ``#connection`` widget) while the
stream is down."""

from __future__ import annotations

import contextlib

from textual.css.query import NoMatches
from textual.widgets import RichLog, Static

from . import render
from .cardgames_client import GAVE_UP, RESUMED, StreamState


class ConnectionSign:
    """Mixed into a textual App with a ``#connection`` Static and a ``#log`` RichLog."""

    #: The event stream's last connection change while it is down or given up (None: up).
    connection: StreamState | None = None

    @property
    def lost(self) -> bool:
        """Whether the event stream was given up (the screen then closes)."""
        return self.connection is not None and self.connection.state == GAVE_UP

    def on_connection(self, state: StreamState) -> None:
        """The library's hook: note the change in the log and show or hide the red line."""
        line = render.connection_log_text(state, self.connection is not None)
        self.connection = None if state.state == RESUMED else state
        with contextlib.suppress(NoMatches):
            if line is not None:
                self.query_one("#log", RichLog).write(line)  # type: ignore[attr-defined]
        self.show_connection()

    def show_connection(self) -> None:
        with contextlib.suppress(NoMatches):
            banner = self.query_one("#connection", Static)  # type: ignore[attr-defined]
            banner.update(render.connection_text(self.connection))
            banner.display = self.connection is not None
