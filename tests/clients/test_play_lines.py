"""What clients/play.py writes from a view without a screen or an engine: the deals scored
since the last event (the screen's log, --autoplay and clients.watch --plain), pinned by
helper 3's mutants of play.py."""

from __future__ import annotations

import io

from google.protobuf import json_format
from rich.console import Console

from clients import play
from engine_service.transport.generated import match_pb2

#: Three scored Japanese Joker deals (JJK-8: the tricks taken, the points scored).
DEALS = [{"trump": "S", "taken": [10, 8], "scores": [2, 0]}, {"trump": "H", "taken": [7, 11], "scores": [0, 1]},
         {"trump": "D", "taken": [9, 9], "scores": [0, 0]}]


def _view(results):
    view = match_pb2.View(game="japanese_joker", seat=0, hand_sizes=[0, 0])
    json_format.ParseDict(results, view.scores.deal_results)
    return view


class _Log:
    """The screen's RichLog as far as log_scored_deals writes to it."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, line) -> None:
        self.lines.append(line.plain.strip())


def test_every_deal_scored_since_the_last_view_is_logged():
    """A view may arrive with two deals scored since the one before (the screen catching up
    after its stream resumed): each goes on the log, not the last one alone."""
    log = _Log()
    assert play.log_scored_deals(log, _view(DEALS), None, 1) == 3
    assert log.lines == ["deal 2 scored: you 0 (7 tricks), seat 1 1 (11 tricks)",
                         "deal 3 scored: you 0 (9 tricks), seat 1 0 (9 tricks)"], log.lines


def _printed(**kwargs) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False)
    assert play.print_scored_deals(console, _view(DEALS), None, 1, **kwargs) == 3
    return [line.strip() for line in out.getvalue().splitlines() if line.strip()]


def test_every_deal_scored_since_the_last_event_is_printed():
    """--autoplay and clients.watch --plain print each deal scored since the last event, as
    lines or as the deal results table (numbered as the match numbers them)."""
    assert _printed() == ["deal 2 scored: you 0 (7 tricks), seat 1 1 (11 tricks)",
                          "deal 3 scored: you 0 (9 tricks), seat 1 0 (9 tricks)"]
    rows = [line.split()[0] for line in _printed(table=True)[2:]]
    assert rows == ["2", "3"], rows


def test_the_deals_scored_before_the_first_view_are_not_printed_again():
    """The first view (``seen`` None: --autoplay's start, clients.watch --plain joining late)
    prints none of the deals scored before it; it only counts them."""
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False)
    assert play.print_scored_deals(console, _view(DEALS), None, None) == 3
    assert out.getvalue() == ""
