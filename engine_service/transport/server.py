"""The grpc.aio server: services, health, reflection, limits, TLS and the graceful drain.

:class:`GrpcServer` owns one ``grpc.aio.Server`` bound to one address, serving

* ``cardgames.v1.CardGamesService`` and ``cardgames.v1.AdminService`` (servicers.py) over a
  :class:`~engine_service.sessions.api.MatchService`;
* the standard ``grpc.health.v1.Health`` service: SERVING once started, NOT_SERVING while
  draining (per service and overall ``""``), so a load balancer stops routing first (a
  ``Watch`` stream then ends, not to hold the drain);
* server reflection, so ``buf curl`` / grpcurl-style tools list and call the API: v1alpha,
  and v1 too (:func:`add_reflection_v1`), which tools ask for first and some insist on.

Limits (:class:`ServerLimits`) are grpc channel arguments: message sizes both ways, request
headers (one limit, 16 KiB: grpc's defaults refuse calls between 8 and 16 KiB at random),
HTTP/2 concurrent streams per connection, keepalive pings (dead watchers are noticed, so a
vanished player's presence ends), the time a new connection has for its TLS handshake and HTTP/2
preface (one that sends nothing is closed instead of holding a descriptor for 1-2 minutes)
and the pending-request queue (a reconnect storm of thousands of watchers is queued rather
than dropped; design/research/ecosystem.md measured 5-12 % losses with grpc's defaults).
``grpc.so_reuseport`` is off: a second server on a busy port fails loudly instead of silently
sharing it.

Request-rate limits (:class:`~.ratelimit.RateLimits`, off by default) are applied by
:class:`RateLimitInterceptor` before a call reaches its servicer: per seat token for the calls
a seat token authenticates, per client address for the others; the admin token, health and
reflection are never limited. A refused call is RESOURCE_EXHAUSTED, reason RATE_LIMITED, with
a RetryInfo (errors.py), and changes nothing.

Shutdown (:meth:`GrpcServer.drain`): health NOT_SERVING -> the session layer drains (new work
gets UNAVAILABLE, in-flight actions finish, watch streams end) -> the grpc server stops with a
grace period for the RPCs still running -> the session layer closes (store flushed).
"""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

import grpc
import structlog
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from ..observability.metrics import Metrics
from ..sessions import api
from ..sessions.tokens import token_hash
from .auth import AdminGate, bearer_token
from .errors import RateLimited, classify, to_status
from .generated import admin_pb2, admin_pb2_grpc, card_games_pb2, card_games_pb2_grpc, descriptor_set
from .interceptors import ObservabilityInterceptor, current_rpc
from .ratelimit import RateLimits, TokenBuckets, client_key
from .servicers import AdminServicer, CardGamesServicer
from .tls import CertificateFiles

log = structlog.get_logger("cardgames.server")

CARD_GAMES_SERVICE = card_games_pb2.DESCRIPTOR.services_by_name["CardGamesService"].full_name
ADMIN_SERVICE = admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name
SERVICE_NAMES = (CARD_GAMES_SERVICE, ADMIN_SERVICE)


