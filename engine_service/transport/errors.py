"""The one table mapping exceptions to gRPC status codes (ARCHITECTURE.md section 5).

=================================================  =====================  =====================
exception                                          status code            ErrorInfo reason
=================================================  =====================  =====================
rules MalformedAction, InvalidOptions,             INVALID_ARGUMENT       the rules' reason
InvalidDeck, UnknownGame, TranscriptError
rules IllegalAction, NotYourTurn, MatchOver,       FAILED_PRECONDITION    the rules' reason
DealRequired
session BadRequest                                 INVALID_ARGUMENT       BAD_REQUEST, ...
session MatchNotActive                             FAILED_PRECONDITION    MATCH_NOT_ACTIVE
session MatchNotOver (RevealDeals)                 FAILED_PRECONDITION    MATCH_NOT_OVER
session StaleSequence (+ the caller's View)        ABORTED                STALE_SEQUENCE
session MatchNotFound                              NOT_FOUND              MATCH_NOT_FOUND
session Unauthenticated / PermissionDenied         UNAUTHENTICATED /      MISSING_OR_BAD_TOKEN /
                                                   PERMISSION_DENIED      NOT_ALLOWED, ...
session SeatTaken                                  ALREADY_EXISTS         SEAT_TAKEN
session LimitExceeded                              RESOURCE_EXHAUSTED     LIMIT_EXCEEDED
transport RateLimited (+ RetryInfo)                RESOURCE_EXHAUSTED     RATE_LIMITED
session Unavailable (draining)                     UNAVAILABLE            DRAINING
OSError EMFILE / ENFILE (no file descriptor free)  UNAVAILABLE            OUT_OF_FILE_DESCRIPTORS
anything else                                      INTERNAL               INTERNAL (logged with
                                                                          its traceback)
=================================================  =====================  =====================

A session error names its own code (``SessionError.code``); a rules error is mapped by class
here. Every status carries a ``google.rpc.ErrorInfo`` (domain ``cardgames.v1``) whose
``reason`` a client can switch on and whose ``metadata`` holds the error's public details
(the option name, the seat to act...). A RATE_LIMITED status also carries a
``google.rpc.RetryInfo`` with the delay until the caller's bucket has a token (ratelimit.py):
a client that waits that long is served. Every status ends with a ``google.rpc.RequestInfo``
holding the call's request id (interceptors.py), which its log lines carry: a user quotes it,
the operator finds the call. Messages are written by the layers that know what the
caller may know (rules messages name only the caller's own action, NOTATION-safe); an
unexpected exception's text never reaches the client.
"""

from __future__ import annotations

import errno
import math
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from ..rules import errors as rules_errors
from ..sessions import api

DOMAIN = "cardgames.v1"
OUT_OF_FILE_DESCRIPTORS = "OUT_OF_FILE_DESCRIPTORS"
#: errno values of "no file descriptor free": the process's limit (EMFILE), the system's (ENFILE).
OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})

_RULES_CODES: dict[type[rules_errors.RulesError], grpc.StatusCode] = {
    rules_errors.MalformedAction: grpc.StatusCode.INVALID_ARGUMENT,
    rules_errors.InvalidOptions: grpc.StatusCode.INVALID_ARGUMENT,
    rules_errors.InvalidDeck: grpc.StatusCode.INVALID_ARGUMENT,
    rules_errors.UnknownGame: grpc.StatusCode.INVALID_ARGUMENT,
    rules_errors.TranscriptError: grpc.StatusCode.INVALID_ARGUMENT,
    rules_errors.IllegalAction: grpc.StatusCode.FAILED_PRECONDITION,
    rules_errors.NotYourTurn: grpc.StatusCode.FAILED_PRECONDITION,
    rules_errors.MatchOver: grpc.StatusCode.FAILED_PRECONDITION,
    rules_errors.DealRequired: grpc.StatusCode.FAILED_PRECONDITION,
}


