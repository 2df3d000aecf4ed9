"""engine_service/bounded_read.py on its own: the limit's edge, pipes (refused where the file
is read again by name, read whole from a slow writer elsewhere), and the one line each
command shows of a file it cannot use. The commands' tests (tests/transport/test_settings.py,
tests/rules/test_transcripts_mutations.py, tests/clients/) reach it through one flag each."""

from __future__ import annotations

import fcntl
import os
import stat
import struct
import termios
import threading
import time

import pytest

from engine_service.bounded_read import FileRefused, UnreadableFile, _kind, read_bounded, read_named


def test_a_file_of_the_limit_is_read_and_one_byte_more_is_refused(tmp_path):
    path = tmp_path / "token"
    path.write_bytes(b"x" * 100)
    assert read_bounded(path, 100) == b"x" * 100
    with pytest.raises(FileRefused, match="^larger than 99 bytes$"):
        read_bounded(path, 99)


def _fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def _in_a_thread(call):
    """``call()``'s result or exception, with a hang guard (opening a named pipe may wait for
    a writer for ever)."""
    outcome = []

    def run():
        try:
            outcome.append(("value", call()))
        except Exception as exc:
            outcome.append(("error", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    assert outcome, "still waiting after 30 s"
    return outcome[0]


def test_a_pipe_is_refused_where_the_file_is_read_again_by_name(tmp_path):
    """``pipes=False`` (serve's --tls-cert and --tls-key: grpc reads the files again): a named
    pipe would be empty, or block, the second time. Refused before it is read, without
    waiting for a writer."""
    kind, error = _in_a_thread(lambda: read_bounded(_fifo(tmp_path), 100, pipes=False))
    assert kind == "error" and isinstance(error, FileRefused), error
    assert str(error) == "a pipe, not a regular file"


def _unread(fd: int) -> int:
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def test_a_pipe_whose_writer_is_slow_is_read_to_its_end(tmp_path):
    """``--ca <(kubectl get secret ...)``: the writer may still be writing when the file is
    read. The read waits for the rest, up to the writer's end, instead of stopping at what was
    there (a certificate cut short)."""
    path = _fifo(tmp_path)
    first, rest = b"-----BEGIN CERTIFICATE-----\n", b"MIIB...\n-----END CERTIFICATE-----\n"
    keeper = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer open the pipe now
    write = os.open(path, os.O_WRONLY)
    os.write(write, first)

    def writer():
        try:
            deadline = time.monotonic() + 30  # hang guard
            while _unread(write) and time.monotonic() < deadline:
                time.sleep(0.001)  # until the reader has taken the first part
            os.write(write, rest)
        finally:
            os.close(write)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        assert _in_a_thread(lambda: read_bounded(path, 1000)) == ("value", first + rest)
    finally:
        thread.join(30)
        os.close(keeper)


def test_a_pipe_longer_than_the_limit_is_refused_without_waiting_for_its_end(tmp_path):
    """``--token-file <(yes)``, a writer that never stops: the pipe is read up to its limit
    and one byte more and refused there, not read on to an end that never comes (the memory
    filled, or the command waited for ever). The writer here is still open when it is refused."""
    path = _fifo(tmp_path)
    keeper = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer open the pipe now
    write = os.open(path, os.O_WRONLY)
    try:
        os.write(write, b"y" * 101)
        kind, error = _in_a_thread(lambda: read_bounded(path, 100))
    finally:
        os.close(write)
        os.close(keeper)
    assert kind == "error" and isinstance(error, FileRefused), error
    assert str(error) == "larger than 100 bytes"


def test_read_named_names_the_file_and_the_reason(tmp_path):
    missing, big = tmp_path / "missing.pem", tmp_path / "big.pem"
    big.write_bytes(b"x" * 11)
    for path, what, says in ((missing, "the CA file", f"cannot read the CA file {missing}: No such file or directory"),
                             (missing, "", f"cannot read {missing}: No such file or directory"),
                             (big, "the CA file", f"the CA file {big}: larger than 10 bytes"),
                             (tmp_path, "", f"{tmp_path}: a directory, not a regular file")):
        with pytest.raises(UnreadableFile) as info:
            read_named(path, 10, what)
        assert str(info.value) == says
    assert read_named(big, 11, "the CA file") == b"x" * 11
    fifo = _fifo(tmp_path)  # refused where the file is read again (tls.py: serve's pair)
    kind, error = _in_a_thread(lambda: read_named(fifo, 10, "the certificate", pipes=False))
    assert kind == "error" and str(error) == f"the certificate {fifo}: a pipe, not a regular file"


def test_a_file_that_cannot_be_opened_for_any_reason_is_one_line_naming_it(tmp_path):
    """Not only a missing file: a symbolic link that loops, or a socket (which Linux will not
    open), is the same one line, ``cannot read WHAT PATH: <the system's reason>``, not a
    traceback of the OSError."""
    import socket

    loop = tmp_path / "loop.pem"
    loop.symlink_to(loop)
    sock_path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(sock_path))
        for path, reason in ((loop, "Too many levels of symbolic links"), (sock_path, "No such device or address")):
            with pytest.raises(UnreadableFile) as info:
                read_named(path, 10, "the CA file")
            assert str(info.value) == f"cannot read the CA file {path}: {reason}"
    finally:
        server.close()


def test_no_descriptor_is_left_open(tmp_path):
    """serve reads its certificate pair again and again (tls.py's reloads): a descriptor left
    per read, or per refusal, would run the process out of them."""
    path = tmp_path / "cert.pem"
    path.write_bytes(b"x" * 10)
    before = sorted(os.listdir("/proc/self/fd"))
    assert read_bounded(path, 10) == b"x" * 10
    for refused in (path, tmp_path, _fifo(tmp_path)):
        with pytest.raises(FileRefused):
            read_bounded(refused, 9, pipes=False)
    assert sorted(os.listdir("/proc/self/fd")) == before


def test_each_kind_of_file_refused_is_named():
    """A block device (/dev/sda given by mistake) is a device too; none can be made here, so
    by its mode, as are the kinds the tests above open."""
    assert [_kind(kind | 0o600) for kind in (stat.S_IFDIR, stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO,
                                             stat.S_IFSOCK)] == \
        ["a directory", "a device", "a device", "a pipe", "a socket"]
