"""Per-RPC observability: one structlog line and the RPC metrics for every call.

One ``grpc.aio.ServerInterceptor`` wraps every handler (measured cost in
design/research/ecosystem.md: ~40 µs for metrics + contextvars, ~47 µs more for the log line).
For each call it

* creates an :class:`RpcContext` in a contextvar, which the servicer fills as it learns the
  match id, the caller's seat, the sequence number and the error reason; the same values are
  bound to structlog's contextvars so that the session layer's domain events logged during the
  call carry them too;
* counts the call in flight, then records ``rpc_requests{method, code}``,
  ``rpc_duration_seconds{method}`` (a server stream: until it ends) and
  ``rpc_stream_messages_sent{method}``;
* logs one line ``rpc`` with ``method``, ``code``, ``duration_ms``, ``request_id``, and
  ``match_id``, ``seat``, ``seq``, ``reason`` when known. Never a token, a request body or a
  view: those may hold hidden cards.

Every call has a **request id**: the caller's ``x-request-id`` metadata when it is a plain
token of 1 to 64 characters (a proxy such as Envoy sets one; a client may too), else 16 hex
digits drawn here. It is bound to structlog's contextvars, so the ``rpc`` line and every
domain event logged on the call's behalf (``action_applied``, ``deal_scored``...) carry it,
and every error status carries it back to the caller as a ``google.rpc.RequestInfo``: a user
quotes it, the operator greps the log for it.

Health checks are logged at debug level (probes every few seconds would drown the log).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import random
import re
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import grpc
import structlog

from ..observability.metrics import Metrics
from .errors import MappedError, to_status

log = structlog.get_logger("cardgames.rpc")

_QUIET_PREFIXES = ("/grpc.health.v1.Health/",)


@dataclass(slots=True)
class RpcContext:
    """What the log line of one RPC says about it (filled by the servicer)."""

    method: str
    request_id: str = ""
    match_id: str | None = None
    seat: int | None = None
    seq: int | None = None
    reason: str | None = None
    code: str | None = None  # set by the servicer when it ends the call with an error

    def note(self, *, match_id: str | None = None, seat: int | None = None,
             seq: int | None = None) -> None:
        bind: dict[str, Any] = {}
        if match_id is not None:
            self.match_id = bind["match_id"] = match_id
        if seat is not None:
            self.seat = bind["seat"] = seat
        if seq is not None:
            self.seq = seq
        if bind:
            structlog.contextvars.bind_contextvars(**bind)


_current: contextvars.ContextVar[RpcContext | None] = contextvars.ContextVar("cardgames_rpc",
                                                                             default=None)


def current_rpc() -> RpcContext:
    """The context of the RPC being handled (a throwaway one outside an RPC, e.g. in tests
    that call a servicer directly)."""
    ctx = _current.get()
    return ctx if ctx is not None else RpcContext(method="")


class _Method:
    """What the interceptor needs of one RPC method: its name and metric children, resolved once
    (prometheus_client's ``labels()`` validates and locks on every call)."""

    __slots__ = ("name", "quiet", "in_flight", "duration", "_metrics")

    def __init__(self, name: str, metrics: Metrics) -> None:
        self.name = name
        self.quiet = name.startswith(_QUIET_PREFIXES)
        self.in_flight = metrics.rpc_in_flight.labels(name)
        self.duration = metrics.rpc_duration.labels(name)
        self._metrics = metrics

    def sent(self) -> Any:
        """``rpc_stream_messages{method}``: resolved for server-streaming methods only."""
        return self._metrics.rpc_stream_messages.labels(self.name)

    def requests(self, code: str) -> Any:
        return self._metrics.child(self._metrics.rpc_requests, self.name, code)


class ObservabilityInterceptor(grpc.aio.ServerInterceptor):
    """Logs and measures every RPC (see the module docstring)."""

    def __init__(self, metrics: Metrics, max_send_bytes: int = 0) -> None:
        self._metrics = metrics
        self._max_send = max_send_bytes  # 0: no check (grpc's own limit still applies)
        # method -> (the handler grpc found, its wrapped handler): built once per method
        self._handlers: dict[str, tuple[Any, Any]] = {}

    async def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
                                handler_call_details: grpc.HandlerCallDetails) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None:  # unknown method: grpc answers UNIMPLEMENTED, no label is created
            return None
        method = handler_call_details.method
        known = self._handlers.get(method)
        if known is not None and known[0] is handler:
            return known[1]
        wrapped = self._wrap(_Method(method, self._metrics), handler)
        self._handlers[method] = (handler, wrapped)
        return wrapped

    def _wrap(self, method: _Method, handler: Any) -> Any:
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(method, handler.unary_unary),
                request_deserializer=_lenient(handler.request_deserializer),
                response_serializer=handler.response_serializer)
        if handler.unary_stream is not None:
            behavior = handler.unary_stream
            # async generators yield messages; coroutine handlers (grpc's health Watch) write
            # them with context.write and are observed as a whole
            wrap = self._wrap_stream if inspect.isasyncgenfunction(behavior) else self._wrap_unary
            return grpc.unary_stream_rpc_method_handler(
                wrap(method, behavior),
                request_deserializer=_lenient(handler.request_deserializer),
                response_serializer=handler.response_serializer)
        if handler.stream_stream is not None and inspect.isasyncgenfunction(handler.stream_stream):
            # server reflection, the one bidirectional stream: not observed, but a message that
            # does not parse is refused as the API's are (grpc answered UNKNOWN, naming the
            # parser's exception, and logged a traceback at ERROR level for each)
            return grpc.stream_stream_rpc_method_handler(
                _refusing_undecodable(method.name, handler.stream_stream),
                request_deserializer=_lenient(handler.request_deserializer),
                response_serializer=handler.response_serializer)
        return handler  # client streaming: the API has none

    # ---- wrappers ----------------------------------------------------------------------

    def _wrap_unary(self, method: _Method, behavior: Callable) -> Callable:
        limit = self._max_send

        async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            rpc, started = _begin(method, context)
            code = "OK"
            try:
                if type(request) is Undecodable:
                    await _refuse(request, rpc, context)
                response = await behavior(request, context)
                if limit and response is not None:
                    await _check_size(response, limit, rpc, context)
                return response
            except asyncio.CancelledError:
                code = _gave_up(context)
                raise
            except BaseException:
                code = _code_of(rpc, context, "UNKNOWN")
                raise
            finally:
                if code == "OK":
                    code = _code_of(rpc, context, "OK")
                _end(method, rpc, started, code, 0)

        return unary

    def _wrap_stream(self, method: _Method, behavior: Callable) -> Callable:
        limit = self._max_send
        sent = method.sent()

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
            rpc, started = _begin(method, context)
            code = "OK"
            messages = 0
            try:
                if type(request) is Undecodable:
                    await _refuse(request, rpc, context)
                async for message in behavior(request, context):
                    if limit:
                        await _check_size(message, limit, rpc, context)
                    yield message
                    messages += 1
                    sent.inc()
            except (asyncio.CancelledError, GeneratorExit):
                code = _gave_up(context)
                raise
            except BaseException:
                code = _code_of(rpc, context, "UNKNOWN")
                raise
            finally:
                if code == "OK":
                    code = _code_of(rpc, context, "OK")
                _end(method, rpc, started, code, messages)

        return stream


