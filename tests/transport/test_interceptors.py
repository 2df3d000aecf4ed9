"""The observability interceptor's own decisions (engine_service/transport/interceptors.py),
pinned where a whole call over a channel cannot tell them apart: the RPC context outside a call,
the handlers it wraps and leaves alone. The rpc line and metrics of real calls are in
test_rpc_lines.py and test_edge.py."""

from __future__ import annotations

import asyncio
import contextlib
import re
from types import SimpleNamespace

import grpc
import pytest
import structlog
from google.rpc import error_details_pb2, status_pb2

from engine_service.observability.metrics import Metrics
from engine_service.transport.interceptors import ObservabilityInterceptor, current_rpc, request_id

from ..sessions.helpers import capture_logs_with_context
from .harness import run


async def _wrapped(handler: grpc.RpcMethodHandler, method: str = "/x.v1.S/M",
                   max_send_bytes: int = 0) -> grpc.RpcMethodHandler:
    """``handler`` as the interceptor hands it to grpc for ``method``."""

    async def continuation(details: object) -> grpc.RpcMethodHandler:
        return handler

    interceptor = ObservabilityInterceptor(Metrics(), max_send_bytes=max_send_bytes)
    return await interceptor.intercept_service(continuation, SimpleNamespace(method=method))


def test_outside_a_call_current_rpc_is_a_fresh_throwaway_context():
    """Code that notes its match or seq outside any RPC (a servicer called directly) must not
    fail for want of a call, and what it notes is nobody's: the next one starts empty."""
    outside = current_rpc()
    assert (outside.method, outside.request_id, outside.seq) == ("", "", None)
    outside.note(seq=7)
    assert current_rpc() is not outside and current_rpc().seq is None


@run
async def test_a_method_without_a_deserializer_still_gets_the_raw_bytes():
    """grpc hands a method registered without a request deserializer the request's bytes: the
    interceptor keeps it so, instead of a parser that would refuse every call as malformed."""

    async def echo(request, context):
        return request

    wrapped = await _wrapped(grpc.unary_unary_rpc_method_handler(echo))
    assert wrapped.request_deserializer is None and wrapped.unary_unary is not echo


class _Context:
    """The little of a grpc.aio servicer context the wrappers read."""

    def __init__(self, remaining: float | None = None) -> None:
        self.remaining = remaining
        self.status: grpc.StatusCode | None = None

    def invocation_metadata(self) -> tuple:
        return ()

    def time_remaining(self) -> float | None:
        return self.remaining

    def set_code(self, code: grpc.StatusCode) -> None:
        self.status = code

    def code(self) -> grpc.StatusCode | None:
        return self.status


async def _rpc_line_of(behavior, context: _Context, *, method: str = "/x.v1.S/M",
                       logs: list | None = None) -> tuple[dict, BaseException | None]:
    """Call ``behavior`` wrapped as a unary method; its rpc line and what the call raised
    (``logs``: where the lines are captured, else structlog's capture without contextvars)."""
    wrapped = await _wrapped(grpc.unary_unary_rpc_method_handler(behavior), method)
    raised = None
    with contextlib.nullcontext(logs) if logs is not None else structlog.testing.capture_logs() as logs:
        try:
            await wrapped.unary_unary(b"", context)
        except BaseException as exc:  # noqa: B036 - CancelledError is what is tested
            raised = exc
    [line] = [e for e in logs if e["event"] == "rpc"]
    return line, raised


@run
async def test_a_cancelled_call_is_deadline_exceeded_only_within_10_ms_of_its_deadline():
    """grpc cancels a handler both when the client's deadline passes and when the client goes
    away: the line says DEADLINE_EXCEEDED for the first (grpc's timer may fire a hair early),
    CANCELLED for the second, and for a call without a deadline. The cancellation goes on."""

    async def cancelled(request, context):
        raise asyncio.CancelledError

    for remaining, code in ((0.005, "DEADLINE_EXCEEDED"), (-0.5, "DEADLINE_EXCEEDED"),
                            (0.5, "CANCELLED"), (None, "CANCELLED")):
        line, raised = await _rpc_line_of(cancelled, _Context(remaining))
        assert line["code"] == code, remaining
        assert type(raised) is asyncio.CancelledError