class HealthServicer(health.aio.HealthServicer):
    """grpc's asyncio health servicer, with ``List``.

    grpc's health.proto (the one grpcio-health-checking ships, and so the one reflection
    describes) has a third method, ``List``: every service's status at once. The servicer
    does not implement it, so a client that called it (a tool reading the descriptor, a
    probe of the newer API) got UNIMPLEMENTED "Unexpected <class 'NotImplementedError'>:
    Method not implemented!". The statuses are recorded as they are set, for ``List``; a
    drain turns them all NOT_SERVING, as it does for ``Check``.

    ``Watch`` ends its stream (OK) once it has sent NOT_SERVING for the drain: the base
    class's stream stayed open, and the server's stop waited the whole ``--drain-grace-s`` for
    it, so one client watching health (gRPC's client-side health checking, a dashboard) made
    every restart that much longer. A client that watches again is refused, the server gone."""

    def __init__(self) -> None:
        super().__init__()
        self._listed: dict[str, int] = {"": health_pb2.HealthCheckResponse.SERVING}
        self._draining = False
        self._changed = asyncio.Condition()

    async def set(self, service: str, status: int) -> None:
        await super().set(service, status)
        if not self._draining:  # as the base class: no status changes once draining
            self._listed[service] = status
            async with self._changed:
                self._changed.notify_all()

    async def enter_graceful_shutdown(self) -> None:
        await super().enter_graceful_shutdown()
        # under the lock: a Watch holds it while it writes, and a flag set in the middle of
        # that write made it return without the NOT_SERVING it owed (seen as a bare EOF)
        async with self._changed:
            self._draining = True
            self._listed = dict.fromkeys(self._listed, health_pb2.HealthCheckResponse.NOT_SERVING)
            self._changed.notify_all()

    async def Watch(self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext) -> None:
        last = None
        async with self._changed:
            while True:
                status = self._listed.get(request.service, health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)
                if status != last:
                    await context.write(health_pb2.HealthCheckResponse(status=status))
                    last = status
                if self._draining:
                    return
                await self._changed.wait()

    async def List(self, request: health_pb2.HealthListRequest, context: grpc.aio.ServicerContext,
                   ) -> health_pb2.HealthListResponse:
        return health_pb2.HealthListResponse(statuses={
            name: health_pb2.HealthCheckResponse(status=status) for name, status in self._listed.items()})


class CommentedReflectionServicer(reflection.aio.ReflectionServicer):
    """grpcio-reflection's servicer, describing the API's own files with their comments.

    The descriptors in the process's pool come from the _pb2 modules, which protoc writes
    without source info: a client with nothing but reflection (grpcurl ``describe``, ``buf
    curl``, a generator fed by it) got names and types and not a word of the documentation
    every message and field has in the .proto files. The same files with their comments are
    generated beside them (:mod:`.generated.descriptor_set`); they replace the pool's copies
    in every answer, and every other file (the well-known types, health, the error details)
    is answered as before."""

    def __init__(self, service_names: tuple[str, ...]) -> None:
        super().__init__(service_names)
        files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.SERIALIZED).file
        self._commented = {f.name: f.SerializeToString() for f in files}

    async def ServerReflectionInfo(self, request_iterator: Any, context: Any) -> AsyncIterator[Any]:
        async for response in super().ServerReflectionInfo(request_iterator, context):
            if response.HasField("file_descriptor_response"):
                files = response.file_descriptor_response.file_descriptor_proto
                for i, raw in enumerate(files):
                    name = descriptor_pb2.FileDescriptorProto.FromString(raw).name
                    if name in self._commented:
                        files[i] = self._commented[name]
            yield response


#: The reflection service's stable name (grpc/reflection/v1/reflection.proto).
REFLECTION_V1_SERVICE = "grpc.reflection.v1.ServerReflection"


def add_reflection_v1(service_names: tuple[str, ...], server: grpc.aio.Server) -> None:
    """Serve ``grpc.reflection.v1.ServerReflection`` as well as grpcio-reflection's v1alpha.

    grpcio-reflection ships v1alpha only, while clients try v1 first: ``buf curl`` and
    grpcurl fall back to v1alpha, but a client told to use v1 (``buf curl --reflect-protocol
    grpc-v1``, libraries that know only the stable name) got UNIMPLEMENTED. v1 is v1alpha
    under a new package name, the messages field for field the same on the wire, so the
    package's own servicer answers both. The list of services names v1alpha only, since the
    v1 file's descriptors are not in this process's pool to be described.
    """
    servicer = CommentedReflectionServicer(service_names)
    handlers = {"ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString)}
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(REFLECTION_V1_SERVICE, handlers),))


@dataclass(frozen=True)
class ServerLimits:
    """Transport limits (grpc channel arguments). Defaults suit one process on a small box."""

    max_receive_message_bytes: int = 64 * 1024  # requests are tiny: an action, a few options
    max_send_message_bytes: int = 4 * 1024 * 1024  # a view, a transcript export
    max_concurrent_streams: int = 100  # per HTTP/2 connection
    keepalive_time_s: float = 30.0  # ping an idle connection this often
    keepalive_timeout_s: float = 10.0  # ...and drop it if the ping is not answered
    handshake_timeout_s: float = 20.0  # a new connection's TLS handshake and HTTP/2 preface
    max_pending_requests: int = 10_000  # calls waiting for the application (burst buffer)
    max_metadata_bytes: int = 16 * 1024  # a request's headers: every one smaller is accepted
    max_connection_idle_s: float = 0.0  # 0: never close idle connections


