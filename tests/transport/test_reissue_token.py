"""AdminService.ReissueSeatToken over a real channel: a player who lost a seat token (or whose
token leaked) gets a new one from the operator; the old token is refused from then on, its open
stream ends with UNAUTHENTICATED / TOKEN_REVOKED, the new token plays on, and the change is
durable (a restarted engine on the same SQLite database knows only the new token). Every
refusal: admin token missing or wrong, unknown match, a seat out of range, an open seat, a bot
seat, a Georgian Joker player who left, a match over. The admin command line prints the token
or writes it to a private file."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from typing import Any, AsyncIterator

import grpc
import pytest

from engine_service.observability.metrics import Metrics
from engine_service.sessions.config import SessionConfig
from engine_service.sessions.manager import MatchManager
from engine_service.store import MemoryStore, SqliteStore
from engine_service.transport.generated import admin_pb2, card_games_pb2 as pb, match_pb2

from .harness import ADMIN_TOKEN, bearer, expect_error, run, running
from .players import create_open_match


@contextlib.asynccontextmanager
async def served(store: Any = None) -> AsyncIterator[Any]:
    from tests.sessions.test_bots import CatalogHost

    metrics = Metrics()
    mgr = MatchManager(SessionConfig(db_path="memory:", bot_pace_s=0.0), store=store or MemoryStore(),
                       metrics=metrics, create_bot_host=False,
                       bot_host=CatalogHost({"first": ("klaberjass",)}))
    await mgr.start()
    try:
        async with running(mgr, metrics=metrics) as srv:
            yield mgr, srv
    finally:
        await mgr.close()


def reissue(srv: Any, match_id: str, seat: int, token: str | None = ADMIN_TOKEN) -> Any:
    return srv.admin.ReissueSeatToken(admin_pb2.ReissueSeatTokenRequest(match_id=match_id, seat=seat),
                                      metadata=bearer(token) if token else None)


async def view_of(srv: Any, match_id: str, token: str) -> Any:
    return (await srv.games.GetView(pb.GetViewRequest(match_id=match_id), metadata=bearer(token))).view


@run
async def test_the_new_token_plays_the_old_one_is_refused_and_its_stream_ends():
    async with served() as (mgr, srv):
        match_id, tokens = await create_open_match(srv.games, "klaberjass")
        seat = (await view_of(srv, match_id, tokens[0])).to_act
        old = tokens[seat]
        stream = srv.games.WatchMatch(pb.WatchMatchRequest(match_id=match_id),
                                      metadata=bearer(old))
        first = await stream.read()
        assert first.kind == match_pb2.EVENT_KIND_SNAPSHOT

        reply = await reissue(srv, match_id, seat)
        new = reply.seat_token
        assert reply.seat == seat and new and new != old
        assert reply.match.match_id == match_id

        # the old token's stream ends: UNAUTHENTICATED, TOKEN_REVOKED
        while True:
            try:
                await stream.read()
            except grpc.aio.AioRpcError as exc:
                assert exc.code() == grpc.StatusCode.UNAUTHENTICATED
                break
        err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id=match_id),
                                                   metadata=bearer(old)))
        assert err.code == grpc.StatusCode.UNAUTHENTICATED

        # the old token can act no more; the new one can, at the same seq
        view = await view_of(srv, match_id, new)
        assert view.seat == seat and view.to_act == seat and view.seq == 0
        action = view.legal_actions[0].notation
        err = await expect_error(srv.games.SubmitAction(
            pb.SubmitActionRequest(match_id=match_id, action=action, expected_seq=view.seq), metadata=bearer(old)))
        assert err.code == grpc.StatusCode.UNAUTHENTICATED
        done = await srv.games.SubmitAction(
            pb.SubmitActionRequest(match_id=match_id, action=action, expected_seq=view.seq), metadata=bearer(new))
        assert done.seq == 1
        # the other seat's token is untouched
        assert (await view_of(srv, match_id, tokens[1 - seat])).seq == 1


@run
async def test_a_revoked_stream_carries_the_reason():
    async with served() as (mgr, srv):
        match_id, tokens = await create_open_match(srv.games, "japanese_joker")
        stream = srv.games.WatchMatch(pb.WatchMatchRequest(match_id=match_id),
                                      metadata=bearer(tokens[1]))
        await stream.read()
        await reissue(srv, match_id, 1)

        async def drain() -> None:
            while True:
                await stream.read()
        err = await expect_error(drain())
        assert (err.code, err.reason) == (grpc.StatusCode.UNAUTHENTICATED, "TOKEN_REVOKED")
        summary = (await srv.games.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
        assert not summary.seats[1].present  # absent until the player comes back with the new token


@run
async def test_the_rpc_line_names_the_seat_given_a_new_token_or_refused_one():
    """The rpc line of a ReissueSeatToken named the match only: an on-call engineer looking
    for what happened to seat 1's token found the admin's calls only through the
    seat_token_reissued line of a successful one, never the refused attempts."""
    from tests.sessions.helpers import capture_logs_with_context, until

    def reissue_lines() -> list:
        return [e for e in logs if e["event"] == "rpc" and e["method"].endswith("/ReissueSeatToken")]

    async with served() as (mgr, srv):
        match_id, tokens = await create_open_match(srv.games, "klaberjass")
        with capture_logs_with_context() as logs:
            await reissue(srv, match_id, 1)
            await expect_error(reissue(srv, match_id, 2))
            # a call's rpc line is written once its answer is sent: the client may read first
            await until(lambda: len(reissue_lines()) >= 2)
    lines = reissue_lines()
    assert [(e["code"], e["match_id"], e.get("seat")) for e in lines] == [
        ("OK", match_id, 1), ("INVALID_ARGUMENT", match_id, 2)], lines
    assert not any(t in repr(logs) for t in tokens)


@run
async def test_every_refusal_changes_nothing():
    async with served() as (mgr, srv):
        match_id, tokens = await create_open_match(srv.games, "klaberjass")
        err = await expect_error(reissue(srv, match_id, 0, token=None))
        assert err.code == grpc.StatusCode.UNAUTHENTICATED
        err = await expect_error(reissue(srv, match_id, 0, token=tokens[0]))
        assert err.code == grpc.StatusCode.PERMISSION_DENIED
        err = await expect_error(reissue(srv, "no-such-match", 0))
        assert (err.code, err.reason) == (grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND")
        for seat in (-1, 2):
            err = await expect_error(reissue(srv, match_id, seat))
            assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_SEAT"), seat
            assert err.message == "seat must be 0..1"  # the seats there are
        # an open seat (a table waiting for its second player)
        waiting = await srv.games.CreateMatch(pb.CreateMatchRequest(game="klaberjass"))
        wid = waiting.match.match_id
        await srv.games.JoinMatch(pb.JoinMatchRequest(match_id=wid, seat=0, player_name="a"))
        err = await expect_error(reissue(srv, wid, 1))
        assert (err.code, err.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "SEAT_OPEN")
        # a bot seat
        with_bot = pb.CreateMatchRequest(game="klaberjass")
        with_bot.seats.add().open.SetInParent()
        with_bot.seats.add().bot.name = "first"
        bid = (await srv.games.CreateMatch(with_bot)).match.match_id
        err = await expect_error(reissue(srv, bid, 1))
        assert (err.code, err.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "BOT_SEAT")
        # a Georgian Joker player who left
        gid, gtokens = await create_open_match(srv.games, "georgian_joker")
        await srv.games.LeaveMatch(pb.LeaveMatchRequest(match_id=gid, resign=True), metadata=bearer(gtokens[2]))
        err = await expect_error(reissue(srv, gid, 2))
        assert (err.code, err.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "SEAT_LEFT")
        # a match over
        await srv.admin.TerminateMatch(admin_pb2.TerminateMatchRequest(match_id=match_id, reason="t"),
                                       metadata=bearer(ADMIN_TOKEN))
        err = await expect_error(reissue(srv, match_id, 0))
        assert (err.code, err.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "MATCH_NOT_ACTIVE")
        # every token still works as before (views of the ended match)
        for token in tokens:
            await view_of(srv, match_id, token)
        await view_of(srv, gid, gtokens[0])


@run
async def test_the_answer_names_the_seat_whose_token_was_reissued():
    """admin.proto ReissueSeatTokenResponse.seat: the seat, for every seat (seat 0 is also the
    field's default, so the other seat is asked first)."""
    async with served() as (mgr, srv):
        match_id, _ = await create_open_match(srv.games, "klaberjass")
        for seat in (1, 0):
            reply = await reissue(srv, match_id, seat)
            assert reply.seat == seat and (await view_of(srv, match_id, reply.seat_token)).seat == seat


@run
async def test_the_new_token_survives_a_restart_and_the_old_one_does_not():
    import tempfile

    path = os.path.join(tempfile.mkdtemp(), "reissue.db")
    async with served(SqliteStore(path)) as (mgr, srv):
        match_id, tokens = await create_open_match(srv.games, "klaberjass")
        new = (await reissue(srv, match_id, 0)).seat_token
    async with served(SqliteStore(path)) as (mgr, srv):
        assert (await view_of(srv, match_id, new)).seat == 0
        err = await expect_error(srv.games.GetView(pb.GetViewRequest(match_id=match_id),
                                                   metadata=bearer(tokens[0])))
        assert err.code == grpc.StatusCode.UNAUTHENTICATED
        assert (await view_of(srv, match_id, tokens[1])).seat == 1


def test_the_admin_command_prints_or_writes_the_token(tmp_path, capsys):
    from clients import admin as cli

    async def go() -> None:
        async with served() as (mgr, srv):
            match_id, tokens = await create_open_match(srv.games, "japanese_joker")
            base = ["--target", srv.target]
            code = await cli.run(cli.build_parser().parse_args([*base, "reissue-token", match_id, "1"]),
                                 ADMIN_TOKEN)
            assert code == 0
            printed = capsys.readouterr()
            *logged, token = printed.out.strip().splitlines()  # the engine's log lines, then the token
            assert len(token) >= 32 and " " not in token
            assert token not in "\n".join(logged) + printed.err  # never logged
            assert (await view_of(srv, match_id, token)).seat == 1
            out = tmp_path / "seat.token"
            code = await cli.run(cli.build_parser().parse_args(
                [*base, "reissue-token", match_id, "1", "-o", str(out)]), ADMIN_TOKEN)
            assert code == 0
            written = out.read_text().strip()
            assert written != token and stat.S_IMODE(out.stat().st_mode) == 0o600
            printed = capsys.readouterr()
            assert written not in printed.out + printed.err
            assert (await view_of(srv, match_id, written)).seat == 1
            # an -o that cannot be written is refused before the call: the token written just
            # now still plays (the old code reissued it, then failed to write the new one)
            # a device or a pipe: the new file was renamed over it (as root, -o /dev/null
            # replaced the device with the token's file)
            (tmp_path / "pipe").mkdir()
            os.mkfifo(tmp_path / "pipe" / "fifo")
            for bad in (tmp_path / "missing" / "seat.token", tmp_path, tmp_path / "pipe" / "fifo"):
                with pytest.raises(cli.UsageError):
                    await cli.run(cli.build_parser().parse_args(
                        [*base, "reissue-token", match_id, "1", "-o", str(bad)]), ADMIN_TOKEN)
                assert (await view_of(srv, match_id, written)).seat == 1
            assert stat.S_ISFIFO((tmp_path / "pipe" / "fifo").stat().st_mode)
            assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "seat.token"]
            assert [p.name for p in (tmp_path / "pipe").iterdir()] == ["fifo"]
            try:
                await cli.run(cli.build_parser().parse_args([*base, "reissue-token", match_id, "7"]), ADMIN_TOKEN)
            except cli.CardGamesError as exc:
                assert "INVALID_ARGUMENT (BAD_SEAT)" in cli.error_line(exc, ADMIN_TOKEN)
            else:
                raise AssertionError("seat 7 of a two-player match was accepted")

    asyncio.run(go())


