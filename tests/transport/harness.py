"""Helpers for transport tests: an in-process grpc.aio server on port 0 with real channels."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable

import grpc
from google.rpc import error_details_pb2, status_pb2

from engine_service.observability.metrics import Metrics
from engine_service.transport.generated import (admin_pb2_grpc, card_games_pb2_grpc, match_pb2)
from engine_service.transport.ratelimit import RateLimits
from engine_service.transport.server import GrpcServer, ServerLimits

ADMIN_TOKEN = "admin-secret-for-tests"

#: The test channels accept large trailers, as docs/api.md tells every client to: an ABORTED
#: Georgian Joker error carries the seat's View (8-9 KB late in a deal), past gRPC C-core's
#: default 8 KiB, which fails the call client-side with another status than the server's.
CHANNEL_OPTIONS = [("grpc.max_metadata_size", 4 * 1024 * 1024),
                   ("grpc.absolute_max_metadata_size", 4 * 1024 * 1024)]


@dataclass
class Running:
    server: GrpcServer
    channel: grpc.aio.Channel
    games: card_games_pb2_grpc.CardGamesServiceStub
    admin: admin_pb2_grpc.AdminServiceStub
    metrics: Metrics

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def channel_for(self) -> grpc.aio.Channel:
        """A channel with its own connection (grpc shares subchannels between channels to the
        same target unless told not to)."""
        return grpc.aio.insecure_channel(self.target, options=[("grpc.use_local_subchannel_pool", 1),
                                                                 *CHANNEL_OPTIONS])


@contextlib.asynccontextmanager
async def running(service: Any, *, admin_token: str | None = ADMIN_TOKEN,
                  limits: ServerLimits = ServerLimits(), drain: bool = True,
                  metrics: Metrics | None = None,
                  rate_limits: RateLimits = RateLimits()) -> AsyncIterator[Running]:
    metrics = metrics if metrics is not None else Metrics()
    server = GrpcServer(service, metrics=metrics, admin_token=admin_token, host="127.0.0.1",
                        port=0, limits=limits, rate_limits=rate_limits)
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}", options=CHANNEL_OPTIONS)
    try:
        yield Running(server, channel, card_games_pb2_grpc.CardGamesServiceStub(channel),
                      admin_pb2_grpc.AdminServiceStub(channel), metrics)
    finally:
        await channel.close()
        if drain:
            await server.drain(grace_s=1.0)


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


@dataclass
class CallError:
    code: grpc.StatusCode
    message: str
    reason: str
    domain: str
    metadata: dict[str, str]
    view: match_pb2.View | None
    request_id: str = ""  # the status's google.rpc.RequestInfo


def error_of(exc: grpc.aio.AioRpcError) -> CallError:
    """The code, ErrorInfo and (ABORTED) View detail of a failed call."""
    md = exc.trailing_metadata() or ()
    raw = next((v for k, v in md if k == "grpc-status-details-bin"), None)
    reason = domain = ""
    metadata: dict[str, str] = {}
    view = None
    request_id = ""
    if raw is not None:
        status = status_pb2.Status.FromString(raw)
        assert status.code == exc.code().value[0]
        for detail in status.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason, domain, metadata = info.reason, info.domain, dict(info.metadata)
            elif detail.Is(match_pb2.View.DESCRIPTOR):
                view = match_pb2.View()
                detail.Unpack(view)
            elif detail.Is(error_details_pb2.RequestInfo.DESCRIPTOR):
                info = error_details_pb2.RequestInfo()
                detail.Unpack(info)
                request_id = info.request_id
    return CallError(exc.code(), exc.details() or "", reason, domain, metadata, view, request_id)


async def expect_rpc_error(call: Any) -> grpc.aio.AioRpcError:
    """Await a unary call (or drain a stream) and return the raw error; fail if it succeeds."""
    try:
        if isinstance(call, grpc.aio.UnaryStreamCall):
            while await call.read() is not grpc.aio.EOF:
                pass
        else:
            await call
    except grpc.aio.AioRpcError as exc:
        return exc
    raise AssertionError("the call succeeded; an error was expected")


async def expect_error(call: Any) -> CallError:
    """Await a unary call (or drain a stream) and return its error; fail if it succeeds."""
    return error_of(await expect_rpc_error(call))


#: A hang guard, not a speed bound: it ends a stuck test with the traceback of where it waits,
#: within pytest-timeout's 300 s (pyproject.toml). A whole match played and checked takes 20 s
#: on a loaded 2-core machine, and was cut at 60 s there (test_service's no-leak check of a
#: Georgian Joker match: 25 s of play, then 40 s of checking at a load average of 10).
RUN_TIMEOUT_S = 240


def run(coro_fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run an async test function in a fresh event loop (no pytest-asyncio needed)."""

    @functools.wraps(coro_fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(asyncio.wait_for(coro_fn(*args, **kwargs), timeout=RUN_TIMEOUT_S))

    return wrapper