@dataclass(frozen=True)
class TlsFiles:
    """PEM certificate chain and private key; the server then only speaks TLS, with the pair
    the files hold when a connection is made (renewals taken without a restart)."""

    cert: Path
    key: Path

    def credentials(self) -> grpc.ServerCredentials:
        """Credentials that follow the files: a renewed certificate is served to new
        connections without a restart (tls.py)."""
        return CertificateFiles(self.cert, self.key).credentials()


def channel_options(limits: ServerLimits) -> list[tuple[str, int]]:
    opts = [
        ("grpc.max_receive_message_length", limits.max_receive_message_bytes),
        ("grpc.max_send_message_length", limits.max_send_message_bytes),
        ("grpc.max_concurrent_streams", limits.max_concurrent_streams),
        ("grpc.keepalive_time_ms", int(limits.keepalive_time_s * 1000)),
        ("grpc.keepalive_timeout_ms", int(limits.keepalive_timeout_s * 1000)),
        ("grpc.keepalive_permit_without_calls", 1),
        # a connection that never finishes its handshake (a port scanner, a slowloris, a
        # plaintext client that sent half a preface) is dropped after this; grpc's default,
        # 120 s, let a few connections a second hold every file descriptor
        ("grpc.server_handshake_timeout_ms", int(limits.handshake_timeout_s * 1000)),
        # clients may ping idle watch streams every 10 s without being sent GOAWAY
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.http2.max_pings_without_data", 0),
        # a request's headers (metadata): one limit, not grpc's two. Between its soft limit (8
        # KiB) and its hard one (16 KiB) grpc refuses a call at random, the more often the
        # larger its headers (12 KiB: one call in two): a proxy adding a browser's cookies
        # would make some calls fail RESOURCE_EXHAUSTED, and the same call succeed again
        ("grpc.max_metadata_size", limits.max_metadata_bytes),
        ("grpc.absolute_max_metadata_size", limits.max_metadata_bytes),
        ("grpc.server.max_pending_requests", limits.max_pending_requests),
        ("grpc.server.max_pending_requests_hard_limit", 2 * limits.max_pending_requests),
        ("grpc.so_reuseport", 0),
    ]
    if limits.max_connection_idle_s > 0:
        opts.append(("grpc.max_connection_idle_ms", int(limits.max_connection_idle_s * 1000)))
    return opts


#: The addresses gRPC takes for "every address": it listens on both families for either.
_WILDCARDS = ("", "::", "0.0.0.0")


def grpc_host(host: str) -> str:
    """``--host`` as gRPC's ``host:port`` address needs it: an IPv6 literal in brackets. A
    bare ``::`` or ``::1`` (as the metrics endpoint takes them) made ``:::50051``, which gRPC
    refused with "Failed to bind to address ...; set GRPC_VERBOSITY=debug", saying nothing of
    the brackets."""
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return host
    return f"[{host}]"


def bind_error(host: str, port: int) -> OSError | None:
    """Why gRPC could not listen on ``host:port`` (``--host``, ``--port``), found by binding a
    socket there the way gRPC does (SO_REUSEADDR, no SO_REUSEPORT; a wildcard address as an
    IPv6 dual-stack socket, else IPv4): None when one of the addresses it resolves to can be
    bound (gRPC then serves on it), or when ``port`` is 0 (any free port).

    The service asks before it changes its database (a port in use must not leave a database
    migrated by an engine that never served), and again when gRPC's own bind failed, whose
    message ("Failed to bind to address ...; set GRPC_VERBOSITY=debug ...") does not say why.
    A port taken between this check and gRPC's bind still fails the start, only later."""
    if port == 0:
        return None
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if name in _WILDCARDS:
        candidates = [(socket.AF_INET6, ("::", port, 0, 0)), (socket.AF_INET, ("0.0.0.0", port))]
    else:
        try:
            infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except socket.gaierror as exc:
            return OSError(exc.errno, f"cannot resolve {host!r}: {exc.strerror}")
        candidates = [(family, sockaddr) for family, _, _, _, sockaddr in infos]
    first: OSError | None = None
    for family, sockaddr in candidates:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6 and sockaddr[0] == "::":
                    probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                probe.bind(sockaddr)
            return None
        except OSError as exc:
            first = first or exc
    return first