def test_a_full_disk_never_loses_the_new_token(tmp_path, capsys, monkeypatch):
    """``reissue-token -o FILE`` on a disk that fills up: the file is checked before the call,
    but its write after the call failed, and the new token was lost while the old one no
    longer worked (exit 2, a "usage error"). The file's space is now set aside before the call,
    so a full disk is refused with the old token still in force; and a write that fails after
    the call all the same puts the token on stdout (exit 1, the file named on stderr): the
    player can still be given their seat. No half-written file is left either way."""
    import errno

    from clients import admin as cli

    def no_space(*args: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    async def go() -> None:
        async with served() as (mgr, srv):
            match_id, tokens = await create_open_match(srv.games, "japanese_joker")
            out = tmp_path / "seat.token"
            argv = ["--target", srv.target, "reissue-token", match_id, "1", "-o", str(out)]
            with monkeypatch.context() as m:  # no room for the file: refused before the call
                m.setattr(os, "posix_fallocate", no_space)
                with pytest.raises(cli.UsageError, match=f"cannot write {out}: No space left on device"):
                    await cli.run(cli.build_parser().parse_args(argv), ADMIN_TOKEN)
            assert (await view_of(srv, match_id, tokens[1])).seat == 1  # the old token still plays
            assert list(tmp_path.iterdir()) == []
            capsys.readouterr()
            with monkeypatch.context() as m:  # the write fails after the call all the same
                m.setattr(os, "fsync", no_space)
                code = await cli.run(cli.build_parser().parse_args(argv), ADMIN_TOKEN)
            printed = capsys.readouterr()
            assert code == 1 and list(tmp_path.iterdir()) == []
            assert (f"error: cannot write {out} (No space left on device): the new seat token is on standard "
                    "output instead.") in printed.err, printed.err
            token = printed.out.strip().splitlines()[-1]  # after the engine's log lines
            assert token not in printed.err and token != tokens[1]
            assert (await view_of(srv, match_id, token)).seat == 1
            code = await cli.run(cli.build_parser().parse_args(argv), ADMIN_TOKEN)  # the disk has room again
            assert code == 0 and stat.S_IMODE(out.stat().st_mode) == 0o600 and [p.name for p in tmp_path.iterdir()] == [out.name]
            assert (await view_of(srv, match_id, out.read_text().strip())).seat == 1

    asyncio.run(go())


@run
async def test_a_call_under_way_with_the_old_token_is_refused_when_it_reaches_the_match():
    """A call authenticated just before the reissue (it then waited for the match's lock or a
    store read) must not act with the replaced token: the session layer checks the token's
    hash again where it acts (submit, leave, view, watch): UNAUTHENTICATED, TOKEN_REVOKED."""
    from engine_service.sessions.api import Unauthenticated

    async with served() as (mgr, srv):
        match_id, tokens = await create_open_match(srv.games, "klaberjass")
        seat = (await view_of(srv, match_id, tokens[0])).to_act
        principal = mgr.authenticate(match_id, tokens[seat])  # resolved before the reissue
        await reissue(srv, match_id, seat)
        view = await mgr.get_view(match_id, mgr.authenticate(match_id, tokens[1 - seat]))
        calls = {
            "submit": lambda: mgr.submit_action(match_id, principal, "pass", view.seq),
            "view": lambda: mgr.get_view(match_id, principal),
            "leave": lambda: mgr.leave_match(match_id, principal, resign=True),
            "watch": lambda: mgr.watch(match_id, principal, -1).__anext__(),
        }
        for name, call in calls.items():
            try:
                await call()
            except Unauthenticated as exc:
                assert exc.reason == "TOKEN_REVOKED", name
            else:
                raise AssertionError(f"{name} with the replaced token was accepted")
        summary = (await srv.games.GetMatch(pb.GetMatchRequest(match_id=match_id))).match
        assert summary.seq == 0 and summary.status == match_pb2.MATCH_STATUS_ACTIVE
