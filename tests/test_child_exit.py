"""engine_service.child_exit: a child's end seen as it comes (the bot pool's close of its
zygote, a local engine's stop)."""

from __future__ import annotations

import os
import subprocess
import time
from types import SimpleNamespace

import pytest

from engine_service.child_exit import wait_for_exit


@pytest.mark.parametrize("pidfds", [True, False], ids=["pidfd", "without-pidfds"])
def test_an_end_is_seen_as_it_comes_and_reaped_and_a_running_child_left_as_it_is(pidfds, monkeypatch):
    """Through the child's pidfd, readable the moment it ends: Popen.wait with a timeout looks
    now and then, up to 50 ms apart, and saw the end that much later at every engine's stop
    (it looks only where there is no pidfd). Either way the ended child is reaped and its
    status returned, and one still running when the time is up is left as it is (None)."""
    if not pidfds:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfds here")
    ends, goes_on = subprocess.Popen(["sh", "-c", "sleep 0.1; exit 3"]), subprocess.Popen(["sleep", "60"])
    looks: list[float] = []
    try:
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(subprocess, "time", SimpleNamespace(
                sleep=lambda s: looks.append(s) or time.sleep(s), monotonic=time.monotonic))
            assert wait_for_exit(ends, 30.0) == 3
            assert ends.returncode == 3  # reaped
            assert (looks == []) is pidfds, looks
            assert wait_for_exit(goes_on, 0.05) is None
            assert wait_for_exit(ends, 0.0) == 3  # ended already: its status again
        assert goes_on.returncode is None and goes_on.poll() is None
    finally:
        goes_on.kill()
        goes_on.wait()