def _encoded_or(serializer: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """``serializer``, except that wire bytes are sent as they are. Every handler a generated
    ``add_..._to_server`` makes has a response serializer (grpc's None, for a handler that
    answers bytes itself, does not arise)."""

    def serialize(message: Any) -> bytes:
        return message if type(message) is bytes else serializer(message)

    return serialize


class _Registrar:
    """Stands in for the server while generated code registers a service: keeps its method
    handlers, to register them again with :func:`_encoded_or` serializers."""

    def __init__(self) -> None:
        self.handlers: dict[str, dict[str, grpc.RpcMethodHandler]] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass  # the same handlers arrive as registered method handlers

    def add_registered_method_handlers(self, service: str, handlers: dict[str, grpc.RpcMethodHandler]) -> None:
        self.handlers[service] = handlers


def add_with_encoded_responses(add: Callable[[Any, Any], None], servicer: Any,
                               server: grpc.aio.Server) -> None:
    """Register a servicer like the generated ``add_..._to_server``, except that a method may
    answer with the response's wire bytes, which are sent as they are: the codec encodes views
    and events straight to bytes, once for all their receivers, and turning them back into a
    message only for grpc to serialize it again cost two copies of every view sent."""
    registrar = _Registrar()
    add(servicer, registrar)
    if not registrar.handlers:
        raise RuntimeError(f"{add.__name__} registered no method handlers")
    for service, handlers in registrar.handlers.items():
        wrapped = {name: h._replace(response_serializer=_encoded_or(h.response_serializer))
                   for name, h in handlers.items()}
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, wrapped),))
        server.add_registered_method_handlers(service, wrapped)


#: The calls a seat token authenticates (its owner's bucket); with another token or none they
#: are the peer's calls (a spectator's GetView or WatchMatch, a bad token).
SEAT_METHODS = frozenset(f"/{CARD_GAMES_SERVICE}/{name}"
                         for name in ("SubmitAction", "GetView", "LeaveMatch", "WatchMatch"))
_LIMITED_PREFIXES = tuple(f"/{name}/" for name in SERVICE_NAMES)  # not health, not reflection


def _descriptor_methods() -> list[tuple[str, bool]]:
    """(full method name, server-streaming) of every method the interceptors observe: the
    API's two services and the health service (reflection is a bidirectional stream, which
    they pass through unobserved)."""
    services = (card_games_pb2.DESCRIPTOR.services_by_name["CardGamesService"],
                admin_pb2.DESCRIPTOR.services_by_name["AdminService"],
                health_pb2.DESCRIPTOR.services_by_name["Health"])
    return [(f"/{service.full_name}/{m.name}", m.server_streaming and service.full_name in SERVICE_NAMES)
            for service in services for m in service.methods
            if not m.client_streaming]


def declare_rpc_series(metrics: Metrics, rate_limits: RateLimits) -> None:
    """Create the RPC series of every observed method at 0 (:meth:`Metrics.declare_rpcs`):
    the health service's stream writes its messages itself, so only the API's server streams
    count messages; ``rate_limited`` for the buckets that are on (seat buckets: the seat
    methods; peer buckets: every API method)."""
    methods = _descriptor_methods()
    limited: list[tuple[str, str]] = []
    for name, _ in methods:
        if not name.startswith(_LIMITED_PREFIXES):
            continue
        if rate_limits.seat.enabled and name in SEAT_METHODS:
            limited.append((name, "seat"))
        if rate_limits.peer.enabled:
            limited.append((name, "peer"))
    metrics.declare_rpcs([name for name, _ in methods],
                         streaming=[name for name, streams in methods if streams],
                         rate_limited=limited)