@run
async def test_an_exception_nobody_mapped_is_logged_unknown_and_reaches_grpc_as_raised():
    """A handler outside the servicers' error table (no code noted, none set on the context)
    that raises is counted and logged UNKNOWN, grpc's own code for it, and the interceptor
    hands grpc the very exception: observing a call never changes its answer."""
    error = RuntimeError("boom")

    async def failing(request, context):
        raise error

    async def failing_stream(request, context):
        yield b"first"
        raise error

    line, raised = await _rpc_line_of(failing, _Context())
    assert (line["method"], line["code"]) == ("/x.v1.S/M", "UNKNOWN") and raised is error
    stream = await _wrapped(grpc.unary_stream_rpc_method_handler(failing_stream))
    sent = []
    with structlog.testing.capture_logs() as logs:
        with pytest.raises(RuntimeError) as raised_by_stream:
            async for message in stream.unary_stream(b"", _Context()):
                sent.append(message)
    assert sent == [b"first"] and raised_by_stream.value is error
    assert [(e["code"], e["messages"]) for e in logs if e["event"] == "rpc"] == [("UNKNOWN", 1)]


@run
async def test_without_a_send_limit_responses_and_stream_messages_go_unchecked():
    """``max_send_bytes`` 0 (the interceptor's default) checks no size: a response and every
    message of a stream are passed on as the handler made them."""

    async def answer(request, context):
        return b"response"

    async def messages(request, context):
        yield b"first"
        yield b"second"

    line, raised = await _rpc_line_of(answer, _Context())
    assert (line["code"], raised) == ("OK", None)
    # nothing noted: the fields not known are left out, not written empty
    assert sorted(line) == ["code", "duration_ms", "event", "log_level", "method", "request_id"]
    stream = await _wrapped(grpc.unary_stream_rpc_method_handler(messages))
    with structlog.testing.capture_logs() as logs:
        sent = [m async for m in stream.unary_stream(b"", _Context())]
    assert sent == [b"first", b"second"]
    assert [(e["code"], e["messages"]) for e in logs if e["event"] == "rpc"] == [("OK", 2)]


@run
async def test_a_handler_that_sets_its_code_and_returns_is_logged_with_that_code():
    """grpc lets a handler end its call by setting the status code and returning (as its sync
    health servicer answers NOT_FOUND): its line says the code the client got, for a unary
    call as for a stream, not OK."""

    async def not_found(request, context):
        context.set_code(grpc.StatusCode.NOT_FOUND)

    async def ended_early(request, context):
        yield b"first"
        context.set_code(grpc.StatusCode.FAILED_PRECONDITION)

    line, raised = await _rpc_line_of(not_found, _Context())
    assert (line["code"], raised) == ("NOT_FOUND", None)
    stream = await _wrapped(grpc.unary_stream_rpc_method_handler(ended_early))
    with structlog.testing.capture_logs() as logs:
        assert [m async for m in stream.unary_stream(b"", _Context())] == [b"first"]
    assert [(e["code"], e["messages"]) for e in logs if e["event"] == "rpc"] == [("FAILED_PRECONDITION", 1)]


@run
async def test_the_calls_fields_ride_on_its_events_and_its_line_names_them_once():
    """What a call learns of its match and seat is bound to structlog's contextvars with the
    method and request id, so an event the session layer logs on its behalf carries them; the
    rpc line itself names them as its own fields, without a bound copy such as ``rpc``."""

    async def joined(request, context):
        # as the servicer learns them, in any order; a note naming nothing changes nothing
        for learnt in ({"match_id": "m1"}, {"seq": 5}, {"seat": 2}, {}):
            current_rpc().note(**learnt)
        structlog.get_logger("test").info("seat_joined")

    with capture_logs_with_context() as logs:
        line, raised = await _rpc_line_of(joined, _Context(), logs=logs)
    [event] = [e for e in logs if e["event"] == "seat_joined"]
    assert raised is None and line["request_id"] == event["request_id"]
    assert {k: event[k] for k in ("rpc", "match_id", "seat")} == {"rpc": "/x.v1.S/M", "match_id": "m1", "seat": 2}
    assert "seq" not in event
    assert (line["match_id"], line["seat"], line["seq"]) == ("m1", 2, 5)
    assert sorted(line) == ["code", "duration_ms", "event", "log_level", "match_id", "method",
                            "request_id", "seat", "seq"]


