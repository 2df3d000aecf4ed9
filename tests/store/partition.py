"""A TCP proxy between a store and its PostgreSQL server that can play a network partition.

:meth:`PartitionProxy.blackhole` stops forwarding bytes in both directions and keeps every
socket open (no FIN, no RST): each side's kernel goes on acknowledging what its peer sends, the
bytes wait in the proxy's kernel buffers, and a connection opened meanwhile waits unanswered
(its upstream connection is made only at the heal), as across a cut link that drops every
packet. The partition ends in one of two ways:

* :meth:`heal`: forwarding resumes, the buffered bytes (a FIN too) delivered late, as TCP's
  retransmissions deliver them once the link is back, for the connections neither end gave up;
* :meth:`reset`: every connection through the proxy is reset (RST both ways, what either end
  gets when it reaches a peer that forgot the connection), then forwarding resumes.

What the proxy cannot play is the server's own TCP timers: its kernel answers the server's
keepalive probes, so the server never ends a session by itself. :meth:`expire_server_side`
does what the server's keepalives (or ``tcp_user_timeout``) do at the end of their window in a
real partition: the server's end of every connection is reset, the engine's end left
blackholed. :meth:`forget_engine_side` does the opposite: the engine's kernel gave up on its
connections (or the engine stopped) while the server's still holds its sessions, which then
outlive the heal. (A proxy or load balancer between engine and server hides the engine's end from
the server's keepalives in production too: there only the proxy's timeouts end a session.)
"""

from __future__ import annotations

import select
import socket
import struct
import threading


def _rst(sock: socket.socket) -> None:
    """Close ``sock`` with a reset (SO_LINGER 0), not a FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class _Pair:
    __slots__ = ("client", "server", "expired", "eof")

    def __init__(self, client: socket.socket) -> None:
        self.client = client
        self.server: socket.socket | None = None
        self.expired = False  # the server's end was reset: the engine's is reset at the heal
        self.eof: set[socket.socket] = set()  # the ends whose EOF has been passed on


class PartitionProxy:
    """Listens on 127.0.0.1 (``port``) and forwards each connection to ``upstream``; see the
    module docstring. ``trip``: bytes that, once forwarded client to server, start a blackhole
    at once (:meth:`blackhole_after`): the server gets that message, its answer is held."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._lock = threading.Lock()
        self._forwarding = True
        self._pairs: list[_Pair] = []
        self._stranded: list[socket.socket] = []  # server ends kept open (forget_engine_side)
        self._trip: bytes | None = None
        self._closed = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._threads = [threading.Thread(target=self._accept, daemon=True, name="proxy-accept"),
                         threading.Thread(target=self._pump, daemon=True, name="proxy-pump")]
        for t in self._threads:
            t.start()

    def url(self, user: str = "postgres", dbname: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"

    # ---- the partition ---------------------------------------------------------------------

    def blackhole(self) -> None:
        """Stop forwarding, both ways; no byte crosses once this returns."""
        with self._lock:
            self._forwarding = False

    def blackhole_after(self, marker: bytes) -> None:
        """Blackhole right after the first client-to-server chunk containing ``marker`` has
        been forwarded (the server acts on it, its answer is held)."""
        with self._lock:
            self._trip = marker

    @property
    def forwarding(self) -> bool:
        return self._forwarding

    def heal(self) -> None:
        """Resume forwarding: the held bytes are delivered, the connections opened meanwhile
        are made upstream."""
        with self._lock:
            self._forwarding = True
            for pair in self._pairs:
                if pair.server is None:
                    self._connect(pair)

    def reset(self) -> None:
        """Reset every connection (both ends), then resume forwarding."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
            for pair in pairs:
                _rst(pair.client)
                if pair.server is not None:
                    _rst(pair.server)
            self._forwarding = True

    def expire_server_side(self) -> None:
        """The server's end of every connection reset (its keepalives gave up); the engine's
        end stays open and blackholed, and is reset when the partition ends (the server's
        kernel answers its next packet with a reset)."""
        with self._lock:
            for pair in self._pairs:
                if pair.server is not None:
                    _rst(pair.server)
                    pair.server = None
                    pair.expired = True

    def forget_engine_side(self) -> None:
        """The engine's end of every connection reset, the server's end kept open and silent:
        what the server sees once the engine's kernel has given up on a connection it could not
        close across the partition (the engine stopped, or it closed the connection: its FIN
        never arrived), while the server's kernel has not (its keepalives not run out yet, or
        answered by a proxy in between). The server's ends stay until :meth:`close`."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
            for pair in pairs:
                _rst(pair.client)
                if pair.server is not None:
                    self._stranded.append(pair.server)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pairs, self._pairs = self._pairs, []
            for pair in pairs:
                pair.client.close()
                if pair.server is not None:
                    pair.server.close()
            for sock in self._stranded:
                sock.close()
        self._listener.close()
        for t in self._threads:
            t.join(timeout=2)

    def __enter__(self) -> "PartitionProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- plumbing ----------------------------------------------------------------------------

    def _connect(self, pair: _Pair) -> None:
        """Under the lock: ``pair``'s upstream connection (or its end: the upstream refused)."""
        if pair.expired:  # its server end expired: the engine's end gets a reset now
            _rst(pair.client)
            self._pairs.remove(pair)
            return
        try:
            pair.server = socket.create_connection(self.upstream, timeout=5)
            pair.server.settimeout(None)
        except OSError:
            _rst(pair.client)
            self._pairs.remove(pair)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    client.close()
                    return
                pair = _Pair(client)
                self._pairs.append(pair)
                if self._forwarding:
                    self._connect(pair)

    def _pump(self) -> None:
        """One thread moves every connection's bytes, under the lock, only while forwarding."""
        while not self._closed:
            with self._lock:
                if not self._forwarding:
                    ends = {}
                else:
                    ends = {}
                    for pair in self._pairs:
                        if pair.server is None:
                            continue
                        for src, dst, upward in ((pair.client, pair.server, True),
                                                 (pair.server, pair.client, False)):
                            if src not in pair.eof:
                                ends[src] = (pair, dst, upward)
            if not ends:
                select.select([], [], [], 0.02)
                continue
            try:
                readable, _, _ = select.select(list(ends), [], [], 0.02)
            except (OSError, ValueError):  # a socket closed meanwhile
                continue
            for sock in readable:
                pair, dst, upward = ends[sock]
                with self._lock:
                    if not self._forwarding or pair not in self._pairs or pair.server is None:
                        continue
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        data = None
                    if data is None:  # reset: the other side gets one too
                        self._drop(pair)
                        continue
                    try:
                        if not data:
                            dst.shutdown(socket.SHUT_WR)
                            pair.eof.add(sock)
                            if len(pair.eof) == 2:
                                self._drop(pair, reset=False)
                            continue
                        dst.sendall(data)
                    except OSError:
                        self._drop(pair)
                        continue
                    if upward and self._trip is not None and self._trip in data:
                        self._trip = None
                        self._forwarding = False

    def _drop(self, pair: _Pair, reset: bool = True) -> None:
        if pair in self._pairs:
            self._pairs.remove(pair)
        for sock in (pair.client, pair.server):
            if sock is not None:
                (_rst if reset else socket.socket.close)(sock)