class RateLimitInterceptor(grpc.aio.ServerInterceptor):
    """Refuses calls beyond the request-rate limits (module docstring, ratelimit.py).

    Installed inside the observability interceptor, so a refused call has its ``rpc`` log
    line (code RESOURCE_EXHAUSTED, reason RATE_LIMITED) and its ``rpc_requests`` count. The
    first refusal of a run for one bucket is also logged (``rate_limited``, warning) with the
    method, the key kind and, for a peer, its address: a client hammering the service costs
    one warning, not one per call. Tokens are never logged; seat buckets are keyed by the
    token's hash.

    Which bucket: the admin token, none. A seat method (:data:`SEAT_METHODS`) whose token
    the session layer accepts as a seat of the request's match: that token's. Anything else
    (no token, a bad or malformed one, the other methods): the peer's. So a made-up token
    buys no fresh bucket, and a seat's calls are not counted against its neighbours behind
    the same address.
    """

    def __init__(self, limits: RateLimits, service: api.MatchService, admin: AdminGate,
                 metrics: Metrics, clock: Callable[[], float] = time.monotonic) -> None:
        self._seat = TokenBuckets(limits.seat) if limits.seat.enabled else None
        self._peer = TokenBuckets(limits.peer) if limits.peer.enabled else None
        self._trusted_proxies = limits.trusted_proxies
        self._service = service
        self._admin = admin
        self._metrics = metrics
        self._clock = clock
        self._handlers: dict[str, tuple[Any, Any]] = {}  # as in ObservabilityInterceptor

    async def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
                                handler_call_details: grpc.HandlerCallDetails) -> Any:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or not method.startswith(_LIMITED_PREFIXES):
            return handler
        known = self._handlers.get(method)
        if known is not None and known[0] is handler:
            return known[1]
        wrapped = self._wrap(method, handler)
        self._handlers[method] = (handler, wrapped)
        return wrapped

    def _wrap(self, method: str, handler: Any) -> Any:
        seat_method = method in SEAT_METHODS
        check = self._check
        if handler.unary_unary is not None:
            behavior = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                await check(method, seat_method, request, context)
                return await behavior(request, context)

            return handler._replace(unary_unary=unary)
        if handler.unary_stream is not None and inspect.isasyncgenfunction(handler.unary_stream):
            stream_behavior = handler.unary_stream

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                await check(method, seat_method, request, context)  # the opening only
                async for message in stream_behavior(request, context):
                    yield message

            return handler._replace(unary_stream=stream)
        # nothing else: the API's one stream, WatchMatch, is an async generator, and it has no
        # client or bidirectional streams (the health service's Watch, a coroutine that writes
        # with context.write, is never limited)
        return handler

    async def _check(self, method: str, seat_method: bool, request: Any,
                     context: grpc.aio.ServicerContext) -> None:
        """Take a token for the call, or abort it (RESOURCE_EXHAUSTED, RATE_LIMITED)."""
        try:
            token = bearer_token(context.invocation_metadata())
        except api.SessionError:
            token = None  # malformed: the servicer refuses it; meanwhile it is the peer's call
        if token is not None and self._admin.is_admin(token):
            return
        if seat_method and token is not None and self._is_seat(request, token):
            buckets, key_kind, key = self._seat, "seat", token_hash(token)
        else:
            buckets, key_kind, key = self._peer, "peer", None
        if buckets is None:
            return
        peer = ""
        if key is None:
            peer = key = client_key(context.peer() or "", context.invocation_metadata() or (),
                                    self._trusted_proxies)
        verdict = buckets.take(key, self._clock())
        if verdict.allowed:
            return
        self._metrics.child(self._metrics.rate_limited, method, key_kind).inc()
        if verdict.streak == 1:
            fields = {"peer": peer} if peer else {}
            log.warning("rate_limited", method=method, key_kind=key_kind,
                        retry_after_ms=round(verdict.delay * 1000, 1), **fields)
        mapped = classify(RateLimited(verdict.delay, key_kind))
        rpc = current_rpc()
        rpc.reason, rpc.code = mapped.reason, mapped.code.name
        await context.abort_with_status(to_status(mapped, rpc.request_id))

    def _is_seat(self, request: Any, token: str) -> bool:
        """Whether ``token`` is a seat token of the request's match (then noted on the RPC's
        log line, which names the seat even when the call is refused)."""
        try:
            principal = self._service.authenticate(request.match_id, token)
        except Exception:  # a fault too: the servicer meets it again and answers INTERNAL,
            # logged as rpc_internal_error; raised here, it reached the client as UNKNOWN with
            # the exception's own message, and no line said what had failed
            return False
        # a token, not the admin's: a seat's, or refused above (api.MatchService.authenticate)
        current_rpc().note(match_id=principal.match_id, seat=principal.seat)
        return True


