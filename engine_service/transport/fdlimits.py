"""File descriptors: the soft limit raised at start, and a metrics endpoint that waits when
they run out instead of spinning, and closes connections that send nothing.

Every client connection holds one file descriptor for as long as it is open (a player's
``WatchMatch`` stream: the whole match), so the process's ``RLIMIT_NOFILE`` is the most
connections the engine can hold. Many hosts start a process with a soft limit of 1024 and a
far higher hard limit (systemd: 1024 / 524288; recent Docker and containerd: the same), which
would stop the engine near a thousand players although nothing else limits it there.
:func:`raise_open_files_limit` lifts the soft limit to the hard one at start, as Go's runtime
does for every program, and says what it got.

When the limit is reached all the same, gRPC's listener leaves new connections in the
kernel's queue and tries ``accept`` again once a second (the connections already open are
served as before); it logs ``File descriptor limit reached. Retrying.`` on stderr, a plain
line outside the JSON log. prometheus_client's HTTP server, though, is a ``socketserver``
whose ``accept`` failure is ignored and the still-readable listening socket polled again at
once: one waiting scrape made it spin a whole core (3.99 s of CPU in 4 s) under the GIL,
every match slower, for as long as no descriptor came free.
:func:`start_metrics_server` serves the same registry with an accept that pauses
:data:`ACCEPT_RETRY_S` after such a failure and says so in the log (``open_files_exhausted``
once per episode, ``open_files_available`` when an accept succeeds again).
"""

from __future__ import annotations

import errno
import io
import resource
import selectors
import socket
import sys
import threading
import time
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import structlog
from prometheus_client import CollectorRegistry, make_wsgi_app

log = structlog.get_logger("cardgames.server")

#: Below this many descriptors the engine warns at start: about one per connection, a few
#: dozen for itself (the database, bot workers' pipes, the listeners).
LOW_OPEN_FILES = 4096
#: How long the metrics endpoint waits before it accepts again after running out of
#: descriptors (gRPC's listener waits 1 s).
ACCEPT_RETRY_S = 0.5
#: How long the metrics endpoint gives a connection to send its whole request (the request line
#: and headers, counted from the accept) before closing it. prometheus_client's handler waited
#: for ever, holding a thread and a descriptor per connection that sent nothing: the port
#: listens on every address by default, so anyone who could reach it could take every
#: descriptor the gRPC port needs. A timeout per read was not enough: a client sending a byte
#: every few seconds (a slowloris) kept its connection for days. A scrape sends its request at
#: once.
METRICS_READ_TIMEOUT_S = 10.0
#: The most connections the metrics endpoint serves at once; more are closed as they are
#: accepted. Each holds a thread and a descriptor while it lasts: without a bound, a burst of
#: connections (each within its deadline) still took as many as its sender liked. A
#: Prometheus server scrapes over one connection at a time.
MAX_METRICS_CONNECTIONS = 32
#: accept(2) errors that mean "no descriptor (or kernel memory) for a new socket": the
#: listening socket stays readable, so trying again at once only spins.
OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def raise_open_files_limit() -> tuple[int, int]:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit; return the (soft, hard) in force.

    A hard limit of "unlimited" is not a number the kernel accepts as a soft limit (Linux
    caps descriptors at ``fs.nr_open``, macOS at ``kern.maxfilesperproc``): the soft limit is
    then left as it is. A limit the kernel refuses leaves it as it was too."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft, hard


def too_few_open_files(soft: int) -> bool:
    """Whether a soft limit leaves fewer than :data:`LOW_OPEN_FILES` descriptors ("unlimited"
    is RLIM_INFINITY, -1 on Linux: not a low number)."""
    return soft != resource.RLIM_INFINITY and soft < LOW_OPEN_FILES


def open_files_fields(soft: int, hard: int) -> dict[str, Any]:
    """The limits as log fields (-1: unlimited)."""
    unlimited = resource.RLIM_INFINITY
    return {"max_open_files": -1 if soft == unlimited else soft,
            "max_open_files_hard": -1 if hard == unlimited else hard}


