"""The server's TLS certificate and key, read again when their files change.

Certificates are renewed while the engine runs: cert-manager rewrites a Kubernetes Secret's
files weeks before the old certificate expires, certbot and ACME clients replace theirs every
60 days. The files were read once at start, so the engine kept presenting the old certificate
until it expired and every client's handshake failed, unless someone restarted it (a drain,
with the one replica: every player reconnecting). gRPC's dynamic credentials ask for a
configuration at each new connection's handshake; :class:`CertificateFiles` answers with the
files' pair when they changed (a ``stat`` of each otherwise), so new connections get the new
certificate and open ones keep theirs.

A pair that does not load as a TLS server would load it (a certificate written before its
key, a key of another certificate, an unreadable file) is not taken: the engine serves on with
the pair it has, logs ``tls_reload_failed`` once for that state of the files, and takes the
files as soon as they make a pair. A pair taken is logged (``tls_certificate_reloaded``).
"""

from __future__ import annotations

import os
import ssl
import threading
from pathlib import Path

import grpc
import structlog

from ..bounded_read import PEM_LIMIT, read_named

log = structlog.get_logger("cardgames.server")

#: What identifies one state of a file: its inode, size and modification time. A renewal
#: renames a new file into place (a new inode) or rewrites it (a new mtime, mostly a new size).
_Stamp = tuple[int, int, int]


def _stamp(path: Path) -> _Stamp:
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


def _read(path: Path) -> bytes:
    """A PEM file, bounded (a renewal that put a huge file in place must not fill the memory);
    ValueError naming the file otherwise."""
    return read_named(path, PEM_LIMIT, pipes=False)  # UnreadableFile is a ValueError


def load_pair(cert: Path, key: Path) -> tuple[bytes, bytes]:
    """The PEM bytes of a certificate chain and its key, once Python's ssl module has loaded
    them as a TLS server does (ValueError saying why not). Read before and after the check,
    so that a file rewritten meanwhile is not taken half-checked."""
    before = _read(cert), _read(key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)

    def no_passphrase() -> bytes:
        raise ValueError("the private key is encrypted")

    try:
        context.load_cert_chain(cert, key, password=no_passphrase)
    except ssl.SSLError as exc:
        raise ValueError(f"not a usable certificate and private key ({exc.reason or exc})") from None
    except OSError as exc:
        # ssl's error names no file (its filename is None): read both again, and the one that
        # cannot be read is named as _read names it; both there again, one went for a moment
        for path in (cert, key):
            _read(path)
        raise ValueError(f"the files changed while they were read ({exc.strerror})") from None
    after = _read(cert), _read(key)
    if after != before:
        raise ValueError("the files changed while they were read")
    return before


class CertificateFiles:
    """The pair in force and the files' state it was read from (module docstring)."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.cert, self.key = cert, key
        self._lock = threading.Lock()  # gRPC calls fetch() from its own threads
        self._stamps = self._read_stamps()
        self._pair = load_pair(cert, key)  # at start, a bad pair is an error (settings.py)
        self._refused: tuple[_Stamp, _Stamp] | str | None = None  # the files' state refused

    def _read_stamps(self) -> tuple[_Stamp, _Stamp]:
        return _stamp(self.cert), _stamp(self.key)

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.dynamic_ssl_server_credentials(self._configuration(), self.fetch)

    def _configuration(self) -> grpc.ServerCertificateConfiguration:
        cert, key = self._pair
        return grpc.ssl_server_certificate_configuration([(key, cert)])

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """The configuration for a new connection: None (keep the one in force) unless the
        files changed and make a usable pair. Never raises: a failure keeps the pair in force.
        A state of the files already refused is not checked again at every handshake."""
        with self._lock:
            try:
                stamps: tuple[_Stamp, _Stamp] | str = self._read_stamps()
            except OSError as exc:  # a file removed for a moment while it is replaced
                error = f"cannot read {exc.filename}: {exc.strerror}"
                stamps = error  # another file missing (or another error) is another state
            if stamps == self._stamps or stamps == self._refused:
                return None
            if not isinstance(stamps, str):
                try:
                    pair = load_pair(self.cert, self.key)
                except ValueError as exc:
                    error = str(exc)
                else:
                    self._stamps, self._refused = stamps, None
                    if pair == self._pair:
                        return None  # the same files touched again
                    self._pair = pair
                    log.info("tls_certificate_reloaded", cert=str(self.cert), key=str(self.key))
                    return self._configuration()
            self._refused = stamps
            log.warning("tls_reload_failed", cert=str(self.cert), key=str(self.key), error=error,
                        note="new connections get the certificate in force until the files make "
                             "a usable pair")
            return None