@run
async def test_a_method_the_server_does_not_have_creates_no_series():
    """An unknown method (a typo, another version, anything a client makes up) is grpc's own
    UNIMPLEMENTED, and leaves the RPC metrics alone: its name as a ``method`` label would be a
    label set that grows with what clients send (docs/operations.md, Metrics: labels are
    bounded sets)."""
    metrics = Metrics()
    interceptor = ObservabilityInterceptor(metrics)

    async def continuation(details: object) -> None:
        return None  # grpc found no handler

    made_up = "/x.v1.S/MadeUp-7f3a"
    assert await interceptor.intercept_service(continuation, SimpleNamespace(method=made_up)) is None
    methods = {s.labels.get("method") for family in metrics.registry.collect() for s in family.samples}
    assert made_up not in methods, sorted(m for m in methods if m)


@run
async def test_each_handler_is_wrapped_once_and_streams_the_api_has_none_of_are_left_alone():
    """A method's handler is wrapped at its first call and the wrap reused (grpc looks the
    handler up for every call); a different handler for the method gets a wrap of its own.
    Client streaming, and a bidirectional handler that is no async generator, are not the
    API's: handed back as they are."""

    async def first(request, context):
        return b"first"

    async def second(request, context):
        return b"second"

    async def consume(requests, context):
        return b""

    interceptor = ObservabilityInterceptor(Metrics())
    handlers = {"first": grpc.unary_unary_rpc_method_handler(first),
                "second": grpc.unary_unary_rpc_method_handler(second)}

    async def intercepted(name: str) -> grpc.RpcMethodHandler:
        async def continuation(details: object) -> grpc.RpcMethodHandler:
            return handlers[name]
        return await interceptor.intercept_service(continuation, SimpleNamespace(method="/x.v1.S/M"))

    wrapped = await intercepted("first")
    assert await intercepted("first") is wrapped
    replaced = await intercepted("second")
    assert replaced is not wrapped and await intercepted("second") is replaced
    with structlog.testing.capture_logs():
        assert await replaced.unary_unary(b"", _Context()) == b"second"
    for other in (grpc.stream_unary_rpc_method_handler(consume), grpc.stream_stream_rpc_method_handler(consume)):
        assert await _wrapped(other) is other


@run
async def test_a_stream_written_by_its_handler_has_no_response_to_hold_to_the_send_limit():
    """A server stream whose handler writes its messages itself (grpc's health Watch) returns
    nothing once it ends: under a send limit that is no response to measure, and the call
    ends OK."""
    written = []

    async def watch(request, context):
        written.append(b"SERVING")

    handler = await _wrapped(grpc.unary_stream_rpc_method_handler(watch), max_send_bytes=1024)
    with structlog.testing.capture_logs() as logs:
        assert await handler.unary_stream(b"", _Context()) is None
    assert written == [b"SERVING"]
    assert [e["code"] for e in logs if e["event"] == "rpc"] == ["OK"]


@run
async def test_a_stream_cancelled_or_closed_under_its_handler_is_logged_cancelled_and_ends():
    """grpc cancels a stream's task when its client goes away, or closes the generator: either
    way the line says CANCELLED with the messages sent so far, and the cancellation is not
    swallowed (a swallowed one would end the stream as if it had finished)."""

    async def cancelled(request, context):
        yield b"first"
        raise asyncio.CancelledError

    async def endless(request, context):
        while True:
            yield b"again"

    with structlog.testing.capture_logs() as logs:
        stream = (await _wrapped(grpc.unary_stream_rpc_method_handler(cancelled))).unary_stream(b"", _Context())
        assert await stream.__anext__() == b"first"
        with pytest.raises(asyncio.CancelledError):
            await stream.__anext__()
        closed = (await _wrapped(grpc.unary_stream_rpc_method_handler(endless))).unary_stream(b"", _Context())
        assert [await closed.__anext__() for _ in range(3)] == [b"again"] * 3
        await closed.aclose()
    assert [(e["code"], e["messages"]) for e in logs if e["event"] == "rpc"] == [("CANCELLED", 1), ("CANCELLED", 2)]