class _DeadlineReader(io.RawIOBase):
    """A connection's reading side (``raw``, the socket's reader) that gives up at a deadline
    (monotonic seconds) for all its reads together, not after one timeout per read
    (:data:`METRICS_READ_TIMEOUT_S`): each read waits at most the time left, and none starts
    once it is gone (TimeoutError, which the server takes for a quiet end)."""

    def __init__(self, raw: Any, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._raw = raw
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int | None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not come in time")
        self._sock.settimeout(left)
        return self._raw.readinto(b)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()  # the socket's own reader: lets the socket close
        super().close()


class _SilentHandler(WSGIRequestHandler):
    """No access log line per scrape (prometheus_client's handler does the same), and a
    connection whose request has not wholly come within ``timeout`` seconds of its accept is
    closed (:class:`_DeadlineReader`)."""

    timeout = METRICS_READ_TIMEOUT_S

    def setup(self) -> None:
        super().setup()
        deadline = time.monotonic() + self.timeout
        self.rfile = io.BufferedReader(_DeadlineReader(self.rfile.detach(), self.connection, deadline))

    def log_message(self, format: str, *args: Any) -> None:
        pass


class MetricsHttpServer(ThreadingMixIn, WSGIServer):
    """prometheus_client's threading WSGI server, with an accept that pauses when the process
    is out of descriptors (module docstring)."""

    daemon_threads = True  # a scrape in progress never holds the process at exit
    request_queue_size = 128  # socketserver's 5 made a burst of connections wait for SYN retries
    max_connections = MAX_METRICS_CONNECTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # written to by shutdown(): the serving loop's wait ends at once. Made first: a bind
        # that fails in socketserver's __init__ calls server_close(), which closes them
        self._wake, self._waker = socket.socketpair()
        super().__init__(*args, **kwargs)
        self._exhausted_since: float | None = None
        self._failed_accepts = 0
        self._stopping = threading.Event()
        self._loop_ended = threading.Event()
        self._slots = threading.BoundedSemaphore(self.max_connections)

    def serve_forever(self, poll_interval: float | None = None) -> None:
        """socketserver's loop, with the socket :meth:`shutdown` writes to among those it
        waits on: socketserver's looked for a stop request every ``poll_interval`` (0.5 s, then
        0.05 s here), and every engine's stop (its drain, a failed start) waited for the next
        look, 45 ms of its ~100 ms when idle. An idle endpoint no longer wakes at all."""
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                selector.register(self._wake, selectors.EVENT_READ)
                while not self._stopping.is_set():
                    ready = selector.select(poll_interval)
                    if self._stopping.is_set():
                        break
                    if any(key.fileobj is self for key, _ in ready):
                        self._handle_request_noblock()
                    self.service_actions()
        finally:
            self._loop_ended.set()

    def close(self) -> None:
        """Stop serving and let the port go (``shutdown()`` alone leaves the socket bound until
        the process exits: a successor given the database found the port still in use).
        Idempotent."""
        self.shutdown()
        self.server_close()

    def server_close(self) -> None:
        super().server_close()
        self._wake.close()
        self._waker.close()

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection on a thread of its own, or close it at once when
        ``max_connections`` are being served (:data:`MAX_METRICS_CONNECTIONS`)."""
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: nothing else will give the slot back
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            request = super().get_request()
        except OSError as exc:
            if exc.errno in OUT_OF_DESCRIPTORS:
                self._out_of_descriptors(exc)
            raise  # socketserver drops the attempt; the next poll tries again
        if self._exhausted_since is not None:
            log.info("open_files_available", port=self.server_port,
                     exhausted_s=round(time.monotonic() - self._exhausted_since, 1),
                     failed_accepts=self._failed_accepts)
            self._exhausted_since, self._failed_accepts = None, 0
        return request

    def _out_of_descriptors(self, exc: OSError) -> None:
        self._failed_accepts += 1
        if self._exhausted_since is None:
            self._exhausted_since = time.monotonic()
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            log.warning("open_files_exhausted", port=self.server_port, error=exc.strerror or str(exc),
                        **open_files_fields(soft, hard),
                        hint="every descriptor is in use (about one per client connection): "
                             "new gRPC connections and scrapes wait until some close")
        self._stopping.wait(ACCEPT_RETRY_S)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that timed out or went away ends quietly; anything else is one log
        line, not socketserver's traceback on stderr among the JSON lines."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (TimeoutError, ConnectionError)):
            return
        log.warning("metrics_request_failed", error=str(exc), error_type=type(exc).__name__)

    def shutdown(self) -> None:
        """Stop the serving loop (:meth:`serve_forever`, on another thread) and wait until it
        has ended. Idempotent; the loop cannot be started again."""
        self._stopping.set()  # a pause in progress does not hold the shutdown
        try:
            self._waker.send(b"\0")
        except OSError:  # closed (server_close: the loop has ended), or a byte is waiting already
            pass
        self._loop_ended.wait()


def start_metrics_server(port: int, addr: str, registry: CollectorRegistry, *,
                         read_timeout_s: float = METRICS_READ_TIMEOUT_S,
                         max_connections: int = MAX_METRICS_CONNECTIONS) -> MetricsHttpServer:
    """Serve ``registry`` at ``/metrics`` (any path, as prometheus_client does) on a daemon
    thread; ``server_port`` is the bound port, ``shutdown()`` stops it. OSError if the address
    cannot be bound. A connection is closed when its whole request has not come within
    ``read_timeout_s`` seconds (:data:`METRICS_READ_TIMEOUT_S`), and at once when
    ``max_connections`` are open already (:data:`MAX_METRICS_CONNECTIONS`).

    ``addr`` may be an IPv6 address in brackets, as ``--host`` takes it (its default is
    ``[::]``): getaddrinfo knows no brackets, and ``--metrics-host [::]`` failed with "Name or
    service not known" as if the port were the problem."""
    host = addr[1:-1] if addr.startswith("[") and addr.endswith("]") else addr
    try:
        family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                       flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise OSError(exc.errno, f"cannot resolve the metrics address {addr!r}: {exc.strerror}") from None

    connections = max_connections

    class Server(MetricsHttpServer):
        address_family = family
        max_connections = connections

    class Handler(_SilentHandler):
        timeout = read_timeout_s

    httpd = make_server(sockaddr[0], port, make_wsgi_app(registry), Server, handler_class=Handler)
    threading.Thread(target=httpd.serve_forever, name="metrics-http", daemon=True).start()
    return httpd
