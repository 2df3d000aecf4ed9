"""engine_service.child_exit: a child's end seen as it comes (the bot pool's close of its
zygote, a local engine's stop)."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from types import SimpleNamespace

import pytest

from engine_service.child_exit import wait_for_exit


def _refused(pid):
    raise OSError(errno.ENOSYS, "Function not implemented")


@pytest.mark.parametrize("pidfds", ["pidfd", "without-pidfds", "refused"])
def test_an_end_is_seen_as_it_comes_and_reaped_and_a_running_child_left_as_it_is(pidfds, monkeypatch):
    """Through the child's pidfd, readable the moment it ends: Popen.wait with a timeout looks
    now and then, up to 50 ms apart, and saw the end that much later at every engine's stop
    (it looks only where there is no pidfd: no ``os.pidfd_open``, or a system that refuses
    the call, such as a kernel older than 5.3 or a sandbox without the system call). Either way
    the ended child is reaped and its status returned, and one still running when the time is
    up is left as it is (None)."""
    if pidfds == "without-pidfds":
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfds here")
    elif pidfds == "refused":
        monkeypatch.setattr(os, "pidfd_open", _refused)
    ends, goes_on = subprocess.Popen(["sh", "-c", "sleep 0.1; exit 3"]), subprocess.Popen(["sleep", "60"])
    looks: list[float] = []
    try:
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(subprocess, "time", SimpleNamespace(
                sleep=lambda s: looks.append(s) or time.sleep(s), monotonic=time.monotonic))
            assert wait_for_exit(ends, 30.0) == 3
            assert ends.returncode == 3  # reaped
            assert (looks == []) is (pidfds == "pidfd"), looks
            assert wait_for_exit(goes_on, 0.05) is None
            assert wait_for_exit(ends, 0.0) == 3  # ended already: its status again
        assert goes_on.returncode is None and goes_on.poll() is None
    finally:
        goes_on.kill()
        goes_on.wait()


def test_a_reaped_childs_status_does_not_look_at_its_pid_again(monkeypatch):
    """Once a child is reaped its pid is free, and the system may give it to another process:
    the status of a child that has ended comes from its Popen at once, never from a pidfd of
    whatever holds that pid now (which would wait for a stranger, here until the time is up)."""
    if not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfds here")
    ended = subprocess.Popen(["sh", "-c", "exit 5"])
    ended.wait()
    stranger = subprocess.Popen(["sleep", "60"])
    real_open = os.pidfd_open
    try:
        monkeypatch.setattr(os, "pidfd_open", lambda pid, *flags: real_open(stranger.pid))  # the pid reused
        assert wait_for_exit(ended, 0.3) == 5
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_every_wait_closes_the_pidfd_it_opened():
    """A wait leaves no file descriptor behind, whether the child ended or the time ran out:
    the bot pool and every local engine's stop wait once per child, for the process's life."""
    if not hasattr(os, "pidfd_open") or not os.path.isdir("/proc/self/fd"):
        pytest.skip("no pidfds here")
    ends, goes_on = subprocess.Popen(["sh", "-c", "exit 0"]), subprocess.Popen(["sleep", "60"])
    try:
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(3):
            assert wait_for_exit(goes_on, 0.01) is None
        assert wait_for_exit(ends, 30.0) == 0
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        goes_on.kill()
        goes_on.wait()


def test_a_fraction_of_a_second_is_waited_for_in_full():
    """The timeout is in seconds, fractions included: a child ending within 0.9 s is seen
    ending, not given up on at once (the bot pool's grace and a local engine's stop are
    such fractions in tests and tools)."""
    child = subprocess.Popen(["sh", "-c", "sleep 0.1; exit 4"])
    try:
        assert wait_for_exit(child, 0.9) == 4
    finally:
        child.kill()
        child.wait()


@pytest.mark.timeout(10)
@pytest.mark.parametrize("pidfds", [True, False], ids=["pidfd", "without-pidfds"])
def test_a_time_already_up_is_a_look_not_a_wait(pidfds, monkeypatch):
    """A timeout already up (0, or negative: a deadline that has passed) looks once and
    returns None for a child still running, as Popen.wait does, with a pidfd or without:
    the pidfd's poll took a negative timeout as none at all and waited for the child for ever."""
    if not pidfds:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfds here")
    goes_on = subprocess.Popen(["sleep", "60"])
    try:
        for timeout_s in (0.0, -1.0):
            assert wait_for_exit(goes_on, timeout_s) is None
        assert goes_on.poll() is None
    finally:
        goes_on.kill()
        goes_on.wait()