class Undecodable:
    """A request whose bytes do not parse as the method's message. grpc would answer UNKNOWN
    (naming the parser's exception class) and log a traceback at ERROR level for each; the
    wrappers answer INVALID_ARGUMENT (MALFORMED_REQUEST) with the usual rpc line instead."""

    __slots__ = ("error",)

    def __init__(self, error: str) -> None:
        self.error = error  # the parser's exception class, or JSON for a JSON request


#: What a client configured for the JSON codec sends (Connect's ``useBinaryFormat: false``,
#: content type application/grpc+json): a JSON object, whose first byte ``{`` would be a
#: start-group tag of field 15, which no message of the API has.
_JSON = "JSON"


def _lenient(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserialize is None:
        return None

    def parse(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as exc:  # DecodeError, and bad UTF-8 in a string field
            return Undecodable(_JSON if data.lstrip()[:1] == b"{" else type(exc).__name__)

    return parse


def _refusing_undecodable(name: str, behavior: Callable) -> Callable:
    """A bidirectional stream's handler that ends the call INVALID_ARGUMENT (MALFORMED_REQUEST)
    at the first request message that does not parse, as the wrappers do for the API's calls."""

    async def bidi(requests: Any, context: grpc.aio.ServicerContext) -> Any:
        rpc = RpcContext(method=name, request_id=request_id(context.invocation_metadata()))

        async def checked() -> Any:
            async for request in requests:
                if type(request) is Undecodable:
                    await _refuse(request, rpc, context)
                yield request

        async for response in behavior(checked(), context):
            yield response

    return bidi


async def _refuse(request: Undecodable, rpc: RpcContext, context: grpc.aio.ServicerContext) -> None:
    message = ("the request is not a valid message of this method (protobuf wire format, UTF-8 "
               "strings)")
    if request.error == _JSON:
        message = ("the request is JSON (content type application/grpc+json?): this server reads "
                   "the protobuf binary format only (Connect: leave useBinaryFormat at true)")
    mapped = MappedError(grpc.StatusCode.INVALID_ARGUMENT, message, reason="MALFORMED_REQUEST",
                         metadata={}, expected=True)
    rpc.reason, rpc.code = mapped.reason, mapped.code.name
    await context.abort_with_status(to_status(mapped, rpc.request_id))


def _size(message: Any) -> int:
    """The wire size of a response: the codec's pre-encoded bytes, or a message's ByteSize."""
    return len(message) if isinstance(message, (bytes, bytearray)) else message.ByteSize()


async def _check_size(message: Any, limit: int, rpc: RpcContext, context: grpc.aio.ServicerContext) -> None:
    """Refuse a response over ``--max-send-message-bytes``: grpc would fail the call with a
    bare RESOURCE_EXHAUSTED after the handler returned, and the rpc line would say OK."""
    size = _size(message)
    if size <= limit:
        return
    mapped = MappedError(grpc.StatusCode.RESOURCE_EXHAUSTED, f"the response would be {size} bytes, "
                         f"more than this server sends ({limit})", reason="RESPONSE_TOO_LARGE",
                         metadata={"size": str(size), "limit": str(limit)}, expected=True)
    rpc.reason, rpc.code = mapped.reason, mapped.code.name
    await context.abort_with_status(to_status(mapped, rpc.request_id))


#: A caller's ``x-request-id`` is used as given when it is a plain token (it goes into log
#: lines and statuses); anything else is replaced by an id drawn here.
_REQUEST_ID_RE = re.compile(r"[A-Za-z0-9._:/+=-]{1,64}")
REQUEST_ID_HEADER = "x-request-id"
#: Request ids only tell calls apart in the logs (no secret rides on them): a seeded generator,
#: without a system call per RPC.
_IDS = random.Random()


def request_id(metadata: Any) -> str:
    """The call's request id: the caller's ``x-request-id`` if usable, else a new one."""
    for key, value in metadata or ():
        if key == REQUEST_ID_HEADER and isinstance(value, str) and _REQUEST_ID_RE.fullmatch(value):
            return value
    return f"{_IDS.getrandbits(64):016x}"


def _begin(method: _Method, context: grpc.aio.ServicerContext) -> tuple[RpcContext, float]:
    # each grpc.aio RPC runs in its own task (its own context copy): nothing to reset after
    rid = request_id(context.invocation_metadata())
    rpc = RpcContext(method=method.name, request_id=rid)
    _current.set(rpc)
    structlog.contextvars.bind_contextvars(rpc=method.name, request_id=rid)
    method.in_flight.inc()
    return rpc, time.perf_counter()


def _end(method: _Method, rpc: RpcContext, started: float, code: str, messages: int) -> None:
    elapsed = time.perf_counter() - started
    method.in_flight.dec()
    method.requests(code).inc()
    method.duration.observe(elapsed)
    fields: dict[str, Any] = {"method": rpc.method, "code": code,
                              "duration_ms": round(elapsed * 1000, 3), "request_id": rpc.request_id}
    if rpc.match_id is not None:
        fields["match_id"] = rpc.match_id
    if rpc.seat is not None:
        fields["seat"] = rpc.seat
    if rpc.seq is not None:
        fields["seq"] = rpc.seq
    if rpc.reason is not None:
        fields["reason"] = rpc.reason
    if messages:
        fields["messages"] = messages
    # the line itself names match_id/seat: drop the bound copies to avoid duplicates
    structlog.contextvars.unbind_contextvars("rpc", "request_id", "match_id", "seat")
    (log.debug if method.quiet else log.info)("rpc", **fields)


def _gave_up(context: grpc.aio.ServicerContext) -> str:
    """The code of a call grpc cancelled under its handler: DEADLINE_EXCEEDED when the
    client's deadline had passed (what the client saw: the engine was too slow for it), else
    CANCELLED (the client cancelled or went away, or the server stopped). Both were CANCELLED,
    so a slow engine looked like impatient clients in the log and rpc_requests."""
    try:
        remaining = context.time_remaining()
    except Exception:  # pragma: no cover - a context without a deadline API
        return "CANCELLED"
    # grpc's deadline timer may fire a hair early: within 10 ms of it is the deadline
    return "DEADLINE_EXCEEDED" if remaining is not None and remaining < 0.01 else "CANCELLED"


def _code_of(rpc: RpcContext, context: grpc.aio.ServicerContext, default: str) -> str:
    """The call's code: the servicer's (error table), else the one a handler outside it set
    on the context (grpc's health Check aborts NOT_FOUND), else ``default``."""
    if rpc.code is not None:
        return rpc.code
    try:
        code = context.code()
    except Exception:  # pragma: no cover - older grpc without ServicerContext.code()
        code = None
    # grpc.aio reports a grpc.StatusCode (an int is no member: StatusCode's values are pairs)
    return code.name if isinstance(code, grpc.StatusCode) else default