class GrpcServer:
    """One grpc.aio server over a MatchService (see the module docstring)."""

    def __init__(self, service: api.MatchService, *, metrics: Metrics, admin_token: str | None,
                 host: str = "[::]", port: int = 0, limits: ServerLimits = ServerLimits(),
                 tls: TlsFiles | None = None, rate_limits: RateLimits = RateLimits()) -> None:
        self.service = service
        self.metrics = metrics
        self.limits = limits
        self.rate_limits = rate_limits
        self._address = f"{grpc_host(host)}:{port}"
        self._tls = tls
        self._admin = AdminGate(admin_token)
        self.health = HealthServicer()
        self.port: int | None = None
        self._server: grpc.aio.Server | None = None
        self._stopped = False

    async def start(self) -> int:
        """Bind, start serving, mark every service SERVING; return the bound port."""
        interceptors: list[grpc.aio.ServerInterceptor] = [
            ObservabilityInterceptor(self.metrics, max_send_bytes=self.limits.max_send_message_bytes)]
        if self.rate_limits.enabled:  # off: not even a look at the call
            interceptors.append(RateLimitInterceptor(self.rate_limits, self.service, self._admin,
                                                     self.metrics))
        server = grpc.aio.server(interceptors=interceptors, options=channel_options(self.limits))
        add_with_encoded_responses(card_games_pb2_grpc.add_CardGamesServiceServicer_to_server,
                                   CardGamesServicer(self.service, self._admin), server)
        admin_pb2_grpc.add_AdminServiceServicer_to_server(AdminServicer(self.service, self._admin),
                                                          server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        reflected = (*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME)
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
            CommentedReflectionServicer(reflected), server)
        add_reflection_v1(reflected, server)
        if self._tls is not None:
            port = server.add_secure_port(self._address, self._tls.credentials())
        else:
            port = server.add_insecure_port(self._address)
        await server.start()
        self._server, self.port = server, port
        declare_rpc_series(self.metrics, self.rate_limits)
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self.metrics.serving.set(1)
        if not self._admin.enabled:
            log.warning("admin_api_disabled",
                        hint="set --admin-token or CARDGAMES_ADMIN_TOKEN to enable the admin API")
        rl = self.rate_limits
        host = self._address.rsplit(":", 1)[0]  # the port bound, not 0 when any was asked for
        log.info("grpc_server_started", address=f"{host}:{port}", port=port,
                 tls=self._tls is not None,
                 rate_limit_seat=f"{rl.seat.per_s:g}/s burst {rl.seat.capacity:g}" if rl.seat.enabled else "off",
                 rate_limit_peer=f"{rl.peer.per_s:g}/s burst {rl.peer.capacity:g}" if rl.peer.enabled else "off",
                 trusted_proxies=[str(n) for n in rl.trusted_proxies])
        return port

    async def drain(self, grace_s: float = 10.0, *, ports_closed: Callable[[], None] | None = None) -> None:
        """Graceful shutdown (module docstring); safe to call twice. ``ports_closed`` is
        called once the gRPC server has stopped and before the session layer closes the store
        (the service closes its metrics endpoint there): an engine lets its ports go before
        its database, so a successor that was waiting for the database finds them free."""
        if self._stopped or self._server is None:
            return
        self._stopped = True
        log.info("draining", grace_s=grace_s)
        await self.health.enter_graceful_shutdown()
        self.metrics.serving.set(0)
        try:
            await self.service.drain()
        finally:
            await self._server.stop(grace_s)
            try:
                if ports_closed is not None:
                    ports_closed()
            finally:
                await self.service.close()
        log.info("stopped")
