"""A child process's end, seen the moment it comes: the bot pool's close waits so for its
zygote, and a local engine's stop (clients.local_service, the tests' engine processes) for the
engine. ``Popen.wait`` with a timeout looks for the end at intervals growing to 50 ms, and
every such stop waited up to that much longer than the process took to end."""

from __future__ import annotations

import os
import select
import subprocess


def wait_for_exit(process: subprocess.Popen, timeout_s: float) -> int | None:
    """``process``'s exit status once it has ended (reaped), or None when it has not within
    ``timeout_s`` (left as it is). The end is seen through the process's pidfd, readable once
    it has ended (an unreaped child's pid is its own), where the system has them (Linux 5.3
    and later); elsewhere ``Popen.wait``."""
    if process.poll() is not None:
        return process.returncode
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # no pidfds here
        try:
            return process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None
    try:
        ended = select.poll()
        ended.register(pidfd, select.POLLIN)
        # poll() waits for ever for a negative timeout; Popen.wait takes it as a time up
        if not ended.poll(max(timeout_s, 0.0) * 1000):
            return None
    finally:
        os.close(pidfd)
    return process.wait()  # it has ended: at once