class _ContextWithoutState(_Context):
    """A context whose deadline and code cannot be read (a servicer context other than
    grpc.aio's, which has both)."""

    def time_remaining(self) -> float | None:
        raise NotImplementedError

    def code(self) -> grpc.StatusCode | None:
        raise NotImplementedError


@run
async def test_a_context_that_cannot_say_its_deadline_or_code_changes_no_answer():
    """Observing a call never changes its answer: a context that cannot tell its deadline or
    its code leaves the response, the exception and the cancellation as the handler made
    them, and the line says what can be known (CANCELLED, UNKNOWN, OK)."""
    error = RuntimeError("boom")

    async def cancelled(request, context):
        raise asyncio.CancelledError

    async def failing(request, context):
        raise error

    async def answer(request, context):
        return b"response"

    outcomes = [await _rpc_line_of(behavior, _ContextWithoutState()) for behavior in (cancelled, failing, answer)]
    assert [line["code"] for line, _ in outcomes] == ["CANCELLED", "UNKNOWN", "OK"]
    assert type(outcomes[0][1]) is asyncio.CancelledError and outcomes[1][1] is error and outcomes[2][1] is None


@run
async def test_the_code_the_servicer_noted_is_the_lines_whatever_the_context_says():
    """The servicer notes the code of its error table before it aborts: that code is the
    line's, read from the RPC context rather than from grpc's state of the call."""

    async def refused(request, context):
        rpc = current_rpc()
        rpc.code, rpc.reason = "FAILED_PRECONDITION", "MATCH_NOT_ACTIVE"
        raise RuntimeError("aborted")

    for said in (None, grpc.StatusCode.UNKNOWN):  # grpc's own code for what was raised
        context = _Context()
        context.status = said
        line, raised = await _rpc_line_of(refused, context)
        assert (line["code"], line["reason"], type(raised)) == ("FAILED_PRECONDITION", "MATCH_NOT_ACTIVE", RuntimeError)


@run
async def test_request_bytes_that_do_not_parse_reach_the_handler_as_undecodable():
    """The interceptor swaps a method's request parser for one that never raises: bytes that
    parse are the message; bytes that do not are an Undecodable naming the parser's exception,
    or JSON for a JSON object (white space before its brace allowed), which the wrappers then
    refuse with the message that says so."""

    async def echo(request, context):
        return request

    wrapped = await _wrapped(grpc.unary_unary_rpc_method_handler(
        echo, request_deserializer=lambda data: data.decode("ascii")))
    parse = wrapped.request_deserializer
    assert parse(b"plain") == "plain"
    for data, error in ((b"\xff{", "UnicodeDecodeError"), (b' \n{"matchId": "\xff"}', "JSON"),
                        (b"[\xff]", "UnicodeDecodeError")):
        undecodable = parse(data)
        assert (type(undecodable).__name__, undecodable.error) == ("Undecodable", error), data


class _AbortingContext(_Context):
    """A context that carries the caller's metadata and records the status it is aborted with."""

    def __init__(self, metadata: tuple = ()) -> None:
        super().__init__()
        self.metadata = metadata
        self.aborted: grpc.Status | None = None

    def invocation_metadata(self) -> tuple:
        return self.metadata

    async def abort_with_status(self, status: grpc.Status) -> None:
        self.aborted = status
        raise grpc.aio.AbortError()