class RateLimited(api.SessionError):
    """The caller's request-rate bucket is empty (transport/ratelimit.py): the call was refused
    before it reached the session layer, so it changed nothing. ``retry_after_s`` is the
    time until a token is available, sent as a ``google.rpc.RetryInfo``."""

    code, reason = "RESOURCE_EXHAUSTED", "RATE_LIMITED"

    def __init__(self, retry_after_s: float, key_kind: str) -> None:
        super().__init__(f"too many requests ({key_kind} rate limit): retry later",
                         key_kind=key_kind)
        self.retry_after_s = retry_after_s


def retry_info(delay_s: float) -> error_details_pb2.RetryInfo:
    """A RetryInfo of ``delay_s`` rounded up to the millisecond: waiting the announced delay
    is always enough (a delay rounded down could arrive a hair before the token)."""
    delay = duration_pb2.Duration()
    delay.FromMilliseconds(max(1, math.ceil(delay_s * 1000)))
    return error_details_pb2.RetryInfo(retry_delay=delay)


#: Metadata values longer than this are cut (statuses travel in trailers: keep them small).
_MAX_METADATA_CHARS = 200
#: A status message goes in the response's trailing metadata (twice: grpc-message and the
#: google.rpc.Status), where clients allow 8-16 KB in all: a message quoting a long request
#: field is cut so that the client gets the error, not a metadata-size failure.
_MAX_MESSAGE_CHARS = 500


@dataclass(frozen=True)
class MappedError:
    """What the client will see: code, message, reason, metadata (and the detail messages)."""

    code: grpc.StatusCode
    message: str
    reason: str
    metadata: dict[str, str]
    expected: bool  # False: an internal error that must be logged with its traceback
    details: tuple[Any, ...] = ()  # extra protobuf messages packed as status details


def classify(exc: BaseException) -> MappedError:
    """Map an exception to what the client sees (the table above)."""
    if isinstance(exc, api.SessionError):
        code = getattr(grpc.StatusCode, exc.code, None)
        if code is None or code is grpc.StatusCode.OK:
            return _internal()
        extra: tuple[Any, ...] = ()
        if isinstance(exc, api.StaleSequence) and exc.current is not None:
            from .codec import view_message

            extra = (view_message(exc.current),)
        elif isinstance(exc, RateLimited):
            extra = (retry_info(exc.retry_after_s),)
        return MappedError(code, exc.message, exc.reason, _metadata(exc.metadata),
                           code is not grpc.StatusCode.INTERNAL, extra)
    if isinstance(exc, OSError) and exc.errno in OUT_OF_DESCRIPTORS:
        # the process is out of file descriptors (every connection holds one): a call that
        # needed one (a module imported on first use, a file) is retryable, not a bug
        return MappedError(grpc.StatusCode.UNAVAILABLE, "the server has no file descriptor free "
                           "for this call; try again", OUT_OF_FILE_DESCRIPTORS, {}, True)
    if isinstance(exc, rules_errors.RulesError):
        for cls in type(exc).__mro__:
            if cls in _RULES_CODES:
                return MappedError(_RULES_CODES[cls], exc.message, exc.reason,
                                   _metadata(exc.details), True)
        return _internal()
    return _internal()


def _internal() -> MappedError:
    return MappedError(grpc.StatusCode.INTERNAL, "internal error", "INTERNAL", {}, False)


def _metadata(values: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v)[:_MAX_METADATA_CHARS] for k, v in (values or {}).items()}


def to_status(mapped: MappedError, request_id: str = "") -> grpc.Status:
    """A grpc.Status with a google.rpc.Status (ErrorInfo first, then the extra details, then
    a google.rpc.RequestInfo with ``request_id``, the call's id in the server's log lines)."""
    info = error_details_pb2.ErrorInfo(reason=mapped.reason, domain=DOMAIN,
                                       metadata=mapped.metadata)
    messages: tuple[Any, ...] = (info, *mapped.details)
    if request_id:
        messages += (error_details_pb2.RequestInfo(request_id=request_id),)
    details = []
    for message in messages:
        packed = any_pb2.Any()
        packed.Pack(message)
        details.append(packed)
    message = mapped.message
    if len(message) > _MAX_MESSAGE_CHARS:
        message = message[:_MAX_MESSAGE_CHARS - 3] + "..."
    st = status_pb2.Status(code=getattr(code_pb2, mapped.code.name), message=message,
                           details=details)
    return rpc_status.to_status(st)
