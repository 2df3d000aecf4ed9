"""A real engine for the client tests: ``python -m engine_service serve`` as a child process
(clients.local_service), shared by the tests of a module; its log is printed on failure."""

from __future__ import annotations

import asyncio
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any, Awaitable, Iterator

import grpc
import pytest

from clients.local_service import LocalService

ADMIN_TOKEN = secrets.token_hex(16)


def run(coro: Awaitable[Any], timeout_s: float = 120.0) -> Any:
    """Run a coroutine to completion in a fresh event loop, with a hard timeout."""
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, timeout_s)
    return asyncio.run(bounded())


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Iterator[LocalService]:
    log = tmp_path_factory.mktemp("engine") / "engine.log"
    service = LocalService(admin_token=ADMIN_TOKEN, log_path=log,
                           args=["--bot-deadline-s", "5", "--reconnect-grace-s", "30"])
    service.start()
    yield service
    status = service.stop()
    assert status == 0, f"the engine did not drain cleanly (exit {status}):\n{service.log_tail()}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and "engine" in getattr(item, "funcargs", {}):
        report.sections.append(("engine log (tail)", item.funcargs["engine"].log_tail(40)))
    return report


def self_signed_certificate(folder: Path, names: str = "DNS:localhost,IP:127.0.0.1") -> tuple[Path, Path]:
    """A throw-away TLS certificate for localhost / 127.0.0.1 (or the subjectAltName ``names``)
    and its key: (cert, key). An EC key (P-256): made in milliseconds, where an RSA 2048 key
    took 0.2 s of CPU or more."""
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed to make a test certificate"
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", f"subjectAltName={names}"],
                   check=True, capture_output=True)
    return cert, key


class CuttableProxy:
    """A TCP proxy in front of the engine whose connections a test can cut (the client sees its
    streams fail as after a network drop, UNAVAILABLE) and whose new connections it can
    :meth:`hold` until :meth:`release`: a client that reconnects meanwhile reaches the engine
    only after whatever the test did in between (a join that starts the match, an action).
    ``port``: listen there (0: any free port); a port the test opens only later refuses
    connections until then, as while an engine restarts."""

    def __init__(self, upstream: str, port: int = 0) -> None:
        host, _, upstream_port = upstream.rpartition(":")
        self.upstream = (host, int(upstream_port))
        self.server: asyncio.AbstractServer | None = None
        self.port = port
        self.connections = 0  # accepted so far (each reconnection is one more)
        self._open = asyncio.Event()
        self._open.set()
        self._flowing = asyncio.Event()  # cleared: bytes are held, both ways (freeze)
        self._flowing.set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task] = set()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def __aenter__(self) -> "CuttableProxy":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        self.release()
        self.cut()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    def hold(self) -> None:
        """New connections wait (accepted, nothing forwarded) until :meth:`release`."""
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def freeze(self) -> None:
        """Hold every byte, both ways, on the connections open and to come, and close none:
        a network that drops every packet (no reset, no FIN), until :meth:`thaw` delivers
        what was held."""
        self._flowing.clear()

    def thaw(self) -> None:
        self._flowing.set()

    def cut(self) -> None:
        """Reset every connection open through the proxy (held ones too)."""
        for writer in list(self._writers):
            writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        upstream: asyncio.StreamWriter | None = None
        try:
            await self._open.wait()
            if writer.transport.is_closing():
                return
            up_reader, upstream = await asyncio.open_connection(*self.upstream)
            self._writers.add(upstream)
            await asyncio.gather(self._pipe(reader, upstream), self._pipe(up_reader, writer),
                                 return_exceptions=True)
        except (OSError, asyncio.CancelledError):
            pass  # the engine went away, or the proxy is closing: the connection ends
        finally:
            self._handlers.discard(task)
            for w in (writer, upstream):
                if w is not None:
                    self._writers.discard(w)
                    w.transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                await self._flowing.wait()
                writer.write(data)
                await writer.drain()
        finally:
            writer.transport.abort()  # one side gone: the connection is over both ways


class SubmitOutageProxy:
    """A gRPC proxy in front of the engine that forwards every call as it is (bytes, metadata,
    error details), except that from the ``after``-th SubmitAction on, for ``outage_s``, every
    SubmitAction fails with UNAVAILABLE without reaching the engine: an outage that hits the
    seat exactly while it acts (a real one only does when the timing is unlucky)."""

    def __init__(self, upstream: str, after: int, outage_s: float) -> None:
        self.upstream, self.after, self.outage_s = upstream, after, outage_s
        self.submits = 0
        self.refused = 0
        self.outage_ends: float | None = None
        self.server = grpc.aio.server()
        self.server.add_generic_rpc_handlers([self._Handler(self)])
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.channel: grpc.aio.Channel | None = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def __aenter__(self) -> "SubmitOutageProxy":
        self.channel = grpc.aio.insecure_channel(self.upstream)
        await self.server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop(0)
        assert self.channel is not None
        await self.channel.close()

    def _refuse(self) -> bool:
        loop_time = asyncio.get_running_loop().time()
        self.submits += 1
        if self.submits == self.after:
            self.outage_ends = loop_time + self.outage_s
        return self.outage_ends is not None and loop_time < self.outage_ends

    class _Handler(grpc.GenericRpcHandler):
        def __init__(self, proxy: "SubmitOutageProxy") -> None:
            self.proxy = proxy

        def service(self, details):
            proxy, method = self.proxy, details.method
            forwarded = [(k, v) for k, v in details.invocation_metadata if not k.startswith(("grpc-", ":"))]

            async def relay_error(error: grpc.aio.AioRpcError, context) -> None:
                context.set_trailing_metadata(error.trailing_metadata() or ())
                await context.abort(error.code(), error.details() or "")

            if method.endswith("/WatchMatch"):
                async def stream(request: bytes, context):
                    call = proxy.channel.unary_stream(method)(request, metadata=forwarded)
                    try:
                        async for message in call:
                            yield message
                    except grpc.aio.AioRpcError as error:
                        await relay_error(error, context)
                return grpc.unary_stream_rpc_method_handler(stream)

            async def unary(request: bytes, context):
                if method.endswith("/SubmitAction") and proxy._refuse():
                    proxy.refused += 1
                    await context.abort(grpc.StatusCode.UNAVAILABLE, "the test's outage")
                try:
                    return await proxy.channel.unary_unary(method)(request, metadata=forwarded)
                except grpc.aio.AioRpcError as error:
                    await relay_error(error, context)
            return grpc.unary_unary_rpc_method_handler(unary)


async def two_seats(client: Any) -> tuple[Any, list[Any], Any]:
    """A Japanese Joker match (target 11) with both seats joined by ``client``: the match, the
    two seat sessions, and the one whose turn it is."""
    match = await client.create_match("japanese_joker", seats=[None, None], options={"target_score": 11})
    sessions = [await client.join(match.match_id) for _ in range(2)]
    view = await sessions[0].view()
    return match, sessions, sessions[view.to_act]