@run
async def test_a_bidirectional_stream_ends_malformed_request_at_the_first_message_that_does_not_parse():
    """Server reflection, the one bidirectional stream, is not observed, but a request message
    that does not parse ends it INVALID_ARGUMENT (MALFORMED_REQUEST) with the caller's request
    id, as the API's calls are refused; the messages before it reach the handler as parsed."""
    seen = []

    async def reflect(requests, context):
        async for request in requests:
            seen.append(request)
            yield request.upper()

    handler = await _wrapped(grpc.stream_stream_rpc_method_handler(
        reflect, request_deserializer=lambda data: data.decode("ascii")))
    parse = handler.request_deserializer

    async def requests():
        for data in (b"list", b"\xff", b"after"):
            yield parse(data)

    context = _AbortingContext((("x-request-id", "web-7"),))
    answers = []
    with pytest.raises(grpc.aio.AbortError):
        async for answer in handler.stream_stream(requests(), context):
            answers.append(answer)
    assert (seen, answers) == (["list"], ["LIST"])
    assert context.aborted.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid message of this method" in context.aborted.details
    (blob,) = [v for k, v in context.aborted.trailing_metadata if k == "grpc-status-details-bin"]
    info, request_info = (error_details_pb2.ErrorInfo(), error_details_pb2.RequestInfo())
    first, last = status_pb2.Status.FromString(blob).details
    assert first.Unpack(info) and last.Unpack(request_info)
    assert (info.reason, request_info.request_id) == ("MALFORMED_REQUEST", "web-7")


def test_a_request_id_is_drawn_for_a_call_without_metadata_or_with_a_value_that_is_not_text():
    """request_id reads what a context says of its metadata: nothing at all (None) or an
    ``x-request-id`` that is not text (bytes, as a binary header's value is) is no usable id,
    and the call gets one drawn here (16 hex digits) rather than an error."""
    assert request_id((("x-request-id", "web-42"),)) == "web-42"
    for metadata in (None, (("x-request-id", b"web-42"),)):
        assert re.fullmatch("[0-9a-f]{16}", request_id(metadata)), metadata


def test_a_drawn_request_id_is_16_hex_digits_all_drawn():
    """A drawn request id is 16 hex digits drawn here (docs/operations.md: "else 16 hex digits
    the engine draws"), 64 bits that tell calls apart in the log: not a shorter draw padded
    with zeros, whose leading digits would be the same for every call."""
    drawn = {request_id(()) for _ in range(64)}
    assert len(drawn) == 64
    assert all(re.fullmatch("[0-9a-f]{16}", rid) for rid in drawn)
    assert len({rid[:8] for rid in drawn}) > 1 and len({rid[0] for rid in drawn}) > 1


@run
async def test_the_interceptors_own_refusals_note_their_code_and_reason_for_the_line():
    """The calls the interceptor itself refuses, a request that does not parse and a response
    over the send limit, note their code and reason as the servicer does (docs/api.md:
    INVALID_ARGUMENT MALFORMED_REQUEST, RESOURCE_EXHAUSTED RESPONSE_TOO_LARGE with ``size``
    and ``limit``): the line says them, whatever grpc's state of the call says."""

    async def answer(request, context):
        return b"x" * 11

    handler = await _wrapped(grpc.unary_unary_rpc_method_handler(
        answer, request_deserializer=lambda data: data.decode("ascii")), max_send_bytes=10)
    seen = []
    for data in (b"\xff", b"fits"):
        context = _AbortingContext((("x-request-id", "web-9"),))
        with structlog.testing.capture_logs() as logs:
            with pytest.raises(grpc.aio.AbortError):
                await handler.unary_unary(handler.request_deserializer(data), context)
        [line] = [e for e in logs if e["event"] == "rpc"]
        (blob,) = [v for k, v in context.aborted.trailing_metadata if k == "grpc-status-details-bin"]
        info = error_details_pb2.ErrorInfo()
        assert status_pb2.Status.FromString(blob).details[0].Unpack(info)
        seen.append((line["code"], line["reason"], context.aborted.code, info.reason, dict(info.metadata)))
    assert seen == [("INVALID_ARGUMENT", "MALFORMED_REQUEST", grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_REQUEST", {}),
                    ("RESOURCE_EXHAUSTED", "RESPONSE_TOO_LARGE", grpc.StatusCode.RESOURCE_EXHAUSTED,
                     "RESPONSE_TOO_LARGE", {"size": "11", "limit": "10"})]
